package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heddlehq/heddle/runtime"
)

// Options configure a Writer. Path and Key are required.
type Options struct {
	// Path is the file records are appended to, created with mode 0600
	// when absent; "-" writes to Stdout.
	Path string
	// Key is the HMAC key, at least MinKeyBytes long.
	Key []byte
	// Stdout is where Path "-" writes. Default os.Stdout.
	Stdout io.Writer
	// Version is heddle's version, written in metadata.product.version.
	Version string
	// QueueSize bounds the records waiting to be written. Default 4096.
	QueueSize int
	// Wait is how long a call waits for room in a full queue before its
	// record is lost (counted, logged, and said by the next record's
	// unmapped.lost). Default 20ms.
	Wait time.Duration
	// CheckEvery is how often the writer looks whether the file was
	// renamed or removed (rotated), to open the path anew. Default 1s.
	CheckEvery time.Duration
	// Logger receives write failures and lost records. Default: discard.
	Logger *slog.Logger
	// OnLost, when set, is told of each record that could not be written
	// (for metrics). It must not block.
	OnLost func()
}

// Writer appends chained records to the audit file from one goroutine of
// its own, behind a bounded queue: a call never waits for the disk, and
// waits at most Options.Wait for room in a full queue. Its methods are safe
// for concurrent use. Close writes what is queued, fsyncs the file and
// closes it; records written after Close are lost (counted).
type Writer struct {
	opts   Options
	log    *slog.Logger
	q      chan Record
	reopen chan struct{}
	exited chan struct{}

	mu     sync.RWMutex // held for writing by Close, for reading by senders
	closed bool

	written, lost atomic.Uint64
	unsaid        atomic.Uint64 // lost records the next one written has not said yet
	lastLog       atomic.Int64  // unix ns of the last "lost" log line

	// The writer goroutine's own.
	f       *os.File // nil for standard output
	fi      os.FileInfo
	out     *bufio.Writer
	seq     uint64
	prev    string
	started bool // a record was written or found: seq is the next one's
	checked time.Time
	err     error // the first failure Close reports
}

// Open opens (or creates) the audit file and starts the writer. An
// existing file's chain continues: the first record written names the MAC
// of its last record.
func Open(o Options) (*Writer, error) {
	if o.Path == "" {
		return nil, errors.New("audit: no path")
	}
	if len(o.Key) < MinKeyBytes {
		return nil, fmt.Errorf("audit: the key has %d bytes, fewer than %d", len(o.Key), MinKeyBytes)
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 4096
	}
	if o.Wait <= 0 {
		o.Wait = 20 * time.Millisecond
	}
	if o.CheckEvery <= 0 {
		o.CheckEvery = time.Second
	}
	w := &Writer{opts: o, log: o.Logger, q: make(chan Record, o.QueueSize), reopen: make(chan struct{}, 1), exited: make(chan struct{})}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	if o.Path == "-" {
		w.out = bufio.NewWriterSize(o.Stdout, 64<<10)
	} else if err := w.openFile(true); err != nil {
		return nil, err
	}
	go w.run()
	return w, nil
}

// Observe writes the record of a finished call; pass it as (or call it
// from) runtime.Options.OnCall.
func (w *Writer) Observe(ev runtime.CallEvent) {
	w.Write(FromCall(ev, w.opts.Version))
}

// Write queues r; its chain is set when it is written.
func (w *Writer) Write(r Record) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		w.lose("the audit writer is closed")
		return
	}
	select {
	case w.q <- r:
		return
	default:
	}
	t := time.NewTimer(w.opts.Wait)
	defer t.Stop()
	select {
	case w.q <- r:
	case <-t.C:
		w.lose("the audit queue is full")
	}
}

// Reopen makes the writer open its path anew before the next record (as
// after logrotate renamed the file; SIGHUP). The chain continues.
func (w *Writer) Reopen() {
	select {
	case w.reopen <- struct{}{}:
	default:
	}
}

// Stats counts records written and lost since Open.
type Stats struct{ Written, Lost uint64 }

// Stats returns the writer's counts.
func (w *Writer) Stats() Stats { return Stats{Written: w.written.Load(), Lost: w.lost.Load()} }

// Close writes the queued records, fsyncs and closes the file, and
// returns the first failure to write, if any. It is idempotent.
func (w *Writer) Close() error {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.q)
	}
	w.mu.Unlock()
	<-w.exited
	return w.err
}

// lose counts a record that will not be written, and logs it at most once
// a second.
func (w *Writer) lose(why string) {
	n := w.lost.Add(1)
	w.unsaid.Add(1)
	if w.opts.OnLost != nil {
		w.opts.OnLost()
	}
	now := time.Now().UnixNano()
	if last := w.lastLog.Load(); now-last >= int64(time.Second) && w.lastLog.CompareAndSwap(last, now) {
		w.log.Error("audit record lost", "reason", why, "lost_total", n)
	}
}

func (w *Writer) run() {
	defer close(w.exited)
	for {
		select {
		case r, ok := <-w.q:
			if !ok {
				w.finish()
				return
			}
			w.check()
			w.append(r)
			for more := true; more; {
				select {
				case r, ok := <-w.q:
					if !ok {
						w.finish()
						return
					}
					w.append(r)
				default:
					more = false
				}
			}
			w.flush()
		case <-w.reopen:
			w.rotate()
		}
	}
}

// append seals r as the next record of the chain and buffers its line.
func (w *Writer) append(r Record) {
	r.Unmapped.Lost = w.unsaid.Swap(0)
	seq := w.seq
	if !w.started {
		seq = 0
	}
	line, err := seal(w.opts.Key, &r, seq, w.prev)
	if err == nil {
		line = append(line, '\n')
		_, err = w.out.Write(line)
	}
	if err != nil {
		w.fail(err)
		w.unsaid.Add(r.Unmapped.Lost)
		w.lose("the audit file cannot be written")
		return
	}
	w.seq, w.prev, w.started = seq+1, r.Chain.MAC, true
	w.written.Add(1)
}

func (w *Writer) flush() {
	if err := w.out.Flush(); err != nil {
		w.fail(err)
		// What the buffer held is lost: its records were counted written.
		w.out.Reset(w.sink())
	}
}

func (w *Writer) fail(err error) {
	if w.err == nil {
		w.err = err
	}
	w.log.Error("audit write failed", "path", w.opts.Path, "reason", err.Error())
}

func (w *Writer) sink() io.Writer {
	if w.f == nil {
		return w.opts.Stdout
	}
	return w.f
}

// finish writes what is buffered and fsyncs and closes the file.
func (w *Writer) finish() {
	w.flush()
	if w.f != nil {
		if err := w.f.Sync(); err != nil {
			w.fail(err)
		}
		if err := w.f.Close(); err != nil {
			w.fail(err)
		}
	}
}

// check opens the path anew, at most once every CheckEvery, when the file
// there is no longer the one the writer holds (renamed by logrotate, or
// removed).
func (w *Writer) check() {
	if w.f == nil || time.Since(w.checked) < w.opts.CheckEvery {
		return
	}
	w.checked = time.Now()
	fi, err := os.Stat(w.opts.Path)
	if err == nil && os.SameFile(fi, w.fi) {
		return
	}
	w.rotate()
}

// rotate closes the file and opens the path anew; the chain continues.
func (w *Writer) rotate() {
	if w.f == nil {
		return
	}
	w.finish()
	if err := w.openFile(false); err != nil {
		w.fail(err)
		// Keep writing somewhere rather than nowhere: the failure is
		// logged, and the next check tries the path again.
		w.out.Reset(io.Discard)
	}
}

// openFile opens the path for appending. At Open (first) the chain of a
// file that already holds records continues from its last one.
func (w *Writer) openFile(first bool) error {
	f, err := os.OpenFile(w.opts.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("audit: %w", err)
	}
	if first && fi.Size() > 0 {
		seq, prev, torn, err := lastChain(w.opts.Path, fi.Size())
		if err != nil {
			f.Close()
			return err
		}
		w.seq, w.prev, w.started = seq+1, prev, true
		if torn {
			// A line cut short by a crash stays, and fails verification
			// where it is; the records after it start on a line of their own.
			if _, err := f.Write([]byte{'\n'}); err != nil {
				f.Close()
				return fmt.Errorf("audit: %w", err)
			}
		}
	}
	w.f, w.fi, w.checked = f, fi, time.Now()
	if w.out == nil {
		w.out = bufio.NewWriterSize(f, 64<<10)
	} else {
		w.out.Reset(f)
	}
	return nil
}

// lastChain reads the chain of the last whole record of the file at path,
// size bytes long; torn says the file does not end with a newline.
func lastChain(path string, size int64) (seq uint64, prev string, torn bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, "", false, fmt.Errorf("audit: %w", err)
	}
	defer f.Close()
	const tail = 1 << 20
	off := max(size-tail, 0)
	buf := make([]byte, size-off)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return 0, "", false, fmt.Errorf("audit: %w", err)
	}
	torn = buf[len(buf)-1] != '\n'
	lines := bytes.Split(bytes.TrimRight(buf, "\n"), []byte{'\n'})
	for i := len(lines) - 1; i >= 0; i-- {
		if i == len(lines)-1 && torn {
			continue
		}
		var r struct {
			Chain Chain `json:"chain"`
		}
		if json.Unmarshal(lines[i], &r) == nil && r.Chain.MAC != "" {
			return r.Chain.Seq, r.Chain.MAC, torn, nil
		}
		break
	}
	return 0, "", false, fmt.Errorf("audit: %s does not end with an audit record: write to a new file, or move this one away", path)
}

package bodylimit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/heddlehq/heddle/grants/mcpkind/internal/endread"
	"github.com/heddlehq/heddle/grants/mcpkind/internal/msglimit"
)

// events is an event stream's body that hands on each event once it is
// whole, and none of more than limit bytes. Read is called from one
// goroutine at a time; Close from any.
//
// Its buffers — one to read lines through, and the event's — come from
// pools and go back once the stream has ended (Read returned its error) or
// was closed while no Read ran: a call's answer is a stream of its own, and
// buffers made per answer were most of what a call over HTTP allocated. A
// call's answer is read through 32 KiB, so that a large result takes few
// reads; a stream that serves the whole session (a GET) through 4 KiB: it
// is held open for the session's life, mostly idle, and what it carries is
// small.
type events struct {
	body  io.ReadCloser
	src   endread.Reader // body, as in reads it
	limit int
	// call, on the stream that answers one call, finds that call's id.
	call func() json.RawMessage

	// mu is held by Read while it runs, and tried by Close: the buffers go
	// back to their pools from whichever of the two finds the stream over.
	mu    sync.Mutex
	in    *bufio.Reader    // nil once back in its pool (readersFor)
	event *msglimit.Buffer // the event being read, then handed on; nil likewise
	err   error            // what Read returns once the event is handed on
}

var (
	readers        = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 32<<10) }}
	sessionReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4<<10) }}
	buffers        = sync.Pool{New: func() any { return new(msglimit.Buffer) }}
)

// errClosed is what Read returns after Close.
var errClosed = errors.New("read on a closed event stream")

// readersFor is the pool of the readers a stream is read through: a call's
// answer (call set) through 32 KiB, the session's stream through 4 KiB.
func readersFor(call func() json.RawMessage) *sync.Pool {
	if call == nil {
		return &sessionReaders
	}
	return &readers
}

func newEvents(body io.ReadCloser, limit int, call func() json.RawMessage) *events {
	e := &events{body: body, src: endread.Reader{R: body}, in: readersFor(call).Get().(*bufio.Reader), event: buffers.Get().(*msglimit.Buffer), limit: limit, call: call}
	e.in.Reset(&e.src)
	return e
}

// Read hands on the event read, and with its last bytes the stream's end
// when nothing follows it: a reader that sees the end with the answer
// needs no further read to learn it.
func (e *events) Read(p []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for {
		switch {
		case e.event == nil:
			return 0, e.err
		case e.event.Len() > 0:
			n, _ := e.event.Read(p)
			if e.event.Len() > 0 || e.err == nil {
				return n, nil
			}
			e.release()
			return n, e.err
		case e.err != nil:
			e.release()
			return 0, e.err
		}
		e.next()
	}
}

// Close closes the body; when no Read runs, the buffers go back at once
// (a Read that runs ends on the closed body, and gives them back itself).
func (e *events) Close() error {
	err := e.body.Close()
	if e.mu.TryLock() {
		if e.err == nil {
			e.err = errClosed
		}
		e.release()
		e.mu.Unlock()
	}
	return err
}

// release gives the buffers back to their pools. e.mu is held.
func (e *events) release() {
	if e.in == nil {
		return
	}
	e.in.Reset(nil)
	readersFor(e.call).Put(e.in)
	e.src.R = nil
	e.event.Reset()
	buffers.Put(e.event)
	e.in, e.event = nil, nil
}

// next reads the next event: up to the blank line that ends it, the end of
// the stream, or the limit.
func (e *events) next() {
	e.event.Reset()
	size, atStart := 0, true // atStart: the next fragment starts a line
	for {
		b, err := e.in.ReadSlice('\n')
		if size += len(b); size > e.limit {
			e.overflow(b, err, atStart)
			return
		}
		e.event.Write(b)
		switch {
		case err == nil && atStart && blank(b):
			if e.src.End && e.in.Buffered() == 0 {
				e.err = io.EOF // the body ended with this event
			}
			return
		case err == nil:
			atStart = true
		case errors.Is(err, bufio.ErrBufferFull):
			atStart = false
		default:
			e.err = err // after what was read
			return
		}
	}
}

// blank reports a line with nothing on it: the end of an event.
func blank(line []byte) bool { return len(bytes.TrimRight(line, "\r\n")) == 0 }

// overflow handles an event that passed the limit at fragment b, which
// ReadSlice returned with err and which starts a line when atStart.
func (e *events) overflow(b []byte, err error, atStart bool) {
	if e.call != nil {
		// The stream answers one call: answer it, and read no more.
		e.event.Reset()
		e.body.Close()
		e.err = io.EOF
		if id := e.call(); id != nil {
			writeEvent(e.event, nil, msglimit.RefusalJSON(id, e.limit))
		}
		return
	}
	// The stream serves the whole session: read the event through, keeping
	// only its name, its id and the ids of the responses it holds.
	var f fields
	e.event.WriteTo(&f)
	e.event.Reset()
	f.Write(b)
	ended := err == nil && atStart && blank(b)
	for !ended && (err == nil || errors.Is(err, bufio.ErrBufferFull)) {
		atStart = err == nil
		b, err = e.in.ReadSlice('\n')
		f.Write(b)
		ended = err == nil && atStart && blank(b)
	}
	if !ended {
		e.err = err
	}
	if name := string(bytes.TrimSpace(f.name)); f.nameLong || name != "" && name != "message" {
		return // an event go-sdk does not read
	}
	id := bytes.TrimSpace(f.id)
	if f.idLong || len(id) == 0 {
		id = nil
	}
	for _, r := range f.scan.Responses() {
		raw, _ := json.Marshal(r.Raw())
		writeEvent(e.event, id, msglimit.RefusalJSON(raw, e.limit))
		id = nil
	}
}

// writeEvent writes an event of one data line and, if id is not nil, an id.
func writeEvent(w io.Writer, id, data []byte) {
	if id != nil {
		w.Write([]byte("id: "))
		w.Write(id)
		w.Write([]byte("\n"))
	}
	w.Write([]byte("data: "))
	w.Write(data)
	w.Write([]byte("\n\n"))
}

// What a line of an event being read through is.
const (
	inName  = iota // its field's name
	inData         // a data value
	inID           // an id value
	inEvent        // an event name
	inOther        // a value of another field, or a comment
)

// Bounds of what fields keeps: a field's name, an event's id and name.
const (
	maxFieldName = 8
	maxFieldText = 256
)

// fields reads the lines of one event as they pass, written to it in
// pieces of any size, and keeps the event's name, its id and, through a
// Scanner of its data, the ids of the responses it holds.
type fields struct {
	scan     msglimit.Scanner
	state    int
	field    []byte // the line's field name, while it is read
	first    bool   // the value's first byte is next: a space there is not part of it
	name, id []byte
	nameLong bool // the name was longer than maxFieldText
	idLong   bool // the id was
}

func (f *fields) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if f.state == inName {
			i := bytes.IndexAny(p, ":\n")
			if i < 0 {
				f.field = appendMax(f.field, p, maxFieldName+1, nil)
				return n, nil
			}
			f.field = appendMax(f.field, p[:i], maxFieldName+1, nil)
			if p[i] == '\n' {
				f.endLine()
			} else {
				f.startValue()
			}
			p = p[i+1:]
			continue
		}
		if f.first {
			f.first = false
			if p[0] == ' ' {
				p = p[1:]
				continue
			}
		}
		i := bytes.IndexByte(p, '\n')
		v := p
		if i >= 0 {
			v = p[:i]
		}
		switch f.state {
		case inData:
			f.scan.Write(v)
		case inID:
			f.id = appendMax(f.id, v, maxFieldText, &f.idLong)
		case inEvent:
			f.name = appendMax(f.name, v, maxFieldText, &f.nameLong)
		}
		if i < 0 {
			return n, nil
		}
		f.endLine()
		p = p[i+1:]
	}
	return n, nil
}

// startValue starts the value of the field whose name was read; a later id
// or event name replaces an earlier one.
func (f *fields) startValue() {
	f.first = true
	switch string(f.field) {
	case "data":
		f.state = inData
	case "id":
		f.state, f.id, f.idLong = inID, f.id[:0], false
	case "event":
		f.state, f.name, f.nameLong = inEvent, f.name[:0], false
	default:
		f.state = inOther
	}
}

func (f *fields) endLine() {
	if f.state == inData {
		f.scan.Write([]byte{'\n'}) // data lines are joined by newlines
	}
	f.state, f.field = inName, f.field[:0]
}

// appendMax appends p to b while b stays within limit bytes; past it, it
// sets *long, if long is not nil.
func appendMax(b, p []byte, limit int, long *bool) []byte {
	if len(b)+len(p) > limit {
		if long != nil {
			*long = true
		}
		return append(b, p[:limit-len(b)]...)
	}
	return append(b, p...)
}

package audit_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/heddlehq/heddle/audit"
	"github.com/heddlehq/heddle/runtime"
)

func writeN(t testing.TB, w *audit.Writer, n int) {
	for range n {
		w.Observe(runtime.CallEvent{Agent: "x", Tool: "echo", Kind: "mcp", Server: "a", Decision: "allow", Rule: "default"})
	}
}

func open(t *testing.T, o audit.Options) *audit.Writer {
	t.Helper()
	if o.Key == nil {
		o.Key = testKey
	}
	w, err := audit.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestRotation: a file renamed away (logrotate) is noticed by its inode, a
// Reopen (SIGHUP) opens the path anew at once, and the chain runs on
// through the three files, which verify together in order; the newest
// alone verifies too, beginning at a seq above 0.
func TestRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	w := open(t, audit.Options{Path: path, CheckEvery: time.Nanosecond})
	writeN(t, w, 10)
	waitWritten(t, w, 10)
	if err := os.Rename(path, path+".2"); err != nil {
		t.Fatal(err)
	}
	writeN(t, w, 10) // the first of these notices the rename
	waitWritten(t, w, 20)
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	w.Reopen()
	writeN(t, w, 10)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := audit.Verify(testKey, path+".2", path+".1", path)
	if err != nil || s.Records != 30 || s.LastSeq != 29 {
		t.Fatalf("Verify of the three files: %+v, %v; want 30 records", s, err)
	}
	if n := len(readLines(t, path+".2")); n != 10 {
		t.Errorf("the first file holds %d records, want 10", n)
	}
	s, err = audit.Verify(testKey, path)
	if err != nil || s.FirstSeq != 20 {
		t.Fatalf("Verify of the newest file alone: %+v, %v; want it to begin at seq 20", s, err)
	}
	var be *audit.BrokenError
	if _, err := audit.Verify(testKey, path+".1", path+".2", path); !errors.As(err, &be) || be.Line != 1 {
		t.Fatalf("files out of order: %v, want the first record of the second named", err)
	}
}

// TestReopenContinues: a writer opened on a file that holds records (the
// next heddle call) continues its chain; a line cut short by a crash stays
// and is named by Verify, and the records after it start a line of their
// own.
func TestReopenContinues(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	for range 3 {
		w := open(t, audit.Options{Path: path})
		writeN(t, w, 5)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if s, err := audit.Verify(testKey, path); err != nil || s.Records != 15 {
		t.Fatalf("Verify: %+v, %v; want 15 records", s, err)
	}
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	_, _ = f.WriteString(`{"activity_id":99,"act`)
	f.Close()
	w := open(t, audit.Options{Path: path})
	writeN(t, w, 1)
	_ = w.Close()
	var be *audit.BrokenError
	if _, err := audit.Verify(testKey, path); !errors.As(err, &be) || be.Line != 16 {
		t.Fatalf("Verify: %v, want line 16 (the torn record) named", err)
	}
	lines := readLines(t, path)
	if len(lines) != 17 || !json.Valid(bytes.TrimSpace(lines[16])) {
		t.Fatalf("the record after a torn line is not a line of its own: %q", lines[len(lines)-1])
	}
}

// blocked is a standard output that holds every write until released.
type blocked struct {
	release chan struct{}
	buf     bytes.Buffer
}

func (b *blocked) Write(p []byte) (int, error) {
	<-b.release
	return b.buf.Write(p)
}

// TestFullQueue: while the disk does not take writes, a call waits at
// most Wait for room, and a record that finds none is lost, counted,
// reported to OnLost, and said by the next record written (unmapped.lost);
// the chain stays whole.
func TestFullQueue(t *testing.T) {
	out := &blocked{release: make(chan struct{})}
	var lost int
	var mu sync.Mutex
	w := open(t, audit.Options{Path: "-", Stdout: out, QueueSize: 2, Wait: time.Millisecond,
		OnLost: func() { mu.Lock(); lost++; mu.Unlock() }})
	start := time.Now()
	writeN(t, w, 500)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("500 calls took %v against a blocked file", d)
	}
	close(out.release)
	writeN(t, w, 1)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	s := w.Stats()
	mu.Lock()
	defer mu.Unlock()
	if s.Lost == 0 || s.Written+s.Lost != 501 || uint64(lost) != s.Lost {
		t.Fatalf("stats %+v, OnLost %d: want some lost, every record written or lost", s, lost)
	}
	var said uint64
	for _, l := range bytes.Split(bytes.TrimSpace(out.buf.Bytes()), []byte("\n")) {
		var r audit.Record
		if err := json.Unmarshal(l, &r); err != nil {
			t.Fatal(err)
		}
		said += r.Unmapped.Lost
	}
	if said != s.Lost {
		t.Errorf("the records say %d lost, the writer counted %d", said, s.Lost)
	}
	p := filepath.Join(t.TempDir(), "out.jsonl")
	_ = os.WriteFile(p, out.buf.Bytes(), 0o600)
	if _, err := audit.Verify(testKey, p); err != nil {
		t.Fatalf("Verify: %v", err)
	}
}

func TestOpenRefuses(t *testing.T) {
	if _, err := audit.Open(audit.Options{Path: "-", Key: []byte("short")}); err == nil {
		t.Error("a short key was accepted")
	}
	path := filepath.Join(t.TempDir(), "not-audit")
	_ = os.WriteFile(path, []byte("hello\n"), 0o600)
	if _, err := audit.Open(audit.Options{Path: path, Key: testKey}); err == nil {
		t.Error("a file that does not end with a record was appended to")
	}
}

func waitWritten(t *testing.T, w *audit.Writer, n uint64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for w.Stats().Written < n {
		if time.Now().After(deadline) {
			t.Fatalf("written %d, want %d", w.Stats().Written, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// BenchmarkWriter measures the writer's throughput: records a second a
// file takes, queued from one goroutine, sealed and written by the other.
func BenchmarkWriter(b *testing.B) {
	path := filepath.Join(b.TempDir(), "audit.jsonl")
	w, err := audit.Open(audit.Options{Path: path, Key: testKey, QueueSize: 1 << 16, Wait: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	ev := runtime.CallEvent{Agent: "x", Tool: "echo", Kind: "mcp", Server: "a", Decision: "allow", Rule: "default", ArgsSHA256: "3e3468a182fa5d5455511e4c986621a36c8724f7badb7e5797ca2fef2c504af4"}
	start := time.Now()
	for b.Loop() {
		w.Observe(ev)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
	if s := w.Stats(); s.Lost > 0 {
		b.Fatalf("%d lost", s.Lost)
	}
}

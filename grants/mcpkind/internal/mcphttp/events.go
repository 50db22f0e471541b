package mcphttp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/heddlehq/heddle/grants/mcpkind/internal/endread"
)

// events reads an event stream one event at a time, as go-sdk's client
// reads one: lines of "field: value" (the value trimmed of spaces), data
// lines joined by newlines, an event ended by a blank line or by the end
// of the stream, lines that start with a colon ignored, and any other line
// without a colon malformed. Its reader and the event's data come from
// pools and go back on release: a call's answer is a stream of its own.
type events struct {
	src  endread.Reader // the stream, as in reads it
	in   *bufio.Reader
	buf  *bytes.Buffer // the event's data
	long *bytes.Buffer // a line longer than in's buffer, gathered; nil until one comes
	max  int

	// The event next returned; data is valid until the next call.
	data    []byte
	id      string
	retry   int64 // milliseconds; −1 when the event set none
	message bool  // the event is a message: unnamed, or named "message"
}

var (
	readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4<<10) }}
	buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}
)

// maxPooled is the largest buffer that goes back to its pool.
const maxPooled = 64 << 10

func getBuffer() *bytes.Buffer { return buffers.Get().(*bytes.Buffer) }

func putBuffer(b *bytes.Buffer) {
	if b.Cap() <= maxPooled {
		b.Reset()
		buffers.Put(b)
	}
}

func newEvents(body io.Reader, max int) *events {
	e := &events{src: endread.Reader{R: body}, in: readers.Get().(*bufio.Reader), buf: getBuffer(), max: max}
	e.in.Reset(&e.src)
	return e
}

// ended reports whether the stream has reported its end: nothing of it is
// left to read but what in holds.
func (e *events) ended() bool { return e.src.End }

// release gives the buffers back; e is not used again.
func (e *events) release() {
	e.in.Reset(nil)
	readers.Put(e.in)
	e.src.R = nil
	putBuffer(e.buf)
	if e.long != nil {
		putBuffer(e.long)
	}
	e.in, e.buf, e.long, e.data = nil, nil, nil, nil
}

var (
	// errEventTooLong: an event passed the bound without ending.
	errEventTooLong = errors.New("SSE event exceeded its bound without terminating")
	// errMalformed: a line that is no field.
	errMalformed = errors.New("malformed line in SSE stream")
)

// next reads the next event that is not empty. It returns io.EOF at the
// end of the stream, the reader's error when it fails, and errEventTooLong
// or an error wrapping errMalformed when the stream breaks the rules.
func (e *events) next() error {
	e.buf.Reset()
	e.data, e.id, e.retry, e.message = nil, "", -1, true
	hasData, empty, size := false, true, 0
	for {
		line, err := e.line(e.max - size)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		size += len(line)
		eof := err != nil
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			if !empty {
				e.finish(hasData)
				return nil
			}
			if eof {
				return io.EOF
			}
			size = 0
			continue
		}
		if line[0] != ':' {
			field, value, ok := bytes.Cut(line, []byte{':'})
			if !ok {
				return fmt.Errorf("%w: %q", errMalformed, truncate(line))
			}
			value = bytes.TrimSpace(value)
			switch string(field) {
			case "data":
				if hasData {
					e.buf.WriteByte('\n')
				}
				e.buf.Write(value)
				hasData, empty = true, false
			case "id":
				e.id, empty = string(value), false
			case "event":
				e.message, empty = len(value) == 0 || string(value) == "message", false
			case "retry":
				if n, err := strconv.ParseInt(string(value), 10, 64); err == nil {
					e.retry = n
				}
				empty = false
			}
		}
		if eof {
			if empty {
				return io.EOF
			}
			e.finish(hasData)
			return nil
		}
	}
}

func (e *events) finish(hasData bool) {
	if hasData {
		e.data = e.buf.Bytes()
	}
}

// line reads one line, of at most budget bytes; a longer one is
// errEventTooLong. The slice is valid until the next read.
func (e *events) line(budget int) ([]byte, error) {
	b, err := e.in.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		if len(b) > budget {
			return nil, errEventTooLong
		}
		return b, err
	}
	// Longer than the reader's buffer: gathered in a buffer of its own.
	if e.long == nil {
		e.long = getBuffer()
	}
	long := e.long
	long.Reset()
	for errors.Is(err, bufio.ErrBufferFull) {
		if long.Len()+len(b) > budget {
			return nil, errEventTooLong
		}
		long.Write(b)
		b, err = e.in.ReadSlice('\n')
	}
	if long.Len()+len(b) > budget {
		return nil, errEventTooLong
	}
	long.Write(b)
	return long.Bytes(), err
}

// truncate shortens a line for an error message.
func truncate(b []byte) []byte {
	if len(b) > 80 {
		return b[:80]
	}
	return b
}

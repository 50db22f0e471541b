package msglimit

import (
	"errors"
	"io"
	"slices"
)

// Chunk sizes of a Buffer: the first, and the largest, which later chunks
// double up to; and how much of its chunks a Buffer keeps for the next
// message.
const (
	firstChunk = 4 << 10
	maxChunk   = 1 << 20
	keepChunks = 1 << 20
)

// Buffer holds the bytes of one message while it is read, in chunks that
// are never copied as it grows: a message of n bytes takes n bytes plus at
// most one chunk, where a growing slice would take up to twice n while it
// copies itself, and allocate several times n in all. It is read back once,
// by Read or WriteTo, or joined by AppendTo. Reset keeps up to 1 MiB of
// chunks for the next message, so that messages of that size cost nothing
// once the first has been read. The zero value is empty and ready to use; a
// Buffer is not safe for concurrent use.
type Buffer struct {
	chunks [][]byte // every chunk full but the last
	spare  [][]byte // empty chunks kept by Reset, used in order from si
	si     int
	n      int // bytes written
	r      int // bytes read back
	ri, ro int // where reading resumes: chunk, offset in it
}

// Write appends p. It never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		last := len(b.chunks) - 1
		if last < 0 || len(b.chunks[last]) == cap(b.chunks[last]) {
			b.chunks = append(b.chunks, b.newChunk())
			last++
		}
		c := b.chunks[last]
		k := min(len(p), cap(c)-len(c))
		b.chunks[last] = append(c, p[:k]...)
		p = p[k:]
		b.n += k
	}
	return n, nil
}

// newChunk returns an empty chunk: a spare one, or a new one the size of
// what the buffer holds, between firstChunk and maxChunk.
func (b *Buffer) newChunk() []byte {
	if b.si < len(b.spare) {
		c := b.spare[b.si]
		b.spare[b.si] = nil
		b.si++
		return c
	}
	return make([]byte, 0, min(max(firstChunk, b.n), maxChunk))
}

// ReadFrom appends what r reads until io.EOF, straight into the buffer's
// chunks, and returns how much that was and the first error other than
// io.EOF.
func (b *Buffer) ReadFrom(r io.Reader) (int64, error) {
	var n int64
	for {
		last := len(b.chunks) - 1
		if last < 0 || len(b.chunks[last]) == cap(b.chunks[last]) {
			b.chunks = append(b.chunks, b.newChunk())
			last++
		}
		c := b.chunks[last]
		k, err := r.Read(c[len(c):cap(c)])
		b.chunks[last] = c[:len(c)+k]
		b.n += k
		n += int64(k)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// Len is the number of bytes not yet read back.
func (b *Buffer) Len() int { return b.n - b.r }

// AppendTo appends the unread bytes to dst and returns the result, without
// reading them.
func (b *Buffer) AppendTo(dst []byte) []byte {
	if b.Len() == 0 {
		return dst
	}
	dst = slices.Grow(dst, b.Len()) // one allocation, not one per chunk
	dst = append(dst, b.chunks[b.ri][b.ro:]...)
	for _, c := range b.chunks[b.ri+1:] {
		dst = append(dst, c...)
	}
	return dst
}

// next returns the unread part of the chunk reading resumes in, and moves
// past it when it is empty.
func (b *Buffer) next() []byte {
	for b.ri < len(b.chunks) {
		if c := b.chunks[b.ri][b.ro:]; len(c) > 0 {
			return c
		}
		if b.ri == len(b.chunks)-1 {
			break // the last chunk may grow: stay in it
		}
		b.ri, b.ro = b.ri+1, 0
	}
	return nil
}

// Read reads back what was written, and io.EOF once it is all read.
func (b *Buffer) Read(p []byte) (int, error) {
	if b.Len() == 0 {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) {
		c := b.next()
		if len(c) == 0 {
			break
		}
		k := copy(p[n:], c)
		n += k
		b.ro += k
	}
	b.r += n
	return n, nil
}

// WriteTo writes the unread bytes to w, and reads them.
func (b *Buffer) WriteTo(w io.Writer) (int64, error) {
	var n int64
	for {
		c := b.next()
		if len(c) == 0 {
			return n, nil
		}
		k, err := w.Write(c)
		n += int64(k)
		b.ro += k
		b.r += k
		if err != nil {
			return n, err
		}
	}
}

// Reset empties the buffer. It keeps chunks for the next message, up to
// keepChunks bytes of them, and lets the others go.
func (b *Buffer) Reset() {
	// The chunks in use, then the spare ones, are in the order they were
	// made; the first of them are kept, compacted into the array of the
	// chunks in use, whose elements are read before they are written.
	keep, kept := b.chunks[:0], 0
	for _, list := range [2][][]byte{b.chunks, b.spare[b.si:]} {
		for _, c := range list {
			if kept+cap(c) <= keepChunks {
				kept += cap(c)
				keep = append(keep, c[:0])
			}
		}
	}
	clear(keep[len(keep):cap(keep)]) // what is let go is not held by an array
	clear(b.spare)
	b.chunks, b.spare, b.si = b.spare[:0], keep, 0
	b.n, b.r, b.ri, b.ro = 0, 0, 0, 0
}

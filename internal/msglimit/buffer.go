package msglimit

import "io"

// Chunk sizes of a Buffer: the first, and the largest, which later chunks
// double up to.
const (
	firstChunk = 4 << 10
	maxChunk   = 1 << 20
)

// Buffer holds the bytes of one message while it is read, in chunks that
// are never copied as it grows: a message of n bytes takes n bytes plus at
// most one chunk, where a growing slice would take up to twice n while it
// copies itself, and allocate several times n in all. It is read back once,
// by Read or WriteTo, or joined by Bytes. The zero value is empty and ready
// to use; a Buffer is not safe for concurrent use.
type Buffer struct {
	chunks [][]byte // every chunk full but the last
	n      int      // bytes written
	r      int      // bytes read back
	ri, ro int      // where reading resumes: chunk, offset in it
}

// Write appends p. It never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		last := len(b.chunks) - 1
		if last < 0 || len(b.chunks[last]) == cap(b.chunks[last]) {
			size := min(max(firstChunk, b.n), maxChunk)
			b.chunks = append(b.chunks, make([]byte, 0, size))
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

// Len is the number of bytes not yet read back.
func (b *Buffer) Len() int { return b.n - b.r }

// Bytes returns the unread bytes as one slice: the buffer's own chunk when
// they are in one, else a new slice joining them. It does not read them.
func (b *Buffer) Bytes() []byte {
	if b.Len() == 0 {
		return nil
	}
	if b.ri == len(b.chunks)-1 {
		return b.chunks[b.ri][b.ro:]
	}
	out := make([]byte, 0, b.Len())
	out = append(out, b.chunks[b.ri][b.ro:]...)
	for _, c := range b.chunks[b.ri+1:] {
		out = append(out, c...)
	}
	return out
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

// Reset empties the buffer. It keeps its first chunk for the next message
// when that is a small one, and lets the others go.
func (b *Buffer) Reset() {
	var first []byte
	if len(b.chunks) > 0 && cap(b.chunks[0]) == firstChunk {
		first = b.chunks[0][:0]
	}
	clear(b.chunks) // the chunks let go are not held by the slice's array
	b.chunks = b.chunks[:0]
	if first != nil {
		b.chunks = append(b.chunks, first)
	}
	b.n, b.r, b.ri, b.ro = 0, 0, 0, 0
}

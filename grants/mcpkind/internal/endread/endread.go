// Package endread tells whether a reader has reported its end, for readers
// that sit under a bufio.Reader: the buffer keeps the io.EOF it was given
// until what it holds is read, and a caller that has what it wants may need
// to know the stream is over without reading again (a read that could
// wait).
//
//	src := endread.Reader{R: body}
//	in := bufio.NewReader(&src)
//	// … read what is wanted from in …
//	if src.End {
//		// body has nothing left but what in holds
//	}
package endread

import (
	"errors"
	"io"
)

// Reader reads from R and notes when R reports its end. It is used by one
// goroutine, as R is.
type Reader struct {
	R   io.Reader
	End bool // R returned io.EOF
}

func (r *Reader) Read(p []byte) (int, error) {
	n, err := r.R.Read(p)
	if errors.Is(err, io.EOF) {
		r.End = true
	}
	return n, err
}

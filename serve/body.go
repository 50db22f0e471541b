package serve

import "io"

// bodyPrealloc is the largest body readBody makes room for before its
// bytes arrive: a client that announces a large body and sends nothing
// holds no more than this much of the worker's memory.
const bodyPrealloc = 64 << 10

// readBody reads r to its end, as io.ReadAll does. size is the length the
// request announced (Content-Length; -1 when unknown): up to bodyPrealloc,
// the buffer is made for it at once, one byte more so that the read that
// finds the end needs no room of its own, instead of growing from
// io.ReadAll's 512 bytes (which a call's small body leaves mostly unused,
// and a larger one outgrows several times).
func readBody(r io.Reader, size int64) ([]byte, error) {
	if size < 0 || size > bodyPrealloc {
		return io.ReadAll(r)
	}
	b := make([]byte, 0, size+1)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) { // longer than announced: grow as io.ReadAll does
			b = append(b, 0)[:len(b)]
		}
	}
}

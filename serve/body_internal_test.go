package serve

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestReadBody: readBody reads what io.ReadAll reads, and fails as it
// does, whatever length the request announced; a body of the announced
// length is read into a buffer made for it, never grown.
func TestReadBody(t *testing.T) {
	body := `{"text": "hello, heddle"}`
	long := strings.Repeat("x", bodyPrealloc+10)
	boom := errors.New("boom")
	for _, tc := range []struct {
		name string
		r    func() io.Reader
		size int64
	}{
		{"announced", func() io.Reader { return strings.NewReader(body) }, int64(len(body))},
		{"unknown", func() io.Reader { return strings.NewReader(body) }, -1},
		{"empty", func() io.Reader { return strings.NewReader("") }, 0},
		{"shorter than announced", func() io.Reader { return strings.NewReader(body[:5]) }, int64(len(body))},
		{"longer than announced", func() io.Reader { return strings.NewReader(body) }, 3},
		{"a byte at a time", func() io.Reader { return iotest.OneByteReader(strings.NewReader(body)) }, int64(len(body))},
		{"over bodyPrealloc", func() io.Reader { return strings.NewReader(long) }, int64(len(long))},
		{"failing", func() io.Reader { return io.MultiReader(strings.NewReader(body[:7]), iotest.ErrReader(boom)) }, int64(len(body))},
		{"failing with data", func() io.Reader { return iotest.DataErrReader(strings.NewReader(body)) }, int64(len(body))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, wantErr := io.ReadAll(tc.r())
			got, err := readBody(tc.r(), tc.size)
			if !bytes.Equal(got, want) || !errors.Is(err, wantErr) && err != wantErr {
				t.Errorf("readBody = %.40q, %v; io.ReadAll = %.40q, %v", got, err, want, wantErr)
			}
		})
	}
	got, err := readBody(strings.NewReader(body), int64(len(body)))
	if err != nil || cap(got) != len(body)+1 {
		t.Errorf("a body of the announced %d bytes: read into a buffer of %d (error %v), want %d", len(body), cap(got), err, len(body)+1)
	}
}

package endread_test

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/heddlehq/heddle/grants/mcpkind/internal/endread"
)

// TestReader: the end is noted when the reader reports it, with its last
// bytes or on a read of its own, and not before.
func TestReader(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    io.Reader
		end  bool // after the line is read
	}{
		{"end with the data", iotest.DataErrReader(strings.NewReader("a\n")), true},
		{"end on a later read", strings.NewReader("a\n"), false},
		{"more after the line", iotest.DataErrReader(strings.NewReader("a\nb")), true},
		{"an error, not the end", iotest.ErrReader(iotest.ErrTimeout), false},
	} {
		src := endread.Reader{R: tc.r}
		in := bufio.NewReader(&src)
		_, _ = in.ReadString('\n')
		if src.End != tc.end {
			t.Errorf("%s: End is %v after a line, want %v", tc.name, src.End, tc.end)
		}
		_, _ = io.ReadAll(in)
		if want := tc.name != "an error, not the end"; src.End != want {
			t.Errorf("%s: End is %v once read through, want %v", tc.name, src.End, want)
		}
	}
}

func ExampleReader() {
	// A body whose last read brings its end with its last bytes, as
	// net/http's does when the whole answer has arrived.
	src := endread.Reader{R: iotest.DataErrReader(strings.NewReader("data: {}\n\n"))}
	in := bufio.NewReader(&src)
	line, _ := in.ReadString('\n')
	fmt.Printf("%q, ended: %v\n", line, src.End)
	// Output: "data: {}\n", ended: true
}

package mcphttp

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestEvents: events are read as go-sdk's client reads them, however the
// stream's reads are split.
func TestEvents(t *testing.T) {
	long := strings.Repeat("x", 10<<10) // longer than the reader's buffer
	type ev struct {
		data, id string
		retry    int64
		message  bool
	}
	for _, tc := range []struct {
		name, stream string
		want         []ev
		err          error // after the events
	}{
		{"one", "data: {}\n\n", []ev{{"{}", "", -1, true}}, io.EOF},
		{"crlf and fields", "event: message\r\nid: 7\r\nretry: 250\r\ndata: a\r\ndata:  b \r\n\r\n", []ev{{"a\nb", "7", 250, true}}, io.EOF},
		{"comments and blank lines", ": hi\n\n\n\ndata: 1\n\n: bye\n\n", []ev{{"1", "", -1, true}}, io.EOF},
		{"priming", "id: p\ndata:\n\ndata: 2\n\n", []ev{{"", "p", -1, true}, {"2", "", -1, true}}, io.EOF},
		{"named", "event: ping\ndata: x\n\n", []ev{{"x", "", -1, false}}, io.EOF},
		{"no blank line at the end", "data: 3", []ev{{"3", "", -1, true}}, io.EOF},
		{"long line", "data: " + long + "\n\ndata: 4\n\n", []ev{{long, "", -1, true}, {"4", "", -1, true}}, io.EOF},
		{"malformed", "data: 5\n\nnot a field\n\n", []ev{{"5", "", -1, true}}, errMalformed},
		{"too long", "data: 6\n\ndata: " + strings.Repeat("y", 20<<10) + "\n\n", []ev{{"6", "", -1, true}}, errEventTooLong},
		{"too long over lines", "data: 6\n\n" + strings.Repeat("data: "+strings.Repeat("z", 1000)+"\n", 20) + "\n", []ev{{"6", "", -1, true}}, errEventTooLong},
	} {
		for _, split := range []bool{false, true} {
			var r io.Reader = strings.NewReader(tc.stream)
			if split {
				r = iotest.OneByteReader(r)
			}
			e := newEvents(r, 16<<10)
			var got []ev
			var err error
			for {
				if err = e.next(); err != nil {
					break
				}
				got = append(got, ev{string(e.data), e.id, e.retry, e.message})
			}
			e.release()
			if len(got) != len(tc.want) {
				t.Errorf("%s (split %v): %d events %+v, want %+v", tc.name, split, len(got), got, tc.want)
				continue
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("%s (split %v): event %d is %+v, want %+v", tc.name, split, i, got[i], tc.want[i])
				}
			}
			if !errors.Is(err, tc.err) {
				t.Errorf("%s (split %v): ended with %v, want %v", tc.name, split, err, tc.err)
			}
		}
	}
}

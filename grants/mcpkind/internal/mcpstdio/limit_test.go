package mcpstdio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/heddlehq/heddle/grants/mcpkind/internal/msglimit"
)

// refusal reports whether m is a response to id (a number) carrying
// msglimit's refusal.
func refusal(m jsonrpc.Message, id float64) bool {
	r, ok := m.(*jsonrpc.Response)
	if !ok {
		return false
	}
	want, _ := jsonrpc.MakeID(id)
	_, refused := msglimit.Refused(r.Error)
	return r.ID == want && refused
}

// startLimited starts sh -c script over a transport whose lines are bounded
// by limit.
func startLimited(t *testing.T, limit int, script string) *conn {
	t.Helper()
	c, err := NewTransport(exec.Command("sh", "-c", script), &Options{Terminate: time.Second, MaxMessageBytes: limit}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sc := c.(*conn)
	t.Cleanup(func() { _ = sc.Close() })
	return sc
}

// readAll reads messages until io.EOF and describes each.
func readAll(t *testing.T, c *conn) []string {
	t.Helper()
	var got []string
	for {
		m, err := c.Read(context.Background())
		if errors.Is(err, io.EOF) {
			return got
		}
		if err != nil {
			t.Fatalf("Read: %v (after %q)", err, got)
		}
		switch m := m.(type) {
		case *jsonrpc.Request:
			got = append(got, "request "+m.Method)
		case *jsonrpc.Response:
			if limit, ok := msglimit.Refused(m.Error); ok {
				got = append(got, fmt.Sprintf("refused %v over %d", m.ID.Raw(), limit))
			} else {
				got = append(got, fmt.Sprintf("response %v", m.ID.Raw()))
			}
		}
	}
}

// TestStdioConnOversized: a line over MaxMessageBytes is dropped as it is
// read; each response in it, its id before its result or after, is answered
// by a refusal; an oversized request or notification is dropped; the lines
// around it are read as usual. A line of exactly the limit, its newline
// included, is read.
func TestStdioConnOversized(t *testing.T) {
	t.Parallel()
	const limit = 1 << 20
	big := strings.Repeat("x", 2*limit)
	atLimit := func(id int) string { // a response line of limit bytes with its newline
		head := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":"`, id)
		return head + strings.Repeat("y", limit-len(head)-3) + "\"}\n"
	}
	lines := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` + big + `"}]}}`,
		`{"jsonrpc":"2.0","id":2,"result":{}}`,
		`{"result":{"content":[{"type":"text","text":"` + big + `"}]},"jsonrpc":"2.0","id":3}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + big + `"}}`,
		`[{"jsonrpc":"2.0","id":4,"result":"` + big + `"},{"jsonrpc":"2.0","method":"ping","id":9},{"jsonrpc":"2.0","id":5,"result":{}}]`,
		strings.TrimSuffix(atLimit(6), "\n"),
		strings.TrimSuffix(atLimit(7), "\"}\n") + "y\"}",
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
	}, "\n") + "\n"
	f := filepath.Join(t.TempDir(), "out")
	if err := os.WriteFile(f, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, startLimited(t, limit, "cat "+f))
	want := []string{
		"refused 1 over 1048576",
		"response 2",
		"refused 3 over 1048576",
		"refused 4 over 1048576", "refused 5 over 1048576",
		"response 6",
		"refused 7 over 1048576",
		"request notifications/tools/list_changed",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read %q,\nwant %q", got, want)
	}
}

// TestStdioConnOversizedMemory: a child that writes a 64 MiB line, then a
// small one, costs the reader less than the 1 MiB limit and a few chunks:
// the line is dropped as it passes, its response refused, and the next line
// read.
func TestStdioConnOversizedMemory(t *testing.T) {
	const limit = 1 << 20
	c := startLimited(t, limit, `printf '{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"'
head -c 67108864 /dev/zero | tr '\0' x
printf '"}]},"id":1}\n{"jsonrpc":"2.0","id":2,"result":{}}\n'`)
	var got []string
	allocated := allocatedBy(func() { got = readAll(t, c) })
	if want := []string{"refused 1 over 1048576", "response 2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("read %q, want %q", got, want)
	}
	t.Logf("reading a 64 MiB line allocated %.2f MiB", float64(allocated)/(1<<20))
	if allocated > limit+2<<20 {
		t.Errorf("reading a 64 MiB line allocated %.1f MiB, want at most the 1 MiB limit and 2 MiB", float64(allocated)/(1<<20))
	}
}

// TestStdioConnOversizedSmallLimit: a bound smaller than the reader's
// buffer holds too.
func TestStdioConnOversizedSmallLimit(t *testing.T) {
	t.Parallel()
	f := filepath.Join(t.TempDir(), "out")
	lines := `{"jsonrpc":"2.0","id":1,"result":"` + strings.Repeat("x", 200) + "\"}\n" + `{"jsonrpc":"2.0","id":2,"result":{}}` + "\n"
	if err := os.WriteFile(f, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, startLimited(t, 100, "cat "+f))
	if want := []string{"refused 1 over 100", "response 2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("read %q, want %q", got, want)
	}
}

// allocatedBy returns the bytes this process allocated while f ran.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

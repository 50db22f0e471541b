package main

import (
	"bytes"
	"runtime/pprof"
	"strings"
	"testing"
	"time"
)

// stack builds a leaf-first stack of function names.
func stack(funcs ...string) []frame {
	s := make([]frame, len(funcs))
	for i, f := range funcs {
		s[i] = frame{Func: f}
	}
	return s
}

func TestAttribute(t *testing.T) {
	const (
		heddleCall = "github.com/heddlehq/heddle/runtime.(*Toolset).Call"
		benchLoop  = "github.com/heddlehq/heddle/runtime_test.BenchmarkCall.func1.1"
		callTool   = "github.com/modelcontextprotocol/go-sdk/mcp.(*ClientSession).CallTool"
		readLoop   = "github.com/modelcontextprotocol/go-sdk/internal/jsonrpc2.(*Connection).readIncoming"
	)
	tests := []struct {
		name  string
		stack []frame
		want  bucket
	}{
		{"heddle's own code", stack("github.com/heddlehq/heddle/internal/argcheck.quickValid", heddleCall, benchLoop, "testing.(*B).runN", "runtime.goexit"), bucketHeddle},
		{"a generic helper is its caller's", stack("sync.(*Mutex).Lock", "context.WithDeadlineCause", "github.com/heddlehq/heddle/internal/calldeadline.New", heddleCall, benchLoop), bucketHeddle},
		{"heddle's child processes are heddle's", stack("github.com/heddlehq/heddle/grants/mcpkind/internal/childproc.(*Proc).Wait", "runtime.goexit"), bucketHeddle},
		{"heddle's stdio framing", stack("github.com/heddlehq/heddle/grants/mcpkind/internal/mcpstdio.(*conn).Read", readLoop), bucketTransport},
		{"heddle's new HTTP transport", stack("bytes.IndexByte", "github.com/heddlehq/heddle/grants/mcpkind/internal/httpconn.(*conn).readEvent", readLoop), bucketTransport},
		{"a body limit under net/http", stack("github.com/heddlehq/heddle/grants/mcpkind/internal/bodylimit.(*reader).Read", "net/http.(*body).Read"), bucketTransport},
		{"segmentio's decoder in heddle's transport", stack("github.com/segmentio/encoding/json.Parse", "github.com/heddlehq/heddle/grants/mcpkind/internal/mcpstdio.decodeMessage", readLoop), bucketJSON},
		{"reflection under encoding/json", stack("reflect.Value.Field", "encoding/json.structEncoder.encode", "encoding/json.Marshal", "github.com/modelcontextprotocol/go-sdk/internal/jsonrpc2.marshalToRaw", callTool), bucketJSON},
		{"go-sdk's internal/json", stack("github.com/modelcontextprotocol/go-sdk/internal/json.checkMaxDepth", "github.com/modelcontextprotocol/go-sdk/internal/jsonrpc2.DecodeMessage"), bucketJSON},
		{"go-sdk's UnmarshalJSON", stack("github.com/modelcontextprotocol/go-sdk/mcp.(*CallToolResult).UnmarshalJSON", callTool), bucketJSON},
		{"go-sdk's session", stack("github.com/modelcontextprotocol/go-sdk/internal/jsonrpc2.(*Connection).Call", callTool, heddleCall), bucketSession},
		{"go-sdk's stdio transport", stack("github.com/modelcontextprotocol/go-sdk/mcp.(*ioConn).Read.func1", "runtime.goexit"), bucketTransport},
		{"go-sdk's streamable client", stack("github.com/modelcontextprotocol/go-sdk/mcp.(*streamableClientConn).processStream", "github.com/modelcontextprotocol/go-sdk/mcp.(*streamableClientConn).handleSSE"), bucketTransport},
		{"JSON inside go-sdk's transport", stack("github.com/modelcontextprotocol/go-sdk/jsonrpc.EncodeMessage", "github.com/modelcontextprotocol/go-sdk/mcp.(*streamableClientConn).Write"), bucketJSON},
		{"net/http", stack("net/http.(*persistConn).readLoop", "runtime.goexit"), bucketTransport},
		{"bufio under a pipe", stack("bufio.(*Reader).ReadSlice", "github.com/modelcontextprotocol/go-sdk/mcp.(*ioConn).Read"), bucketTransport},
		{"a system call's leaf is the kernel's", stack("internal/runtime/syscall/linux.Syscall6", "syscall.Syscall", "syscall.write", "internal/poll.(*FD).Write", "os.(*File).Write"), bucketKernel},
		{"a futex is the kernel's", stack("runtime.futex", "runtime.futexwakeup", "runtime.notewakeup", "runtime.startm", "runtime.wakep"), bucketKernel},
		{"a syscall wrapper that is not the leaf is transport", stack("syscall.write", "internal/poll.(*FD).Write"), bucketTransport},
		{"allocation is the runtime's", stack("runtime.memclrNoHeapPointers", "runtime.mallocgc", "runtime.makeslice", "encoding/json.(*decodeState).literalStore"), bucketRuntime},
		{"GC workers are the runtime's", stack("runtime.scanObject", "runtime.gcDrain", "runtime.gcBgMarkWorker.func2", "runtime.systemstack", "runtime.gcBgMarkWorker", "runtime.goexit"), bucketRuntime},
		{"the scheduler is the runtime's", stack("runtime.lock2", "runtime.findRunnable", "runtime.schedule", "runtime.park_m", "runtime.mcall"), bucketRuntime},
		{"memmove is its caller's", stack("runtime.memmove", "bytes.(*Buffer).Write", "encoding/json.(*encodeState).marshal"), bucketJSON},
		{"a map lookup is its caller's", stack("internal/runtime/maps.(*Map).getWithKeySmall", "runtime.mapaccess2_faststr", heddleCall), bucketHeddle},
		{"the benchmark loop", stack("time.Now", benchLoop, "testing.(*B).runN"), bucketOther},
		{"the in-process test server", stack("github.com/heddlehq/heddle/internal/testmcp.echo", "github.com/modelcontextprotocol/go-sdk/mcp.(*ServerSession).handle"), bucketOther},
		{"no frame in a bucket", stack("indexbytebody", "runtime.goexit"), bucketOther},
		{"empty stack", nil, bucketOther},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := attribute(tt.stack); got != tt.want {
				t.Errorf("attribute(%v) = %v, want %v", tt.stack, got, tt.want)
			}
		})
	}
}

func TestSplitFunc(t *testing.T) {
	tests := []struct{ fn, pkg, sym string }{
		{"net/http.(*Transport).RoundTrip", "net/http", "(*Transport).RoundTrip"},
		{"github.com/segmentio/encoding/json.Parse", "github.com/segmentio/encoding/json", "Parse"},
		{"slices.SortFunc[go.shape.[]github.com/x/y.T,go.shape.struct {}]", "slices", "SortFunc[go.shape.[]github.com/x/y.T,go.shape.struct {}]"},
		{"vendor/golang.org/x/net/http2/hpack.(*Decoder).Write", "vendor/golang.org/x/net/http2/hpack", "(*Decoder).Write"},
		{"indexbytebody", "", "indexbytebody"},
	}
	for _, tt := range tests {
		if pkg, sym := splitFunc(tt.fn); pkg != tt.pkg || sym != tt.sym {
			t.Errorf("splitFunc(%q) = %q, %q; want %q, %q", tt.fn, pkg, sym, tt.pkg, tt.sym)
		}
	}
}

func TestSplitSamples(t *testing.T) {
	samples := []sample{
		{Stack: stack("runtime.futex"), Count: 3, CPU: 30e6},
		{Stack: stack("encoding/json.Marshal"), Count: 1, CPU: 10e6},
		{Stack: stack("runtime.mallocgc", "github.com/heddlehq/heddle/runtime_test.newTracedBenchPair"), Count: 5, CPU: 50e6},
		{Stack: stack("compress/flate.(*compressor).write", "runtime/pprof.profileWriter"), Count: 1, CPU: 10e6},
	}
	s := splitSamples(samples, 1000, 0)
	if s.Excluded != 6 || s.TotalSamples() != 4 {
		t.Fatalf("excluded %d, counted %d; want 6 and 4", s.Excluded, s.TotalSamples())
	}
	if got := s.Percent(bucketKernel); got != 75 {
		t.Errorf("kernel %% = %v, want 75", got)
	}
	if got := s.MicrosPerCall(bucketJSON); got != 10 {
		t.Errorf("JSON µs per call = %v, want 10", got)
	}
}

func TestReplaceMarked(t *testing.T) {
	const doc = "# Title\n\nbefore\n\n" + beginMarker + "\nold table\nold line\n" + endMarker + "\n\nafter\n"
	got, err := replaceMarked(doc, "new table\n")
	if err != nil {
		t.Fatal(err)
	}
	want := "# Title\n\nbefore\n\n" + beginMarker + "\nnew table\n" + endMarker + "\n\nafter\n"
	if got != want {
		t.Errorf("replaceMarked:\n%s\nwant:\n%s", got, want)
	}
	// Empty markers, and a body without its last newline.
	got, err = replaceMarked("a\n"+beginMarker+"\n"+endMarker+"\nb", "x")
	if want := "a\n" + beginMarker + "\nx\n" + endMarker + "\nb"; err != nil || got != want {
		t.Errorf("replaceMarked = %q, %v; want %q", got, err, want)
	}
}

func TestReplaceMarkedErrors(t *testing.T) {
	tests := []struct{ name, doc, want string }{
		{"no markers", "# Title\n\ntext\n", "no " + beginMarker},
		{"no end", beginMarker + "\n", "no " + endMarker},
		{"no begin", endMarker + "\n", "no " + beginMarker},
		{"reversed", endMarker + "\n" + beginMarker + "\n", "comes before"},
		{"twice", beginMarker + "\n" + endMarker + "\n" + beginMarker + "\n" + endMarker + "\n", "appears 2 times"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := replaceMarked(tt.doc, "table\n")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("replaceMarked error = %v, want one containing %q", err, tt.want)
			}
			if got != "" {
				t.Errorf("replaceMarked returned %q with its error", got)
			}
		})
	}
}

func TestBenchResult(t *testing.T) {
	out := []byte("goos: linux\nBenchmarkCall/http-proc/heddle-2   \t    5000\t    454095 ns/op\t    323400 p50-ns\nPASS\n")
	n, ns, err := benchResult(out, "BenchmarkCall/http-proc/heddle")
	if err != nil || n != 5000 || ns != 454095 {
		t.Errorf("benchResult = %d, %v, %v; want 5000, 454095, nil", n, ns, err)
	}
	if _, _, err := benchResult(out, "BenchmarkCall/http-proc/raw"); err == nil {
		t.Error("benchResult found a line for a benchmark that did not run")
	}
}

// TestReadProfile decodes a profile runtime/pprof writes. An allocation
// profile stands in for a CPU profile, whose samples would depend on the
// machine: its values are counts and bytes, so readProfile must refuse it
// for want of nanoseconds, after decoding it all.
func TestReadProfile(t *testing.T) {
	var buf bytes.Buffer
	if err := pprof.Lookup("allocs").WriteTo(&buf, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := readProfile(buf.Bytes()); err == nil || !strings.Contains(err.Error(), "not a CPU profile") {
		t.Errorf("readProfile(allocation profile) error = %v, want not a CPU profile", err)
	}
	if _, err := readProfile([]byte{0x1f, 0x8b, 0}); err == nil {
		t.Error("readProfile accepted a broken gzip stream")
	}
}

// TestReadCPUProfile profiles a busy loop and finds it in the samples.
func TestReadCPUProfile(t *testing.T) {
	if testing.Short() {
		t.Skip("spends 300ms of CPU")
	}
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		t.Skipf("CPU profiler in use: %v", err)
	}
	sink = spin(300 * time.Millisecond)
	pprof.StopCPUProfile()
	samples, err := readProfile(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var found int64
	for _, s := range samples {
		if s.Count < 1 || s.CPU <= 0 || len(s.Stack) == 0 {
			t.Errorf("sample %+v: want a count, CPU time and a stack", s)
		}
		for _, f := range s.Stack {
			if strings.HasSuffix(f.Func, "/internal/calltime.spin") && strings.HasSuffix(f.File, "calltime_test.go") {
				found += s.Count
				break
			}
		}
	}
	if found == 0 {
		t.Errorf("no sample of %d has spin on its stack", len(samples))
	}
}

// sink keeps spin's result, so that its loop is not optimised away.
var sink int

// spin keeps a CPU busy for d.
//
//go:noinline
func spin(d time.Duration) int {
	n := 0
	for end := time.Now().Add(d); time.Now().Before(end); {
		for i := range 1000 {
			n += i * i
		}
	}
	return n
}

func TestRuntimePartOf(t *testing.T) {
	tests := []struct {
		name  string
		stack []frame
		want  runtimePart
	}{
		{"a mark worker", stack("runtime.lock2", "runtime.scanObject", "runtime.gcDrain", "runtime.gcBgMarkWorker"), partGC},
		{"the Go 1.26 span scanner", stack("internal/runtime/gc/scan.scanSpanPackedAVX512", "runtime.scanSpan"), partGC},
		{"a sweep an allocation pays for", stack("runtime.sweepone", "runtime.deductSweepCredit", "runtime.(*mcentral).cacheSpan", "runtime.mallocgc"), partGC},
		{"an assist an allocation pays for", stack("runtime.gcAssistAlloc", "runtime.deductAssistCredit", "runtime.mallocgc"), partGC},
		{"the background sweeper", stack("runtime.unlock2", "runtime.bgsweep"), partGC},
		{"an allocation", stack("runtime.memclrNoHeapPointers", "runtime.mallocgc", "runtime.growslice", "encoding/json.Marshal"), partAlloc},
		{"the scheduler", stack("runtime.lock2", "runtime.findRunnable", "runtime.schedule", "runtime.park_m", "runtime.mcall"), partSchedule},
		{"a channel send", stack("runtime.chansend", "runtime.chansend1", "github.com/modelcontextprotocol/go-sdk/mcp.(*ioConn).Read"), partSchedule},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if b := attribute(tt.stack); b != bucketRuntime {
				t.Fatalf("attribute = %v, want %v", b, bucketRuntime)
			}
			if got := runtimePartOf(tt.stack); got != tt.want {
				t.Errorf("runtimePartOf = %v, want %v", partNames[got], partNames[tt.want])
			}
		})
	}
}

package main

import "strings"

// A bucket is one part of a call's CPU time.
type bucket int

// The buckets, in the order of the tables.
const (
	bucketHeddle    bucket = iota // heddle's own code, its transport aside
	bucketJSON                    // encoding and decoding JSON, and the reflection it does
	bucketSession                 // go-sdk's jsonrpc2 connection and ClientSession
	bucketTransport               // bytes to and from the server
	bucketKernel                  // inside system calls
	bucketRuntime                 // allocation, garbage collection, scheduling
	bucketOther                   // the benchmark's loop, the testing package, a test server in the process
	numBuckets
	bucketNone bucket = -1 // a frame that leaves the sample to its caller
)

// bucketNames are the buckets' names in the tables.
var bucketNames = [numBuckets]string{
	bucketHeddle:    "heddle",
	bucketJSON:      "JSON (go-sdk's encoding and decoding)",
	bucketSession:   "go-sdk's session (jsonrpc2 connection, ClientSession)",
	bucketTransport: "transport",
	bucketKernel:    "kernel (system calls)",
	bucketRuntime:   "Go runtime (GC, scheduler, allocation)",
	bucketOther:     "other (benchmark loop, testing package)",
}

func (b bucket) String() string {
	if b < 0 || b >= numBuckets {
		return "none"
	}
	return bucketNames[b]
}

const (
	heddleModule = "github.com/heddlehq/heddle"
	goSDK        = "github.com/modelcontextprotocol/go-sdk"
)

// attribute returns the bucket a sampled stack (leaf first) belongs to. The
// rule is attributionRule's:
//
//  1. A sample whose leaf is the entry of a system call is the kernel's.
//  2. Otherwise the innermost frame that belongs to a bucket decides
//     (frameBucket); frames of packages in no bucket — reflect, io, bytes,
//     sync, context, time, strconv, fmt, OpenTelemetry, jsonschema — leave
//     the sample to their caller, so that the reflection encoding/json does
//     is JSON's and the context heddle makes is heddle's.
//  3. A stack with no frame in any bucket is other.
func attribute(stack []frame) bucket {
	b, _ := attributeBy(stack)
	return b
}

// attributeBy is attribute, also returning the function that decided: the
// leaf for the kernel, the innermost frame in a bucket otherwise, "" when
// none is.
func attributeBy(stack []frame) (bucket, string) {
	if len(stack) > 0 && isSyscallEntry(stack[0].Func) {
		return bucketKernel, stack[0].Func
	}
	for _, f := range stack {
		if b := frameBucket(f.Func); b != bucketNone {
			return b, f.Func
		}
	}
	return bucketOther, ""
}

// frameBucket returns the bucket a function belongs to, or bucketNone.
func frameBucket(fn string) bucket {
	pkg, sym := splitFunc(fn)
	switch {
	case pkg == goSDK || strings.HasPrefix(pkg, goSDK+"/"):
		return goSDKBucket(strings.TrimPrefix(pkg, goSDK), sym)
	case pkg == heddleModule || strings.HasPrefix(pkg, heddleModule+"/"):
		return heddleBucket(strings.TrimPrefix(pkg, heddleModule))
	case underAny(pkg, jsonPackages):
		return bucketJSON
	case underAny(pkg, transportPackages):
		return bucketTransport
	case pkg == "testing" || strings.HasSuffix(pkg, "_test"):
		return bucketOther
	case pkg == "runtime" || strings.HasPrefix(pkg, "internal/runtime/"):
		if underAny(pkg, runtimeHelperPackages) || runtimeHelper(sym) {
			return bucketNone
		}
		return bucketRuntime
	}
	return bucketNone
}

// goSDKBucket splits go-sdk's frames (pkg relative to the module: "/mcp").
func goSDKBucket(pkg, sym string) bucket {
	switch {
	case pkg == "/internal/json" || pkg == "/jsonrpc" || encodes(sym):
		return bucketJSON
	case goSDKTransport[receiver(sym)]:
		return bucketTransport
	}
	return bucketSession
}

// heddleBucket splits heddle's frames (pkg relative to the module:
// "/runtime"). Every package under grants/mcpkind/internal/ but childproc
// carries bytes to and from MCP servers: the stdio framing, the HTTP
// transport, the body and message limits.
func heddleBucket(pkg string) bucket {
	const kindInternal = "/grants/mcpkind/internal/"
	switch {
	case strings.HasPrefix(pkg, kindInternal):
		if name, _, _ := strings.Cut(strings.TrimPrefix(pkg, kindInternal), "/"); name == "childproc" {
			return bucketHeddle
		}
		return bucketTransport
	case strings.HasSuffix(pkg, "_test"), pkg == "/internal/testmcp" || strings.HasPrefix(pkg, "/internal/testmcp/"):
		return bucketOther
	}
	return bucketHeddle
}

// encodes reports whether a go-sdk function encodes or decodes JSON by its
// name: MarshalJSON, UnmarshalJSON, marshalToRaw, EncodeMessage,
// DecodeMessage, (*TextContent).fromWire, unmarshalContent.
func encodes(sym string) bool {
	for _, s := range []string{"arshal", "ncode", "ecode", "romWire"} {
		if strings.Contains(sym, s) {
			return true
		}
	}
	return false
}

// goSDKTransport are go-sdk's transport types and functions, by receiver
// or function name: the stdio and in-memory transports (mcp/cmd.go,
// mcp/transport.go) and the Streamable HTTP and SSE clients.
var goSDKTransport = map[string]bool{
	"CommandTransport": true, "pipeRWC": true, "rwc": true,
	"IOTransport": true, "StdioTransport": true, "InMemoryTransport": true, "NewInMemoryTransports": true,
	"ioConn": true, "newIOConn": true, "newIOConnLimited": true, "frameLimitReader": true, "readBatch": true,
	"StreamableClientTransport": true, "streamableClientConn": true,
	"scanEvents": true, "scanEventsLimited": true, "readEventLine": true, "setStandardHeaders": true,
	"calculateReconnectDelay": true, "isTransientHTTPStatus": true, "protocolVersionFromMessage": true,
	"SSEClientTransport": true, "sseClientConn": true,
}

// jsonPackages are the JSON codecs outside go-sdk (with what is under them).
var jsonPackages = []string{"encoding/json", "github.com/segmentio/encoding", "github.com/segmentio/asm"}

// transportPackages are the standard library's (and x/net's) networking,
// buffered I/O, TLS, files and pipes, and child processes.
var transportPackages = []string{
	"net", "bufio", "crypto", "os", "internal/poll", "syscall", "internal/syscall",
	"mime", "vendor/golang.org/x/net", "golang.org/x/net", "vendor/golang.org/x/crypto", "golang.org/x/crypto",
}

// runtimeHelperPackages are the runtime's packages whose work is the
// caller's: atomics, maps, CPU-specific helpers.
var runtimeHelperPackages = []string{"internal/runtime/atomic", "internal/runtime/maps", "internal/runtime/sys", "internal/runtime/math"}

// runtimeHelper reports whether a function of package runtime does work
// its caller asked for, rather than the runtime's own: copying, clearing
// and comparing memory, map operations, hashing, string and interface
// conversions, clock reads, random numbers and defer. Those belong to no
// bucket. runtime.goexit and runtime.main, the bottom frames of goroutines,
// belong to none either.
func runtimeHelper(sym string) bool {
	if sym == "goexit" || sym == "main" {
		return true
	}
	for _, p := range runtimeHelperPrefixes {
		if strings.HasPrefix(sym, p) {
			return true
		}
	}
	return false
}

// runtimeHelperPrefixes name runtimeHelper's functions by prefix.
var runtimeHelperPrefixes = []string{
	"memmove", "memclr", "memequal", "map", "aeshash", "memhash", "strhash", "nilinterhash", "interhash", "typehash",
	"concatstring", "slicebytetostring", "stringtoslice", "slicerunetostring", "cmpstring", "intstring", "encoderune", "decoderune",
	"convT", "convI", "assertE2I", "typeAssert", "getitab", "ifaceeq", "efaceeq",
	"nanotime", "walltime", "time_now", "rand", "cheaprand",
	"deferproc", "deferreturn", "duff", "panic", "goPanic",
}

// isSyscallEntry reports whether a leaf function is where a system call
// enters the kernel: the runtime's and package syscall's raw system calls,
// and the runtime functions that are each one system call. The profiling
// signal is delivered as the thread returns from the kernel, so a sample
// taken inside a system call has one of these as its leaf.
func isSyscallEntry(fn string) bool {
	if strings.HasPrefix(fn, "internal/runtime/syscall") || strings.HasPrefix(fn, "runtime/internal/syscall") {
		return true
	}
	pkg, sym := splitFunc(fn)
	switch pkg {
	case "syscall":
		return strings.HasPrefix(sym, "Syscall") || strings.HasPrefix(sym, "RawSyscall") ||
			sym == "rawSyscallNoError" || sym == "rawVforkSyscall"
	case "runtime":
		return runtimeSyscalls[sym]
	}
	return false
}

// runtimeSyscalls are the runtime's functions (linux/amd64) that are one
// system call each.
var runtimeSyscalls = map[string]bool{
	"futex": true, "epollwait": true, "usleep": true, "osyield": true, "nanosleep": true,
	"read": true, "write1": true, "open": true, "closefd": true, "pipe2": true,
	"madvise": true, "mmap": true, "sysMmap": true, "munmap": true, "sysMunmap": true, "mincore": true,
	"rtsigprocmask": true, "rt_sigaction": true, "sigaltstack": true, "raise": true, "raiseproc": true,
	"tgkill": true, "getpid": true, "gettid": true, "clone": true, "exit": true, "exitThread": true,
	"setitimer": true, "timer_create": true, "timer_settime": true, "timer_delete": true,
	"sched_getaffinity": true, "sigreturn__sigaction": true,
}

// underAny reports whether pkg is one of roots or a package under one.
func underAny(pkg string, roots []string) bool {
	for _, r := range roots {
		if pkg == r || strings.HasPrefix(pkg, r+"/") {
			return true
		}
	}
	return false
}

// splitFunc splits a function's symbol name into its package path and the
// rest: "net/http.(*Transport).RoundTrip" → "net/http", "(*Transport).RoundTrip".
// Type arguments ("F[...]") are not part of the package path. A name with no
// package (an assembly routine like "indexbytebody") has pkg "".
func splitFunc(fn string) (pkg, sym string) {
	head := fn
	if i := strings.IndexByte(head, '['); i >= 0 {
		head = head[:i]
	}
	slash := strings.LastIndexByte(head, '/')
	dot := strings.IndexByte(head[slash+1:], '.')
	if dot < 0 {
		return "", fn
	}
	dot += slash + 1
	return fn[:dot], fn[dot+1:]
}

// receiver returns a symbol's receiver type, or its function name when it
// has none: "(*ioConn).Read.func1" → "ioConn", "rwc.Read" → "rwc",
// "scanEvents.func1" → "scanEvents".
func receiver(sym string) string {
	if rest, ok := strings.CutPrefix(sym, "("); ok {
		name, _, _ := strings.Cut(rest, ")")
		name = strings.TrimPrefix(name, "*")
		name, _, _ = strings.Cut(name, "[")
		return name
	}
	name, _, _ := strings.Cut(sym, ".")
	name, _, _ = strings.Cut(name, "[")
	return name
}

// A runtimePart is one part of the Go runtime's bucket.
type runtimePart int

const (
	partGC       runtimePart = iota // the collector: marking, sweeping, assists, write barriers
	partAlloc                       // allocating, outside the collector's assists and sweeps
	partSchedule                    // scheduling, channels, timers, the network poller, signals, the rest
	numParts
)

var partNames = [numParts]string{
	partGC:       "of which garbage collection",
	partAlloc:    "of which allocation",
	partSchedule: "of which scheduler, channels and the rest",
}

// runtimePartOf splits a sample of the Go runtime's bucket: garbage
// collection if any frame of its stack is the collector's, else allocation
// if any frame allocates, else the scheduler and the rest.
func runtimePartOf(stack []frame) runtimePart {
	alloc := false
	for _, f := range stack {
		pkg, sym := splitFunc(f.Func)
		switch {
		case strings.HasPrefix(pkg, "internal/runtime/gc"):
			return partGC
		case pkg != "runtime":
		case hasAnyPrefix(sym, gcPrefixes):
			return partGC
		case hasAnyPrefix(sym, allocPrefixes):
			alloc = true
		}
	}
	if alloc {
		return partAlloc
	}
	return partSchedule
}

// gcPrefixes name the collector's functions in package runtime.
var gcPrefixes = []string{
	"gc", "(*gc", "bgsweep", "bgscavenge", "(*scavenger", "sweepone", "(*sweepLocked)", "deductSweepCredit",
	"markroot", "scan", "greyobject", "tryDeferToSpanScan", "wbBuf", "(*wbBuf)", "bulkBarrier", "(*mheap).reclaim",
	"forEachP", "stopTheWorld", "startTheWorld", "finishsweep",
}

// allocPrefixes name the allocator's functions in package runtime.
var allocPrefixes = []string{
	"mallocgc", "newobject", "newarray", "makeslice", "growslice", "makemap", "makechan",
	"rawstring", "rawbyteslice", "rawruneslice", "(*mcache)", "(*mcentral)", "(*mheap)", "nextFreeFast",
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

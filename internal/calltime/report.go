package main

import (
	"fmt"
	"strings"
)

// sideNames are the benchmark's sides as the tables name them.
var sideNames = map[string]string{"heddle": "heddle", "raw": "raw go-sdk"}

// A runResult is one profiled benchmark: a transport and a side.
type runResult struct {
	Transport string
	Side      string // "heddle" or "raw"
	Split     *split
}

// provenance says when, where and on what the runs were made.
type provenance struct {
	When         string // "2026-12-02 16:50 UTC"
	Commit       string
	Dirty        bool
	LoadBefore   string // the 1-minute load average
	LoadAfter    string
	CPUs         int
	GoVersion    string
	CallsPerSide int
}

// attributionRule is the rule attribute applies, as the document states it.
const attributionRule = `Each sample is attributed by one rule:

1. **kernel** if its innermost frame (the leaf) is where a system call
   enters the kernel: ` + "`internal/runtime/syscall`" + `, ` + "`syscall.Syscall*`" + ` and
   ` + "`syscall.RawSyscall*`" + `, or a runtime function that is one system call
   (` + "`runtime.futex`, `runtime.usleep`, `runtime.write1`, `runtime.madvise`" + `, …).
   The profiling signal arrives as the thread leaves the kernel, so these
   samples are time spent inside system calls.
2. Otherwise the **innermost frame that belongs to a bucket** decides:
   - **Go runtime**: packages ` + "`runtime`" + ` and ` + "`internal/runtime/…`" + ` — allocation
     (` + "`mallocgc`" + `), the garbage collector's workers and assists, the
     scheduler, channels, stacks, signals — except the work a caller asked
     for: copying, clearing and comparing memory, map operations, hashing,
     string and interface conversions, clock reads, random numbers, atomics
     and defer
     belong to no bucket.
   - **JSON**: ` + "`encoding/json`, `github.com/segmentio/encoding/…`, `github.com/segmentio/asm/…`" + `,
     go-sdk's ` + "`internal/json`" + ` and ` + "`jsonrpc`" + `, and go-sdk's functions that encode
     or decode by name (` + "`MarshalJSON`, `UnmarshalJSON`, `EncodeMessage`, `DecodeMessage`, `marshalToRaw`, `fromWire`" + `).
   - **transport**: ` + "`net`, `net/…`, `bufio`, `crypto/…`, `os`, `os/exec`, `internal/poll`, `syscall`, `mime/…`, `golang.org/x/net/…`" + `;
     go-sdk's transports (` + "`CommandTransport`, `ioConn`, `InMemoryTransport`, `StreamableClientTransport`, `streamableClientConn`" + `,
     event-stream scanning); heddle's packages under ` + "`grants/mcpkind/internal/`" + `
     but ` + "`childproc`" + ` (its stdio framing, HTTP transport, body and message limits).
   - **go-sdk's session**: every other go-sdk frame (the jsonrpc2 connection, ` + "`ClientSession`" + `).
   - **heddle**: every other package of heddle's module.
   - **other**: the benchmark's own code (` + "`runtime_test`" + `), the ` + "`testing`" + ` package, and
     heddle's test server (` + "`internal/testmcp`" + `) when it runs in the process.

   Frames of packages in no bucket (` + "`reflect`, `io`, `bytes`, `strings`, `strconv`, `sync`, `context`, `time`, `fmt`" + `,
   OpenTelemetry, jsonschema) leave the sample to the nearest caller that
   has one: the reflection ` + "`encoding/json`" + ` does is JSON's, the deadline context
   heddle makes is heddle's, and memory a JSON decoder allocates is the
   runtime's (` + "`mallocgc`" + ` is the innermost frame in a bucket).
3. A stack with no frame in any bucket is **other**.

The Go runtime's row is split in three by the whole stack: **garbage
collection** if any frame is the collector's (its mark workers, assists and
sweeps, also those an allocation pays for, write barriers), else
**allocation** if any frame allocates (` + "`mallocgc`" + ` and its callers in the runtime),
else **the scheduler, channels and the rest** (timers, the network poller,
signals).`

// report renders the tables, one per transport, with what they are.
func report(p provenance, runs []runResult) string {
	var b strings.Builder
	dirty := ""
	if p.Dirty {
		dirty = ", with uncommitted changes in the checkout"
	}
	fmt.Fprintf(&b, "Made by `make calltime` on %s at commit %s%s; load average %s before and %s after, %d CPUs, %s.\n\n",
		p.When, p.Commit, dirty, p.LoadBefore, p.LoadAfter, p.CPUs, p.GoVersion)
	fmt.Fprintf(&b, "`BenchmarkCall/<transport>/{heddle,raw}`, %d calls each, in a process of its own, "+
		"profiled by `go test -cpuprofile` (100 samples a CPU-second). The profile is the client's process: a server "+
		"in a process of its own is not in it. Samples of the benchmark's setup and teardown (stacks through "+
		"`newTracedBenchPair`, `TestMain` or the test's cleanup) and of the profiler are left out; those of the "+
		"connection's goroutines during the setup's warm-up calls cannot be told apart and stay in. "+
		"µs per call is a bucket's sampled CPU time divided by the calls made (b.N, and the one call of the testing "+
		"package's first run); the CPU time is the client's, not the call's wall time. A sample stands for 10 ms of a "+
		"thread's CPU time, and a thread that runs in bursts shorter than that can be missed: the sampled time is a "+
		"lower bound, and a bucket of a few samples is a rough figure.\n\n", p.CallsPerSide)
	b.WriteString(attributionRule)
	b.WriteString("\n")
	var transports []string
	byKey := map[[2]string]*split{}
	for _, r := range runs {
		if _, ok := byKey[[2]string{r.Transport, "heddle"}]; !ok {
			if _, ok := byKey[[2]string{r.Transport, "raw"}]; !ok {
				transports = append(transports, r.Transport)
			}
		}
		byKey[[2]string{r.Transport, r.Side}] = r.Split
	}
	for _, tr := range transports {
		var sides []string
		for _, side := range []string{"heddle", "raw"} {
			if byKey[[2]string{tr, side}] != nil {
				sides = append(sides, side)
			}
		}
		writeTable(&b, tr, sides, byKey)
	}
	return b.String()
}

// writeTable writes one transport's table, a pair of columns per side.
func writeTable(b *strings.Builder, tr string, sides []string, byKey map[[2]string]*split) {
	fmt.Fprintf(b, "\n### %s\n\n", tr)
	for i, side := range sides {
		s := byKey[[2]string{tr, side}]
		sep := ";"
		if i == len(sides)-1 {
			sep = "."
		}
		fmt.Fprintf(b, "- %s: %s calls, %.1f µs of wall time each, %d samples (%d more left out)%s\n",
			sideNames[side], thousands(s.Calls), s.NsPerOp/1e3, s.TotalSamples(), s.Excluded, sep)
	}
	b.WriteString("\n| bucket |")
	for _, side := range sides {
		fmt.Fprintf(b, " %s: %% | %s: µs per call |", sideNames[side], sideNames[side])
	}
	b.WriteString("\n| --- |")
	for range sides {
		b.WriteString(" ---: | ---: |")
	}
	b.WriteString("\n")
	for bk := range numBuckets {
		fmt.Fprintf(b, "| %s |", bk)
		for _, side := range sides {
			s := byKey[[2]string{tr, side}]
			fmt.Fprintf(b, " %.1f %% | %.1f |", s.Percent(bk), s.MicrosPerCall(bk))
		}
		b.WriteString("\n")
		if bk != bucketRuntime {
			continue
		}
		for p := range numParts {
			fmt.Fprintf(b, "| &nbsp;&nbsp;%s |", partNames[p])
			for _, side := range sides {
				s := byKey[[2]string{tr, side}]
				fmt.Fprintf(b, " %.1f %% | %.1f |", s.PartPercent(p), s.PartMicrosPerCall(p))
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("| **total** |")
	for _, side := range sides {
		s := byKey[[2]string{tr, side}]
		fmt.Fprintf(b, " 100 %% | %.1f |", float64(s.TotalCPU())/1e3/float64(max(s.Calls, 1)))
	}
	b.WriteString("\n")
}

// thousands formats n with commas: 12,345.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

package main

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// A split is one profiled run's CPU time, bucket by bucket.
type split struct {
	Calls    int     // calls the run made: b.N, and the first run's one
	NsPerOp  float64 // wall time per call, as the benchmark reported it
	Samples  [numBuckets]int
	CPU      [numBuckets]int64          // nanoseconds
	Excluded int                        // samples of the benchmark's setup and teardown, and of the profiler
	By       [numBuckets]map[string]int // samples by the function that decided their bucket
	Parts    [numParts]int64            // the Go runtime bucket's CPU time by part, nanoseconds
	PartN    [numParts]int              // and its samples
}

// TotalSamples returns the samples counted in the buckets.
func (s *split) TotalSamples() int {
	n := 0
	for _, v := range s.Samples {
		n += v
	}
	return n
}

// TotalCPU returns the CPU time counted in the buckets, in nanoseconds.
func (s *split) TotalCPU() int64 {
	var n int64
	for _, v := range s.CPU {
		n += v
	}
	return n
}

// Percent returns bucket b's share of the samples counted.
func (s *split) Percent(b bucket) float64 { return s.percent(s.Samples[b]) }

// MicrosPerCall returns bucket b's CPU time per call, in microseconds.
func (s *split) MicrosPerCall(b bucket) float64 { return s.perCall(s.CPU[b]) }

// percent is n samples' share of all those counted.
func (s *split) percent(n int) float64 {
	t := s.TotalSamples()
	if t == 0 {
		return 0
	}
	return 100 * float64(n) / float64(t)
}

// perCall is ns nanoseconds of CPU time per call, in microseconds.
func (s *split) perCall(ns int64) float64 {
	if s.Calls == 0 {
		return 0
	}
	return float64(ns) / 1e3 / float64(s.Calls)
}

// excludedFuncs are where samples that are not a call's start: the
// benchmark's setup (opening the runtime and the raw sessions, the warm-up
// calls on the benchmark's goroutine), the test binary's TestMain (building
// the test server, goleak's check), the cleanup that closes everything, and
// the profiler writing the profile.
var excludedFuncs = []string{
	heddleModule + "/runtime_test.newTracedBenchPair",
	heddleModule + "/runtime_test.TestMain",
	"testing.(*common).runCleanup",
	"runtime/pprof.",
}

// excluded reports whether a stack has a frame of excludedFuncs.
func excluded(stack []frame) bool {
	for _, f := range stack {
		for _, p := range excludedFuncs {
			if strings.HasPrefix(f.Func, p) {
				return true
			}
		}
	}
	return false
}

// splitSamples attributes each sample of a run's profile to its bucket.
func splitSamples(samples []sample, calls int, nsPerOp float64) *split {
	s := &split{Calls: calls, NsPerOp: nsPerOp}
	for _, smp := range samples {
		if excluded(smp.Stack) {
			s.Excluded += int(smp.Count)
			continue
		}
		b, by := attributeBy(smp.Stack)
		s.Samples[b] += int(smp.Count)
		if s.By[b] == nil {
			s.By[b] = map[string]int{}
		}
		s.By[b][by] += int(smp.Count)
		if b == bucketRuntime {
			p := runtimePartOf(smp.Stack)
			s.Parts[p] += smp.CPU
			s.PartN[p] += int(smp.Count)
		}
		s.CPU[b] += smp.CPU
	}
	return s
}

// why writes, for each bucket, the n functions that decided most of its
// samples: a check of the attribution against the profile.
func (s *split) why(w io.Writer, n int) {
	for b := range numBuckets {
		fns := slices.SortedFunc(maps.Keys(s.By[b]), func(x, y string) int {
			return cmp.Or(cmp.Compare(s.By[b][y], s.By[b][x]), cmp.Compare(x, y))
		})
		fmt.Fprintf(w, "  %s: %d samples\n", b, s.Samples[b])
		for _, fn := range fns[:min(n, len(fns))] {
			fmt.Fprintf(w, "    %5d  %s\n", s.By[b][fn], fn)
		}
	}
}

// PartPercent returns part p of the Go runtime's share of all the samples
// counted.
func (s *split) PartPercent(p runtimePart) float64 { return s.percent(s.PartN[p]) }

// PartMicrosPerCall returns part p of the Go runtime's CPU time per call,
// in microseconds.
func (s *split) PartMicrosPerCall(p runtimePart) float64 { return s.perCall(s.Parts[p]) }

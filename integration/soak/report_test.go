//go:build soak

package soak

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
)

// report is what a soak found: written as markdown (printed, and to
// soak-results.md) and as JSON (soak-results.json).
type report struct {
	Date     string `json:"date"`
	Machine  string `json:"machine"`
	Duration string `json:"duration"`
	Warmup   string `json:"warmup"`
	Callers  int    `json:"callers"`
	Servers  string `json:"servers"`
	Settings string `json:"settings"`

	Calls     int                       `json:"calls"`
	PerSecond float64                   `json:"calls_per_second"`
	ByOutcome map[string]map[string]int `json:"by_outcome"` // outcome → code → calls
	ByKind    map[string]map[string]int `json:"by_kind"`
	ByAgent   map[string]map[string]int `json:"by_agent"`
	P50       float64                   `json:"p50_ms"`
	P99       float64                   `json:"p99_ms"`
	Max       float64                   `json:"max_ms"`
	WarmCalls int                       `json:"warmup_calls"`
	WarmBy    map[string]map[string]int `json:"warmup_by_outcome"`

	Limit         string         `json:"deadline_with_margin"`
	Late          int            `json:"late"`
	LateStarved   int            `json:"late_starved"` // of Late, those the machine's load explains
	LateCalls     []slowCall     `json:"late_calls,omitempty"`
	Uncoded       int            `json:"uncoded"`
	UncodedCalls  []slowCall     `json:"uncoded_calls,omitempty"`
	UncodedLogged int            `json:"uncoded_logged"` // serve's "a call or listing failed" warnings
	UncodedLog    []string       `json:"uncoded_log,omitempty"`
	Logged        map[string]int `json:"logged"` // serve's warnings and errors, by level and message

	LoadMean float64 `json:"load_mean"` // the machine's load average during the soak
	LoadPeak float64 `json:"load_peak"`
	WaitWarm float64 `json:"serve_cpu_wait_ms_per_s_warmup"` // serve's wait for a CPU
	WaitSoak float64 `json:"serve_cpu_wait_ms_per_s_soak"`

	Chaos       map[string]int `json:"chaos"`
	ChaosFailed []event        `json:"chaos_failed,omitempty"`
	Events      []event        `json:"events"`

	Baseline sample   `json:"baseline"`
	Peak     sample   `json:"peak"`
	Final    sample   `json:"final"`
	Bounds   sample   `json:"bounds"`
	Series   []sample `json:"series"`

	ServeExit int      `json:"serve_exit"`
	Left      []int    `json:"left,omitempty"` // processes that outlived serve
	Zombies   int      `json:"zombies"`        // serve's unreaped children before it stopped
	Problems  []string `json:"problems"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// markdown renders the report for a reader, and for docs/reliability.md.
func (r *report) markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# Soak %s\n\n", r.Date)
	p("- machine: %s\n- duration: %s after a warm-up of %s; %d callers\n- servers: %s\n- settings: %s\n", r.Machine, r.Duration, r.Warmup, r.Callers, r.Servers, r.Settings)
	p("- the machine's load average during the soak: mean %.1f, peak %.1f; serve waited for a CPU %.0f ms a second (%.0f in the warm-up)\n\n", r.LoadMean, r.LoadPeak, r.WaitSoak, r.WaitWarm)
	p("## Calls\n\n%d calls (%.0f a second), p50 %.1f ms, p99 %.1f ms, max %.1f ms; %d past the deadline (%s), %d of them while the machine's other work starved serve or the soak; %d without a code; serve logged %d uncoded failures.\n\n",
		r.Calls, r.PerSecond, r.P50, r.P99, r.Max, r.Late, r.Limit, r.LateStarved, r.Uncoded, r.UncodedLogged)
	p("| outcome | code | calls |\n| --- | --- | --- |\n")
	for _, o := range slices.Sorted(maps.Keys(r.ByOutcome)) {
		for _, c := range slices.Sorted(maps.Keys(r.ByOutcome[o])) {
			p("| %s | %s | %d |\n", o, c, r.ByOutcome[o][c])
		}
	}
	p("\n| request | ok | refusal | error |\n| --- | --- | --- | --- |\n")
	for _, k := range slices.Sorted(maps.Keys(r.ByKind)) {
		m := r.ByKind[k]
		p("| %s | %d | %d | %d |\n", k, m[outcomeOK], m[outcomeRefusal], m[outcomeError])
	}
	p("\n| agent | ok | refusal | error |\n| --- | --- | --- | --- |\n")
	for _, k := range slices.Sorted(maps.Keys(r.ByAgent)) {
		m := r.ByAgent[k]
		p("| %s | %d | %d | %d |\n", k, m[outcomeOK], m[outcomeRefusal], m[outcomeError])
	}
	p("\nWarm-up: %d calls: %v.\n", r.WarmCalls, r.WarmBy)
	for _, c := range r.LateCalls[:min(keep, len(r.LateCalls))] {
		p("\n- late: %s at %v: %s %s %s after %v (%v more CPU wait than usual meanwhile)", c.Kind, c.At.Round(time.Millisecond), c.Path, c.Outcome, c.Code, c.Took.Round(time.Millisecond), c.Starved.Round(time.Millisecond))
	}
	for _, c := range r.UncodedCalls {
		p("\n- uncoded: %s at %v: %s %s %s after %v", c.Kind, c.At.Round(time.Millisecond), c.Path, c.Outcome, c.Code, c.Took.Round(time.Millisecond))
	}
	for _, l := range r.UncodedLog {
		p("\n- serve logged: %s", l)
	}
	p("\n\nserve's warnings and errors:\n\n")
	for _, m := range slices.Sorted(maps.Keys(r.Logged)) {
		p("- %s: %d\n", m, r.Logged[m])
	}
	p("\n## Chaos\n\n")
	for _, a := range slices.Sorted(maps.Keys(r.Chaos)) {
		p("- %s: %d\n", a, r.Chaos[a])
	}
	for _, e := range r.ChaosFailed {
		p("- failed at %v: %s %s: %s\n", e.At.Round(time.Millisecond), e.Action, e.Target, e.Detail)
	}
	p("\n## serve's process\n\n| | goroutines | fds | RSS | processes |\n| --- | --- | --- | --- | --- |\n")
	for _, s := range []sample{r.Baseline, r.Peak, r.Final, r.Bounds} {
		p("| %s | %d | %d | %s | %d |\n", s.Phase, s.Goroutines, s.FDs, mib(s.RSS), s.Procs)
	}
	p("\nOver time (every %d-th sample):\n\n| at | phase | goroutines | fds | RSS | processes |\n| --- | --- | --- | --- | --- | --- |\n", stride(len(r.Series)))
	for i, s := range r.Series {
		if i%stride(len(r.Series)) == 0 || i == len(r.Series)-1 {
			p("| %v | %s | %d | %d | %s | %d |\n", s.At.Round(time.Second), s.Phase, s.Goroutines, s.FDs, mib(s.RSS), s.Procs)
		}
	}
	p("\nserve exited %d; %d zombies before it stopped; processes left after it: %v.\n", r.ServeExit, r.Zombies, r.Left)
	if len(r.Problems) == 0 {
		p("\n**Passed.**\n")
	} else {
		p("\n**Failed:**\n\n")
		for _, pr := range r.Problems {
			p("- %s\n", pr)
		}
	}
	return b.String()
}

// stride keeps about 20 rows of a series.
func stride(n int) int { return max(1, n/20) }

// write writes the report to path (markdown) and to path's .json twin.
func (r *report) write(path string) error {
	if err := os.WriteFile(path, []byte(r.markdown()), 0o644); err != nil {
		return err
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(strings.TrimSuffix(path, ".md")+".json", append(js, '\n'), 0o644)
}

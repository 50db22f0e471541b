package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// rawGoSDK is the client every ratio is relative to.
const rawGoSDK = "raw go-sdk"

// tableHeader is the table's first two lines.
const tableHeader = "| scenario | transport | callers | client | p50 | calls/s | CPU | bytes | allocs |\n" +
	"| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |\n"

// renderTable writes the table: a line per row, each number its median
// over the rounds and, in parentheses, its ratio to raw go-sdk's in the
// same scenario, transport and callers (row.ratios).
func renderTable(res *results) string {
	var b strings.Builder
	b.WriteString(tableHeader)
	for _, w := range res.rows {
		cells := []string{w.scenario, w.transport, w.callers, w.client}
		base := res.index[rowKey{w.scenario, w.transport, w.callers, rawGoSDK}]
		if base != nil && base.err != nil {
			base = nil
		}
		cells = append(cells, w.cells(base)...)
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	return b.String()
}

// cells are the row's five numbers, as its kind has them, with their
// ratios to base's (none when base is nil).
func (w *row) cells(base *row) []string {
	if w.err != nil || len(w.samples) == 0 {
		msg := "no sample"
		if w.err != nil {
			msg = "failed: " + strings.ReplaceAll(headLine(w.err.Error()), "|", "/")
		}
		return []string{msg, "", "", "", ""}
	}
	m, r := w.medians(), metricwise(func(func(sample) float64) float64 { return nan })
	if base != nil {
		r = w.ratios(base)
	}
	const none = "–"
	switch w.kind {
	case startupRow:
		return []string{
			withRatio(fmtSeconds(m.p50), m.p50, r.p50), none,
			withRatio(fmtSeconds(m.cpuPerCall), m.cpuPerCall, r.cpuPerCall),
			withRatio(fmtBytes(m.bytesPer), m.bytesPer, r.bytesPer),
			withRatio(fmtCount(m.allocsPer), m.allocsPer, r.allocsPer),
		}
	case heldRow:
		return []string{none, none, none, withRatio(fmtBytes(m.bytesPer), m.bytesPer, r.bytesPer), none}
	}
	return []string{
		withRatio(fmtSeconds(m.p50), m.p50, r.p50),
		withRatio(fmtCount(m.callsPerSec), m.callsPerSec, r.callsPerSec),
		withRatio(fmtSeconds(m.cpuPerCall), m.cpuPerCall, r.cpuPerCall),
		withRatio(fmtBytes(m.bytesPer), m.bytesPer, r.bytesPer),
		withRatio(fmtCount(m.allocsPer), m.allocsPer, r.allocsPer),
	}
}

// withRatio is s followed by ratio as "(1.23×)", "n/a" when v is not a
// number, or s alone when ratio is not.
func withRatio(s string, v, ratio float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	if math.IsNaN(ratio) {
		return s
	}
	return fmt.Sprintf("%s (%.2f×)", s, ratio)
}

// fmtSeconds writes a duration in µs, ms or s with three significant
// digits or so.
func fmtSeconds(s float64) string {
	switch {
	case s < 1e-3:
		return trimFloat(s*1e6) + " µs"
	case s < 1:
		return trimFloat(s*1e3) + " ms"
	}
	return trimFloat(s) + " s"
}

// fmtBytes writes a size in B, KB or MB (of 1,000).
func fmtBytes(b float64) string {
	switch a := math.Abs(b); {
	case a < 1e3:
		return fmt.Sprintf("%.0f B", b)
	case a < 1e6:
		return trimFloat(b/1e3) + " KB"
	}
	return trimFloat(b/1e6) + " MB"
}

// fmtCount writes a count rounded to a whole number, with thousands
// separated.
func fmtCount(n float64) string {
	s := strconv.FormatInt(int64(math.Round(n)), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "−" + s
	}
	return s
}

// trimFloat writes x with one decimal under 100 and none above.
func trimFloat(x float64) string {
	if math.Abs(x) < 100 {
		return strconv.FormatFloat(x, 'f', 1, 64)
	}
	return fmtCount(x)
}

func headLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

package main

import (
	"encoding/csv"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

var nan = math.NaN()

// rowKind says what a row's columns mean.
type rowKind int

const (
	callRow    rowKind = iota // per call: latency, throughput, CPU, bytes, allocations
	startupRow                // per start-up: its time, CPU, bytes, allocations
	heldRow                   // per held session: live heap
)

// rowKey names a row; rows of one scenario, transport and callers are
// compared with the raw go-sdk row of the same three.
type rowKey struct {
	scenario, transport, callers, client string
}

// row is one line of the table: a client's samples, one per round.
type row struct {
	rowKey
	kind    rowKind
	samples []sample
	err     error // the first failure; the row then shows it instead of numbers
}

// results are the rows in the order they were first added.
type results struct {
	rows      []*row
	index     map[rowKey]*row
	protocols []string // "client over transport version", as the clients told
}

func newResults() *results { return &results{index: map[rowKey]*row{}} }

// row returns the row of k, adding it if it is new.
func (r *results) row(k rowKey, kind rowKind) *row {
	if w, ok := r.index[k]; ok {
		return w
	}
	w := &row{rowKey: k, kind: kind}
	r.rows = append(r.rows, w)
	r.index[k] = w
	return w
}

// add records the sample of round, or its failure.
func (r *results) add(k rowKey, kind rowKind, round int, s sample, err error) {
	w := r.row(k, kind)
	if err != nil {
		if w.err == nil {
			w.err = err
		}
		return
	}
	s.round = round
	w.samples = append(w.samples, s)
}

// err joins the rows' failures.
func (r *results) err() error {
	var errs []error
	for _, w := range r.rows {
		if w.err != nil {
			errs = append(errs, fmt.Errorf("%s / %s / %s / %s: %w", w.scenario, w.transport, w.callers, w.client, w.err))
		}
	}
	return errors.Join(errs...)
}

// medians is a row's median sample: each metric's median over the rounds.
func (w *row) medians() sample {
	return metricwise(func(metric func(sample) float64) float64 {
		xs := make([]float64, 0, len(w.samples))
		for _, s := range w.samples {
			if v := metric(s); !math.IsNaN(v) {
				xs = append(xs, v)
			}
		}
		return median(xs)
	})
}

// ratios are the row's ratios to base, metric by metric: the median, over
// the rounds both rows measured, of the row's value over base's in the same
// round. Clients that take turns within a round meet the machine in the
// same state, so a round's ratio leaves out the drift from round to round
// (a noisy neighbour, the CPUs' clocks) that a ratio of the two medians
// keeps.
func (w *row) ratios(base *row) sample {
	inRound := make(map[int]sample, len(base.samples))
	for _, s := range base.samples {
		inRound[s.round] = s
	}
	return metricwise(func(metric func(sample) float64) float64 {
		xs := make([]float64, 0, len(w.samples))
		for _, s := range w.samples {
			b, ok := inRound[s.round]
			if v, bv := metric(s), metric(b); ok && !math.IsNaN(v) && !math.IsNaN(bv) && bv != 0 {
				xs = append(xs, v/bv)
			}
		}
		return median(xs)
	})
}

// metricwise is the sample whose every metric is f of that metric.
func metricwise(f func(metric func(sample) float64) float64) sample {
	return sample{
		p50:         f(func(s sample) float64 { return s.p50 }),
		callsPerSec: f(func(s sample) float64 { return s.callsPerSec }),
		cpuPerCall:  f(func(s sample) float64 { return s.cpuPerCall }),
		bytesPer:    f(func(s sample) float64 { return s.bytesPer }),
		allocsPer:   f(func(s sample) float64 { return s.allocsPer }),
		round:       -1,
	}
}

// csvHeader names the columns of results.csv.
var csvHeader = []string{"scenario", "transport", "callers", "client", "round", "p50_s", "calls_per_s", "cpu_s_per_call", "bytes_per_call", "allocs_per_call"}

// csv writes every round's sample of every row, one line each, in the
// rows' order; a metric the client cannot give is empty.
func (r *results) csv() string {
	var b strings.Builder
	w := csv.NewWriter(&b)
	_ = w.Write(csvHeader)
	num := func(v float64) string {
		if math.IsNaN(v) {
			return ""
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	for _, row := range r.rows {
		for _, s := range row.samples {
			_ = w.Write([]string{row.scenario, row.transport, row.callers, row.client, strconv.Itoa(s.round),
				num(s.p50), num(s.callsPerSec), num(s.cpuPerCall), num(s.bytesPer), num(s.allocsPer)})
		}
	}
	w.Flush()
	return b.String()
}

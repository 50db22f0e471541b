package main

import (
	"errors"
	"fmt"
	"math"
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

// add records one round's sample, or its failure.
func (r *results) add(k rowKey, kind rowKind, s sample, err error) {
	w := r.row(k, kind)
	if err != nil {
		if w.err == nil {
			w.err = err
		}
		return
	}
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
	pick := func(f func(sample) float64) float64 {
		xs := make([]float64, 0, len(w.samples))
		for _, s := range w.samples {
			if v := f(s); !math.IsNaN(v) {
				xs = append(xs, v)
			}
		}
		return median(xs)
	}
	return sample{
		p50:         pick(func(s sample) float64 { return s.p50 }),
		callsPerSec: pick(func(s sample) float64 { return s.callsPerSec }),
		cpuPerCall:  pick(func(s sample) float64 { return s.cpuPerCall }),
		bytesPer:    pick(func(s sample) float64 { return s.bytesPer }),
		allocsPer:   pick(func(s sample) float64 { return s.allocsPer }),
	}
}

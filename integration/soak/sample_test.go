//go:build soak

package soak

import (
	"bufio"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heddlehq/heddle/internal/proctest"
)

// sample is serve's state at one moment.
type sample struct {
	At         time.Duration `json:"at_ns"` // since the soak began
	Phase      string        `json:"phase"`
	Goroutines int           `json:"goroutines"`        // go_goroutines of /metrics; -1 when it did not answer
	FDs        int           `json:"fds"`               // entries of /proc/PID/fd
	RSS        int64         `json:"rss_bytes"`         // VmRSS of /proc/PID/status
	Procs      int           `json:"procs"`             // serve's live descendants: stdio servers and the watchdog
	ServeWait  time.Duration `json:"serve_cpu_wait_ns"` // serve's threads' wait for a CPU so far
	SoakWait   time.Duration `json:"soak_cpu_wait_ns"`  // the soak's own (its callers')
	Load       float64       `json:"load"`              // the machine's load average, one minute
}

// sampler reads serve's goroutines, open files and resident memory every
// second until stopped, and at most maxSamples times.
type sampler struct {
	pid     int
	metrics string // serve's /metrics URL
	c       *http.Client
	begin   time.Time

	mu      sync.Mutex
	phase   string
	samples []sample
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

const maxSamples = 24 * 3600

func newSampler(pid int, base string, begin time.Time) *sampler {
	return &sampler{
		pid: pid, metrics: base + "/metrics", begin: begin, phase: "start",
		c:    &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}},
		stop: make(chan struct{}), done: make(chan struct{}),
	}
}

// run samples once a second until halt.
func (s *sampler) run() {
	defer close(s.done)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for range maxSamples {
		s.take()
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
	}
}

// halt stops run and waits for it; it may be called more than once.
func (s *sampler) halt() {
	s.once.Do(func() {
		close(s.stop)
		<-s.done
		s.c.Transport.(*http.Transport).CloseIdleConnections()
	})
}

// setPhase names the phase later samples are taken in.
func (s *sampler) setPhase(p string) {
	s.mu.Lock()
	s.phase = p
	s.mu.Unlock()
}

// take takes one sample, records it and returns it.
func (s *sampler) take() sample {
	s.mu.Lock()
	phase := s.phase
	s.mu.Unlock()
	sm := sample{
		At:         time.Since(s.begin),
		Phase:      phase,
		Goroutines: s.goroutines(),
		FDs:        openFiles(s.pid),
		RSS:        residentBytes(s.pid),
		Procs:      len(proctest.Descendants(s.pid)),
		ServeWait:  cpuWait(s.pid),
		SoakWait:   cpuWait(os.Getpid()),
		Load:       loadAverage(),
	}
	s.mu.Lock()
	s.samples = append(s.samples, sm)
	s.mu.Unlock()
	return sm
}

// goroutines reads go_goroutines from serve's /metrics (Prometheus' Go
// collector, which heddle registers).
func (s *sampler) goroutines() int {
	res, err := s.c.Get(s.metrics)
	if err != nil {
		return -1
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return -1
			}
			return int(f)
		}
	}
	return -1
}

// all returns the samples taken so far.
func (s *sampler) all() []sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sample(nil), s.samples...)
}

// peak is the largest of each measure over samples.
func peak(samples []sample) sample {
	var p sample
	p.Phase = "peak"
	for _, s := range samples {
		p.Goroutines = max(p.Goroutines, s.Goroutines)
		p.FDs = max(p.FDs, s.FDs)
		p.RSS = max(p.RSS, s.RSS)
		p.Procs = max(p.Procs, s.Procs)
		p.Load = max(p.Load, s.Load)
	}
	return p
}

// starvation says how much more than usual serve and the soak waited for
// a CPU between from and to: the wait of the samples around that window,
// less what the same length of the usual (warm-up's) rate of waiting
// would give. A call late by no more than that was late because the
// machine was busy with other work, not because a deadline failed.
func starvation(samples []sample, from, to time.Duration, serveRate, soakRate float64) time.Duration {
	i := -1
	for k, s := range samples {
		if s.At <= from {
			i = k
		}
	}
	j := slices.IndexFunc(samples, func(s sample) bool { return s.At >= to })
	if i < 0 || j < 0 {
		return 0
	}
	window := (samples[j].At - samples[i].At).Seconds()
	serve := samples[j].ServeWait - samples[i].ServeWait - time.Duration(serveRate*window)
	soak := samples[j].SoakWait - samples[i].SoakWait - time.Duration(soakRate*window)
	return max(serve, soak, 0)
}

// waitRate is how long serve and the soak waited for a CPU per second
// over samples of one phase.
func waitRate(samples []sample, phase string) (serve, soak float64) {
	var in []sample
	for _, s := range samples {
		if s.Phase == phase {
			in = append(in, s)
		}
	}
	if len(in) < 2 {
		return 0, 0
	}
	first, last := in[0], in[len(in)-1]
	secs := (last.At - first.At).Seconds()
	return float64(last.ServeWait-first.ServeWait) / secs, float64(last.SoakWait-first.SoakWait) / secs
}

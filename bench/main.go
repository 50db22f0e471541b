// Command bench-compare measures MCP clients driving the same server and
// prints one markdown table comparing them: heddle's toolset (through its
// public API), the raw go-sdk client it is built on, mcp-go, the
// TypeScript SDK (ts/bench.mjs, run by node), and go-sdk connecting afresh
// for every call, as some frameworks do.
//
//	make bench-compare                    # about ten minutes
//	cd bench && go run . -quick           # seconds: a smoke test
//	cd bench && go run . -rounds 9 -calls 4000 -out compare.md
//
// Every client drives the test server of the repository
// (cmd/heddle-testmcp, built once) in a process of its own, over stdio and
// Streamable HTTP on 127.0.0.1 (answering with event streams, and with
// JSON bodies). The calls are echo {"text": "hello, heddle"} and
// sleep {"ms": N}, made by 1, 8 and 64 callers sharing one client. The
// clients take turns in rounds, in a shuffled order each round, and each
// number in the table is the median over the rounds; README.md says how
// each is measured.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// maxCallers bounds the callers of a load; the Go clients' HTTP pools keep
// this many idle connections.
const maxCallers = 64

// settings are what the command line asks for.
type settings struct {
	rounds         int      // measured rounds per cell
	sleepRounds    int      // measured rounds of the sleep cells at one caller (at least rounds)
	calls          int      // echo calls per turn of a client with a session
	freshCalls     int      // echo calls per turn of the fresh-connection client
	sleepMS        int      // the sleep tool's ms
	sleepCalls     int      // sleep calls per caller per turn (the fresh-connection client: scaled as calls to freshCalls)
	callers        []int    // concurrent callers of each cell
	transports     []string // stdio, http, http-json
	startupServers []int    // the start-up rows' numbers of stdio servers
	startupRounds  int      // rounds of start-up and held sessions
	held           int      // sessions held for the held-session rows
	ts             bool     // include the TypeScript SDK
	root           string   // the repository (its go.mod builds the server)
	script         string   // ts/bench.mjs
	out            string   // also write the table here
	samples        string   // write every round's sample here, as CSV
	quiet          bool     // no progress on stderr
}

// defaultConfig is a full run: about fifteen minutes on two shared vCPUs.
func defaultConfig() settings {
	return settings{
		rounds: 5, sleepRounds: 15, calls: 2000, freshCalls: 200, sleepMS: 20, sleepCalls: 50,
		callers:        []int{1, 8, 64},
		transports:     []string{"stdio", "http", "http-json"},
		startupServers: []int{1, 10, 50},
		startupRounds:  5, held: 50, ts: true,
		root: "..", script: "ts/bench.mjs",
	}
}

// quick shrinks c to a smoke test of seconds: every row, few calls.
func (c *settings) quick() {
	c.rounds, c.sleepRounds, c.calls, c.freshCalls, c.sleepCalls = 2, 3, 60, 8, 1
	c.startupServers, c.startupRounds, c.held = []int{1, 2, 3}, 1, 3
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, timeout, err := parseFlags(os.Args[1:], os.Stderr)
	if err != nil {
		os.Exit(2)
	}
	// The last resort against a hang: every call has a deadline, every
	// command to node one too, and the whole run this one.
	watchdog := time.AfterFunc(timeout, func() {
		fmt.Fprintf(os.Stderr, "bench-compare: no result within -timeout %v; stopping\n", timeout)
		killAll()
		os.Exit(3)
	})
	err = run(ctx, cfg, os.Stdout, os.Stderr)
	watchdog.Stop()
	killAll()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-compare:", err)
		os.Exit(1)
	}
}

// parseFlags reads the command line into settings and the run's timeout.
func parseFlags(args []string, stderr io.Writer) (settings, time.Duration, error) {
	cfg := defaultConfig()
	fs := flag.NewFlagSet("bench-compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "a smoke test of seconds: 2 rounds of few calls, start-up of 1, 2 and 3 servers, 3 held sessions")
	fs.IntVar(&cfg.rounds, "rounds", cfg.rounds, "measured `rounds` per cell (each client takes one turn per round)")
	fs.IntVar(&cfg.sleepRounds, "sleep-rounds", cfg.sleepRounds, "measured `rounds` of the sleep cells at one caller, whose turns use the least CPU (at least -rounds)")
	fs.IntVar(&cfg.calls, "calls", cfg.calls, "echo calls per turn of a client with a shared session")
	fs.IntVar(&cfg.freshCalls, "fresh-calls", cfg.freshCalls, "echo calls per turn of the client that connects for every call")
	fs.IntVar(&cfg.sleepMS, "sleep-ms", cfg.sleepMS, "the sleep tool's `ms`")
	fs.IntVar(&cfg.sleepCalls, "sleep-calls", cfg.sleepCalls, "sleep calls per caller per turn")
	callers := fs.String("callers", joinInts(cfg.callers), "comma-separated numbers of concurrent callers (at most 64)")
	transports := fs.String("transports", strings.Join(cfg.transports, ","), "comma-separated transports: stdio, http (event streams), http-json (JSON bodies)")
	startup := fs.String("startup", joinInts(cfg.startupServers), "comma-separated numbers of stdio servers to start")
	fs.IntVar(&cfg.startupRounds, "startup-rounds", cfg.startupRounds, "rounds of the start-up and held-session rows")
	fs.IntVar(&cfg.held, "held", cfg.held, "sessions held open to one HTTP server for the heap per session")
	fs.BoolVar(&cfg.ts, "ts", cfg.ts, "include the TypeScript SDK (needs node and npm ci --prefix bench/ts)")
	fs.StringVar(&cfg.root, "root", cfg.root, "the repository's `directory`, whose go.mod builds cmd/heddle-testmcp")
	fs.StringVar(&cfg.script, "script", cfg.script, "the TypeScript SDK client's `file`")
	fs.StringVar(&cfg.out, "out", "", "also write the table to this `file`")
	fs.StringVar(&cfg.samples, "samples", "", "write every round's measurements to this `file`, as CSV (the table's medians and ratios are computed from them)")
	fs.BoolVar(&cfg.quiet, "q", false, "no progress on stderr")
	timeout := fs.Duration("timeout", 40*time.Minute, "stop everything and fail after this long")
	if err := fs.Parse(args); err != nil {
		return cfg, 0, err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "bench-compare: unexpected argument %q\n", fs.Arg(0))
		return cfg, 0, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *quick {
		cfg.quick()
	}
	var err error
	if cfg.callers, err = parseInts(*callers, maxCallers); err == nil {
		cfg.startupServers, err = parseInts(*startup, 1000)
	}
	cfg.transports = strings.Split(*transports, ",")
	for _, t := range cfg.transports {
		if !slices.Contains([]string{"stdio", "http", "http-json"}, t) && err == nil {
			err = fmt.Errorf("unknown transport %q", t)
		}
	}
	if err == nil && min(cfg.rounds, cfg.sleepRounds, cfg.calls, cfg.freshCalls, cfg.sleepCalls, cfg.startupRounds, cfg.held) < 1 {
		err = fmt.Errorf("rounds, calls and sessions must be positive")
	}
	if err != nil {
		fmt.Fprintln(stderr, "bench-compare:", err)
	}
	return cfg, *timeout, err
}

// parseInts parses a comma-separated list of numbers from 1 to most.
func parseInts(s string, most int) ([]int, error) {
	var ns []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > most {
			return nil, fmt.Errorf("%q: want numbers from 1 to %d", s, most)
		}
		ns = append(ns, n)
	}
	return ns, nil
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

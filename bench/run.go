package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"time"
)

// run measures what cfg asks for and writes the table to stdout (and to
// cfg.out), progress to stderr. It fails when any row failed, after
// writing the table with the failures in it.
func run(ctx context.Context, cfg settings, stdout, stderr io.Writer) error {
	began := time.Now()
	load0 := loadAverage()
	progress := func(format string, args ...any) {
		if !cfg.quiet {
			fmt.Fprintf(stderr, "bench-compare: "+format+"\n", args...)
		}
	}
	dir, err := os.MkdirTemp("", "bench-compare")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	progress("building heddle-testmcp")
	bin, err := buildServer(ctx, cfg.root, dir)
	if err != nil {
		return err
	}

	// One server process per HTTP transport, shared by the clients, which
	// take turns; "http" also serves the held sessions.
	servers := map[string]*httpServer{}
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	for _, tr := range append([]string{"http"}, cfg.transports...) {
		if tr == "stdio" || servers[tr] != nil {
			continue
		}
		var args []string
		if tr == "http-json" {
			args = append(args, "--json-response")
		}
		if servers[tr], err = startHTTPServer(bin, args...); err != nil {
			return err
		}
	}

	var node *nodeWorker
	if cfg.ts {
		progress("starting node on %s", cfg.script)
		if node, err = startNode(cfg.script); err != nil {
			return fmt.Errorf("%w (is node installed, and npm ci --prefix bench/ts run?)", err)
		}
		defer node.stop()
	}

	kinds := []clientKind{
		{name: "heddle", open: openHeddle},
		{name: rawGoSDK, open: openGoSDK},
		{name: "mcp-go", open: openMCPGo},
	}
	setups := []setupKind{
		{name: "heddle", open: openHeddleN},
		{name: rawGoSDK, open: openGoSDKN},
		{name: "mcp-go", open: openMCPGoN},
	}
	if node != nil {
		kinds = append(kinds, clientKind{name: "ts-sdk", open: openNode(node)})
		setups = append(setups, setupKind{name: "ts-sdk", node: node})
	}
	kinds = append(kinds,
		clientKind{name: minimalClient, open: openMinimal},
		clientKind{name: "fresh conn (go-sdk)", open: openFresh, fresh: true})

	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	res := newResults()
	for _, tr := range cfg.transports {
		t := target{transport: tr, bin: bin}
		if s := servers[tr]; s != nil {
			t.url = s.url
		}
		if err := callRows(ctx, cfg, t, kinds, res, rng, progress); err != nil {
			return err
		}
	}
	for _, n := range cfg.startupServers {
		progress("start-up of %d stdio servers", n)
		startupRows(ctx, cfg, bin, n, setups, res, rng)
	}
	progress("%d held sessions", cfg.held)
	heldRows(ctx, cfg, servers["http"].url, setups, res, rng)
	if err := ctx.Err(); err != nil {
		return err
	}

	out := renderTable(res) + "\n" + legend(cfg, node, res.protocols, seed, load0, time.Since(began))
	if _, err := io.WriteString(stdout, out); err != nil {
		return err
	}
	if cfg.out != "" {
		if err := os.WriteFile(cfg.out, []byte(out), 0o644); err != nil {
			return err
		}
	}
	if cfg.samples != "" {
		if err := os.WriteFile(cfg.samples, []byte(res.csv()), 0o644); err != nil {
			return err
		}
	}
	return res.err()
}

// transportName is how the table names a transport.
func transportName(tr string) string {
	switch tr {
	case "http":
		return "HTTP (event stream)"
	case "http-json":
		return "HTTP (JSON)"
	}
	return tr
}

// callRows measures every call row of one transport: each client opens
// one session (the fresh-connection client none), is warmed up, then for
// each load the clients take turns, in a new random order each round.
func callRows(ctx context.Context, cfg settings, t target, kinds []clientKind, res *results, rng *rand.Rand, progress func(string, ...any)) error {
	progress("%s: opening the clients", t.transport)
	clients := make([]client, len(kinds))
	failed := make([]error, len(kinds))
	defer func() {
		for _, c := range clients {
			if c != nil {
				_ = c.close()
			}
		}
	}()
	for i, k := range kinds {
		octx, cancel := context.WithTimeout(ctx, time.Minute)
		clients[i], failed[i] = k.open(octx, t)
		cancel()
		if p, ok := clients[i].(protocolTeller); ok && failed[i] == nil && p.protocol() != "" {
			res.protocols = append(res.protocols, fmt.Sprintf("%s over %s %s", k.name, transportName(t.transport), p.protocol()))
		}
		if failed[i] == nil {
			// Warm-up: connection pools, schema caches, first-use paths.
			warm := load{tool: "echo", args: echoArgs(), calls: max(cfg.calls/10, 16), callers: 8}
			if k.fresh {
				warm.calls = max(cfg.freshCalls/10, 8)
			}
			_, failed[i] = turn(ctx, clients[i], warm)
		}
	}
	for _, sc := range scenarios(cfg) {
		for _, callers := range cfg.callers {
			if err := ctx.Err(); err != nil {
				return err
			}
			progress("%s: %s, %d callers", t.transport, sc.name, callers)
			loads := make([]load, len(kinds))
			for i, k := range kinds {
				loads[i] = sc.load(cfg, callers, k.fresh)
				if failed[i] == nil { // an unmeasured turn of this load
					warm := loads[i]
					warm.calls = max(warm.calls/4, callers)
					_, failed[i] = turn(ctx, clients[i], warm)
				}
			}
			key := func(i int) rowKey {
				return rowKey{sc.name, transportName(t.transport), strconv.Itoa(callers), kinds[i].name}
			}
			for i := range kinds { // the rows in the clients' order
				res.row(key(i), callRow)
			}
			for round := range sc.rounds(cfg, callers) {
				for _, i := range rng.Perm(len(kinds)) {
					key := key(i)
					if failed[i] != nil {
						res.add(key, callRow, round, sample{}, failed[i])
						continue
					}
					s, err := turn(ctx, clients[i], loads[i])
					res.add(key, callRow, round, s, err)
					failed[i] = err
				}
			}
		}
	}
	return nil
}

// turn runs one load under its deadline.
func turn(ctx context.Context, c client, l load) (sample, error) {
	ctx, cancel := context.WithTimeout(ctx, turnTimeout(l))
	defer cancel()
	return c.turn(ctx, l)
}

// turnTimeout is the deadline of a turn of l: generous, but finite.
func turnTimeout(l load) time.Duration {
	return 2*time.Minute + time.Duration(l.calls/l.callers)*50*time.Millisecond
}

// scenario is one kind of call.
type scenario struct {
	name   string
	load   func(cfg settings, callers int, fresh bool) load
	rounds func(cfg settings, callers int) int // measured rounds of its cell with callers
}

func echoArgs() map[string]any { return map[string]any{"text": "hello, heddle"} }

// scenarios are the calls measured: echo, whose time is the clients' and
// the transport's, and sleep, whose time is the server's wait, which shows
// whether a client runs its callers' calls at once.
func scenarios(cfg settings) []scenario {
	return []scenario{
		{"echo", func(cfg settings, callers int, fresh bool) load {
			n := cfg.calls
			if fresh {
				n = cfg.freshCalls
			}
			return load{tool: "echo", args: echoArgs(), calls: max(n, callers), callers: callers}
		}, func(cfg settings, _ int) int { return cfg.rounds }},
		{fmt.Sprintf("sleep %d ms", cfg.sleepMS), func(cfg settings, callers int, fresh bool) load {
			return load{tool: "sleep", args: map[string]any{"ms": cfg.sleepMS}, calls: callers * sleepCallsPerCaller(cfg, fresh), callers: callers}
		}, sleepRounds},
	}
}

// sleepRounds is the measured rounds of a sleep cell. At one caller a
// turn is mostly waiting: about 35 ms of a client's CPU in a second, where
// an echo turn is hundreds of ms, so one wake-up more or less in a turn
// moves its CPU per call by several percent. Its median is taken over
// cfg.sleepRounds rounds; the other cells' over cfg.rounds.
func sleepRounds(cfg settings, callers int) int {
	if callers == 1 {
		return max(cfg.rounds, cfg.sleepRounds)
	}
	return cfg.rounds
}

// sleepCallsPerCaller is the sleep calls per caller of a turn:
// cfg.sleepCalls, or for the fresh-connection client as many fewer as its
// echo turns are (at least one).
func sleepCallsPerCaller(cfg settings, fresh bool) int {
	if !fresh {
		return cfg.sleepCalls
	}
	return max(1, cfg.sleepCalls*cfg.freshCalls/cfg.calls)
}

// startupRows measures start-ups of n stdio servers, each client in turn
// in a new random order each round, after one unmeasured start-up of one
// server each.
func startupRows(ctx context.Context, cfg settings, bin string, n int, setups []setupKind, res *results, rng *rand.Rand) {
	failed := make([]error, len(setups))
	scenario := fmt.Sprintf("start-up, %d servers", n)
	if n == 1 {
		scenario = "start-up, 1 server"
	}
	for i, k := range setups {
		_, failed[i] = k.startup(ctx, bin, 1)
		res.row(rowKey{scenario, "stdio", "–", k.name}, startupRow)
	}
	for round := range cfg.startupRounds {
		for _, i := range rng.Perm(len(setups)) {
			key := rowKey{scenario, "stdio", "–", setups[i].name}
			if failed[i] != nil {
				res.add(key, startupRow, round, sample{}, failed[i])
				continue
			}
			s, err := setups[i].startup(ctx, bin, n)
			res.add(key, startupRow, round, s, err)
			failed[i] = err
		}
	}
}

// heldRows measures the live heap per session of cfg.held sessions held
// open to the HTTP server at url, after one unmeasured hold of two.
func heldRows(ctx context.Context, cfg settings, url string, setups []setupKind, res *results, rng *rand.Rand) {
	failed := make([]error, len(setups))
	scenario := fmt.Sprintf("%d sessions held", cfg.held)
	for i, k := range setups {
		_, failed[i] = k.heldHeap(ctx, url, 2)
		res.row(rowKey{scenario, transportName("http"), "–", k.name}, heldRow)
	}
	for round := range cfg.startupRounds {
		for _, i := range rng.Perm(len(setups)) {
			key := rowKey{scenario, transportName("http"), "–", setups[i].name}
			if failed[i] != nil {
				res.add(key, heldRow, round, sample{}, failed[i])
				continue
			}
			h, err := setups[i].heldHeap(ctx, url, cfg.held)
			res.add(key, heldRow, round, sample{p50: nan, callsPerSec: nan, cpuPerCall: nan, bytesPer: h, allocsPer: nan}, err)
			failed[i] = err
		}
	}
}

// loadAverage is the one-minute load average, or "?".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}

// legend says what the table's numbers are and how the run was made.
func legend(cfg settings, node *nodeWorker, protocols []string, seed uint64, load0 string, took time.Duration) string {
	ts := "not run"
	if node != nil {
		ts = fmt.Sprintf("@modelcontextprotocol/sdk %s on node %s", node.sdk, node.node)
		protocols = append(protocols, "ts-sdk "+node.protocol+" (the only version it asks for)")
		if n := node.warnings.listenerWarnings(); n > 0 {
			ts += fmt.Sprintf(", which printed %s %s lines (node's fetch adds an abort listener to the HTTP transport's one AbortSignal for every request and removes it when the request is collected; past 1,500 at once node warns on every call, and the printing is in the SDK's numbers)", fmtCount(float64(n)), listenerWarning)
		}
	}
	return fmt.Sprintf(`Each number is the median over %d rounds (sleep at one caller: %d, whose turns use the least CPU; start-up and held sessions: %d); in each round every client takes one turn, in a random order. In parentheses: the ratio to raw go-sdk in the same scenario, transport and callers, the median over the rounds of the ratio of the client's turn to raw go-sdk's turn in the same round (calls/s: higher is better; the others: lower is better).

- Call rows: a turn is %d echo calls (the fresh-connection client: %d) or %d sleep calls per caller (the fresh-connection client: %d), made by the callers sharing one session; each Go client's turn starts from a collected heap whose freed memory has been returned (debug.FreeOSMemory), and node collects its turn's garbage (gc()) once it has measured the turn, so that no turn pays for the garbage of the one before, and is long enough for its own garbage to be collected at the rate it allocates. p50 is the median call's latency; calls/s is calls over the turn's wall time; CPU is the client process's user+system CPU per call (Go: getrusage RUSAGE_SELF over the turn; ts-sdk: process.cpuUsage()), the servers being other processes; bytes and allocs are per call (runtime.MemStats TotalAlloc and Mallocs over the turn, after a collection), n/a for node, which does not count them.
- Start-up rows: p50 is the time until every session is connected and has listed its tools (heddle: runtime.Open of a deployment of that many servers), CPU, bytes and allocs are the whole start-up's.
- Held rows: bytes is the live heap per session with %d sessions open to one server, each having listed its tools (Go: HeapAlloc after collections; ts-sdk: heapUsed after gc()).
- heddle: Toolset.Call of a runtime opened from a compiled deployment with default policies. fresh conn: go-sdk connect, initialize, call and close for every call (over stdio a server process per call; over HTTP an HTTP client per call). minimal: no MCP library, the floor of a Go client on the same wire: initialize, then each call one tools/call line on the server's stdin or one POST, its answer decoded with encoding/json only as far as its id, result or error and isError.
- Server: cmd/heddle-testmcp, one build, a process of its own; over stdio each client starts its own, over HTTP the clients share one per transport on 127.0.0.1.
- Protocol versions negotiated: %s; heddle leaves the choice to go-sdk, as raw go-sdk does.

Run: %s, GOMAXPROCS %d, %s, TypeScript SDK %s; load average %s before; %s; seed %d.
`,
		cfg.rounds, sleepRounds(cfg, 1), cfg.startupRounds, cfg.calls, cfg.freshCalls, cfg.sleepCalls, sleepCallsPerCaller(cfg, true), cfg.held, strings.Join(protocols, ", "),
		time.Now().UTC().Format("2006-01-02"), goruntime.GOMAXPROCS(0), goruntime.Version(), ts, load0, took.Round(time.Second), seed)
}

package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestQuick runs the whole comparison in quick mode and checks that the
// table has every row, each with numbers.
func TestQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the test server and starts some 80 processes")
	}
	cfg := defaultConfig()
	cfg.quick()
	cfg.quiet = true
	cfg.out = t.TempDir() + "/compare.md"
	cfg.samples = t.TempDir() + "/samples.csv"
	if reason := tsMissing(); reason != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the TypeScript SDK client cannot run: %s", reason)
		}
		t.Logf("leaving out the TypeScript SDK: %s", reason)
		cfg.ts = false
	}
	defer killAll()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if err := run(ctx, cfg, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s\nstdout:\n%s", err, &stderr, &stdout)
	}
	written, err := os.ReadFile(cfg.out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(written, stdout.Bytes()) {
		t.Errorf("-out holds other text than the table printed")
	}

	rows := tableRows(t, stdout.String())
	want := expectedRows(cfg)
	checkSamples(t, cfg, want)
	for _, k := range want {
		cells, ok := rows[k]
		if !ok {
			t.Errorf("no row %v", k)
			continue
		}
		checkCells(t, k, cells)
	}
	if len(rows) != len(want) {
		t.Errorf("the table has %d rows, want %d:\n%s", len(rows), len(want), &stdout)
	}
	if t.Failed() {
		t.Logf("table:\n%s", &stdout)
	}
}

// checkSamples checks that -samples holds a line for every round of every
// row, with the row's first number.
func checkSamples(t *testing.T, cfg settings, want []rowKey) {
	t.Helper()
	f, err := os.Open(cfg.samples)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("-samples: %v", err)
	}
	if len(lines) == 0 || !slices.Equal(lines[0], csvHeader) {
		t.Fatalf("-samples does not start with its header: %q", lines)
	}
	rounds := map[rowKey]int{}
	for _, l := range lines[1:] {
		k := rowKey{l[0], l[1], l[2], l[3]}
		rounds[k]++
		col := 5 // p50_s
		if strings.HasSuffix(k.scenario, "held") {
			col = 8 // bytes_per_call
		}
		if _, err := strconv.ParseFloat(l[col], 64); err != nil {
			t.Errorf("-samples line %q: no %s", l, csvHeader[col])
		}
	}
	for _, k := range want {
		n := cfg.startupRounds
		for _, sc := range scenarios(cfg) {
			if callers, err := strconv.Atoi(k.callers); err == nil && sc.name == k.scenario {
				n = sc.rounds(cfg, callers)
			}
		}
		if rounds[k] != n {
			t.Errorf("-samples: %d lines of %v, want %d", rounds[k], k, n)
		}
	}
}

// tsMissing says why the TypeScript SDK client cannot run, or "".
func tsMissing() string {
	if _, err := exec.LookPath("node"); err != nil {
		return "node is not installed"
	}
	if _, err := os.Stat("ts/node_modules/@modelcontextprotocol/sdk"); err != nil {
		return "ts/node_modules is not installed (npm ci --prefix bench/ts)"
	}
	return ""
}

// tableRows parses the table's rows by their first four cells.
func tableRows(t *testing.T, out string) map[rowKey][]string {
	t.Helper()
	if !strings.HasPrefix(out, tableHeader) {
		t.Fatalf("output does not start with the table's header:\n%s", out)
	}
	rows := map[rowKey][]string{}
	for line := range strings.Lines(strings.TrimPrefix(out, tableHeader)) {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if len(cells) != 9 {
			t.Fatalf("row of %d cells: %q", len(cells), line)
		}
		k := rowKey{cells[0], cells[1], cells[2], cells[3]}
		if _, dup := rows[k]; dup {
			t.Errorf("row %v twice", k)
		}
		rows[k] = cells[4:]
	}
	return rows
}

// expectedRows are the rows cfg asks for.
func expectedRows(cfg settings) []rowKey {
	clients := []string{"heddle", rawGoSDK, "mcp-go"}
	if cfg.ts {
		clients = append(clients, "ts-sdk")
	}
	var want []rowKey
	for _, tr := range cfg.transports {
		for _, sc := range scenarios(cfg) {
			for _, c := range cfg.callers {
				for _, cl := range append(clients, minimalClient, "fresh conn (go-sdk)") {
					want = append(want, rowKey{sc.name, transportName(tr), strconv.Itoa(c), cl})
				}
			}
		}
	}
	for _, n := range cfg.startupServers {
		sc := fmt.Sprintf("start-up, %d servers", n)
		if n == 1 {
			sc = "start-up, 1 server"
		}
		for _, cl := range clients {
			want = append(want, rowKey{sc, "stdio", "–", cl})
		}
	}
	for _, cl := range clients {
		want = append(want, rowKey{fmt.Sprintf("%d sessions held", cfg.held), transportName("http"), "–", cl})
	}
	return want
}

// checkCells checks that a row's five cells hold numbers where its kind
// has them: every call row's p50, calls/s and CPU (bytes and allocs but
// for ts-sdk); a start-up's time and CPU; a held session's bytes. A
// number of the raw go-sdk row is 1.00× itself.
func checkCells(t *testing.T, k rowKey, cells []string) {
	t.Helper()
	var numbered []int
	switch {
	case strings.HasPrefix(k.scenario, "start-up"):
		numbered = []int{0, 2}
	case strings.HasSuffix(k.scenario, "held"):
		numbered = []int{3}
	default:
		numbered = []int{0, 1, 2}
	}
	if k.client != "ts-sdk" && !strings.HasSuffix(k.scenario, "held") {
		numbered = append(numbered, 3, 4)
	}
	for _, i := range numbered {
		v, unit, ok := strings.Cut(cells[i], " ")
		n, err := strconv.ParseFloat(strings.ReplaceAll(v, ",", ""), 64)
		if !ok && err == nil {
			unit = ""
		}
		if err != nil || n < 0 || math.IsNaN(n) {
			t.Errorf("%v: cell %d is %q, not a number", k, i, cells[i])
			continue
		}
		if k.client == rawGoSDK && !strings.HasSuffix(unit, "(1.00×)") {
			t.Errorf("%v: cell %d is %q, want the ratio 1.00×", k, i, cells[i])
		}
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{7}, 7},
	} {
		if got := median(c.xs); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
	if got := median(nil); !math.IsNaN(got) {
		t.Errorf("median(nil) = %v, want NaN", got)
	}
}

// TestRatios checks that a ratio pairs the rounds: with raw go-sdk's
// turns slow in one round and the other client's in another, the ratio of
// medians would be 2.7 where the client was 0.9× raw go-sdk's in two
// rounds of three; and a round one row lacks is left out.
func TestRatios(t *testing.T) {
	res := newResults()
	raw := rowKey{"echo", "stdio", "1", rawGoSDK}
	other := rowKey{"echo", "stdio", "1", "heddle"}
	for round, v := range []float64{100, 100, 300, 50} {
		res.add(raw, callRow, round, sample{p50: v, callsPerSec: v}, nil)
	}
	for round, v := range []float64{90, 270, 270} {
		res.add(other, callRow, round, sample{p50: v, callsPerSec: v}, nil)
	}
	res.add(other, callRow, 3, sample{}, errors.New("failed in the last round"))
	r := res.index[other].ratios(res.index[raw])
	if r.p50 != 0.9 || r.callsPerSec != 0.9 {
		t.Errorf("ratios p50 %v, calls/s %v; want 0.9, 0.9", r.p50, r.callsPerSec)
	}
	if !math.IsNaN(r.cpuPerCall) {
		t.Errorf("CPU ratio of rounds without CPU: %v, want NaN", r.cpuPerCall)
	}
	if r := res.index[raw].ratios(res.index[raw]); r.p50 != 1 {
		t.Errorf("raw go-sdk's ratio to itself: %v", r.p50)
	}
}

func TestFormat(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{fmtSeconds(281.4e-6), "281 µs"},
		{fmtSeconds(12.34e-3), "12.3 ms"},
		{fmtSeconds(1.5), "1.5 s"},
		{fmtBytes(512), "512 B"},
		{fmtBytes(74_867), "74.9 KB"},
		{fmtBytes(34_000_000), "34.0 MB"},
		{fmtCount(1234567), "1,234,567"},
		{withRatio("1 ms", 1e-3, 2), "1 ms (2.00×)"},
		{withRatio("1 ms", 2, nan), "1 ms"},
		{withRatio("", nan, 1), "n/a"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// TestNodeStdioFailure checks that a TypeScript SDK call that fails over
// stdio says what its server was doing: whether it runs, how many messages
// the client read from it, and the end of its stderr.
func TestNodeStdioFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the test server and starts node")
	}
	if reason := tsMissing(); reason != "" {
		t.Skip(reason)
	}
	defer killAll()
	ctx := context.Background()
	bin, err := buildServer(ctx, "..", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w, err := startNode(defaultConfig().script)
	if err != nil {
		t.Fatal(err)
	}
	defer w.stop()
	c, err := openNode(w)(ctx, target{transport: "stdio", bin: bin})
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	_, err = turn(ctx, c, load{tool: "no-such-tool", args: map[string]any{}, calls: 1, callers: 1})
	if err == nil {
		t.Fatal("a call of a tool the server does not have succeeded")
	}
	for _, want := range []string{"the stdio server (pid ", ") is running", "the client read 1 message from it since it connected", `msg="session initialized"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
}

// TestMinimalClient checks that the minimal client calls a tool over each
// transport and, as every client of the table, fails on an answer that is
// not a result: a JSON-RPC error (an unknown tool) or a tool error.
func TestMinimalClient(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the test server and starts it")
	}
	defer killAll()
	ctx := context.Background()
	bin, err := buildServer(ctx, "..", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range []string{"stdio", "http", "http-json"} {
		t.Run(tr, func(t *testing.T) {
			tg := target{transport: tr, bin: bin}
			if tr != "stdio" {
				var args []string
				if tr == "http-json" {
					args = append(args, "--json-response")
				}
				s, err := startHTTPServer(bin, args...)
				if err != nil {
					t.Fatal(err)
				}
				defer s.stop()
				tg.url = s.url
			}
			c, err := openMinimal(ctx, tg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := turn(ctx, c, load{tool: "echo", args: echoArgs(), calls: 20, callers: 4}); err != nil {
				t.Errorf("echo: %v", err)
			}
			if _, err := turn(ctx, c, load{tool: "no-such-tool", args: map[string]any{}, calls: 1, callers: 1}); err == nil {
				t.Error("a call of a tool the server does not have succeeded")
			}
			if _, err := turn(ctx, c, load{tool: "fail", args: map[string]any{}, calls: 1, callers: 1}); err == nil || !strings.Contains(err.Error(), "tool error") {
				t.Errorf("a call answered with a tool error: %v, want the tool error", err)
			}
			if err := c.close(); err != nil {
				t.Errorf("close: %v", err)
			}
			if tr != "stdio" {
				checkMinimalReuse(ctx, t, tg.url)
			}
		})
	}
}

// checkMinimalReuse checks that the minimal client's calls go over the
// connection its handshake opened: each answer is read to its end, so its
// connection goes back to the pool, as every other client's does.
func checkMinimalReuse(ctx context.Context, t *testing.T, url string) {
	t.Helper()
	var dials atomic.Int64
	tr := http.DefaultTransport.(*http.Transport).Clone()
	defer tr.CloseIdleConnections()
	var d net.Dialer
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return d.DialContext(ctx, network, addr)
	}
	c := &minimalHTTP{url: url, hc: &http.Client{Transport: tr}}
	if err := c.handshake(ctx); err != nil {
		t.Fatal(err)
	}
	call := minimalCall(c)
	for range 30 {
		if err := call(ctx, "echo", echoArgs()); err != nil {
			t.Fatal(err)
		}
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("the handshake and 30 calls one after the other dialed %d connections, want 1", n)
	}
}

package serve_test

// The load test of the invoke API: calls through the front door over HTTP
// on 127.0.0.1, with serve.auth on, measured in the same run against the
// same calls made in process through the toolset (runtime.Toolset.Call),
// and through a minimal hand-written front door (net/http, the body
// decoded, the same toolset called, its result encoded: no checks, no
// limits) on the same loopback with the same client, so that the ratios
// mean something whatever the machine. The MCP echo is called twice: from
// the test server in this process over go-sdk's in-memory transport, and
// from the test server binary over stdio, in a process of its own, as a
// worker runs an MCP server. One caller calls from this process;
// 64 callers call from a process of their own (loadclient_test.go), as a
// worker's callers do, so that the CPU time and allocations measured are
// the worker's alone. The front door is called with each
// serve.auth kind a worker runs in production: trusted_headers (the proxy
// being this machine), the baseline; tokens; and jwt, with tokens signed
// RS256 and ES256. docs/performance.md records a run; `make bench
// BENCH=Invoke` runs them.

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	cryptorand "crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/benchpair"
	"github.com/heddlehq/heddle/internal/jwttest"
	"github.com/heddlehq/heddle/internal/plantest"
	"github.com/heddlehq/heddle/internal/testmcp"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/secrets"
	"github.com/heddlehq/heddle/serve"
	"github.com/heddlehq/heddle/wire"
)

// benchTool is a tool the load test calls: as tool of agent, with body as
// its arguments, through the front door with each of auths. paired says
// whether BenchmarkInvokeOverhead measures it too; stdio, that its MCP
// server is the test server binary over stdio (of the baseline's kind
// only), not the in-process one.
type benchTool struct {
	name, agent, tool, body string
	auths                   []string
	paired, stdio           bool
}

// benchTools are the tools the load test calls: a use case that answers
// its argument; the test MCP server's echo, in this process over go-sdk's
// in-memory transport and in a process of its own over stdio, as a worker
// runs it; a use case that waits 10 ms for nothing, as a tool waiting for
// its backend does; and the test server's sleep of 10 ms and of 50 ms over
// stdio, an MCP server in a process of its own whose tool waits (at 64
// callers on two vCPUs, the 10 ms one is bound by the CPU of the calls
// over stdio more than by its wait). What a kind costs
// does not depend on the tool, so the MCP tools and the waiting ones are
// called with the baseline only.
var benchTools = []benchTool{
	{"usecase", "u", "serve_echo", benchBody, benchAuths, true, false},
	{"mcp", "a", "echo", benchBody, benchAuths[:1], true, false},
	{"mcp-stdio", "a", "echo", benchBody, benchAuths[:1], true, true},
	{"wait10ms", "w", "serve_sleep", `{"ms": 10}`, benchAuths[:1], false, false},
	{"mcp-stdio-wait10ms", "a", "sleep", `{"ms": 10}`, benchAuths[:1], false, true},
	{"mcp-stdio-wait50ms", "a", "sleep", `{"ms": 50}`, benchAuths[:1], false, true},
}

// benchAgents are the test agents and w, granting serve.sleep.
var benchAgents = map[string]string{"a": testAgents["a"], "u": testAgents["u"], "w": sleepAgent}

// benchAuths are the serve.auth kinds of the load test; the first is the
// baseline the others are compared with.
var benchAuths = []string{"trusted_headers", "tokens", "jwt-rs256", "jwt-es256"}

// benchBody is the body of a call of either fast tool: their arguments.
const benchBody = `{"text": "hello, heddle"}`

// benchWant is in the body of every answer of a call that succeeded.
const benchWant = `"isError":false`

// benchCaller is who the calls are made as.
var benchCaller = heddle.Identity{Subject: "bench", Roles: []string{"dev"}}

// benchToken is the bearer token of kind tokens, the value of the secret
// reference benchTokensAPI names.
const benchToken = "bench-token-7e21c4a9f03b5d68"

// benchTokensAPI is a serve: section of kind tokens with one token, for
// benchCaller, read from a secret reference.
const benchTokensAPI = "serve:\n  auth:\n    kind: tokens\n    tokens:\n" +
	"      bench: {token_ref: '${secrets:/heddle/bench}', subject: bench, roles: [dev]}\n"

// benchJWTAPI is a serve: section of kind jwt, of issuer, for audience
// heddle, accepting RS256 and ES256, the caller's roles in the groups claim.
func benchJWTAPI(issuer string) string {
	return "serve:\n  auth:\n    kind: jwt\n    issuer: " + issuer + "\n    audience: heddle\n" +
		"    algorithms: [RS256, ES256]\n    claims: {subject: sub, roles: groups}\n"
}

// benchFronts are the front doors of the load test, one runtime each: one
// per serve.auth kind (both jwt tokens go to the same one), and the
// minimal front door of the baseline's runtime.
type benchFronts struct {
	fronts  map[string]*front            // by auth kind
	creds   map[string]func(http.Header) // how a call of each kind says who calls
	minimal string                       // the minimal front door's URL
	// stdio is the baseline's front door to a runtime whose server srv is
	// the test server binary over stdio; minimalStdio, the minimal one.
	stdio        *front
	minimalStdio string
}

// startBenchFronts starts the front doors, with idle connections enough
// for every caller, and warms them up. The jwt tokens are signed here,
// once, valid for an hour.
func startBenchFronts(b *testing.B) *benchFronts {
	fs := &benchFronts{fronts: map[string]*front{}, creds: map[string]func(http.Header){}}

	fs.fronts["trusted_headers"] = startFront(b, trustLoopback+inMemoryServer, benchAgents)
	fs.creds["trusted_headers"] = func(h http.Header) {
		h.Set("X-Heddle-Subject", benchCaller.Subject)
		h.Set("X-Heddle-Roles", strings.Join(benchCaller.Roles, ","))
	}

	fs.fronts["tokens"] = startFrontWith(b, benchTokensAPI+inMemoryServer, benchAgents, serve.Options{
		Secrets: secrets.Func(func(_ context.Context, ref config.Ref) (secrets.Value, error) {
			if ref.Name == "/heddle/bench" {
				return secrets.NewValue(benchToken), nil
			}
			return secrets.Value{}, diag.New(diag.SecretUnresolved, "%s: no such secret", ref)
		}),
	})
	fs.creds["tokens"] = bearerOf(benchToken)

	rsaKey, err := rsa.GenerateKey(cryptorand.Reader, 2048)
	if err != nil {
		b.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), cryptorand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	keys := []benchKey{{"rsa-1", jose.RS256, rsaKey}, {"ec-1", jose.ES256, ecKey}}
	issuer := startBenchIssuer(b, keys)
	jwtFront := startFront(b, benchJWTAPI(issuer)+inMemoryServer, benchAgents)
	now := time.Now()
	claims := map[string]any{"iss": issuer, "aud": "heddle", "sub": benchCaller.Subject, "groups": benchCaller.Roles,
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	for _, k := range keys {
		kind := "jwt-" + strings.ToLower(string(k.alg))
		fs.fronts[kind] = jwtFront
		fs.creds[kind] = bearerOf(k.sign(b, claims))
	}

	for _, f := range fs.fronts {
		f.client.Transport.(*http.Transport).MaxIdleConnsPerHost = 128
	}
	fs.minimal = startMinimal(b, fs.fronts["trusted_headers"].rt)
	fs.stdio = startFrontWith(b, "", nil, serve.Options{Generations: runtime.NewGenerations(openStdioRuntime(b))})
	fs.stdio.client.Transport.(*http.Transport).MaxIdleConnsPerHost = 128
	fs.minimalStdio = startMinimal(b, fs.stdio.rt)
	for _, bt := range benchTools {
		rounds := 20 // warm up: schemas, connections, keys, first-use paths
		if !bt.paired {
			rounds = 3 // a tool that waits: its medians are not measured
		}
		for range rounds {
			for _, call := range fs.sides(b, bt) {
				if err := call(); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	return fs
}

// bearerOf sets an Authorization: Bearer header of token.
func bearerOf(token string) func(http.Header) {
	return func(h http.Header) { h.Set("Authorization", "Bearer "+token) }
}

// benchKey is one of the issuer's signing keys.
type benchKey struct {
	kid  string
	alg  jose.SignatureAlgorithm
	priv crypto.Signer
}

// sign returns claims as a JWT signed by k.
func (k benchKey) sign(b *testing.B, claims map[string]any) string {
	return jwttest.Sign(b, k.alg, k.priv, k.kid, "JWT", claims)
}

// startBenchIssuer serves an OpenID issuer on 127.0.0.1, its discovery
// document and the public halves of keys as its key set, and returns the
// issuer's URL. It is closed when the benchmark ends.
func startBenchIssuer(b *testing.B, keys []benchKey) string {
	set := jose.JSONWebKeySet{}
	for _, k := range keys {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.priv.Public(), KeyID: k.kid, Algorithm: string(k.alg), Use: "sig"})
	}
	mux := http.NewServeMux()
	srv := httptest.NewUnstartedServer(mux)
	issuer := "http://" + srv.Listener.Addr().String()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": issuer, "jwks_uri": issuer + "/certs"})
	})
	mux.HandleFunc("GET /certs", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(set)
	})
	srv.Start()
	b.Cleanup(srv.Close)
	return issuer
}

// sides returns the ways of making one call of tool: through the front
// door of each of its serve.auth kinds (named by the kind), through the minimal one
// (minimal, the caller in the identity headers), and through the toolset
// of the baseline's runtime (inprocess).
func (fs *benchFronts) sides(b *testing.B, bt benchTool) map[string]func() error {
	base, minimal := fs.door(bt, benchAuths[0]), fs.minimalOf(bt)
	ts, err := base.rt.Toolset(bt.agent)
	if err != nil {
		b.Fatal(err)
	}
	ctx := heddle.WithCaller(context.Background(), benchCaller)
	var args map[string]any
	if err := json.Unmarshal([]byte(bt.body), &args); err != nil {
		b.Fatal(err)
	}
	agent, tool := bt.agent, bt.tool
	want := []byte(benchWant)
	call := func(client *http.Client, url string, cred func(http.Header)) error {
		h := http.Header{"Content-Type": {"application/json"}}
		cred(h)
		return post(client, url, h, bt.body, want)
	}
	sides := map[string]func() error{
		"minimal": func() error { return call(base.client, minimal+"/"+agent+"/"+tool, fs.creds[benchAuths[0]]) },
		"inprocess": func() error {
			res, err := ts.Call(ctx, tool, args)
			if err != nil || res.IsError {
				return fmt.Errorf("%v %+v", err, res)
			}
			return nil
		},
	}
	for _, auth := range bt.auths {
		f, cred := fs.door(bt, auth), fs.creds[auth]
		sides[auth] = func() error { return call(f.client, f.url+"/v1/agents/"+agent+"/tools/"+tool, cred) }
	}
	return sides
}

// door is the front door tool is called through with auth; minimalOf, the
// minimal one of its runtime.
func (fs *benchFronts) door(bt benchTool, auth string) *front {
	if bt.stdio {
		return fs.stdio
	}
	return fs.fronts[auth]
}

func (fs *benchFronts) minimalOf(bt benchTool) string {
	if bt.stdio {
		return fs.minimalStdio
	}
	return fs.minimal
}

// jobs returns the load client's jobs of calling tool with callers at
// once: through the front door of each of its kinds (named by the kind) and through
// the minimal one (minimal).
func (fs *benchFronts) jobs(bt benchTool, callers int) map[string]loadJob {
	agent, tool := bt.agent, bt.tool
	job := func(url string, cred func(http.Header)) loadJob {
		h := http.Header{"Content-Type": {"application/json"}}
		cred(h)
		return loadJob{URL: url, Header: h, Body: bt.body, Want: benchWant, Callers: callers}
	}
	jobs := map[string]loadJob{"minimal": job(fs.minimalOf(bt)+"/"+agent+"/"+tool, fs.creds[benchAuths[0]])}
	for _, auth := range bt.auths {
		jobs[auth] = job(fs.door(bt, auth).url+"/v1/agents/"+agent+"/tools/"+tool, fs.creds[auth])
	}
	return jobs
}

// openStdioRuntime opens a runtime of the baseline's serve: section and
// agent a, whose server srv is the test server binary, built for the
// benchmark, over stdio. It is closed when the benchmark ends.
func openStdioRuntime(b *testing.B) *runtime.Runtime {
	bin, err := testmcp.Build(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	api := trustLoopback + "ai:\n  mcp_servers:\n    srv: {transport: stdio, command: " + bin + "}\n"
	rt, err := runtime.Open(context.Background(), plantest.Must(b, api, map[string]string{"a": testAgents["a"]}), runtime.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = rt.Close() })
	return rt
}

// startMinimal serves POST /{agent}/{tool} on 127.0.0.1 as a careful
// hand-written front door with nothing of heddle's would: the caller from
// the identity headers, the body decoded, the toolset called, the result
// encoded. It returns its URL; it is closed when the benchmark ends.
func startMinimal(b *testing.B, rt *runtime.Runtime) string {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /{agent}/{tool}", func(w http.ResponseWriter, r *http.Request) {
		ts, err := rt.Toolset(r.PathValue("agent"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		var args map[string]any
		if err := json.NewDecoder(r.Body).Decode(&args); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		id := heddle.Identity{Subject: r.Header.Get("X-Heddle-Subject"), Roles: strings.Split(r.Header.Get("X-Heddle-Roles"), ",")}
		res, err := ts.Call(heddle.WithCaller(r.Context(), id), r.PathValue("tool"), args)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(wire.Result(res))
	})
	var srv *httptest.Server
	// Its goroutines carry door=minimal in CPU profiles (startFrontWith).
	pprof.Do(context.Background(), pprof.Labels("door", "minimal"), func(context.Context) {
		srv = httptest.NewServer(mux)
	})
	b.Cleanup(srv.Close)
	return srv.URL
}

// BenchmarkInvoke makes b.N calls of each tool with 1 and with 64 callers
// at once, through the front door with each of the tool's serve.auth kinds
// (http), and reports the throughput (calls/s) and the median and 99th
// percentile of one call (p50-µs, p99-µs). At 64 callers it makes them
// through the minimal front door and in process too, which the target's
// throughput is a fraction of, and reports the worker's CPU time per call
// (cpu-µs/call), the callers being in a process of their own; at one
// caller those medians are BenchmarkInvokeOverhead's, measured in the same
// rounds as the front door's. The names are tool/auth=KIND/callers=N/side,
// the minimal and in-process sides under the baseline's kind.
func BenchmarkInvoke(b *testing.B) {
	fs := startBenchFronts(b)
	for _, bt := range benchTools {
		sides := fs.sides(b, bt)
		for _, callers := range []int{1, 64} {
			jobs := fs.jobs(bt, callers)
			name := func(auth, side string) string {
				return fmt.Sprintf("%s/auth=%s/callers=%d/%s", bt.name, auth, callers, side)
			}
			for _, auth := range bt.auths {
				b.Run(name(auth, "http"), func(b *testing.B) {
					if callers == 1 {
						load(b, 1, sides[auth], false)
						return
					}
					loadRemote(b, jobs[auth])
				})
			}
			if callers > 1 {
				b.Run(name(benchAuths[0], "minimal"), func(b *testing.B) { loadRemote(b, jobs["minimal"]) })
				b.Run(name(benchAuths[0], "inprocess"), func(b *testing.B) { load(b, callers, sides["inprocess"], true) })
			}
		}
	}
}

// load makes b.N calls with callers goroutines and reports the metrics;
// cpu says whether the process's CPU time is the worker's alone, to be
// reported (not when the calls are made over HTTP from this process).
func load(b *testing.B, callers int, call func() error, cpu bool) {
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, start := processCPU(), time.Now()
	all, err := callAtOnce(callers, b.N, call)
	elapsed, used := time.Since(start), processCPU()-cpu0
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
	if cpu {
		reportCPU(b, used)
	}
	b.ReportMetric(benchpair.Percentile(all, 50)/1e3, "p50-µs")
	b.ReportMetric(benchpair.Percentile(all, 99)/1e3, "p99-µs")
}

// reportCPU reports the CPU time this process (the worker) spent per call,
// cpu-µs/call, where it can be measured.
func reportCPU(b *testing.B, cpu time.Duration) {
	if cpu > 0 {
		b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/call")
	}
}

// BenchmarkInvokeOverhead interleaves, one caller at a time, a call
// through the front door with each of the tool's serve.auth kinds, one
// through the minimal front door and one in process, in an order drawn at
// random for each round, so that the machine's drift affects all alike.
// It reports the medians in process and through the minimal front door,
// what the front door with each kind adds to the median call made in
// process (KIND-added-p50-µs), what each kind adds over the baseline
// (KIND-over-trusted_headers-p50-µs), and what the front door with the
// baseline adds over the minimal one (over-minimal-p50-µs).
func BenchmarkInvokeOverhead(b *testing.B) {
	fs := startBenchFronts(b)
	for _, bt := range benchTools {
		if !bt.paired {
			continue
		}
		sides := fs.sides(b, bt)
		names := append(slices.Clone(bt.auths), "minimal", "inprocess")
		b.Run(bt.name, func(b *testing.B) {
			b.ReportAllocs()
			p50 := benchpair.Medians(benchpair.Rounds(b, names, sides))
			base := benchAuths[0]
			b.ReportMetric(p50["minimal"]/1e3, "minimal-p50-µs")
			b.ReportMetric(p50["inprocess"]/1e3, "inprocess-p50-µs")
			b.ReportMetric((p50[base]-p50["minimal"])/1e3, "over-minimal-p50-µs")
			for _, auth := range bt.auths {
				b.ReportMetric((p50[auth]-p50["inprocess"])/1e3, auth+"-added-p50-µs")
				if auth != base {
					b.ReportMetric((p50[auth]-p50[base])/1e3, auth+"-over-"+base+"-p50-µs")
				}
			}
		})
	}
}

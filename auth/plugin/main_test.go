package plugin_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heddlehq/heddle/examples/auth-agent-session/sessiontest"
	"github.com/heddlehq/heddle/internal/plantest"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/secrets"
	"go.uber.org/goleak"
)

// pluginBin is the example plugin binary, built once; pluginSum its SHA-256.
// testPluginBin is testdata/testplugin, a badly behaved one.
var pluginBin, pluginSum, testPluginBin, testPluginSum string

// exampleAgentBin is the example remote agent (A2A), built once.
var exampleAgentBin string

func fileSum(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// hostEnv, when set, makes the test binary a small host program: it opens
// the runtime of the plan in the file it names, prints "ready <plugin pids>"
// and waits to be killed.
const hostEnv = "HEDDLE_AUTHPLUGIN_TEST_HOST"

// The bootstrap secret of the tests' agent, and its path at the session
// endpoint. Canary checks look for the secret everywhere.
const (
	bootstrap  = "bootstrap-CANARY-5e0b8d2f9a417c3e"
	secretPath = "/agents/test/agent-sales"
)

func TestMain(m *testing.M) {
	if planFile := os.Getenv(hostEnv); planFile != "" {
		os.Exit(runHost(planFile))
	}
	dir, err := os.MkdirTemp("", "heddle-authplugin-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pluginBin = filepath.Join(dir, "heddle-auth-agent-session")
	testPluginBin = filepath.Join(dir, "testplugin")
	exampleAgentBin = filepath.Join(dir, "heddle-example-agent")
	for bin, pkg := range map[string]string{
		pluginBin:       "github.com/heddlehq/heddle/examples/auth-agent-session",
		testPluginBin:   "./testdata/testplugin",
		exampleAgentBin: "github.com/heddlehq/heddle/cmd/heddle-example-agent",
	} {
		build := exec.Command("go", "build", "-o", bin, pkg)
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n%s", pkg, err, out)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	pluginSum, testPluginSum = fileSum(pluginBin), fileSum(testPluginBin)
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { _ = os.RemoveAll(dir) }))
}

// runHost is the host program of TestHostKilledPluginDies.
func runHost(planFile string) int {
	api, err := os.ReadFile(planFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	p, err := compileAPI(string(api), map[string]string{"sales": `capabilities: [{kind: mcp, server: orders}]`})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rt, err := runtime.Open(ctx, p, runtime.Options{Logger: log, Secrets: testSecrets()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 1
	}
	defer rt.Close()
	bin := os.Getenv(hostEnv + "_BIN")
	var pids []string
	for _, pid := range pidsOf(bin) {
		pids = append(pids, strconv.Itoa(pid))
	}
	fmt.Printf("ready %s\n", strings.Join(pids, ","))
	time.Sleep(time.Minute) // until killed
	return 0
}

// compileAPI compiles an api.yaml and agents given as name → agent.yaml.
func compileAPI(api string, agents map[string]string) (*plan.Plan, error) {
	return plantest.Compile(api, agents)
}

// testSecrets resolves ${env:…} from a fixed map, never the process's
// environment.
func testSecrets() secrets.Resolver {
	env := map[string]string{"AGENT_BOOTSTRAP": bootstrap, "WRONG_BOOTSTRAP": "wrong-CANARY-0d1e2f3a4b5c6d7e"}
	return secrets.New(secrets.Options{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
}

// apiYAML is a deployment with one server, orders, authenticated by the
// example plugin against srv.
func apiYAML(srv *sessiontest.Server, sum string) string {
	return fmt.Sprintf(`
ai:
  startup_timeout_ms: 15000
  auth_plugins:
    agent-session:
      command: %s
      sha256: %q
      env: {PLUGIN_MODE: test}
  mcp_servers:
    orders:
      url: %s
      auth:
        kind: agent-session
        session_url: %s
        secret_path: %s
        bootstrap_ref: ${env:AGENT_BOOTSTRAP}
`, pluginBin, sum, srv.MCPURL(), srv.SessionURL(), secretPath)
}

var salesAgent = map[string]string{"sales": `capabilities: [{kind: mcp, server: orders}]`}

// startSession starts the session endpoint and MCP server.
func startSession(t testing.TB, ttl time.Duration) *sessiontest.Server {
	t.Helper()
	srv := sessiontest.Start(sessiontest.Options{
		TTL:          ttl,
		Secrets:      map[string]string{secretPath: bootstrap},
		RecordHeader: "Authorization",
	})
	t.Cleanup(srv.Close)
	return srv
}

// openRT compiles api and opens its runtime, logging at DEBUG into log.
func openRT(t testing.TB, api string, log io.Writer) (*runtime.Runtime, error) {
	t.Helper()
	p, err := compileAPI(api, salesAgent)
	if err != nil {
		t.Fatal(err)
	}
	if log == nil {
		log = io.Discard
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return runtime.Open(ctx, p, runtime.Options{
		Logger:  slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Secrets: testSecrets(),
	})
}

func mustOpen(t testing.TB, api string, log io.Writer) *runtime.Runtime {
	t.Helper()
	rt, err := openRT(t, api, log)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	return rt
}

// call calls echo as the sales agent and fails the test unless it worked.
func call(t testing.TB, rt *runtime.Runtime) {
	t.Helper()
	if err := tryCall(rt); err != nil {
		t.Fatal(err)
	}
}

func tryCall(rt *runtime.Runtime) error {
	ts, err := rt.Toolset("sales")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	res, err := ts.Call(ctx, "echo", map[string]any{"text": "hello"})
	if err != nil {
		return err
	}
	if res.IsError {
		return fmt.Errorf("echo refused: code %s", runtime.RefusalCode(res))
	}
	return nil
}

// pidsOf lists the live processes (not zombies) running the binary at path.
func pidsOf(path string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil || exe != path {
			continue
		}
		if alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// alive reports whether pid runs (exists and is not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}

// waitGone waits up to d for pid to stop running.
func waitGone(t testing.TB, pid int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still running after %s", pid, d)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// onePid returns the one running plugin process.
func onePid(t testing.TB) int {
	t.Helper()
	pids := pidsOf(pluginBin)
	if len(pids) != 1 {
		t.Fatalf("plugin processes = %v, want one", pids)
	}
	return pids[0]
}

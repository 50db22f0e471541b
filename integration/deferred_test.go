package integration

import (
	"context"
	"encoding/json"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heddlehq/heddle/internal/plantest"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime"

	// The example application's operations, which the shipped example grants.
	_ "github.com/heddlehq/heddle/examples/incidents"
)

// modelBytes is the size of the tool definitions a model is given: the
// JSON of each tool's name, description and input and output schemas, the
// part of a definition every provider format carries.
func modelBytes(t *testing.T, v *runtime.View) (int, int) {
	t.Helper()
	tools, err := v.Tools(context.Background())
	if err != nil {
		t.Fatalf("View.Tools: %v", err)
	}
	type def struct {
		Name         string `json:"name"`
		Description  string `json:"description"`
		InputSchema  any    `json:"input_schema"`
		OutputSchema any    `json:"output_schema,omitempty"`
	}
	defs := make([]def, len(tools))
	for i, tl := range tools {
		defs[i] = def{tl.Name, tl.Description, tl.InputSchema, tl.OutputSchema}
	}
	b, err := json.Marshal(defs)
	if err != nil {
		t.Fatal(err)
	}
	return len(b), len(tools)
}

// capabilityRE finds the start of each capability of an agent.yaml written
// in flow style, as the shipped example's are.
var capabilityRE = regexp.MustCompile(`(?m)^(\s*- )\{kind:`)

// nameRE finds an agent.yaml's name.
var nameRE = regexp.MustCompile(`(?m)^name: .*$`)

// deferAll makes every grant of an agent.yaml say defer: true.
func deferAll(agent string) string {
	return capabilityRE.ReplaceAllString(agent, "$1{defer: true, kind:")
}

// measureDeferral opens api with each agent as written and with every grant
// deferred, and logs the bytes of what a new conversation's model is given.
func measureDeferral(t *testing.T, label, api string, agents map[string]string, usecases ...string) {
	t.Helper()
	all := map[string]string{}
	for name, a := range agents {
		if !capabilityRE.MatchString(a) {
			t.Fatalf("agent %s: no capability in flow style to defer", name)
		}
		all[name] = a
		all[name+"-deferred"] = nameRE.ReplaceAllString(deferAll(a), "name: "+name+"-deferred")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := compilePlanUsecases(t, api, all, usecases...)
	rt, err := runtime.Open(ctx, p, runtime.Options{ClientName: "heddle-integration"})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	var sumListed, sumDeferred int
	for _, name := range slices.Sorted(maps.Keys(agents)) {
		ts, err := rt.Toolset(name)
		if err != nil {
			t.Fatal(err)
		}
		dts, err := rt.Toolset(name + "-deferred")
		if err != nil {
			t.Fatal(err)
		}
		listed, n := modelBytes(t, ts.NewView())
		deferred, m := modelBytes(t, dts.NewView())
		if deferred >= listed || m != 2 {
			t.Errorf("%s: %d bytes for %d tools listed, %d bytes for %d deferred; want fewer, and only search_tools and load_tools", name, listed, n, deferred, m)
		}
		t.Logf("%s, agent %s: %d tools listed: %d bytes; all deferred: %d bytes (search_tools, load_tools); saved %d bytes (%.0f %%)",
			label, name, n, listed, deferred, listed-deferred, 100*float64(listed-deferred)/float64(listed))
		sumListed += listed
		sumDeferred += deferred
	}
	if len(agents) > 1 {
		t.Logf("%s, all agents: %d bytes listed, %d deferred", label, sumListed, sumDeferred)
	}
}

// TestDeferredBytesExample measures the shipped example (config/api.yaml,
// agents/): its example servers and remote agent built and started here,
// its SQLite database and use case as shipped.
func TestDeferredBytesExample(t *testing.T) {
	t.Parallel()
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "./cmd/heddle-example-server", "./cmd/heddle-example-agent")
	build.Dir = repo
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	addr := startExampleAgent(t, filepath.Join(bin, "heddle-example-agent"))
	raw, err := os.ReadFile(filepath.Join(repo, "config", "api.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	api := strings.NewReplacer(
		"bin/heddle-example-server", filepath.Join(bin, "heddle-example-server"),
		"examples/warehouse.db", filepath.Join(repo, "examples", "warehouse.db"),
		"http://127.0.0.1:8091", "http://"+addr,
	).Replace(string(raw))
	agents := map[string]string{}
	for _, name := range []string{"incident-triage", "catalog-assistant"} {
		b, err := os.ReadFile(filepath.Join(repo, "agents", name, "agent.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		agents[name] = string(b)
	}
	measureDeferral(t, "shipped example", api, agents, "incidents.get_incident")
}

// TestDeferredBytesEverythingFilesystem measures server-everything and
// server-filesystem granted to one agent.
func TestDeferredBytesEverythingFilesystem(t *testing.T) {
	t.Parallel()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	api := "ai:\n  startup_timeout_ms: 30000\n  mcp_servers:" +
		strings.ReplaceAll(everythingServer(t, "ev", "stdio")+filesystemServer(t, "fs", dir), "$MARK", "deferred-bytes")
	measureDeferral(t, "server-everything + server-filesystem", api, map[string]string{
		"both": "capabilities:\n  - {kind: mcp, server: ev}\n  - {kind: mcp, server: fs}\n",
	})
}

// startExampleAgent runs the example's remote agent on a free loopback
// port until the test ends, and returns its address once it listens.
func startExampleAgent(t *testing.T, bin string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "--listen", addr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("the example agent does not listen on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// compilePlanUsecases is compilePlan with the use-case keys the
// application registered.
func compilePlanUsecases(t testing.TB, api string, agents map[string]string, usecases ...string) *plan.Plan {
	t.Helper()
	return plantest.Must(t, api, agents, usecases...)
}

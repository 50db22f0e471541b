package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/heddlehq/heddle/internal/modtest"
	"github.com/heddlehq/heddle/internal/syncbuf"
)

// exampleTools are the tools of the shipped example's catalog-assistant:
// the catalog server's two, and the one its grant includes of runbooks.
var exampleTools = []string{"get_product", "search_products", "search_runbooks"}

// TestExampleHosts: the shipped example (config/api.yaml and agents/, as
// they are in the repository), served by the stock binary as `heddle mcp
// catalog-assistant`, is used by two MCP hosts no one here wrote. Both start
// bin/heddle from a directory laid out as the repository is after `make
// build` (bin/heddle, bin/heddle-example-server, config/, agents/); the
// config's stdio commands are relative to it. Each host lists the tools
// and calls search_products; whatever a host started is gone when it ends.
func TestExampleHosts(t *testing.T) {
	dir := exampleDeployment(t)

	// The TypeScript SDK's client (@modelcontextprotocol/sdk), through
	// facade/example.mjs.
	t.Run("typescript-sdk", func(t *testing.T) {
		node := Need(t, "node")
		Need(t, "typescript-sdk")
		script, err := filepath.Abs("facade/example.mjs")
		if err != nil {
			t.Fatal(err)
		}
		res := runHost(t, dir, nil, node, script, "bin/heddle", "mcp", "catalog-assistant")
		if res.err != nil {
			t.Fatalf("example.mjs: %v\nstderr:\n%s", res.err, res.stderr)
		}
		var r struct {
			Server          string
			Tools           []string
			ReadOnly        map[string]bool
			Search, Missing exampleResult
		}
		if err := json.Unmarshal(res.stdout, &r); err != nil {
			t.Fatalf("example.mjs printed %q: %v\nstderr:\n%s", res.stdout, err, res.stderr)
		}
		if r.Server != "heddle/catalog-assistant" {
			t.Errorf("server %q, want heddle/catalog-assistant", r.Server)
		}
		if d := cmp.Diff(exampleTools, r.Tools); d != "" {
			t.Errorf("tools (-want +got):\n%s", d)
		}
		for _, name := range exampleTools {
			if !r.ReadOnly[name] {
				t.Errorf("%s is not readOnlyHint: %v", name, r.ReadOnly)
			}
		}
		r.Search.wantProducts(t, "search_products {query: managed database}", "P-200")
		if !r.Missing.IsError || !strings.Contains(r.Missing.Text(), "P-999") {
			t.Errorf("get_product {id: P-999}: %+v, want the server's error naming P-999", r.Missing)
		}
	})

	// The MCP Inspector's command-line mode (@modelcontextprotocol/inspector,
	// pinned in package.json). Version 2 still has one: its launcher
	// (mcp-inspector) takes --cli with --method tools/list, or tools/call
	// with --tool-name and --tool-arg key=value, then `--` and the stdio
	// server's command line; --format json prints {"result": …} on
	// standard output. It requires Node 22.19 or later (node22). It is
	// given an empty HOME and an in-memory secret store, so that it reads
	// and writes none of the user's catalog, client config, OAuth state or
	// keychain. Over stdio it opens no port.
	t.Run("inspector", func(t *testing.T) {
		node := Need(t, "node22")
		launcher := Need(t, "inspector")
		env := []string{"HOME=" + t.TempDir(), "MCP_INSPECTOR_SECRET_STORE=memory"}
		inspect := func(t *testing.T, args []string) (json.RawMessage, hostRun) {
			t.Helper()
			res := runHost(t, dir, env, node, append([]string{launcher}, args...)...)
			var out struct{ Result json.RawMessage }
			if err := json.Unmarshal(res.stdout, &out); err != nil || out.Result == nil {
				t.Fatalf("mcp-inspector %s: %v; printed %q (%v)\nstderr:\n%s", strings.Join(args, " "), res.err, res.stdout, err, res.stderr)
			}
			return out.Result, res
		}
		t.Run("tools/list", func(t *testing.T) {
			raw, res := inspect(t, inspectorList)
			if res.err != nil {
				t.Fatalf("mcp-inspector: %v\nstderr:\n%s", res.err, res.stderr)
			}
			var list struct {
				Tools []struct {
					Name        string
					Annotations struct{ ReadOnlyHint bool }
				}
			}
			if err := json.Unmarshal(raw, &list); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range list.Tools {
				names = append(names, tool.Name)
				if !tool.Annotations.ReadOnlyHint {
					t.Errorf("%s is not readOnlyHint", tool.Name)
				}
			}
			slices.Sort(names)
			if d := cmp.Diff(exampleTools, names); d != "" {
				t.Errorf("tools (-want +got):\n%s", d)
			}
		})
		t.Run("tools/call", func(t *testing.T) {
			raw, res := inspect(t, inspectorCall)
			if res.err != nil {
				t.Fatalf("mcp-inspector: %v\nstderr:\n%s", res.err, res.stderr)
			}
			var r exampleResult
			if err := json.Unmarshal(raw, &r); err != nil {
				t.Fatal(err)
			}
			r.wantProducts(t, "search_products {query: postgres}", "P-200")
		})
		t.Run("tools/call error", func(t *testing.T) {
			// A tool's error result is the Inspector's failure: it exits
			// non-zero, and still prints the result.
			raw, res := inspect(t, []string{"--cli", "--format", "json", "--method", "tools/call", "--tool-name", "get_product", "--tool-arg", "id=P-999", "--", "bin/heddle", "mcp", "catalog-assistant"})
			var exit *exec.ExitError
			if !errors.As(res.err, &exit) {
				t.Errorf("mcp-inspector: %v, want a non-zero exit", res.err)
			}
			var r exampleResult
			if err := json.Unmarshal(raw, &r); err != nil {
				t.Fatal(err)
			}
			if !r.IsError || !strings.Contains(r.Text(), "P-999") {
				t.Errorf("get_product {id: P-999}: %s, want the server's error naming P-999", raw)
			}
		})
	})

	// docs/mcp-server.md shows the Inspector's command lines this test
	// runs, with the version package.json pins.
	t.Run("docs", func(t *testing.T) {
		root := modtest.Root(t)
		doc, err := os.ReadFile(filepath.Join(root, "docs/mcp-server.md"))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile("package.json")
		if err != nil {
			t.Fatal(err)
		}
		var pkg struct{ Dependencies map[string]string }
		if err := json.Unmarshal(b, &pkg); err != nil {
			t.Fatal(err)
		}
		npx := "$ npx @modelcontextprotocol/inspector@" + pkg.Dependencies["@modelcontextprotocol/inspector"]
		for _, args := range [][]string{inspectorList, inspectorCall} {
			line := npx + " " + strings.Join(args, " ")
			if !slices.Contains(strings.Split(string(doc), "\n"), line) {
				t.Errorf("docs/mcp-server.md does not show\n%s", line)
			}
		}
	})
}

// The Inspector's command lines, as docs/mcp-server.md shows them after
// `npx @modelcontextprotocol/inspector@VERSION`.
var (
	inspectorList = []string{"--cli", "--format", "json", "--method", "tools/list", "--", "bin/heddle", "mcp", "catalog-assistant"}
	inspectorCall = []string{"--cli", "--format", "json", "--method", "tools/call", "--tool-name", "search_products", "--tool-arg", "query=postgres", "--", "bin/heddle", "mcp", "catalog-assistant"}
)

// exampleResult is a tools/call result, as both hosts print it.
type exampleResult struct {
	IsError bool `json:"isError"`
	Content []struct {
		Type, Text string
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
}

// Text is the result's text content.
func (r exampleResult) Text() string {
	var s strings.Builder
	for _, c := range r.Content {
		if c.Type == "text" {
			s.WriteString(c.Text)
		}
	}
	return s.String()
}

// wantProducts checks that r is a search_products result listing exactly
// the products ids, in its text and its structured content.
func (r exampleResult) wantProducts(t *testing.T, call string, ids ...string) {
	t.Helper()
	if r.IsError {
		t.Errorf("%s: an error: %s", call, r.Text())
		return
	}
	sc := r.StructuredContent
	var out struct {
		Products []struct{ ID string }
	}
	if err := json.Unmarshal(sc, &out); err != nil {
		t.Errorf("%s: structured content %s: %v", call, sc, err)
	}
	var got []string
	for _, p := range out.Products {
		got = append(got, p.ID)
	}
	if d := cmp.Diff(ids, got); d != "" {
		t.Errorf("%s: products (-want +got):\n%s", call, d)
	}
	for _, id := range ids {
		if !strings.Contains(r.Text(), id) {
			t.Errorf("%s: text %q does not name %s", call, r.Text(), id)
		}
	}
}

// exampleDeployment lays out the shipped example in a temporary directory
// as `make build` leaves the repository: bin/heddle and
// bin/heddle-example-server built from this tree, and copies of
// config/api.yaml and agents/.
func exampleDeployment(t *testing.T) string {
	t.Helper()
	root := modtest.Root(t)
	dir := t.TempDir()
	for _, cmd := range []string{"heddle", "heddle-example-server"} {
		build := exec.Command("go", "build", "-o", filepath.Join(dir, "bin", cmd), "./cmd/"+cmd)
		build.Dir = root
		if b, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building cmd/%s: %v\n%s", cmd, err, b)
		}
	}
	b, err := os.ReadFile(filepath.Join(root, "config/api.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	modtest.WriteFile(t, filepath.Join(dir, "config/api.yaml"), string(b))
	if err := os.CopyFS(filepath.Join(dir, "agents"), os.DirFS(filepath.Join(root, "agents"))); err != nil {
		t.Fatal(err)
	}
	return dir
}

// hostRun is how a host's run ended.
type hostRun struct {
	stdout []byte
	stderr string
	err    error
}

// runHost runs a host (name args…) in dir, with env added to the test's
// environment (less its MCP_* variables), in a process group of its own,
// for at most 60 s; the group is killed when the time is up. Afterwards it
// fails the test if a process of that group, or one running a binary of
// dir/bin (heddle and the servers it starts, in groups of their own), is
// still alive 10 s later, and kills it.
func runHost(t *testing.T, dir string, env []string, name string, args ...string) hostRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MCP_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stderr syncbuf.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ctx.Err() != nil {
		err = fmt.Errorf("%w (killed after 60 s)", err)
	}
	var left []proc
	if cmd.Process != nil {
		left = append(processGroup(cmd.Process.Pid), procsRunningUnder(filepath.Join(dir, "bin"))...)
	}
	requireGone(t, left, 10*time.Second)
	for _, p := range left {
		if ok, _ := p.alive(); ok {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
	}
	return hostRun{out, stderr.String(), err}
}

// procsRunningUnder finds the processes whose executable is in dir.
func procsRunningUnder(dir string) []proc {
	var out []proc
	for _, pid := range pids() {
		exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe"))
		if err != nil || !strings.HasPrefix(exe, dir+string(filepath.Separator)) {
			continue
		}
		if st, ok := readStat(pid); ok {
			out = append(out, proc{pid, st.start})
		}
	}
	return out
}

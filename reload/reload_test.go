package reload

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/goleak"

	_ "github.com/heddlehq/heddle/builtin"
	"github.com/heddlehq/heddle/compile"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/syncbuf"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/usecase"
)

func init() {
	usecase.Register("test.ping", func(context.Context, struct{}) (string, error) { return "pong", nil },
		usecase.Description("Answer pong."), usecase.ReadOnly())
}

// grant is an agent granting the one operation.
const grant = "capabilities: [{kind: usecase, keys: [test.ping]}]\n"

// tree is a configuration on disk, compiled as heddle reads it.
type tree struct {
	t   *testing.T
	dir string
}

func newTree(t *testing.T, files map[string]string) *tree {
	tr := &tree{t: t, dir: t.TempDir()}
	tr.write(files)
	return tr
}

func (tr *tree) write(files map[string]string) {
	tr.t.Helper()
	for name, data := range files {
		p := filepath.Join(tr.dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tr.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			tr.t.Fatal(err)
		}
	}
}

func (tr *tree) watch() *Watch {
	return &Watch{Config: filepath.Join(tr.dir, "config/api.yaml"), Agents: filepath.Join(tr.dir, "agents"), Lock: filepath.Join(tr.dir, "heddle.lock")}
}

func (tr *tree) compile() (*plan.Plan, diag.Diagnostics) {
	cfg, ds := config.Load(config.Options{ConfigFile: filepath.Join(tr.dir, "config/api.yaml"), AgentsDir: filepath.Join(tr.dir, "agents")})
	p, cds := compile.Compile(compile.Input{Config: cfg, Usecases: usecase.Keys()})
	if ds = append(ds, cds...); ds.HasErrors() {
		return nil, ds
	}
	return p, ds
}

// open opens the tree's configuration as generation 1.
func (tr *tree) open() *runtime.Generations {
	tr.t.Helper()
	p, ds := tr.compile()
	if p == nil {
		tr.t.Fatal(ds.Err())
	}
	rt, err := runtime.Open(context.Background(), p, runtime.Options{})
	if err != nil {
		tr.t.Fatal(err)
	}
	gens := runtime.NewGenerations(rt)
	tr.t.Cleanup(func() { _ = gens.Close() })
	return gens
}

// TestReload: a reload that compiles swaps in the next generation and
// forgets the last failure; one that does not keeps the live generation,
// records its codes in the Generations, logs them and hands the error to
// OnReload; a changed serve: section is swapped in with a warning.
func TestReload(t *testing.T) {
	tr := newTree(t, map[string]string{"config/api.yaml": "ai: {}\n", "agents/a/agent.yaml": grant})
	gens := tr.open()
	var logs syncbuf.Buffer
	var reloaded []error
	r := New(gens, tr.compile, &Options{
		Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
		OnReload: func(err error) { reloaded = append(reloaded, err) },
	})
	ctx := context.Background()

	tr.write(map[string]string{"agents/b/agent.yaml": "capabilities: [\n"})
	err := r.Reload(ctx)
	if !diag.Has(err, diag.ConfigParse) || gens.Generation() != 1 {
		t.Fatalf("a broken agent: err %v, generation %d", err, gens.Generation())
	}
	if f := gens.LastFailure(); f == nil || !slices.Equal(f.Codes, []diag.Code{diag.ConfigParse}) {
		t.Errorf("last failure %+v, want codes [CONFIG_PARSE]", f)
	}
	if !strings.Contains(logs.String(), "codes=CONFIG_PARSE") {
		t.Errorf("the log does not name the code:\n%s", logs.String())
	}

	tr.write(map[string]string{"agents/b/agent.yaml": grant})
	if err := r.Reload(ctx); err != nil || gens.Generation() != 2 || gens.LastFailure() != nil {
		t.Fatalf("a fixed agent: err %v, generation %d, last failure %+v", err, gens.Generation(), gens.LastFailure())
	}
	if _, err := gens.Current().Toolset("b"); err != nil {
		t.Errorf("generation 2 does not serve agent b: %v", err)
	}
	if strings.Contains(logs.String(), "serve: section changed") {
		t.Errorf("a warning of a serve: section that did not change:\n%s", logs.String())
	}

	tr.write(map[string]string{"config/api.yaml": "serve: {auth: {kind: none}}\nai: {}\n"})
	if err := r.Reload(ctx); err != nil || gens.Generation() != 3 {
		t.Fatalf("a changed serve: section: err %v, generation %d", err, gens.Generation())
	}
	if !strings.Contains(logs.String(), "serve: section changed") {
		t.Errorf("no warning of the changed serve: section:\n%s", logs.String())
	}
	if len(reloaded) != 3 || reloaded[0] == nil || reloaded[1] != nil || reloaded[2] != nil {
		t.Errorf("OnReload was told %v, want a failure and two successes", reloaded)
	}
}

// TestReloadNoPlan: a compile that returns neither a plan nor an error
// fails the reload rather than swapping in nothing.
func TestReloadNoPlan(t *testing.T) {
	tr := newTree(t, map[string]string{"config/api.yaml": "ai: {}\n", "agents/a/agent.yaml": grant})
	gens := tr.open()
	r := New(gens, func() (*plan.Plan, diag.Diagnostics) { return nil, nil }, nil)
	if err := r.Reload(context.Background()); err == nil || gens.Generation() != 1 {
		t.Errorf("err %v, generation %d", err, gens.Generation())
	}
}

// waitGeneration waits until gens is at generation n, for at most 10 s.
func waitGeneration(t *testing.T, gens *runtime.Generations, n uint64) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		changed := gens.Changed() // before the check: a swap after it closes this one
		if gens.Generation() >= n {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("generation %d, want %d", gens.Generation(), n)
		}
	}
	if gens.Generation() != n {
		t.Fatalf("generation %d, want %d", gens.Generation(), n)
	}
}

// TestStart: Start reloads on a signal, and with a watch when an agent is
// added, an agent's file changes or the deployment's directory changes,
// not when another file beside the lock does; stop leaves no goroutine.
func TestStart(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	tr := newTree(t, map[string]string{"config/api.yaml": "ai: {}\n", "agents/a/agent.yaml": grant})
	gens := tr.open()
	r := New(gens, tr.compile, nil)
	hup := make(chan os.Signal, 1)
	stop := r.Start(context.Background(), hup, tr.watch())

	hup <- syscall.SIGHUP
	waitGeneration(t, gens, 2)

	tr.write(map[string]string{"agents/b/agent.yaml": grant})
	waitGeneration(t, gens, 3)
	tr.write(map[string]string{"agents/b/agent.yaml": "description: b\n" + grant})
	waitGeneration(t, gens, 4)
	tr.write(map[string]string{"config/api.yaml": "ai: {startup_timeout_ms: 5000}\n"})
	waitGeneration(t, gens, 5)

	tr.write(map[string]string{"worker.log": "a line\n"})
	time.Sleep(4 * WatchDebounce)
	if n := gens.Generation(); n != 5 {
		t.Errorf("a file beside the lock reloaded: generation %d", n)
	}
	tr.write(map[string]string{"heddle.lock": "{}\n"})
	waitGeneration(t, gens, 6)
	stop()
}

// TestStartWithoutWatch: without a watch, a change of a file does not
// reload; ending the context ends the reloads.
func TestStartWithoutWatch(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	tr := newTree(t, map[string]string{"config/api.yaml": "ai: {}\n", "agents/a/agent.yaml": grant})
	gens := tr.open()
	r := New(gens, tr.compile, nil)
	ctx, cancel := context.WithCancel(context.Background())
	stop := r.Start(ctx, nil, nil)
	tr.write(map[string]string{"agents/b/agent.yaml": grant})
	time.Sleep(4 * WatchDebounce)
	if n := gens.Generation(); n != 1 {
		t.Errorf("a change reloaded without a watch: generation %d", n)
	}
	cancel()
	stop()
}

// TestWatchRelevant: a watch reloads on any change but a mode's in the
// configuration's directories, and in the lock file's directory (often
// the working directory) only on a change of the lock itself.
func TestWatchRelevant(t *testing.T) {
	w := &watcher{configDir: "config", agentsDir: "agents", lockDir: ".", lockBase: "heddle.lock"}
	for _, tc := range []struct {
		name string
		op   fsnotify.Op
		want bool
	}{
		{"config/api.yaml", fsnotify.Write, true},
		{"config/..data", fsnotify.Create, true},
		{"config/..2026_12_01_00_00_01", fsnotify.Remove, true},
		{"agents/b", fsnotify.Create, true},
		{"agents/b/agent.yaml", fsnotify.Rename, true},
		{"heddle.lock", fsnotify.Write, true},
		{"worker.log", fsnotify.Write, false},
		{"config/api.yaml", fsnotify.Chmod, false},
	} {
		if got := w.relevant(fsnotify.Event{Name: tc.name, Op: tc.op}); got != tc.want {
			t.Errorf("%s %s: relevant %v, want %v", tc.op, tc.name, got, tc.want)
		}
	}
}

// TestErrCodes: a failed reload reports every code of its error — each
// error diagnostic of the configuration, each failure of start-up (an
// error that unwraps to several, as runtime.StartupError does) — sorted,
// once each.
func TestErrCodes(t *testing.T) {
	ds := diag.Diagnostics{
		diag.Errorf(diag.MCPServerUnknown, "agents.a", "x"),
		diag.Errorf(diag.ConfigParse, "agents.b", "y"),
		diag.Errorf(diag.MCPServerUnknown, "agents.c", "z"),
	}
	if got := errCodes(ds.Err()); !slices.Equal(got, []diag.Code{diag.ConfigParse, diag.MCPServerUnknown}) {
		t.Errorf("diagnostics: %v", got)
	}
	startup := errors.Join(diag.New(diag.SecretUnresolved, "b"), fmt.Errorf("a: %w", diag.New(diag.MCPServerUnreachable, "a")))
	if got := errCodes(startup); !slices.Equal(got, []diag.Code{diag.MCPServerUnreachable, diag.SecretUnresolved}) {
		t.Errorf("start-up: %v", got)
	}
}

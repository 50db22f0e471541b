package reload_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	_ "github.com/heddlehq/heddle/builtin" // the built-in kinds, both halves

	"github.com/heddlehq/heddle/compile"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/reload"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/usecase"
)

// The application's operation, which its agents grant.
func init() {
	usecase.Register("desk.ping", func(context.Context, struct{}) (string, error) { return "pong", nil },
		usecase.Description("Answer pong."), usecase.ReadOnly())
}

// An application serving its own front door holds its runtime in
// Generations and reloads it when a file of the configuration changes, on
// SIGHUP (passed to Start, nil here) or when it asks: a configuration that
// does not compile leaves the live generation serving and says why.
func Example() {
	dir, err := os.MkdirTemp("", "reload-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	write := func(name, data string) {
		_ = os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755)
		_ = os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644)
	}
	write("config/api.yaml", "ai: {}\n")
	write("agents/desk/agent.yaml", "capabilities: [{kind: usecase, keys: [desk.ping]}]\n")

	// How the application loads and compiles its configuration, at
	// start-up and at each reload.
	where := config.Options{ConfigFile: filepath.Join(dir, "config/api.yaml"), AgentsDir: filepath.Join(dir, "agents")}
	compileConfig := func() (*plan.Plan, diag.Diagnostics) {
		cfg, ds := config.Load(where)
		p, cds := compile.Compile(compile.Input{Config: cfg, Usecases: usecase.Keys()})
		if ds = append(ds, cds...); ds.HasErrors() {
			return nil, ds
		}
		return p, ds
	}

	ctx := context.Background()
	p, ds := compileConfig()
	if p == nil {
		fmt.Println(ds.Err())
		return
	}
	rt, err := runtime.Open(ctx, p, runtime.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	gens := runtime.NewGenerations(rt)
	defer gens.Close()

	r := reload.New(gens, compileConfig, nil)
	stop := r.Start(ctx, nil, &reload.Watch{Config: where.ConfigFile, Agents: where.AgentsDir})

	// A second agent appears: the watch reloads.
	changed := gens.Changed()
	write("agents/triage/agent.yaml", "capabilities: [{kind: usecase, keys: [desk.ping]}]\n")
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		fmt.Println("no reload")
	}
	_, err = gens.Current().Toolset("triage")
	fmt.Println("generation", gens.Generation(), "serves triage:", err == nil)
	stop()

	// A broken file, reloaded on demand: generation 2 goes on serving.
	write("agents/triage/agent.yaml", "capabilities: [\n")
	err = r.Reload(ctx)
	fmt.Println("reload:", diag.CodeOf(err), "generation", gens.Generation(), "last failure:", gens.LastFailure().Codes)
	// Output:
	// generation 2 serves triage: true
	// reload: CONFIG_PARSE generation 2 last failure: [CONFIG_PARSE]
}

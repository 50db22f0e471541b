package main

import (
	"context"
	"fmt"
	"strings"
	"testing/fstest"

	_ "github.com/heddlehq/heddle/builtin" // the built-in kinds, both halves
	"github.com/heddlehq/heddle/compile"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime"
)

// benchAgent is the agent of every heddle deployment here.
const benchAgent = "bench"

// heddlePlan compiles a deployment of the servers named s00, s01, … each
// given by its line of YAML flow mapping, all granted to benchAgent with
// the default policies, through heddle's public API, as an application
// does.
func heddlePlan(servers []string) (*plan.Plan, error) {
	var api, agent strings.Builder
	api.WriteString("ai:\n  startup_timeout_ms: 120000\n  mcp_servers:\n")
	agent.WriteString("capabilities:\n")
	for i, s := range servers {
		fmt.Fprintf(&api, "    s%02d: %s\n", i, s)
		fmt.Fprintf(&agent, "  - {kind: mcp, server: s%02d}\n", i)
	}
	fsys := fstest.MapFS{
		"config/api.yaml":                      {Data: []byte(api.String())},
		"agents/" + benchAgent + "/agent.yaml": {Data: []byte(agent.String())},
	}
	cfg, ds := config.Load(config.Options{FS: fsys})
	p, cds := compile.Compile(compile.Input{Config: cfg})
	if ds = append(ds, cds...); ds.HasErrors() {
		return nil, ds.Err()
	}
	return p, nil
}

// heddleServer is the YAML of one server of t.
func heddleServer(t target) string {
	if t.stdio() {
		return fmt.Sprintf("{transport: stdio, command: %q}", t.bin)
	}
	return fmt.Sprintf("{url: %q}", t.url)
}

// heddleServers is n servers of t.
func heddleServers(t target, n int) []string {
	s := make([]string, n)
	for i := range s {
		s[i] = heddleServer(t)
	}
	return s
}

// openHeddle opens a runtime with one server, t, and calls through the
// agent's toolset (Toolset.Call): name lookup, policy, argument checks,
// deadlines and the result cap included.
func openHeddle(ctx context.Context, t target) (client, error) {
	p, err := heddlePlan(heddleServers(t, 1))
	if err != nil {
		return nil, err
	}
	rt, err := runtime.Open(ctx, p, runtime.Options{})
	if err != nil {
		return nil, err
	}
	ts, err := rt.Toolset(benchAgent)
	if err != nil {
		_ = rt.Close()
		return nil, err
	}
	call := func(ctx context.Context, tool string, args map[string]any) error {
		res, err := ts.Call(ctx, tool, args)
		return checkResult(res, err)
	}
	return inProcess{goClient{call: call, close: rt.Close}}, nil
}

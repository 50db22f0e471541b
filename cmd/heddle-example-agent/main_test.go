package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/heddlehq/heddle"
	_ "github.com/heddlehq/heddle/builtin" // the built-in kinds, both halves
	"github.com/heddlehq/heddle/internal/plantest"
	"github.com/heddlehq/heddle/runtime"
)

// TestThroughHeddle: the example agent is a peer heddle's a2a kind speaks
// to — its card is fetched, its one tool offered, and a call answered.
func TestThroughHeddle(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()
	p := plantest.Must(t, "ai:\n  a2a_agents:\n    triage: {url: "+srv.URL+"}\n",
		map[string]string{"desk": "capabilities: [{kind: a2a, agent: triage}]\n"})
	rt, err := runtime.Open(context.Background(), p, runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ts, err := rt.Toolset("desk")
	if err != nil {
		t.Fatal(err)
	}
	tools, err := ts.Tools(context.Background())
	if err != nil || len(tools) != 1 || tools[0].Name != "triage" || tools[0].Kind != "a2a" {
		t.Fatalf("tools = %+v, %v; want the agent's one tool", tools, err)
	}
	ctx := heddle.WithCaller(context.Background(), heddle.Identity{Subject: "alice"})
	res, err := ts.Call(ctx, "triage", map[string]any{"message": "Disk full on db-replica-2"})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	if got := plantest.Text(res); !strings.Contains(got, "severity 4") || !strings.Contains(got, "RB-103") {
		t.Errorf("answer = %q, want the disk rule's", got)
	}
}

func TestTriage(t *testing.T) {
	for in, want := range map[string]string{
		"Checkout API returns 502":      "severity 5",
		"Login failures after rotation": "severity 4",
		"p99 latency doubled":           "severity 3",
		"something odd":                 "severity 2",
	} {
		if got := Triage(in); !strings.HasPrefix(got, want) {
			t.Errorf("Triage(%q) = %q, want %s…", in, got, want)
		}
	}
}

package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Runbook is one incident-handling procedure.
type Runbook struct {
	ID       string   `json:"id"`
	Title    string   `json:"title"`
	Summary  string   `json:"summary"`
	Severity string   `json:"severity" jsonschema:"the incident severity this runbook is written for: sev1, sev2 or sev3"`
	Tags     []string `json:"tags"`
	Steps    []string `json:"steps,omitempty"`
}

var runbooks = []Runbook{
	{
		ID: "RB-101", Title: "API 5xx error rate above SLO", Severity: "sev2",
		Summary: "Elevated 5xx responses from the public API: find the failing dependency, roll back or shed load.",
		Tags:    []string{"api", "errors", "5xx", "latency", "rollback"},
		Steps: []string{
			"Check the API dashboard for the error rate by route and by pod.",
			"Compare the start of the errors with the last deployment; if they match, roll back.",
			"If a dependency is failing, enable its circuit breaker.",
			"Post a status update every 30 minutes until the error rate is below the SLO.",
		},
	},
	{
		ID: "RB-102", Title: "Database connection pool exhausted", Severity: "sev1",
		Summary: "Requests time out waiting for a database connection: find long-running queries and restore capacity.",
		Tags:    []string{"database", "postgres", "connections", "timeouts"},
		Steps: []string{
			"List long-running queries (pg_stat_activity, state = 'active', longest first).",
			"Cancel queries running longer than 5 minutes that are not migrations.",
			"Restart the API pods one at a time to release leaked connections.",
			"Open a follow-up to size the pool against the replica count.",
		},
	},
	{
		ID: "RB-103", Title: "Node disk almost full", Severity: "sev3",
		Summary: "A node's root or data volume is above 90%: free space before pods are evicted.",
		Tags:    []string{"disk", "storage", "node", "kubernetes", "eviction"},
		Steps: []string{
			"Find the largest directories on the volume (du -xh --max-depth=2).",
			"Prune unused container images and rotate oversized logs.",
			"If the volume is still above 85%, cordon the node and expand the volume.",
		},
	},
	{
		ID: "RB-104", Title: "TLS certificate about to expire", Severity: "sev2",
		Summary: "A serving certificate expires within 7 days: renew it and roll the ingress.",
		Tags:    []string{"tls", "certificate", "expiry", "ingress"},
		Steps: []string{
			"Confirm the expiry date with openssl s_client against the public endpoint.",
			"Trigger a renewal in the certificate manager and wait for the new secret.",
			"Roll the ingress controller and check the served certificate again.",
		},
	},
}

// Tool inputs and outputs; go-sdk infers the JSON Schemas from them.
type (
	searchRunbooksIn struct {
		Query string `json:"query" jsonschema:"words to look for in runbook titles, summaries and tags, e.g. 'database timeouts'"`
	}
	searchRunbooksOut struct {
		Runbooks []Runbook `json:"runbooks"`
	}
	runbookIDIn struct {
		ID string `json:"id" jsonschema:"the runbook id, e.g. RB-101"`
	}
	getRunbookOut struct {
		Runbook
		Region string `json:"region,omitempty" jsonschema:"the region this server operates in"`
	}
	executeRunbookOut struct {
		ExecutionID string `json:"execution_id"`
		RunbookID   string `json:"runbook_id"`
		Status      string `json:"status"`
		Region      string `json:"region,omitempty"`
	}
)

// executions numbers execute_runbook calls.
var executions atomic.Int64

func addRunbookTools(s *mcp.Server, keep func(string) bool) {
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)}
	if keep("search_runbooks") {
		mcp.AddTool(s, &mcp.Tool{
			Name:        "search_runbooks",
			Description: "Search incident runbooks by keywords; returns matching runbooks without their steps.",
			Annotations: readOnly,
		}, func(_ context.Context, _ *mcp.CallToolRequest, in searchRunbooksIn) (*mcp.CallToolResult, searchRunbooksOut, error) {
			out := searchRunbooksOut{Runbooks: []Runbook{}}
			var lines []string
			for _, rb := range runbooks {
				if matches(in.Query, rb.Title, rb.Summary, strings.Join(rb.Tags, " ")) {
					rb.Steps = nil
					out.Runbooks = append(out.Runbooks, rb)
					lines = append(lines, fmt.Sprintf("%s (%s) %s: %s", rb.ID, rb.Severity, rb.Title, rb.Summary))
				}
			}
			if len(lines) == 0 {
				return text("No runbook matches %q.", in.Query), out, nil
			}
			return text("%s", strings.Join(lines, "\n")), out, nil
		})
	}
	if keep("get_runbook") {
		mcp.AddTool(s, &mcp.Tool{
			Name:        "get_runbook",
			Description: "Get one runbook by id, with its steps.",
			Annotations: readOnly,
		}, func(_ context.Context, _ *mcp.CallToolRequest, in runbookIDIn) (*mcp.CallToolResult, getRunbookOut, error) {
			rb, err := findRunbook(in.ID)
			if err != nil {
				return nil, getRunbookOut{}, err
			}
			var b strings.Builder
			fmt.Fprintf(&b, "%s (%s) %s\n%s\n", rb.ID, rb.Severity, rb.Title, rb.Summary)
			for i, step := range rb.Steps {
				fmt.Fprintf(&b, "%d. %s\n", i+1, step)
			}
			return text("%s", b.String()), getRunbookOut{Runbook: rb, Region: os.Getenv("RUNBOOKS_REGION")}, nil
		})
	}
	if keep("execute_runbook") {
		mcp.AddTool(s, &mcp.Tool{
			Name:        "execute_runbook",
			Description: "Start the automated remediation of a runbook against production. Changes live systems.",
			Annotations: &mcp.ToolAnnotations{DestructiveHint: new(true), OpenWorldHint: new(true)},
		}, func(_ context.Context, _ *mcp.CallToolRequest, in runbookIDIn) (*mcp.CallToolResult, executeRunbookOut, error) {
			rb, err := findRunbook(in.ID)
			if err != nil {
				return nil, executeRunbookOut{}, err
			}
			out := executeRunbookOut{
				ExecutionID: fmt.Sprintf("EX-%04d", executions.Add(1)),
				RunbookID:   rb.ID,
				Status:      "started",
				Region:      os.Getenv("RUNBOOKS_REGION"),
			}
			return text("Started %s (%s) as %s.", rb.ID, rb.Title, out.ExecutionID), out, nil
		})
	}
}

func findRunbook(id string) (Runbook, error) {
	for _, rb := range runbooks {
		if strings.EqualFold(rb.ID, id) {
			return rb, nil
		}
	}
	return Runbook{}, fmt.Errorf("no runbook %q; search_runbooks lists the ids", id)
}

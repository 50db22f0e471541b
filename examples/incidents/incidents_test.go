package incidents_test

import (
	"context"
	"strings"
	"testing"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/examples/incidents"
	"github.com/heddlehq/heddle/usecase"
)

func as(subject, tenant string) context.Context {
	return heddle.WithCaller(context.Background(), heddle.Identity{Subject: subject, Claims: map[string]string{"tenant": tenant}})
}

func TestTenantsAreSeparate(t *testing.T) {
	incidents.Reset()
	t.Cleanup(incidents.Reset)
	inc, err := incidents.GetIncident(as("alice", "acme"), incidents.GetIncidentInput{ID: "INC-1"})
	if err != nil || inc.Tenant != "acme" {
		t.Fatalf("alice: %+v, %v", inc, err)
	}
	// Another tenant's incident reads exactly as a missing one.
	_, other := incidents.GetIncident(as("bob", "globex"), incidents.GetIncidentInput{ID: "INC-1"})
	_, missing := incidents.GetIncident(as("bob", "globex"), incidents.GetIncidentInput{ID: "INC-9"})
	if other == nil || missing == nil || strings.ReplaceAll(other.Error(), "INC-1", "INC-9") != missing.Error() {
		t.Errorf("other tenant: %v; missing: %v", other, missing)
	}
	if _, err := incidents.GetIncident(context.Background(), incidents.GetIncidentInput{ID: "INC-1"}); err == nil {
		t.Error("an anonymous caller read an incident")
	}
	if _, err := incidents.CloseIncident(as("bob", "globex"), incidents.CloseIncidentInput{ID: "INC-1", Resolution: "x"}); err == nil {
		t.Error("bob closed acme's incident")
	}
	closed, err := incidents.CloseIncident(as("alice", "acme"), incidents.CloseIncidentInput{ID: "INC-1", Resolution: "rotated logs"})
	if err != nil || closed.Status != "closed" || closed.ClosedBy != "alice" {
		t.Errorf("close: %+v, %v", closed, err)
	}
}

func TestRegistered(t *testing.T) {
	get, ok1 := usecase.Lookup(incidents.GetIncidentKey)
	closeOp, ok2 := usecase.Lookup(incidents.CloseIncidentKey)
	if !ok1 || !ok2 {
		t.Fatal("the keys are not registered")
	}
	if a := get.Annotations(); !a.ReadOnly {
		t.Errorf("get_incident annotations %+v", a)
	}
	if a := closeOp.Annotations(); a.Destructive == nil || !*a.Destructive {
		t.Errorf("close_incident annotations %+v", a)
	}
}

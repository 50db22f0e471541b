// Package incidents is an example application's own operations, registered
// as use cases: an incident-triage agent granted
//
//	capabilities:
//	  - {kind: usecase, keys: [incidents.get_incident]}
//
// calls incidents.get_incident in process, as the person who invoked it. The
// operation reads that person from the context (heddle.Caller) and shows
// only incidents of their own tenant (the caller's "tenant" claim): the
// identity does what an MCP hop in front of the application would have
// replaced with a service credential.
//
// Importing the package registers the operations:
//
//	import _ "github.com/heddlehq/heddle/examples/incidents"
//
// The example's worker, cmd/incidents-worker, does that and runs the heddle
// command (heddlecmd); it is what runs the shipped example, whose
// incident-triage agent grants incidents.get_incident.
//
// The incidents live in a small in-memory table, shared by the process.
package incidents

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/usecase"
)

// The keys the package registers.
const (
	GetIncidentKey   = "incidents.get_incident"
	CloseIncidentKey = "incidents.close_incident"
)

func init() {
	usecase.Register(GetIncidentKey, GetIncident,
		usecase.Description("Fetch one incident of the caller's tenant by its id (e.g. INC-1): title, severity, status."),
		usecase.ReadOnly(), usecase.Idempotent())
	usecase.Register(CloseIncidentKey, CloseIncident,
		usecase.Description("Close one incident of the caller's tenant, recording the resolution. Closing a closed incident changes nothing."),
		usecase.Destructive(), usecase.Idempotent())
}

// Incident is one incident as the operations return it.
type Incident struct {
	ID         string `json:"id"`
	Tenant     string `json:"tenant"`
	Title      string `json:"title"`
	Severity   int    `json:"severity" jsonschema:"1 (lowest) to 5 (highest)"`
	Status     string `json:"status" jsonschema:"open or closed"`
	Resolution string `json:"resolution,omitempty"`
	ClosedBy   string `json:"closed_by,omitempty" jsonschema:"the subject of the caller who closed it"`
}

// GetIncidentInput is the input of incidents.get_incident.
type GetIncidentInput struct {
	ID string `json:"id" jsonschema:"the incident id, e.g. INC-1"`
}

// CloseIncidentInput is the input of incidents.close_incident.
type CloseIncidentInput struct {
	ID         string `json:"id" jsonschema:"the incident id, e.g. INC-1"`
	Resolution string `json:"resolution" jsonschema:"what fixed it, in one sentence"`
}

var (
	mu    sync.Mutex
	table = map[string]Incident{}
)

func init() { Reset() }

// Reset restores the table to its initial contents: two incidents of tenant
// acme and one of tenant globex.
func Reset() {
	mu.Lock()
	defer mu.Unlock()
	clear(table)
	for _, inc := range []Incident{
		{ID: "INC-1", Tenant: "acme", Title: "Disk full on db-1", Severity: 4, Status: "open"},
		{ID: "INC-2", Tenant: "acme", Title: "Checkout latency above 2 s", Severity: 3, Status: "open"},
		{ID: "INC-3", Tenant: "globex", Title: "Login errors in eu-west-1", Severity: 5, Status: "open"},
	} {
		table[inc.ID] = inc
	}
}

// errNoTenant refuses a caller without a tenant claim.
var errNoTenant = errors.New("the caller has no tenant claim; incidents are visible only within a tenant")

// find returns the incident id of the caller's tenant. An incident of
// another tenant is reported exactly as a missing one, so that a caller
// cannot learn which ids exist elsewhere. mu must be held.
func find(ctx context.Context, id string) (Incident, error) {
	tenant := heddle.Caller(ctx).Claims["tenant"]
	if tenant == "" {
		return Incident{}, errNoTenant
	}
	inc, ok := table[id]
	if !ok || inc.Tenant != tenant {
		return Incident{}, fmt.Errorf("there is no incident %q in tenant %s", id, tenant)
	}
	return inc, nil
}

// GetIncident returns one incident of the caller's tenant.
func GetIncident(ctx context.Context, in GetIncidentInput) (Incident, error) {
	mu.Lock()
	defer mu.Unlock()
	return find(ctx, in.ID)
}

// CloseIncident closes one incident of the caller's tenant and records who
// closed it. Closing a closed incident returns it unchanged.
func CloseIncident(ctx context.Context, in CloseIncidentInput) (Incident, error) {
	mu.Lock()
	defer mu.Unlock()
	inc, err := find(ctx, in.ID)
	if err != nil || inc.Status == "closed" {
		return inc, err
	}
	inc.Status, inc.Resolution, inc.ClosedBy = "closed", in.Resolution, heddle.Caller(ctx).Subject
	table[inc.ID] = inc
	return inc, nil
}

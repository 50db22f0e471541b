package usecase_test

import (
	"context"
	"fmt"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/usecase"
)

type GetIncident struct {
	ID string `json:"id" jsonschema:"the incident id, e.g. INC-1"`
}

type Incident struct {
	ID     string `json:"id"`
	Tenant string `json:"tenant"`
}

func ExampleRegister() {
	usecase.Register("example.get_incident", func(ctx context.Context, in GetIncident) (Incident, error) {
		// The caller who invoked the agent, not a service account.
		tenant := heddle.Caller(ctx).Claims["tenant"]
		return Incident{ID: in.ID, Tenant: tenant}, nil
	}, usecase.Description("Fetch one incident of the caller's tenant."), usecase.ReadOnly())

	// What the toolset does with a granted key: offer the tool, and invoke
	// the operation on the caller's context.
	op, _ := usecase.Lookup("example.get_incident")
	fmt.Println(op.Key(), op.Annotations().ReadOnly)
	ctx := heddle.WithCaller(context.Background(), heddle.Identity{Subject: "alice", Claims: map[string]string{"tenant": "acme"}})
	out, err := op.Invoke(ctx, map[string]any{"id": "INC-1"})
	fmt.Printf("%+v %v\n", out, err)
	// Output:
	// example.get_incident true
	// {ID:INC-1 Tenant:acme} <nil>
}

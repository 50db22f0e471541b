package heddle_test

import (
	"context"
	"fmt"

	"github.com/heddlehq/heddle"
)

func ExampleWithCaller() {
	// The application's front door, once it has authenticated a request:
	ctx := heddle.WithCaller(context.Background(), heddle.Identity{
		Subject: "alice",
		Roles:   []string{"sre"},
		Claims:  map[string]string{"tenant": "acme"},
	})
	// …and deep inside a use case the agent called on alice's behalf:
	who := heddle.Caller(ctx)
	fmt.Println(who.Subject, who.Roles, who.Claims["tenant"])
	// A context derived from it carries the same identity: the runtime,
	// policy and the use case all read this one value.
	child, cancel := context.WithCancel(ctx)
	defer cancel()
	fmt.Println(heddle.Caller(child).Subject)
	// A context without one is anonymous.
	fmt.Printf("%q\n", heddle.Caller(context.Background()).Subject)
	// Output:
	// alice [sre] acme
	// alice
	// ""
}

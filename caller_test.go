package heddle_test

import (
	"context"
	"fmt"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/runtime"
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
	// The runtime reads the same value: it is one identity, not a copy.
	fmt.Println(runtime.CallerFrom(ctx).Subject)
	// A context without one is anonymous.
	fmt.Printf("%q\n", heddle.Caller(context.Background()).Subject)
	// Output:
	// alice [sre] acme
	// alice
	// ""
}

package heddle_test

import (
	"context"
	"fmt"
	"testing"

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

// TestCallerToken: the caller's token is on a context only once
// WithCallerToken put a non-empty one there; an empty one takes it off.
func TestCallerToken(t *testing.T) {
	ctx := context.Background()
	if _, ok := heddle.CallerToken(ctx); ok {
		t.Fatal("a bare context carries a token")
	}
	with := heddle.WithCallerToken(ctx, "tok-1")
	if tok, ok := heddle.CallerToken(with); !ok || tok != "tok-1" {
		t.Fatalf("heddle.CallerToken(WithCallerToken) = %q, %v", tok, ok)
	}
	if _, ok := heddle.CallerToken(heddle.WithCallerToken(with, "")); ok {
		t.Error("an empty token left the earlier one on")
	}
}

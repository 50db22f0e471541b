package callertoken

import (
	"context"
	"testing"
)

func TestWithFromWithout(t *testing.T) {
	ctx := context.Background()
	if _, ok := From(ctx); ok {
		t.Fatal("a bare context carries a token")
	}
	if got := Without(ctx); got != ctx {
		t.Error("Without changed a context that carries no token")
	}
	with := With(ctx, "tok-1")
	if tok, ok := From(with); !ok || tok != "tok-1" {
		t.Fatalf("From(With) = %q, %v", tok, ok)
	}
	if _, ok := From(Without(with)); ok {
		t.Error("Without left the token on")
	}
	if _, ok := From(With(ctx, "")); ok {
		t.Error("an empty token counts as one")
	}
}

package heddle

import (
	"context"

	"github.com/heddlehq/heddle/policy"
	"github.com/heddlehq/heddle/runtime"
)

// Identity is who a call is made for: the human (or service) that invoked
// the agent. Policies see it as the CEL variable caller (caller.subject,
// caller.roles, caller.claims); use cases read it back with Caller. The zero
// Identity is anonymous.
type Identity = policy.Caller

// Caller returns the identity a call is made for, as the application's
// front door put it on the context with WithCaller. Inside a use case it is
// the caller who invoked the agent whose tool call reached the use case: the
// identity travels with the context through the toolset, policy and the use
// case, with no network hop in between. It returns the zero Identity when ctx
// carries none.
func Caller(ctx context.Context) Identity { return runtime.CallerFrom(ctx) }

// WithCaller returns a copy of ctx carrying id. An application calls it once
// per request, after authenticating the caller, and passes the context to
// runtime.Toolset.Call (or to the agent loop that calls it).
//
//	ctx = heddle.WithCaller(r.Context(), heddle.Identity{
//		Subject: claims.Subject, Roles: claims.Roles,
//		Claims:  map[string]string{"tenant": claims.Tenant},
//	})
func WithCaller(ctx context.Context, id Identity) context.Context {
	return runtime.WithCaller(ctx, id)
}

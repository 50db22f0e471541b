package heddle

import "context"

// Identity is who a call is made for: the human (or service) that invoked
// the agent. Policies see it as the CEL variable caller (caller.subject,
// caller.roles, caller.claims); use cases read it back with Caller. The zero
// Identity is anonymous: no subject, no roles and no claims, so a rule such
// as `"sre" in caller.roles` is false for it. The cel tags are the field
// names rules use.
type Identity struct {
	// Subject identifies the caller, for example a token's "sub" claim or
	// the --as flag of `heddle call`.
	Subject string `cel:"subject"`
	// Roles are the caller's roles, for example ["sre", "oncall"].
	Roles []string `cel:"roles"`
	// Claims are further string-valued facts about the caller, for example
	// a token's claims ("team": "payments").
	Claims map[string]string `cel:"claims"`
}

// callerKey is the context key of the Identity a call is made for. Only
// WithCaller and Caller use it, so the identity on a context is always one
// that WithCaller put there.
type callerKey struct{}

// Caller returns the identity a call is made for, as the application's
// front door put it on the context with WithCaller. Inside a use case it is
// the caller who invoked the agent whose tool call reached the use case: the
// identity travels with the context through the toolset, policy and the use
// case, with no network hop in between. It returns the zero Identity when ctx
// carries none.
func Caller(ctx context.Context) Identity {
	id, _ := ctx.Value(callerKey{}).(Identity)
	return id
}

// WithCaller returns a copy of ctx carrying id. An application calls it once
// per request, after authenticating the caller, and passes the context to
// runtime.Toolset.Call (or to the agent loop that calls it). Policies see it
// as caller; the runtime, the kinds and use cases read it back with Caller.
//
//	ctx = heddle.WithCaller(r.Context(), heddle.Identity{
//		Subject: claims.Subject, Roles: claims.Roles,
//		Claims:  map[string]string{"tenant": claims.Tenant},
//	})
func WithCaller(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, callerKey{}, id)
}

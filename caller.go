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

// LookupCaller returns the identity a call is made for and whether ctx
// carries one at all: a context no front door put a caller on is an
// operator's (the command line without --as, an application's own jobs),
// and lists for it are not narrowed to what one caller may use.
func LookupCaller(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(callerKey{}).(Identity)
	return id, ok
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

// WithCallerToken returns a copy of ctx carrying the caller's own access
// token, as the caller presented it, beside the identity WithCaller puts
// there. It is read by one thing only: the auth strategy of a server that
// is called as the caller (auth: {kind: oauth, flow: token_exchange}),
// which exchanges it at the identity provider (RFC 8693) for a token of
// that server's and never sends it on. heddle serve calls it for callers of
// serve.auth kind jwt; an application that authenticates its callers
// itself calls it after WithCaller, with the bearer token it verified:
//
//	ctx = heddle.WithCaller(r.Context(), id)
//	ctx = heddle.WithCallerToken(ctx, rawAccessToken)
//
// A call made for a caller without a token to such a server is refused
// with CALLER_TOKEN_REQUIRED. An empty token carries none.
func WithCallerToken(ctx context.Context, token string) context.Context {
	return context.WithValue(ctx, callerTokenKey{}, token)
}

// callerTokenKey is the context key of the caller's token: only
// WithCallerToken and CallerToken use it.
type callerTokenKey struct{}

// CallerToken returns the caller's own access token that WithCallerToken
// put on ctx, and whether there is one (an empty token is none). It is for
// the auth strategy that exchanges it; a token read here must never be
// logged, shown or sent on as it is.
func CallerToken(ctx context.Context) (string, bool) {
	tok, _ := ctx.Value(callerTokenKey{}).(string)
	return tok, tok != ""
}

// Package callertoken carries a caller's own access token on a context,
// from the front door that verified it (heddle.WithCallerToken; heddle
// serve's serve.auth kind jwt) to the one reader that may see it: the auth
// strategy that exchanges it for a token of a server's (auth/oauth's flow
// token_exchange, RFC 8693). The token is a credential: nothing else reads
// it, and nothing logs it.
//
//	ctx = callertoken.With(ctx, raw)      // the front door
//	tok, ok := callertoken.From(ctx)      // the strategy, per request
//	ctx = callertoken.Without(ctx)        // work no caller asked for
package callertoken

import "context"

// key is the context key of the token. Only this package uses it.
type key struct{}

// With returns a copy of ctx carrying token; an empty token carries none.
func With(ctx context.Context, token string) context.Context {
	return context.WithValue(ctx, key{}, token)
}

// Without returns a copy of ctx that carries no token, whatever ctx
// carries: for requests made on a caller's context that no caller made
// (a listing of a server's tools, say), which must not be sent as the
// caller.
func Without(ctx context.Context) context.Context {
	if _, ok := From(ctx); !ok {
		return ctx
	}
	return context.WithValue(ctx, key{}, "")
}

// From returns the token ctx carries, and whether it carries one.
func From(ctx context.Context) (string, bool) {
	tok, _ := ctx.Value(key{}).(string)
	return tok, tok != ""
}

package oauth

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/heddlehq/heddle/auth/authlive"
	"github.com/heddlehq/heddle/secrets"
)

// configFrom reads an auth block's settings (as the plan records them:
// references as *config.Ref, plain values as written) into a Config,
// resolving the references. Resolution errors keep their codes
// (SECRET_UNRESOLVED, SECRET_EMPTY); other problems are
// MCP_AUTH_STRATEGY_INVALID.
func configFrom(ctx context.Context, env authlive.Env, s map[string]any) (Config, error) {
	cfg := Config{
		Name:              env.Name,
		Flow:              str(s, "flow"),
		ClientID:          str(s, "client_id"),
		TokenEndpointAuth: str(s, "token_endpoint_auth"),
		Scopes:            list(s, "scopes"),
		RedirectURL:       str(s, "redirect_url"),
		IdPIssuer:         str(s, "idp_issuer"),
		IdPTokenEndpoint:  str(s, "idp_token_endpoint"),
		IdPClientID:       str(s, "idp_client_id"),
		Resource:          str(s, "resource"),
		Audience:          str(s, "audience"),
	}
	if cfg.Flow == FlowTokenExchange {
		if env.Purpose != "mcp" {
			return Config{}, invalid(env.Name, errors.New("flow token_exchange calls MCP servers as their callers; it is not available here"))
		}
		if cfg.Resource == "" && cfg.Audience == "" {
			cfg.Resource = env.URL // RFC 8707: the server's own URL names it
		}
	}
	if _, ok := authlive.Ref(s, "client_id_ref"); ok {
		if cfg.ClientID != "" {
			return Config{}, invalid(env.Name, errors.New("set client_id or client_id_ref, not both"))
		}
	}
	// A client id is no secret (RFC 6749, section 2.2): it may come from a
	// reference, but it is sent, and named in messages, as it is.
	var clientID secrets.Value
	for _, r := range []struct {
		key string
		to  *secrets.Value
	}{
		{"client_id_ref", &clientID},
		{"client_secret_ref", &cfg.ClientSecret},
		{"refresh_token_ref", &cfg.RefreshToken},
		{"idp_client_secret_ref", &cfg.IdPClientSecret},
	} {
		if _, ok := authlive.Ref(s, r.key); !ok {
			continue
		}
		v, err := authlive.Resolve(ctx, env, s, r.key)
		if err != nil {
			return Config{}, err
		}
		*r.to = trimmed(v)
	}
	if !clientID.IsZero() {
		cfg.ClientID = clientID.Reveal()
	}
	if ref, ok := authlive.Ref(s, "idp_token_ref"); ok {
		// Resolved now, so a missing secret fails start-up, and again at
		// every authorization: an ID token expires, and a file-mounted one
		// is rotated in place.
		if _, err := authlive.Resolve(ctx, env, s, "idp_token_ref"); err != nil {
			return Config{}, err
		}
		resolver, name := env.Secrets, env.Name
		cfg.IDToken = func(ctx context.Context) (secrets.Value, error) {
			v, err := resolver.Resolve(ctx, ref)
			if err != nil {
				return secrets.Value{}, fmt.Errorf("%s: idp_token_ref: %w", name, err)
			}
			return trimmed(v), nil
		}
	}
	return cfg, nil
}

// trimmed is v without leading and trailing white space.
func trimmed(v secrets.Value) secrets.Value {
	return secrets.NewValue(strings.TrimSpace(v.Reveal()))
}

func str(s map[string]any, key string) string {
	v, _ := s[key].(string)
	return strings.TrimSpace(v)
}

// list reads a list setting, as auth.Check records it ([]string) or as
// a decoded JSON plan holds it ([]any).
func list(s map[string]any, key string) []string {
	switch v := s[key].(type) {
	case []string:
		return v
	case []any:
		out := make([]string, 0, len(v))
		for _, it := range v {
			if s, ok := it.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

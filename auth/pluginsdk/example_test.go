package pluginsdk_test

import (
	"context"
	"net/http"
	"time"

	"github.com/heddlehq/heddle/auth/pluginsdk"
)

// apiKey sends a fixed key from a secret, and tells heddle to ask again
// every hour (so that a rotated secret file is picked up by a restart of
// the worker, at the latest).
type apiKey struct{ key string }

func (s *apiKey) Configure(_ context.Context, settings map[string]string) error {
	s.key = settings["key_ref"] // resolved by heddle: the secret itself
	if s.key == "" {
		return pluginsdk.Errorf(pluginsdk.CodeInvalidSettings, "key_ref is required")
	}
	return nil
}

func (s *apiKey) Headers(context.Context) (pluginsdk.Headers, error) {
	return pluginsdk.Headers{
		Values:    http.Header{"X-Api-Key": {s.key}},
		ExpiresAt: time.Now().Add(time.Hour),
	}, nil
}

func (s *apiKey) Renew(ctx context.Context, reason string) (pluginsdk.Headers, error) {
	if reason == pluginsdk.ReasonUnauthorized {
		// A fixed key cannot be renewed: tell heddle, with a code, and
		// without the key.
		return pluginsdk.Headers{}, pluginsdk.Errorf(pluginsdk.CodeDenied, "the server refused the API key")
	}
	return s.Headers(ctx)
}

// A plugin's main function: heddle makes one apiKey per server that names
// the plugin. See examples/auth-agent-session for a strategy that
// exchanges a bootstrap secret for short-lived tokens.
func ExampleServe() {
	pluginsdk.Serve(func() pluginsdk.Strategy { return &apiKey{} })
}

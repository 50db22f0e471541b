// Package plugin is the host side of heddle's auth plugins: strategies
// declared under ai.auth_plugins and implemented by a binary built with
// [github.com/heddlehq/heddle/auth/pluginsdk]. Importing it registers the
// builder of every plugin-declared strategy ([authlive.PluginKind]); the runtime
// imports it, so nothing else has to.
//
//	ai:
//	  auth_plugins:
//	    agent-session: {command: bin/heddle-auth-agent-session, sha256: "…"}
//	  mcp_servers:
//	    orders:
//	      url: https://orders.internal.example.com/mcp
//	      auth:
//	        kind: agent-session
//	        session_url: https://orders.internal.example.com/auth/agent/session
//	        bootstrap_ref: ${secrets:/agents/prod/agent-sales}
//
// # Lifecycle
//
// The first server that needs a plugin starts its binary — after checking
// its SHA-256 against the declared sha256; a mismatch fails with
// MCP_AUTH_STRATEGY_INVALID and nothing is started. The process is shared by
// every server of the runtime that names the plugin (one process per
// declared plugin of a plan; a worker opens one runtime per plan). Each
// server gets a strategy instance of its own in that process, configured
// with its settings, because two servers may use one plugin with different
// credentials, and a credential is per server. The process sees only the
// environment the declaration lists (go-plugin's SkipHostEnv), talks gRPC
// over a private mTLS socket, lives in its own process group, and is
// SIGKILLed by the kernel if heddle dies (Linux's Pdeathsig). The last
// strategy's Close kills it.
//
// A process that crashes is started again on the next need — cached
// headers keep working meanwhile — and every instance is configured afresh;
// repeated failures back off from 100ms to 30s.
//
// # Per request
//
// Headers are cached host-side until a tenth of their lifetime (at most
// [MaxSkew]) before their expiry, so a request normally makes no plugin call
// and costs about as much as a static header. Expiry and a 401 each cause
// one renewal for all concurrent requests, and a request refused with 401 is
// retried once, never more (see [authlive.Strategy] and the Wrap method).
//
// # Secrets
//
// *_ref settings are resolved by heddle and passed to the plugin as values:
// the plugin holds secrets. Messages and log lines that come from the plugin
// have every secret heddle gave it, and every header value it returned,
// blanked out before they reach an error or the log.
package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/heddlehq/heddle/auth/authlive"
	"github.com/heddlehq/heddle/diag"
)

// Build builds the strategy of one server whose auth block names a plugin
// (settings["kind"] is the plugin's name; env.Plugins declares it). It
// starts the plugin process if this plan's is not running, and configures
// a new instance in it. Errors carry MCP_AUTH_STRATEGY_INVALID (a checksum
// mismatch, a binary that does not start, settings the plugin refuses) or
// the secret resolver's code.
func Build(ctx context.Context, env authlive.Env, settings map[string]any) (authlive.Strategy, error) {
	name, _ := settings["kind"].(string)
	spec := env.Plugins[name]
	if spec == nil {
		return nil, diag.New(diag.MCPAuthStrategyInvalid, "%s: auth plugin %q is not declared under ai.auth_plugins (or the runtime did not pass the plan's plugins)", env.Name, name)
	}
	resolved, secretVals, err := resolveSettings(ctx, env, settings)
	if err != nil {
		return nil, err
	}
	p, err := acquire(ctx, name, spec, env)
	if err != nil {
		return nil, err
	}
	p.red.add(secretVals...)
	log := env.Logger
	if log == nil {
		log = p.log
	}
	s := &strategy{p: p, id: p.instance(), name: env.Name, settings: resolved, log: log}
	if err := s.configure(ctx); err != nil {
		p.release()
		return nil, err
	}
	return s, nil
}

// resolveSettings turns an auth block's settings into the strings the
// plugin receives: *_ref settings resolved, booleans as "true"/"false",
// lists as JSON arrays. kind is left out. It also returns the resolved
// secret values, for redaction.
func resolveSettings(ctx context.Context, env authlive.Env, settings map[string]any) (map[string]string, []string, error) {
	out := map[string]string{}
	var secretVals []string
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		if k == "kind" {
			continue
		}
		if strings.HasSuffix(k, "_ref") {
			v, err := authlive.Resolve(ctx, env, settings, k)
			if err != nil {
				return nil, nil, err
			}
			out[k] = v.Reveal()
			secretVals = append(secretVals, v.Reveal())
			continue
		}
		switch v := settings[k].(type) {
		case string:
			out[k] = v
		case bool:
			out[k] = strconv.FormatBool(v)
		case []string, []any:
			b, err := json.Marshal(v)
			if err != nil {
				return nil, nil, diag.Wrap(diag.MCPAuthStrategyInvalid, err, "%s: setting %s cannot be passed to the plugin", env.Name, k)
			}
			out[k] = string(b)
		case int, int64, float64:
			out[k] = fmt.Sprint(v)
		default:
			return nil, nil, diag.New(diag.MCPAuthStrategyInvalid, "%s: setting %s has a type a plugin cannot receive (%T)", env.Name, k, v)
		}
	}
	return out, secretVals, nil
}

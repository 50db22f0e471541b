// Package auth is heddle's registry of authentication strategies: the
// config half that the compiler checks against. A strategy is named by the
// kind: key of an auth: block; every other key of the block is one of its
// settings. Settings whose names end in _ref are secret references and are
// held to the same fail-closed test as headers_ref: a literal is refused with
// MCP_CREDENTIALS_INLINE and never repeated. So is a URL carrying
// credentials in its userinfo, in any setting, and, in a plugin's settings,
// a literal under a credential's name (api_key, client_secret; see
// [CredentialName]).
//
// Three strategies are built in — bearer, static and oauth — and every entry
// of ai.auth_plugins adds one more, implemented by a plugin binary. The live
// half of each strategy (an http.RoundTripper wrapper built once per server)
// is built by the runtime, never by the compiler.
//
//	auth.Register(auth.Strategy{
//		Kind:     "api-key",
//		Settings: map[string]auth.Setting{"key_ref": {Type: auth.RefSetting, Required: true}},
//	})
package auth

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
)

// SettingType is the type of one strategy setting.
type SettingType int

const (
	// StringSetting is a plain string (a URL, a client id, a scope).
	StringSetting SettingType = iota
	// RefSetting is a secret reference; its name must end in _ref.
	RefSetting
	// ListSetting is a list of strings.
	ListSetting
	// BoolSetting is true or false.
	BoolSetting
)

// Setting describes one accepted setting.
type Setting struct {
	Type     SettingType
	Required bool
	// OneOf, when set, lists the values a StringSetting accepts.
	OneOf []string
	Doc   string
}

// Strategy is the config half of an authentication strategy.
type Strategy struct {
	// Kind is the name written as auth: {kind: …}.
	Kind string
	// Settings are the keys the strategy accepts. AnySettings accepts any
	// key instead (plugins), still holding *_ref keys to the reference test.
	Settings    map[string]Setting
	AnySettings bool
	// Plugin is set for strategies declared under ai.auth_plugins.
	Plugin bool
	Doc    string
}

// Registry is a set of strategies. The zero value is empty and ready to use.
// A Registry is safe for concurrent use.
type Registry struct {
	mu sync.RWMutex
	m  map[string]Strategy
	// plugins is set when the program links a plugin host, so that
	// ai.auth_plugins may declare strategies.
	plugins bool
}

var defaultRegistry = &Registry{}

// Default returns the process-wide registry holding the built-in strategies
// and any registered by the application's init functions.
func Default() *Registry { return defaultRegistry }

// Register adds a strategy to the default registry. It panics when the kind
// is empty or already registered: both are programming errors.
func Register(s Strategy) { defaultRegistry.Register(s) }

// EnablePlugins says that the program links a host for auth plugins (package
// builtin links auth/plugin and calls it on the default registry): only
// then may a deployment declare ai.auth_plugins.
func (r *Registry) EnablePlugins() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.plugins = true
}

// Register adds a strategy; it panics on an empty or duplicate kind.
func (r *Registry) Register(s Strategy) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s.Kind == "" {
		panic("auth: Register with an empty kind")
	}
	if _, dup := r.m[s.Kind]; dup {
		panic(fmt.Sprintf("auth: strategy %q registered twice", s.Kind))
	}
	if r.m == nil {
		r.m = map[string]Strategy{}
	}
	r.m[s.Kind] = s
}

// Lookup returns the strategy for kind.
func (r *Registry) Lookup(kind string) (Strategy, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	s, ok := r.m[kind]
	return s, ok
}

// Kinds returns the registered kinds, sorted.
func (r *Registry) Kinds() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.m))
}

// WithPlugins returns a registry holding r's strategies plus one strategy per
// declared plugin. A plugin named like a registered strategy is reported as
// AUTH_PLUGIN_INVALID and left out.
func (r *Registry) WithPlugins(plugins map[string]*config.AuthPlugin) (*Registry, diag.Diagnostics) {
	out := &Registry{m: map[string]Strategy{}}
	r.mu.RLock()
	maps.Copy(out.m, r.m)
	out.plugins = r.plugins
	r.mu.RUnlock()
	var ds diag.Diagnostics
	if len(plugins) > 0 && !out.plugins {
		return out, diag.Diagnostics{diag.Errorf(diag.AuthPluginInvalid, "ai.auth_plugins",
			"this program links no host for auth plugins").
			WithDetail("build the worker with package github.com/heddlehq/heddle/builtin, which links auth/plugin")}
	}
	for _, name := range slices.Sorted(maps.Keys(plugins)) {
		if _, dup := out.m[name]; dup {
			ds = append(ds, diag.Errorf(diag.AuthPluginInvalid, config.Join("ai.auth_plugins", name),
				"auth plugin %q has the name of a built-in strategy", name))
			continue
		}
		out.m[name] = Strategy{Kind: name, AnySettings: true, Plugin: true, Doc: "auth plugin"}
	}
	return out, ds
}

// Check validates an auth block at path (e.g. "ai.mcp_servers.x.auth") for a
// client of the given purpose ("mcp" or "a2a") and returns the settings as
// the plan records them: references as *config.Ref, other values as written.
func (r *Registry) Check(a *config.Auth, path, _ string) (map[string]any, Strategy, diag.Diagnostics) {
	var ds diag.Diagnostics
	if a == nil {
		return nil, Strategy{}, nil
	}
	if a.Kind == "" {
		return nil, Strategy{}, diag.Diagnostics{diag.Errorf(diag.MCPAuthStrategyUnknown, path,
			"auth names no strategy kind; registered: %s", strings.Join(r.Kinds(), ", "))}
	}
	s, ok := r.Lookup(a.Kind)
	if !ok {
		return nil, Strategy{}, diag.Diagnostics{diag.Errorf(diag.MCPAuthStrategyUnknown, config.Join(path, "kind"),
			"unknown auth strategy %q; registered: %s", a.Kind, strings.Join(r.Kinds(), ", ")).
			WithDetail("declare it under ai.auth_plugins, or use one of the registered kinds")}
	}
	out := map[string]any{}
	for _, key := range slices.Sorted(maps.Keys(a.Settings)) {
		v := a.Settings[key]
		p := config.Join(path, key)
		set, known := s.Settings[key]
		switch {
		case !known && !s.AnySettings:
			d := diag.Errorf(diag.ConfigKeyUnknown, p, "auth strategy %q does not accept setting %q", a.Kind, key)
			if len(s.Settings) > 0 {
				d = d.WithDetail("it accepts: %s", strings.Join(slices.Sorted(maps.Keys(s.Settings)), ", "))
			} else {
				d = d.WithDetail("it accepts no settings")
			}
			ds = append(ds, d)
			continue
		case !known:
			set = Setting{Type: StringSetting}
			if strings.HasSuffix(key, "_ref") {
				set.Type = RefSetting
			} else if _, isList := v.([]any); isList {
				set.Type = ListSetting
			} else if _, isBool := v.(bool); isBool {
				set.Type = BoolSetting
			}
		}
		val, d, ok := checkSetting(set, v, p)
		if !ok {
			if s.Plugin && set.Type == StringSetting && d.Code == diag.ConfigValueInvalid && strings.HasPrefix(strings.TrimSpace(fmt.Sprint(v)), "${") {
				d = d.WithDetail("only settings whose names end in _ref are resolved: name it %s_ref", key)
			}
			ds = append(ds, d)
			continue
		}
		if lds := checkLiteral(s, key, val, p); lds != nil {
			ds = append(ds, lds...)
			continue
		}
		out[key] = val
	}
	for _, key := range slices.Sorted(maps.Keys(s.Settings)) {
		if _, given := a.Settings[key]; s.Settings[key].Required && !given {
			ds = append(ds, diag.Errorf(diag.ConfigValueInvalid, path, "auth strategy %q needs setting %q", a.Kind, key))
		}
	}
	return out, s, ds
}

// checkLiteral refuses what a plain setting must not hold: a URL with
// credentials in its userinfo, in any strategy's setting, and a literal
// under a credential's name (api_key, client_secret) in a plugin's: no
// literal secret anywhere in the block. The value is never repeated.
func checkLiteral(s Strategy, key string, val any, p string) diag.Diagnostics {
	var ds diag.Diagnostics
	switch v := val.(type) {
	case string:
		switch {
		case HasUserinfo(v):
			ds = append(ds, userinfo(p))
		case s.Plugin && v != "" && CredentialName(key):
			ds = append(ds, diag.Errorf(diag.MCPCredentialsInline, p,
				"setting %q names a credential but holds a literal (value redacted); no literal secret may stand anywhere in an auth block", key).
				WithDetail("store the value with your secret store and write %s_ref: ${secrets:/path} (settings ending in _ref reach the plugin resolved)", key))
		}
	case []string:
		for i, item := range v {
			if HasUserinfo(item) {
				ds = append(ds, userinfo(config.Item(p, i)))
			}
		}
	}
	return ds
}

// userinfo is the refusal of a URL that carries credentials at p.
func userinfo(p string) diag.Diagnostic {
	return diag.Errorf(diag.MCPCredentialsInline, p, "the URL carries credentials in its userinfo (value redacted)").
		WithDetail("remove them from the URL; pass a credential as a setting ending in _ref that holds a secret reference")
}

func checkSetting(set Setting, v any, p string) (any, diag.Diagnostic, bool) {
	switch set.Type {
	case RefSetting:
		s, isString := v.(string)
		if !isString {
			return nil, diag.Errorf(diag.MCPCredentialsInline, p, "must be a secret reference such as ${secrets:/path}"), false
		}
		ref := config.ParseRef(s)
		if ref.Problem != "" {
			return nil, diag.Errorf(diag.MCPCredentialsInline, p, "%s", ref.Problem).
				WithDetail("store the value with your secret store and write a reference: ${secrets:/path}, ${env:NAME} or ${file:PATH}"), false
		}
		return &ref, diag.Diagnostic{}, true
	case ListSetting:
		items, ok := v.([]any)
		if !ok {
			return nil, diag.Errorf(diag.ConfigValueInvalid, p, "wrong type of value: want a list of strings"), false
		}
		out := make([]string, 0, len(items))
		for _, it := range items {
			s, ok := it.(string)
			if !ok {
				return nil, diag.Errorf(diag.ConfigValueInvalid, p, "wrong type of value: want a list of strings"), false
			}
			out = append(out, s)
		}
		return out, diag.Diagnostic{}, true
	case BoolSetting:
		b, ok := v.(bool)
		if !ok {
			return nil, diag.Errorf(diag.ConfigValueInvalid, p, "wrong type of value: want true or false"), false
		}
		return b, diag.Diagnostic{}, true
	}
	s, ok := v.(string)
	if !ok {
		return nil, diag.Errorf(diag.ConfigValueInvalid, p, "wrong type of value: want a string"), false
	}
	if strings.HasPrefix(strings.TrimSpace(s), "${") {
		return nil, diag.Errorf(diag.ConfigValueInvalid, p, "takes a plain value, not a secret reference"), false
	}
	if len(set.OneOf) > 0 && !slices.Contains(set.OneOf, s) {
		return nil, diag.Errorf(diag.ConfigValueInvalid, p, "must be one of %s", strings.Join(set.OneOf, ", ")), false
	}
	return s, diag.Diagnostic{}, true
}

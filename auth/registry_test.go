package auth_test

import (
	"testing"

	"github.com/heddlehq/heddle/auth"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
)

// TestPluginsNeedAHost: a registry whose program links no plugin host
// refuses ai.auth_plugins instead of accepting strategies no runtime of
// that program could build; one that does adds a strategy per plugin.
func TestPluginsNeedAHost(t *testing.T) {
	plugins := map[string]*config.AuthPlugin{"agent-session": {Command: "bin/p", SHA256: "x"}}

	var without auth.Registry
	reg, ds := without.WithPlugins(plugins)
	if len(ds) != 1 || ds[0].Code != diag.AuthPluginInvalid || ds[0].Path != "ai.auth_plugins" {
		t.Fatalf("without a host: diagnostics %v, want one AUTH_PLUGIN_INVALID at ai.auth_plugins", ds)
	}
	if _, ok := reg.Lookup("agent-session"); ok {
		t.Error("without a host, the plugin became a strategy")
	}

	var with auth.Registry
	with.EnablePlugins()
	reg, ds = with.WithPlugins(plugins)
	if len(ds) != 0 {
		t.Fatalf("with a host: %v", ds)
	}
	if s, ok := reg.Lookup("agent-session"); !ok || !s.Plugin {
		t.Errorf("with a host: Lookup = %+v, %v; want a plugin strategy", s, ok)
	}
}

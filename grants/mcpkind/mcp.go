// Package mcpkind is the config half of the mcp capability kind: it checks
// ai.mcp_servers and resolves each agent's mcp grants to server connection
// specs.
//
// A grant names a server and filters its tools with globs:
//
//	capabilities:
//	  - {kind: mcp, server: runbooks, include: ["search_*"], exclude: ["execute_*"]}
//
// The deployment says where the server lives:
//
//	ai:
//	  mcp_servers:
//	    runbooks:
//	      url: https://runbooks.internal.example.com/mcp
//	      headers_ref: ${secrets:/heddle/runbooks/api-key}
//	    git:
//	      command: mcp-server-git
//	      args: [--repository, /srv/repo]
//
// An entry may leave transport out, as MCP hosts write theirs: command makes
// it stdio, url Streamable HTTP.
package mcpkind

import (
	"maps"
	"slices"
	"strings"

	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/toolname"
)

// Kind is the config half of the mcp kind. It owns ai.mcp_servers.
type Kind struct{}

var _ grants.Kind = Kind{}

// Name is "mcp".
func (Kind) Name() string { return "mcp" }

// Section is "mcp_servers".
func (Kind) Section() string { return "mcp_servers" }

// ProtocolVersions are the values protocol_version accepts besides "auto".
var ProtocolVersions = []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// Transport names.
const (
	TransportHTTP  = "http"
	TransportSSE   = "sse"
	TransportStdio = "stdio"
)

// Connect values: when a server is connected.
const (
	ConnectEager = "eager"
	ConnectLazy  = "lazy"
)

// Screen values: what a suspicious tool definition (hidden Unicode,
// instructions aimed at the model) does.
const (
	// ScreenWarn logs TOOL_DESCRIPTOR_SUSPICIOUS and offers the tool, its
	// findings in tool.flags for rules.
	ScreenWarn = "warn"
	// ScreenStrict withholds the tool, logging the code as an error.
	ScreenStrict = "strict"
)

// Defaults.
const (
	DefaultTimeoutMS      = 20000
	DefaultMaxResultBytes = 1 << 20
)

// configured is the mcp kind's view of one deployment.
type configured struct {
	declared map[string]*ServerConfig // every entry written, decoded
	servers  Servers                  // the valid ones, as the plan records them
}

// Configure decodes ai.mcp_servers strictly, applies its defaults, validates
// every entry and records the valid ones for the plan.
func (Kind) Configure(env *grants.Env, raw map[string]any) (grants.Configured, diag.Diagnostics) {
	c := &configured{declared: map[string]*ServerConfig{}, servers: Servers{}}
	ds := config.DecodeStrict(raw, &c.declared, "ai.mcp_servers")
	d := env.Deployment
	prefixes := map[string]string{} // tool prefix → first server name
	for _, name := range slices.Sorted(maps.Keys(c.declared)) {
		s := c.declared[name]
		if s == nil {
			s = &ServerConfig{}
			c.declared[name] = s
		}
		p := config.Join("ai.mcp_servers", name)
		inferred, sds := s.inferTransport(d, p)
		sds = append(sds, s.defaults(d, p)...)
		sds = append(sds, checkServer(env, d, name, s, p, inferred)...)
		prefix := toolname.Sanitize(name)
		if other, clash := prefixes[prefix]; clash {
			sds = append(sds, diag.Errorf(diag.MCPConnectionConflict, p,
				"servers %q and %q both become the tool prefix %q", other, name, prefix).
				WithDetail("rename one of them: tool names are qualified as <prefix>__<tool>"))
		} else {
			prefixes[prefix] = name
		}
		ds = append(ds, sds...)
		if sds.HasErrors() {
			continue
		}
		c.servers[name] = buildServer(env, name, s, prefix)
	}
	return c, ds
}

// Part returns the servers, written under "servers" in the plan.
func (c *configured) Part() (string, any, bool) { return "servers", c.servers, true }

// defaults fills in the entry's unset settings and reports numeric ones
// written as zero or less. The transport is inferTransport's.
func (s *ServerConfig) defaults(d *config.Deployment, p string) diag.Diagnostics {
	ds := config.Positive(nil, d, config.Join(p, "timeout_ms"), s.TimeoutMS)
	ds = config.Positive(ds, d, config.Join(p, "max_result_bytes"), s.MaxResultBytes)
	ds = config.Positive(ds, d, config.Join(p, "max_concurrent"), s.MaxConcurrent)
	if s.TimeoutMS <= 0 {
		s.TimeoutMS = DefaultTimeoutMS
	}
	if s.MaxResultBytes <= 0 {
		s.MaxResultBytes = DefaultMaxResultBytes
	}
	if s.ProtocolVersion == "" {
		s.ProtocolVersion = "auto"
	}
	if s.Connect == "" {
		s.Connect = ConnectEager
	}
	if s.Screen == "" {
		s.Screen = ScreenWarn
	}
	return ds
}

// checkServer validates one entry; inferred says its transport was not
// written but settled by inferTransport.
func checkServer(env *grants.Env, d *config.Deployment, name string, s *ServerConfig, p string, inferred bool) diag.Diagnostics {
	var ds diag.Diagnostics
	switch s.Transport {
	case "": // neither or both of command and url: inferTransport reported it
	case TransportHTTP, TransportSSE:
		ds = append(ds, grants.CheckURL(s.URL, diag.MCPURLInvalid, config.Join(p, "url"))...)
		for key, set := range map[string]bool{"command": s.Command != "", "args": len(s.Args) > 0, "env": len(s.Env) > 0, "dir": s.Dir != ""} {
			if set {
				ds = append(ds, mixed(d, p, key, s.Transport, inferred))
			}
		}
	case TransportStdio:
		if s.Command == "" {
			ds = append(ds, diag.Errorf(diag.MCPTransportInvalid, config.Join(p, "command"),
				"a stdio server needs a command"))
		}
		if s.URL != "" {
			ds = append(ds, mixed(d, p, "url", s.Transport, inferred))
		}
		if s.HeadersRef != nil || s.Auth != nil {
			key := "auth"
			if s.HeadersRef != nil {
				key = "headers_ref"
			}
			ds = append(ds, diag.Errorf(diag.MCPStdioAuth, config.Join(p, key),
				"a stdio server has no connection to authenticate; %s is refused", key).
				WithDetail("pass credentials to the child through env: with a secret reference"))
		}
		if len(s.Headers) > 0 {
			ds = append(ds, diag.Errorf(diag.MCPConnectionConflict, config.Join(p, "headers"),
				"a stdio server sends no HTTP requests; headers is refused").
				WithDetail("pass values to the child through env:, credentials as secret references"))
		}
		ds = append(ds, grants.CheckEnv(s.Env, config.Join(p, "env"))...)
		ds = append(ds, checkEnvLiterals(s.Env, config.Join(p, "env"))...)
	default:
		ds = append(ds, diag.Errorf(diag.MCPTransportInvalid, config.Join(p, "transport"),
			"unknown transport: want http, sse or stdio"))
	}
	if s.Transport != TransportStdio {
		if s.HeadersRef != nil && s.Auth != nil {
			ds = append(ds, diag.Errorf(diag.MCPAuthConflict, p,
				"server %q sets both headers_ref and auth", name).
				WithDetail("headers_ref is the static strategy's shorthand; keep one of the two"))
		}
		ds = append(ds, grants.CheckRef(s.HeadersRef, config.Join(p, "headers_ref"))...)
		ds = append(ds, checkHeaders(s, p)...)
		if s.Auth != nil {
			_, _, ads := env.Auth.Check(s.Auth, config.Join(p, "auth"), "mcp")
			ds = append(ds, ads...)
		}
	}
	ds = append(ds, checkUserinfo(s, p)...)
	if s.ProtocolVersion != "auto" && !slices.Contains(ProtocolVersions, s.ProtocolVersion) {
		ds = append(ds, diag.Errorf(diag.ConfigValueInvalid, config.Join(p, "protocol_version"),
			"unknown protocol version: want auto or one of %s", strings.Join(ProtocolVersions, ", ")))
	}
	if s.Connect != ConnectEager && s.Connect != ConnectLazy {
		ds = append(ds, diag.Errorf(diag.ConfigValueInvalid, config.Join(p, "connect"),
			"unknown value: want eager or lazy"))
	}
	if s.Screen != ScreenWarn && s.Screen != ScreenStrict {
		ds = append(ds, diag.Errorf(diag.ConfigValueInvalid, config.Join(p, "screen"),
			"unknown value: want warn or strict"))
	}
	ds = append(ds, grants.CheckGlobs(s.ReadOnlyTools, diag.MCPFilterInvalid, config.Join(p, "read_only_tools"))...)
	ds = append(ds, grants.CheckGlobs(s.IdempotentTools, diag.MCPFilterInvalid, config.Join(p, "idempotent_tools"))...)
	ds = append(ds, grants.CheckGlobs(s.DestructiveTools, diag.MCPFilterInvalid, config.Join(p, "destructive_tools"))...)
	ds = append(ds, grants.CheckToolOverrides(s.Tools, diag.MCPFilterInvalid, config.Join(p, "tools"))...)
	slices.SortFunc(ds, func(a, b diag.Diagnostic) int { return strings.Compare(a.Path, b.Path) })
	return ds
}

// mixed reports settings of two transports on one server, naming the layers
// that set them when they differ (an overlay switched the transport but the
// base file's settings remained). A server whose transport was inferred from
// its url is told so, not sent to its overlays.
func mixed(d *config.Deployment, p, stray, transport string, inferred bool) diag.Diagnostic {
	if inferred {
		return diag.Errorf(diag.MCPConnectionConflict, config.Join(p, stray),
			"a server with url and no transport is Streamable HTTP, which does not use %s%s", stray, layers(d, p, "url", stray)).
			WithDetail("remove %s, or write command without url for a server heddle starts over stdio", stray)
	}
	return diag.Errorf(diag.MCPConnectionConflict, config.Join(p, stray),
		"transport %s does not use %s%s", transport, stray, layers(d, p, "transport", stray)).
		WithDetail("one server entry must describe one transport; set %s to null in the overlay that changes the transport", stray)
}

func buildServer(env *grants.Env, name string, s *ServerConfig, prefix string) *Server {
	ps := &Server{
		Name:             name,
		Transport:        s.Transport,
		URL:              s.URL,
		ToolPrefix:       prefix,
		TimeoutMS:        s.TimeoutMS,
		Required:         grants.Required(s.Required, env.RemoteClients()),
		ProtocolVersion:  s.ProtocolVersion,
		MaxResultBytes:   s.MaxResultBytes,
		MaxConcurrent:    s.MaxConcurrent,
		Connect:          s.Connect,
		ReadOnlyTools:    s.ReadOnlyTools,
		IdempotentTools:  s.IdempotentTools,
		DestructiveTools: s.DestructiveTools,
		Untrusted:        s.TrustAnnotations != nil && !*s.TrustAnnotations,
		StrictScreen:     s.Screen == ScreenStrict,
		Tools:            overrides(s.Tools),
		Command:          s.Command,
		Headers:          buildHeaders(s.Headers),
		Args:             s.Args,
		Env:              grants.EnvVars(s.Env),
		Dir:              s.Dir,
		GrantedTo:        []string{},
	}
	switch {
	case s.HeadersRef != nil:
		ps.Auth = &plan.Auth{Kind: "static", Settings: map[string]any{"headers_ref": s.HeadersRef}}
	case s.Auth != nil:
		settings, strat, _ := env.Auth.Check(s.Auth, "", "mcp")
		ps.Auth = &plan.Auth{Kind: s.Auth.Kind, Settings: settings, Plugin: strat.Plugin}
	}
	return ps
}

// grantSettings is an mcp grant as written.
type grantSettings struct {
	Server  string   `koanf:"server"`
	Include []string `koanf:"include"`
	Exclude []string `koanf:"exclude"`
}

// Compile resolves one mcp grant.
func (c *configured) Compile(env *grants.Env, art *config.Artifact, settings map[string]any, p string) (any, diag.Diagnostics) {
	var g grantSettings
	ds := config.DecodeStrict(settings, &g, p)
	ds = append(ds, grants.CheckGlobs(g.Include, diag.MCPFilterInvalid, config.Join(p, "include"))...)
	ds = append(ds, grants.CheckGlobs(g.Exclude, diag.MCPFilterInvalid, config.Join(p, "exclude"))...)
	declared := c.declared
	switch _, ok := declared[g.Server]; {
	case g.Server == "":
		ds = append(ds, diag.Errorf(diag.MCPServerUnknown, p, "the grant names no server"))
	case !ok && grants.Written(env.Deployment, "mcp_servers", g.Server):
		return nil, ds // the entry has its own diagnostics
	case !ok:
		ds = append(ds, diag.Errorf(diag.MCPServerUnknown, config.Join(p, "server"),
			"server %q is not declared in ai.mcp_servers", g.Server).
			WithDetail("declared: %s", grants.NameList(slices.Sorted(maps.Keys(declared)))))
	}
	if ds.HasErrors() {
		return nil, ds
	}
	if s := c.servers[g.Server]; s != nil {
		s.GrantedTo = grants.AppendUnique(s.GrantedTo, art.Name)
		if s.TimeoutMS == art.Policies.ToolTimeoutMS {
			ds = append(ds, diag.Warnf(diag.TimeoutRace, "policies.tool_timeout_ms",
				"tool_timeout_ms equals server %q's timeout_ms (%d ms): the two deadlines race", g.Server, s.TimeoutMS).
				WithDetail("set the server's timeout_ms shorter, so that a slow call becomes a refusal the model reads"))
		}
	}
	return &Grant{Server: g.Server, Include: g.Include, Exclude: g.Exclude}, ds
}

// GrantSettings and SectionEntry document the types the kind decodes.
func (Kind) GrantSettings() any { return grantSettings{} }
func (Kind) SectionEntry() any  { return ServerConfig{} }

var _ grants.Documented = Kind{}

// overrides is a server's tools: map as the plan holds it, without the
// entries compile refused.
func overrides(in map[string]*grants.ToolOverride) grants.ToolOverrides {
	if len(in) == 0 {
		return nil
	}
	out := make(grants.ToolOverrides, len(in))
	for k, v := range in {
		if v != nil {
			out[k] = *v
		}
	}
	return out
}

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
package mcpkind

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/toolname"
)

func init() { grants.Register("mcp", Kind{}) }

// Kind is the mcp kind.
type Kind struct{}

// ProtocolVersions are the values protocol_version accepts besides "auto".
var ProtocolVersions = []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

var envKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// CheckDeployment validates every entry of ai.mcp_servers and records the
// valid ones in the plan.
func (Kind) CheckDeployment(env *grants.Env) diag.Diagnostics {
	var ds diag.Diagnostics
	d := env.Deployment
	prefixes := map[string]string{} // tool prefix → first server name
	for _, name := range config.SortedKeys(d.AI.MCPServers) {
		s := d.AI.MCPServers[name]
		if s == nil {
			s = &config.MCPServer{Transport: config.TransportHTTP}
		}
		p := config.Join("ai.mcp_servers", name)
		sds := checkServer(env, d, name, s, p)
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
		env.Plan.Servers[name] = buildServer(env, name, s, prefix)
	}
	return ds
}

func checkServer(env *grants.Env, d *config.Deployment, name string, s *config.MCPServer, p string) diag.Diagnostics {
	var ds diag.Diagnostics
	switch s.Transport {
	case config.TransportHTTP, config.TransportSSE:
		ds = append(ds, grants.CheckURL(s.URL, diag.MCPURLInvalid, config.Join(p, "url"))...)
		for key, set := range map[string]bool{"command": s.Command != "", "args": len(s.Args) > 0, "env": len(s.Env) > 0, "dir": s.Dir != ""} {
			if set {
				ds = append(ds, mixed(d, p, "transport", key, s.Transport))
			}
		}
	case config.TransportStdio:
		if s.Command == "" {
			ds = append(ds, diag.Errorf(diag.MCPTransportInvalid, config.Join(p, "command"),
				"a stdio server needs a command"))
		}
		if s.URL != "" {
			ds = append(ds, mixed(d, p, "transport", "url", s.Transport))
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
		ds = append(ds, CheckEnv(s.Env, config.Join(p, "env"))...)
	default:
		ds = append(ds, diag.Errorf(diag.MCPTransportInvalid, config.Join(p, "transport"),
			"unknown transport: want http, sse or stdio"))
	}
	if s.Transport != config.TransportStdio {
		if s.HeadersRef != nil && s.Auth != nil {
			ds = append(ds, diag.Errorf(diag.MCPAuthConflict, p,
				"server %q sets both headers_ref and auth", name).
				WithDetail("headers_ref is the static strategy's shorthand; keep one of the two"))
		}
		ds = append(ds, grants.CheckRef(s.HeadersRef, config.Join(p, "headers_ref"))...)
		if s.Auth != nil {
			_, _, ads := env.Auth.Check(s.Auth, config.Join(p, "auth"), "mcp")
			ds = append(ds, ads...)
		}
	}
	if s.ProtocolVersion != "auto" && !slices.Contains(ProtocolVersions, s.ProtocolVersion) {
		ds = append(ds, diag.Errorf(diag.ConfigValueInvalid, config.Join(p, "protocol_version"),
			"unknown protocol version: want auto or one of %s", strings.Join(ProtocolVersions, ", ")))
	}
	ds = append(ds, grants.CheckGlobs(s.ReadOnlyTools, diag.MCPFilterInvalid, config.Join(p, "read_only_tools"))...)
	ds = append(ds, grants.CheckGlobs(s.IdempotentTools, diag.MCPFilterInvalid, config.Join(p, "idempotent_tools"))...)
	ds = append(ds, grants.CheckGlobs(s.DestructiveTools, diag.MCPFilterInvalid, config.Join(p, "destructive_tools"))...)
	slices.SortFunc(ds, func(a, b diag.Diagnostic) int { return strings.Compare(a.Path, b.Path) })
	return ds
}

// mixed reports settings of two transports on one server, naming the layers
// that set them when they differ (an overlay switched the transport but the
// base file's settings remained).
func mixed(d *config.Deployment, p, have, stray, transport string) diag.Diagnostic {
	msg := fmt.Sprintf("transport %s does not use %s", transport, stray)
	hl, sl := d.Index.Layer(config.Join(p, have)), d.Index.Layer(config.Join(p, stray))
	if hl != "" && sl != "" && hl != sl {
		msg += fmt.Sprintf(" (transport from %s, %s from %s)", hl, stray, sl)
	}
	return diag.Errorf(diag.MCPConnectionConflict, config.Join(p, stray), "%s", msg).
		WithDetail("one server entry must describe one transport; set %s to null in the overlay that changes the transport", stray)
}

// CheckEnv validates the env: block of a child process (a stdio server or
// an auth plugin): names must be variable names, values must be values.
func CheckEnv(env map[string]*config.EnvValue, p string) diag.Diagnostics {
	var ds diag.Diagnostics
	for _, k := range config.SortedKeys(env) {
		kp := config.Join(p, k)
		if !envKeyRE.MatchString(k) {
			ds = append(ds, diag.Errorf(diag.MCPEnvInvalid, kp, "%q is not a valid environment variable name", k))
			continue
		}
		v := env[k]
		if v == nil {
			continue
		}
		if v.Problem != "" {
			ds = append(ds, diag.Errorf(diag.MCPEnvInvalid, kp, "the value cannot be an environment value: %s (value redacted)", v.Problem).
				WithDetail("this is the mark of a broken interpolation; write a plain value or a reference such as ${secrets:/path}"))
		}
	}
	return ds
}

func buildServer(env *grants.Env, name string, s *config.MCPServer, prefix string) *plan.Server {
	ps := &plan.Server{
		Name:             name,
		Transport:        s.Transport,
		URL:              s.URL,
		ToolPrefix:       prefix,
		TimeoutMS:        s.TimeoutMS,
		Required:         grants.Required(s.Required, env.Deployment.AI.RemoteClients),
		ProtocolVersion:  s.ProtocolVersion,
		MaxResultBytes:   s.MaxResultBytes,
		ReadOnlyTools:    s.ReadOnlyTools,
		IdempotentTools:  s.IdempotentTools,
		DestructiveTools: s.DestructiveTools,
		Command:          s.Command,
		Args:             s.Args,
		Env:              EnvVars(s.Env),
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

// EnvVars converts configured env values to the plan's form.
func EnvVars(env map[string]*config.EnvValue) map[string]plan.EnvVar {
	if len(env) == 0 {
		return nil
	}
	out := make(map[string]plan.EnvVar, len(env))
	for k, v := range env {
		switch {
		case v == nil:
			out[k] = plan.EnvVar{LiteralSHA256: hash("")}
		case v.Ref != nil:
			out[k] = plan.EnvVar{Ref: v.Ref}
		default:
			out[k] = plan.EnvVar{Literal: v.Literal, LiteralSHA256: hash(v.Literal)}
		}
	}
	return out
}

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:12]
}

// grantSettings is an mcp grant as written.
type grantSettings struct {
	Server  string   `koanf:"server"`
	Include []string `koanf:"include"`
	Exclude []string `koanf:"exclude"`
}

// Compile resolves one mcp grant.
func (Kind) Compile(env *grants.Env, art *config.Artifact, settings map[string]any, p string) (any, diag.Diagnostics) {
	var g grantSettings
	ds := config.DecodeStrict(settings, &g, p)
	ds = append(ds, grants.CheckGlobs(g.Include, diag.MCPFilterInvalid, config.Join(p, "include"))...)
	ds = append(ds, grants.CheckGlobs(g.Exclude, diag.MCPFilterInvalid, config.Join(p, "exclude"))...)
	declared := env.Deployment.AI.MCPServers
	switch _, ok := declared[g.Server]; {
	case g.Server == "":
		ds = append(ds, diag.Errorf(diag.MCPServerUnknown, p, "the grant names no server"))
	case !ok && grants.Written(env.Deployment, "mcp_servers", g.Server):
		return nil, ds // the entry has its own diagnostics
	case !ok:
		ds = append(ds, diag.Errorf(diag.MCPServerUnknown, config.Join(p, "server"),
			"server %q is not declared in ai.mcp_servers", g.Server).
			WithDetail("declared: %s", listOrNone(config.SortedKeys(declared))))
	}
	if ds.HasErrors() {
		return nil, ds
	}
	if s := env.Plan.Servers[g.Server]; s != nil {
		s.GrantedTo = grants.AppendUnique(s.GrantedTo, art.Name)
		if s.TimeoutMS == art.Policies.ToolTimeoutMS {
			ds = append(ds, diag.Warnf(diag.TimeoutRace, "policies.tool_timeout_ms",
				"tool_timeout_ms equals server %q's timeout_ms (%d ms): the two deadlines race", g.Server, s.TimeoutMS).
				WithDetail("set the server's timeout_ms shorter, so that a slow call becomes a refusal the model reads"))
		}
	}
	return &plan.MCPGrant{Server: g.Server, Include: g.Include, Exclude: g.Exclude}, ds
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

package config_test

import (
	"bytes"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
)

// envBase is the api.yaml the HEDDLE_ tests overlay.
const envBase = `ai:
  mcp_servers:
    runbooks:
      url: https://runbooks.example.com/mcp
      args: [a, b]
    git:
      transport: stdio
      command: git-mcp
  auth_plugins:
    vault:
      command: bin/vault-auth
serve:
  auth:
    kind: tokens
    tokens:
      ci: {token_ref: '${env:CI_TOKEN}', subject: ci}
  limits:
    max_body_bytes: 1000
`

// envDiag is what a test expects of one diagnostic: its code, path, where
// it is located, and words of its detail.
type envDiag struct {
	Code   diag.Code
	Path   string
	File   string
	Detail string // a substring of the detail, or ""
}

// TestEnvVariables: HEDDLE_ variables that name no section of the
// deployment are ignored; one that would create an entry the files do not
// have is refused, naming the closest entry; a problem in a variable's
// value is located at the variable.
func TestEnvVariables(t *testing.T) {
	for _, tc := range []struct {
		name    string
		base    string // api.yaml; envBase when empty
		overlay string // api.staging.yaml, read with --env staging when set
		environ []string
		want    []envDiag
		// set, when not empty, is a path the variables must have set.
		set string
	}{
		{
			name: "unrelated variables are ignored",
			environ: []string{"HEDDLE_TOKEN=x", "HEDDLE_HOME=/home/heddle", "HEDDLE_AI_TOKEN=y",
				"HEDDLE_AUTH_PLUGIN=cookie", "HEDDLE_CHILDPROC_WATCHDOG=1", "HEDDLE_SEVRE__LIMITS__MAX_BODY_BYTES=x"},
		},
		{
			name:    "a setting of the deployment",
			environ: []string{"HEDDLE_AI__STARTUP_TIMEOUT_MS=5000"},
			set:     "ai.startup_timeout_ms",
		},
		{
			name:    "a setting of an existing server",
			environ: []string{"HEDDLE_AI__MCP_SERVERS__RUNBOOKS__URL=https://rb.example.com/mcp"},
			set:     "ai.mcp_servers.runbooks.url",
		},
		{
			name:    "a setting of an existing auth plugin",
			environ: []string{"HEDDLE_AI__AUTH_PLUGINS__VAULT__SHA256=abc"},
			set:     "ai.auth_plugins.vault.sha256",
		},
		{
			name:    "a setting of an existing token",
			environ: []string{"HEDDLE_SERVE__AUTH__TOKENS__CI__SUBJECT=deploy"},
			set:     "serve.auth.tokens.ci.subject",
		},
		{
			name:    "a key of a map of plain values",
			environ: []string{"HEDDLE_MCP__IDENTITY__CLAIMS__TEAM=sre"},
			set:     "mcp.identity.claims.team",
		},
		{
			name:    "a variable of an existing auth plugin",
			environ: []string{"HEDDLE_AI__AUTH_PLUGINS__VAULT__ENV__REGION=eu"},
			set:     "ai.auth_plugins.vault.env.region",
		},
		{
			name:    "a setting of a block the files leave out",
			base:    "ai: {}\n",
			environ: []string{"HEDDLE_SERVE__AUTH__KIND=none"},
			set:     "serve.auth.kind",
		},
		{
			name:    "a server the overlay adds",
			overlay: "ai:\n  mcp_servers:\n    extra: {url: https://extra.example.com/mcp}\n",
			environ: []string{"HEDDLE_AI__MCP_SERVERS__EXTRA__URL=https://x.example.com/mcp"},
			set:     "ai.mcp_servers.extra.url",
		},
		{
			name:    "a misspelt server",
			environ: []string{"HEDDLE_AI__MCP_SERVERS__RUNBOKS__URL=https://rb.example.com/mcp"},
			want: []envDiag{{diag.ConfigKeyUnknown, "ai.mcp_servers.runboks",
				"$HEDDLE_AI__MCP_SERVERS__RUNBOKS__URL", "did you mean runbooks?"}},
		},
		{
			name:    "a new server in a mapping",
			environ: []string{"HEDDLE_AI__MCP_SERVERS={runbooks: {url: 'https://rb.example.com/mcp'}, wiki: {url: 'https://wiki.example.com/mcp'}}"},
			want: []envDiag{{diag.ConfigKeyUnknown, "ai.mcp_servers.wiki",
				"$HEDDLE_AI__MCP_SERVERS", "git, runbooks"}},
		},
		{
			name:    "a new server in the whole of ai",
			environ: []string{"HEDDLE_AI={mcp_servers: {wiki: {command: wiki-mcp}}}"},
			want:    []envDiag{{diag.ConfigKeyUnknown, "ai.mcp_servers.wiki", "$HEDDLE_AI", ""}},
		},
		{
			name:    "a server the overlay removes",
			overlay: "ai:\n  mcp_servers:\n    runbooks: null\n",
			environ: []string{"HEDDLE_AI__MCP_SERVERS__RUNBOOKS__URL=https://rb.example.com/mcp"},
			want:    []envDiag{{diag.ConfigKeyUnknown, "ai.mcp_servers.runbooks", "$HEDDLE_AI__MCP_SERVERS__RUNBOOKS__URL", ""}},
		},
		{
			name:    "a server whose name has upper-case letters",
			base:    "ai:\n  mcp_servers:\n    Runbooks: {url: https://runbooks.example.com/mcp}\n",
			environ: []string{"HEDDLE_AI__MCP_SERVERS__RUNBOOKS__URL=https://rb.example.com/mcp"},
			want: []envDiag{{diag.ConfigKeyUnknown, "ai.mcp_servers.runbooks",
				"$HEDDLE_AI__MCP_SERVERS__RUNBOOKS__URL", "did you mean Runbooks?"}},
		},
		{
			name:    "a misspelt section",
			environ: []string{"HEDDLE_AI__MCP_SERVER__RUNBOOKS__URL=https://rb.example.com/mcp"},
			want: []envDiag{{diag.ConfigKeyUnknown, "ai.mcp_server",
				"$HEDDLE_AI__MCP_SERVER__RUNBOOKS__URL", "did you mean mcp_servers?"}},
		},
		{
			name:    "a section the files do not write",
			environ: []string{"HEDDLE_AI__SQL_SOURCES__PG__DSN_REF=${env:DSN}"},
			want:    []envDiag{{diag.ConfigKeyUnknown, "ai.sql_sources", "$HEDDLE_AI__SQL_SOURCES__PG__DSN_REF", ""}},
		},
		{
			name:    "a new A2A agent",
			base:    "ai:\n  a2a_agents:\n    triage: {url: https://triage.example.com}\n",
			environ: []string{"HEDDLE_AI__A2A_AGENTS__TRIAGER__URL=https://t.example.com"},
			want: []envDiag{{diag.ConfigKeyUnknown, "ai.a2a_agents.triager",
				"$HEDDLE_AI__A2A_AGENTS__TRIAGER__URL", "did you mean triage?"}},
		},
		{
			name:    "a new auth plugin",
			environ: []string{"HEDDLE_AI__AUTH_PLUGINS__VAULTT__COMMAND=bin/x"},
			want: []envDiag{{diag.ConfigKeyUnknown, "ai.auth_plugins.vaultt",
				"$HEDDLE_AI__AUTH_PLUGINS__VAULTT__COMMAND", "did you mean vault?"}},
		},
		{
			name:    "a new token",
			environ: []string{"HEDDLE_SERVE__AUTH__TOKENS__ROOT__SUBJECT=root"},
			want:    []envDiag{{diag.ConfigKeyUnknown, "serve.auth.tokens.root", "$HEDDLE_SERVE__AUTH__TOKENS__ROOT__SUBJECT", ""}},
		},
		{
			name:    "a refusal leaves the other variables' problems reported",
			environ: []string{"HEDDLE_AI__MCP_SERVERS__RUNBOKS__URL=x", "HEDDLE_AI__STARTUP_TIMEOUT_MS=soon"},
			want: []envDiag{
				{diag.ConfigKeyUnknown, "ai.mcp_servers.runboks", "$HEDDLE_AI__MCP_SERVERS__RUNBOKS__URL", ""},
				{diag.ConfigValueInvalid, "ai.startup_timeout_ms", "$HEDDLE_AI__STARTUP_TIMEOUT_MS", ""},
			},
		},
		{
			name:    "a refusal beside a value that cannot be read",
			environ: []string{"HEDDLE_AI__MCP_SERVERS__RUNBOKS__URL=x", "HEDDLE_AI__STARTUP_TIMEOUT_MS={a: 1, a: 2}"},
			want: []envDiag{
				{diag.ConfigParse, "a", "$HEDDLE_AI__STARTUP_TIMEOUT_MS", ""},
				{diag.ConfigKeyUnknown, "ai.mcp_servers.runboks", "$HEDDLE_AI__MCP_SERVERS__RUNBOKS__URL", ""},
			},
		},
		{
			name:    "a wrong type in a mapping",
			environ: []string{"HEDDLE_SERVE__LIMITS={max_body_bytes: lots}"},
			want:    []envDiag{{diag.ConfigValueInvalid, "serve.limits.max_body_bytes", "$HEDDLE_SERVE__LIMITS", ""}},
		},
		{
			name:    "an invalid value in a mapping",
			environ: []string{"HEDDLE_SERVE__LIMITS={max_body_bytes: -1}"},
			want:    []envDiag{{diag.ConfigValueInvalid, "serve.limits.max_body_bytes", "$HEDDLE_SERVE__LIMITS", ""}},
		},
		{
			name:    "a wrong type in the whole of ai",
			base:    "ai:\n  startup_timeout_ms: 5000\n",
			environ: []string{"HEDDLE_AI={startup_timeout_ms: soon}"},
			want:    []envDiag{{diag.ConfigValueInvalid, "ai.startup_timeout_ms", "$HEDDLE_AI", ""}},
		},
		{
			name:    "a list where a mapping belongs",
			environ: []string{"HEDDLE_SERVE={limits: [1]}"},
			want:    []envDiag{{diag.ConfigValueInvalid, "serve.limits", "$HEDDLE_SERVE", ""}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := tc.base
			if base == "" {
				base = envBase
			}
			fsys := fstest.MapFS{"config/api.yaml": {Data: []byte(base)}}
			opts := config.Options{FS: fsys, Environ: tc.environ}
			if tc.overlay != "" {
				fsys["config/api.staging.yaml"] = &fstest.MapFile{Data: []byte(tc.overlay)}
				opts.Env = "staging"
			}
			dep, ds := config.LoadDeployment(opts)
			var got []envDiag
			for _, d := range ds {
				file := ""
				if d.Range != nil {
					file = d.Range.File
				}
				detail := ""
				for _, w := range tc.want {
					if w.Detail != "" && strings.Contains(d.Detail, w.Detail) {
						detail = w.Detail
					}
				}
				got = append(got, envDiag{d.Code, d.Path, file, detail})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s\n%v", diff, ds)
			}
			if tc.set != "" {
				if !dep.Written(tc.set) || dep.Index.Layer(tc.set) != "$"+strings.Split(tc.environ[0], "=")[0] {
					t.Errorf("%s not set by the variable (written %v, layer %q)", tc.set, dep.Written(tc.set), dep.Index.Layer(tc.set))
				}
			}
			if tc.want == nil && tc.set == "" && slices.Contains(dep.Sources, "env") {
				t.Errorf("sources %v: no variable should have been read", dep.Sources)
			}
		})
	}
}

// TestEnvIgnoredLogged: an ignored variable is a debug line on the
// loader's logger, naming it and never its value.
func TestEnvIgnoredLogged(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	fsys := fstest.MapFS{"config/api.yaml": {Data: []byte(envBase)}}
	_, ds := config.LoadDeployment(config.Options{FS: fsys, Logger: log,
		Environ: []string{"HEDDLE_TOKEN=sk-canary-1", "HEDDLE_AI__STARTUP_TIMEOUT_MS=5000"}})
	if ds != nil {
		t.Fatalf("diagnostics: %v", ds)
	}
	out := buf.String()
	if !strings.Contains(out, "level=DEBUG") || !strings.Contains(out, "HEDDLE_TOKEN") || strings.Count(out, "\n") != 1 {
		t.Errorf("want one debug line naming HEDDLE_TOKEN, got:\n%s", out)
	}
	if strings.Contains(out, "sk-canary") {
		t.Errorf("the log repeats the value:\n%s", out)
	}
}

// TestEnvValueLocated: a path inside a variable's value (an item of a
// list it sets) is located at the variable, though the file wrote the
// same path.
func TestEnvValueLocated(t *testing.T) {
	fsys := fstest.MapFS{"config/api.yaml": {Data: []byte(envBase)}}
	dep, ds := config.LoadDeployment(config.Options{FS: fsys,
		Environ: []string{"HEDDLE_AI__MCP_SERVERS__RUNBOOKS__ARGS=[x, {y: 1}]"}})
	if ds != nil {
		t.Fatalf("diagnostics: %v", ds)
	}
	for _, p := range []string{"ai.mcp_servers.runbooks.args", "ai.mcp_servers.runbooks.args[1]", "ai.mcp_servers.runbooks.args[1].y"} {
		if r := dep.Index.Range(p); r == nil || r.File != "$HEDDLE_AI__MCP_SERVERS__RUNBOOKS__ARGS" {
			t.Errorf("%s located at %v, want the variable", p, r)
		}
	}
	if r := dep.Index.Range("ai.mcp_servers.runbooks.url"); r == nil || r.File != "config/api.yaml" {
		t.Errorf("url located at %v, want the file", r)
	}
}

package heddlecmd

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/heddlehq/heddle/auth"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
)

func TestImportServers(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		servers map[string]*importedServer
		secrets []importedSecret
		notes   []string
	}{
		{
			name: "claude desktop stdio",
			in:   `{"mcpServers": {"git": {"command": "uvx", "args": ["mcp-server-git"], "env": {"GIT_TOKEN": "canary-1", "TZ": "UTC", "DB_PASSWORD": "canary-2", "KEYBOARD": "us"}}}}`,
			servers: map[string]*importedServer{"git": {Command: "uvx", Args: []string{"mcp-server-git"},
				Env: map[string]string{"GIT_TOKEN": "${secrets:/mcp/git/GIT_TOKEN}", "TZ": "UTC", "DB_PASSWORD": "${secrets:/mcp/git/DB_PASSWORD}", "KEYBOARD": "us"}}},
			secrets: []importedSecret{
				{Server: "git", What: "env DB_PASSWORD", Path: "/mcp/git/DB_PASSWORD"},
				{Server: "git", What: "env GIT_TOKEN", Path: "/mcp/git/GIT_TOKEN"},
			},
		},
		{
			name:    "env value carrying userinfo",
			in:      `{"mcpServers": {"db": {"command": "pg-mcp", "env": {"DATABASE_URL": "postgres://u:canary@db/x"}}}}`,
			servers: map[string]*importedServer{"db": {Command: "pg-mcp", Env: map[string]string{"DATABASE_URL": "${secrets:/mcp/db/DATABASE_URL}"}}},
			secrets: []importedSecret{{Server: "db", What: "env DATABASE_URL", Path: "/mcp/db/DATABASE_URL"}},
		},
		{
			name: "references stay",
			in:   `{"servers": {"s": {"command": "x", "env": {"API_KEY": "${env:API_KEY}", "B_TOKEN": "${secrets:/team/b}"}}}}`,
			servers: map[string]*importedServer{"s": {Command: "x",
				Env: map[string]string{"API_KEY": "${env:API_KEY}", "B_TOKEN": "${secrets:/team/b}"}}},
		},
		{
			name: "cursor http with type and credential headers",
			in:   `{"mcpServers": {"linear": {"type": "streamable-http", "url": "https://mcp.linear.app/mcp", "headers": {"authorization": "Bearer canary", "Cookie": "s=canary", "X-Region": "eu"}}}}`,
			servers: map[string]*importedServer{"linear": {Transport: "http", URL: "https://mcp.linear.app/mcp",
				Headers: map[string]string{"authorization": "${secrets:/mcp/linear/Authorization}", "Cookie": "${secrets:/mcp/linear/Cookie}", "X-Region": "eu"}}},
			secrets: []importedSecret{
				{Server: "linear", What: "header authorization", Path: "/mcp/linear/Authorization"},
				{Server: "linear", What: "header Cookie", Path: "/mcp/linear/Cookie"},
			},
		},
		{
			name:    "url userinfo with an authorization header already",
			in:      `{"mcpServers": {"a": {"url": "https://u:canary@h.example.com/mcp", "headers": {"Authorization": "${env:A_AUTH}"}}}}`,
			servers: map[string]*importedServer{"a": {URL: "https://h.example.com/mcp", Headers: map[string]string{"Authorization": "${env:A_AUTH}"}}},
			notes:   []string{"a: the url's credentials (userinfo) were removed; its Authorization header stands for them"},
		},
		{
			name: "vscode inputs",
			in: `{"inputs": [{"id": "key", "description": "API key"}],
				"servers": {"p": {"type": "stdio", "command": "p", "env": {"PLAIN": "${input:key}", "BUILT": "a-${input:key}-${input:other}"}}}}`,
			servers: map[string]*importedServer{"p": {Transport: "stdio", Command: "p",
				Env: map[string]string{"PLAIN": "${secrets:/mcp/p/PLAIN}", "BUILT": "${secrets:/mcp/p/BUILT}"}}},
			secrets: []importedSecret{
				{Server: "p", What: `env BUILT: the value VS Code builds from input key ("API key"), input other`, Path: "/mcp/p/BUILT"},
				{Server: "p", What: `env PLAIN: the value of input key ("API key")`, Path: "/mcp/p/PLAIN"},
			},
		},
		{
			name:    "settings.json mcp object",
			in:      `{"editor.fontSize": 12, "mcp": {"servers": {"s": {"command": "s"}}}}`,
			servers: map[string]*importedServer{"s": {Command: "s"}},
		},
		{
			name:    "jsonc",
			in:      "{\n // a comment with \"quotes\" and a url http://x\n \"servers\": {\"s\": {\"command\": \"a//b\", /* c */ \"args\": [\"/*x*/\",],},},\n}",
			servers: map[string]*importedServer{"s": {Command: "a//b", Args: []string{"/*x*/"}}},
		},
		{
			name:    "names sanitized, disabled left out, other transport's settings left out",
			in:      `{"mcpServers": {"my server": {"command": "x", "headers": {"A": "b"}}, "off": {"command": "y", "disabled": true}}}`,
			servers: map[string]*importedServer{"my_server": {Command: "x"}},
			notes: []string{
				`server "my server" is named my_server: heddle's server names are letters, digits, _ and - (the prefix of its tools)`,
				"my_server: left out: headers, which its transport does not use",
				"off: left out: the host has it disabled",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			im, ds := importServers([]byte(tt.in))
			if ds.HasErrors() {
				t.Fatalf("importServers: %v", ds.Err())
			}
			if diff := cmp.Diff(tt.servers, im.Servers); diff != "" {
				t.Errorf("servers (-want +got):\n%s", diff)
			}
			if tt.secrets == nil {
				tt.secrets = []importedSecret{}
			}
			if diff := cmp.Diff(tt.secrets, sortedSecrets(im.Secrets)); diff != "" {
				t.Errorf("secrets (-want +got):\n%s", diff)
			}
			if tt.notes != nil {
				if diff := cmp.Diff(tt.notes, im.Notes); diff != "" {
					t.Errorf("notes (-want +got):\n%s", diff)
				}
			}
			assertNoCanary(t, im)
		})
	}
}

func sortedSecrets(s []importedSecret) []importedSecret {
	out := append([]importedSecret(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j].Path < out[i].Path {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	if out == nil {
		out = []importedSecret{}
	}
	return out
}

// assertNoCanary fails when a value the tests mark "canary" is in what
// heddle import prints.
func assertNoCanary(t *testing.T, im *imported) {
	t.Helper()
	b, err := json.Marshal(im)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("canary")) {
		t.Errorf("a credential's value is in the output: %s", b)
	}
}

func TestImportServersRefuses(t *testing.T) {
	tests := []struct {
		name, in string
		want     []diag.Code
	}{
		{"not json", `{"mcpServers": `, []diag.Code{diag.ConfigParse}},
		{"a list", `[1, 2]`, []diag.Code{diag.ConfigParse}},
		{"null", `null`, []diag.Code{diag.ConfigParse}},
		{"no servers", `{"other": {}}`, []diag.Code{diag.ConfigValueInvalid}},
		{"servers a list", `{"mcpServers": []}`, []diag.Code{diag.ConfigValueInvalid}},
		{"entry a string", `{"servers": {"a": "npx"}}`, []diag.Code{diag.ConfigValueInvalid}},
		{"env of numbers", `{"servers": {"a": {"command": "x", "env": {"A": 1}}}}`, []diag.Code{diag.ConfigValueInvalid}},
		{"empty name", `{"servers": {"": {"command": "x"}}}`, []diag.Code{diag.ConfigValueInvalid}},
		{"unknown type", `{"servers": {"a": {"type": "ws", "url": "wss://x"}}}`, []diag.Code{diag.MCPTransportInvalid}},
		{"stdio without command", `{"servers": {"a": {"type": "stdio"}}}`, []diag.Code{diag.MCPTransportInvalid}},
		{"sse without url", `{"servers": {"a": {"type": "sse", "command": "x"}}}`, []diag.Code{diag.MCPTransportInvalid}},
		{"neither", `{"servers": {"a": {}}}`, []diag.Code{diag.MCPTransportInvalid}},
		{"both", `{"servers": {"a": {"command": "x", "url": "https://x"}}}`, []diag.Code{diag.MCPConnectionConflict}},
		{"names clash", `{"servers": {"a.b": {"command": "x"}, "a_b": {"command": "y"}}}`, []diag.Code{diag.MCPConnectionConflict}},
		{"credential argument", `{"servers": {"a": {"command": "x", "args": ["--token=canary"]}}}`, []diag.Code{diag.MCPCredentialsInline}},
		{"credential argument apart", `{"servers": {"a": {"command": "x", "args": ["--api-key", "canary"]}}}`, []diag.Code{diag.MCPCredentialsInline}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			im, ds := importServers([]byte(tt.in))
			if im != nil {
				t.Fatalf("importServers returned entries for a refused file")
			}
			if diff := cmp.Diff(tt.want, ds.Codes()); diff != "" {
				t.Errorf("codes (-want +got):\n%s", diff)
			}
			for _, d := range ds {
				if strings.Contains(d.Error()+d.Detail, "canary") {
					t.Errorf("a value is repeated: %v", d)
				}
			}
		})
	}
}

// TestImportOutputParses: what heddle import prints is YAML.
func TestImportOutputParses(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "import", "claude_desktop_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	dir := t.TempDir()
	name := filepath.Join(dir, "c.json")
	if err := os.WriteFile(name, in, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := Run([]string{"import", name}, &out, &errOut, Options{}); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var v map[string]map[string]map[string]any
	if err := yaml.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatalf("the output is not YAML: %v\n%s", err, out.String())
	}
	if len(v["ai"]["mcp_servers"]) == 0 {
		t.Errorf("no servers under ai.mcp_servers:\n%s", out.String())
	}
}

func TestImportTooLarge(t *testing.T) {
	name := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(name, bytes.Repeat([]byte(" "), maxImportBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := Run([]string{"import", name}, &out, &errOut, Options{}); code != ExitFail {
		t.Fatalf("exit %d, want %d", code, ExitFail)
	}
	if !strings.Contains(errOut.String(), string(diag.ConfigLimit)) {
		t.Errorf("stderr lacks %s: %s", diag.ConfigLimit, errOut.String())
	}
}

// FuzzImport: no input makes heddle import panic; what it accepts is
// written as YAML that parses; a value under a credential's name is a
// reference, and no URL keeps its userinfo.
func FuzzImport(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "import", "*.json"))
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"servers": {"a": {"type": "http", "url": "https://u:p@x/mcp", "headers": {"X-Key": "${input:k}"}}}, "inputs": []}`))
	f.Add([]byte("{/* */ \"mcpServers\": {\"a\": {\"command\": \"x\", \"args\": [\"--token\", \"t\"],},}}"))
	f.Add([]byte(`{"mcp": {"servers": {"a b": {"command": "x", "env": {"K": "v v"}}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		im, ds := importServers(data)
		if im == nil {
			if !ds.HasErrors() {
				t.Fatal("no entries and no error")
			}
			return
		}
		var b bytes.Buffer
		enc := yaml.NewEncoder(&b)
		if err := enc.Encode(map[string]any{"ai": map[string]any{"mcp_servers": im.Servers}}); err != nil {
			t.Fatalf("encode: %v", err)
		}
		var back any
		if err := yaml.Unmarshal(b.Bytes(), &back); err != nil {
			t.Fatalf("the output does not parse: %v\n%s", err, b.String())
		}
		for name, srv := range im.Servers {
			for _, m := range []map[string]string{srv.Env, srv.Headers} {
				for k, v := range m {
					if credential(k) && config.ParseRef(v).Problem != "" {
						t.Fatalf("server %s: %s holds a literal, not a reference", name, k)
					}
				}
			}
			for _, v := range append([]string{srv.Command, srv.URL, srv.Dir}, srv.Args...) {
				if auth.HasUserinfo(v) {
					t.Fatalf("server %s: a URL with userinfo is in the output", name)
				}
			}
		}
	})
}

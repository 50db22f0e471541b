package config

import "testing"

func TestQuoteFlowRefs(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"auth: {kind: bearer, token_ref: ${secrets:/a/b}}\n", "auth: {kind: bearer, token_ref: \"${secrets:/a/b}\"}\n"},
		{"env: {A: ${env:X}, B: ${file:/run/y}}\n", "env: {A: \"${env:X}\", B: \"${file:/run/y}\"}\n"},
		{"args: [${env:X}]\n", "args: [\"${env:X}\"]\n"},
		{"headers_ref: ${secrets:/a}\n", "headers_ref: \"${secrets:/a}\"\n"},
		{"- ${env:X}\n", "- \"${env:X}\"\n"},
		// Left alone: already quoted, inside text, comments, block scalars.
		{"a: \"${env:X}\"\n", "a: \"${env:X}\"\n"},
		{"a: '${env:X}'\n", "a: '${env:X}'\n"},
		{"a: x${env:X}\n", "a: x${env:X}\n"},
		{"a: b # ${env:X}\n", "a: b # ${env:X}\n"},
		{"sql: |\n  a: ${env:X}\nb: ${env:Y}\n", "sql: |\n  a: ${env:X}\nb: \"${env:Y}\"\n"},
		{"a: ${env:bad value}\n", "a: ${env:bad value}\n"},
	} {
		if got := string(quoteFlowRefs([]byte(tc.in))); got != tc.want {
			t.Errorf("quoteFlowRefs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestFlowRefsDecode checks the examples of DESIGN.md decode as written.
func TestFlowRefsDecode(t *testing.T) {
	m, _, ds := parseLayer("api.yaml", []byte("ai:\n  mcp_servers:\n    catalog:\n      url: https://c.example.com/mcp\n      auth: {kind: bearer, token_ref: ${secrets:/heddle/catalog/token}}\n"))
	if len(ds) > 0 {
		t.Fatal(ds)
	}
	var d Deployment
	if ds := decodeStrict(m, &d, ""); len(ds) > 0 {
		t.Fatal(ds)
	}
	raw, _ := d.Section("mcp_servers")
	var servers map[string]struct {
		URL  string `koanf:"url"`
		Auth *Auth  `koanf:"auth"`
	}
	if ds := decodeStrict(raw, &servers, "ai.mcp_servers"); len(ds) > 0 {
		t.Fatal(ds)
	}
	ref, ok := servers["catalog"].Auth.Settings["token_ref"].(string)
	if !ok || ref != "${secrets:/heddle/catalog/token}" {
		t.Fatalf("token_ref = %#v", servers["catalog"].Auth.Settings["token_ref"])
	}
}

package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/audit"
	"github.com/heddlehq/heddle/internal/plantest"
	"github.com/heddlehq/heddle/internal/testkinds"
	"github.com/heddlehq/heddle/internal/testmcp"
	"github.com/heddlehq/heddle/runtime"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

// secret is an argument that must never reach the file.
const secret = "sk-live-4f9a7c2e1b8d6f0a3c5e7b9d"

// trail writes the audit file of 1,000 calls through a runtime whose
// OnCall is the writer: echo with a secret-looking argument, add (a
// destructive tool, asked and approved or declined), a tool denied_tools
// refuses, one a rule denies, and one that does not exist.
func trail(t *testing.T, path string) {
	t.Helper()
	w, err := audit.Open(audit.Options{Path: path, Key: testKey, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	p := plantest.Must(t, `
ai:
  mcp_servers:
    a: {transport: stdio, command: heddle-testmcp}
`, map[string]string{"x": `
capabilities: [{kind: mcp, server: a}]
policies:
  denied_tools: [sleep]
  rules:
    - {when: 'caller.subject == "mallory"', effect: deny}
`})
	rt, err := runtime.Open(context.Background(), p, runtime.Options{
		Kinds:      testkinds.InMemory(t, &testmcp.Options{Destructive: []string{"add"}}),
		OnCall:     w.Observe,
		DigestArgs: true,
		Approver: func(_ context.Context, req runtime.ApprovalRequest) (bool, error) {
			return req.Caller.Subject != "bob", nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ts, err := rt.Toolset("x")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		who := heddle.Identity{Subject: "alice", Roles: []string{"sre"}}
		tool, args := "echo", map[string]any{"text": secret}
		switch i % 10 {
		case 1:
			tool, args = "add", map[string]any{"a": 1, "b": i}
		case 2:
			who.Subject, tool, args = "bob", "add", map[string]any{"a": 2, "b": i}
		case 3:
			tool = "sleep"
		case 4:
			who.Subject = "mallory"
		case 5:
			tool = "no_such_tool"
		}
		if _, err := ts.Call(heddle.WithCaller(context.Background(), who), tool, args); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if s := w.Stats(); s.Written != 1000 || s.Lost != 0 {
		t.Fatalf("stats %+v, want 1000 written and none lost", s)
	}
}

func readLines(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.SplitAfter(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
}

func writeLines(t *testing.T, path string, lines [][]byte) {
	t.Helper()
	var b []byte
	for _, l := range lines {
		b = append(b, l...)
		if !bytes.HasSuffix(l, []byte("\n")) {
			b = append(b, '\n')
		}
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestTrail: the file of 1,000 calls verifies, holds what each decision
// was and the digest of the arguments but never their values, and each
// way of tampering with it is found at the record it touched.
func TestTrail(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	trail(t, path)

	s, err := audit.Verify(testKey, path)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if s.Records != 1000 || s.FirstSeq != 0 || s.LastSeq != 999 {
		t.Fatalf("summary %+v, want 1000 records, seq 0 to 999", s)
	}
	raw, _ := os.ReadFile(path)
	if bytes.Contains(raw, []byte(secret)) || bytes.Contains(raw, []byte("sk-live")) {
		t.Fatal("an argument's value is in the audit file")
	}
	lines := readLines(t, path)
	want := map[int]string{ // line → unmapped decision/rule/approval/outcome/code
		0: "allow default  ok ",
		1: "ask policies.approval approved ok ",
		2: "ask policies.approval declined refused TOOL_APPROVAL_REQUIRED",
		// Denied whatever the arguments: the caller is told the tool does
		// not exist, and the record keeps the rule that decided.
		3: "deny policies.denied_tools[0]  refused TOOL_UNKNOWN",
		4: "deny policies.rules[0]  refused TOOL_UNKNOWN",
		5: "   refused TOOL_UNKNOWN",
	}
	for i, w := range want {
		var r audit.Record
		if err := json.Unmarshal(lines[i], &r); err != nil {
			t.Fatal(err)
		}
		u := r.Unmapped
		if got := strings.Join([]string{u.Decision, u.Rule, u.Approval, u.Outcome, u.Code}, " "); got != w {
			t.Errorf("line %d: %q, want %q\n%s", i+1, got, w, lines[i])
		}
		if r.ClassUID != 6003 || r.Actor.User.UID == "" || r.API.Operation == "" || r.Metadata.Product.Name != "heddle" || len(u.ArgsSHA256) != 64 {
			t.Errorf("line %d lacks OCSF fields: %s", i+1, lines[i])
		}
	}
	var first audit.Record
	_ = json.Unmarshal(lines[0], &first)
	if wantDigest := audit.ArgsDigest(map[string]any{"text": secret}); first.Unmapped.ArgsSHA256 != wantDigest {
		t.Errorf("args digest %s, want %s (audit.ArgsDigest of the same arguments)", first.Unmapped.ArgsSHA256, wantDigest)
	}

	forged := func(lines [][]byte) []byte {
		// A record an attacker writes without the key: a copy of the last,
		// its seq and prev made to follow, its MAC made up.
		var r audit.Record
		_ = json.Unmarshal(lines[len(lines)-1], &r)
		r.Chain = audit.Chain{Seq: r.Chain.Seq + 1, Prev: r.Chain.MAC, MAC: strings.Repeat("0", 64)}
		b, _ := json.Marshal(r)
		return b
	}
	tests := []struct {
		name     string
		tamper   func([][]byte) [][]byte
		line     int
		seq      int64
		contains string
	}{
		{"one byte changed", func(l [][]byte) [][]byte {
			l[499] = bytes.Replace(l[499], []byte(`"alice"`), []byte(`"alicf"`), 1)
			return l
		}, 500, 499, "MAC does not match"},
		{"one record removed", func(l [][]byte) [][]byte {
			return append(l[:300:300], l[301:]...)
		}, 301, 301, "chain.prev"},
		{"two swapped", func(l [][]byte) [][]byte {
			l[700], l[701] = l[701], l[700]
			return l
		}, 701, 701, "chain.prev"},
		{"one appended without the key", func(l [][]byte) [][]byte {
			return append(l, forged(l))
		}, 1001, 1000, "MAC does not match"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "audit.jsonl")
			writeLines(t, p, tt.tamper(readLines(t, path)))
			_, err := audit.Verify(testKey, p)
			var be *audit.BrokenError
			if !errors.As(err, &be) {
				t.Fatalf("Verify: %v, want a *BrokenError", err)
			}
			if be.Line != tt.line || be.Seq != tt.seq || !strings.Contains(be.Reason, tt.contains) {
				t.Fatalf("broken at line %d seq %d (%s), want line %d seq %d (%s)", be.Line, be.Seq, be.Reason, tt.line, tt.seq, tt.contains)
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("audit.jsonl:%d (seq %d)", tt.line, tt.seq)) {
				t.Errorf("the error does not name the record: %v", err)
			}
		})
	}
	if _, err := audit.Verify([]byte("another key, 32 bytes long......"), path); err == nil {
		t.Error("the file verifies under another key")
	}
}

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/runtime"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// everythingTools is what server-everything offers a client that
// advertises no capabilities, as heddle's runtime does without elicitation
// or sampling handlers: its twelve fixed tools plus simulate-research-query,
// which it registers right after the handshake (with a list_changed).
// get-roots-list, trigger-elicitation-request, trigger-sampling-request and
// the other conditional tools need capabilities heddle does not advertise.
var everythingTools = []string{
	"echo",
	"get-annotated-message",
	"get-env",
	"get-resource-links",
	"get-resource-reference",
	"get-structured-content",
	"get-sum",
	"get-tiny-image",
	"gzip-file-as-resource",
	"simulate-research-query",
	"toggle-simulated-logging",
	"toggle-subscriber-updates",
	"trigger-long-running-operation",
}

// everythingServer returns the api.yaml entry (indented for mcp_servers) of
// a server-everything named name over transport: stdio runs it as the
// runtime's child; http and sse start it here, on loopback.
func everythingServer(t *testing.T, name, transport string) string {
	t.Helper()
	Need(t, "node")
	script := Need(t, "server-everything")
	switch transport {
	case "stdio":
		return fmt.Sprintf(`
    %s:
      transport: stdio
      command: node
      args: [%s, stdio]
      env: {%s: $MARK, EVERYTHING_NAME: %s}
`, name, strconv.Quote(script), markEnv, name)
	case "http":
		addr := startNodeHTTP(t, script, "streamableHttp")
		return fmt.Sprintf(`
    %s:
      transport: http
      url: http://%s/mcp
`, name, addr)
	case "sse":
		addr := startNodeHTTP(t, script, "sse")
		return fmt.Sprintf(`
    %s:
      transport: sse
      url: http://%s/sse
`, name, addr)
	}
	t.Fatalf("unknown transport %q", transport)
	return ""
}

func TestEverything(t *testing.T) {
	for _, transport := range []string{"stdio", "http", "sse"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			testEverything(t, transport)
		})
	}
}

func testEverything(t *testing.T, transport string) {
	api := "ai:\n  startup_timeout_ms: 30000\n  mcp_servers:" + everythingServer(t, "ev", transport)
	h := open(t, api, map[string]string{
		"all": `capabilities: [{kind: mcp, server: ev}]`,
		"filtered": `capabilities:
  - {kind: mcp, server: ev, include: ["get-*", "echo"], exclude: ["get-env", "get-resource-*"]}
`,
	})
	all, filtered := h.toolset(t, "all"), h.toolset(t, "filtered")
	ctx := context.Background()

	t.Run("list", func(t *testing.T) {
		if diff := cmp.Diff(everythingTools, toolNames(t, all)); diff != "" {
			t.Errorf("all tools (-want +got):\n%s", diff)
		}
		want := []string{"echo", "get-annotated-message", "get-structured-content", "get-sum", "get-tiny-image"}
		if diff := cmp.Diff(want, toolNames(t, filtered)); diff != "" {
			t.Errorf("filtered tools (-want +got):\n%s", diff)
		}
		tl := toolByName(t, all, "get-structured-content")
		if tl.Server != "ev" || tl.OriginalName != "get-structured-content" || tl.Kind != "mcp" || tl.OutputSchema == nil {
			t.Errorf("get-structured-content = %+v; want server ev, source mcp, an output schema", tl)
		}
		if !tl.ReadOnly || tl.Destructive {
			t.Errorf("get-structured-content: read_only %v destructive %v; want true false", tl.ReadOnly, tl.Destructive)
		}
	})

	// server-everything registers tools right after the handshake and
	// announces each with list_changed, racing the runtime's first listing.
	// Whatever the order, the list must settle complete and stay put: a
	// re-list after the notifications finds what the first one found.
	t.Run("list_changed after the handshake", func(t *testing.T) {
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		events := h.rt.Watch(wctx)
		deadline := time.Now().Add(1500 * time.Millisecond)
		for n := 0; time.Now().Before(deadline); n++ {
			if diff := cmp.Diff(everythingTools, toolNames(t, all)); diff != "" {
				t.Fatalf("listing %d after Open (-want +got):\n%s", n, diff)
			}
			time.Sleep(100 * time.Millisecond)
		}
		cancel()
		for ev := range events {
			t.Errorf("tool event %+v: the list changed although the server's tools did not", ev)
		}
	})

	t.Run("echo", func(t *testing.T) {
		res := call(t, all, "echo", map[string]any{"message": "hello from heddle"})
		if got := text(res); !strings.Contains(got, "hello from heddle") {
			t.Errorf("echo = %q", got)
		}
		// A tool the grant filters out is unknown to the agent.
		if res := callRaw(t, filtered, "get-env", nil); runtime.RefusalCode(res) != diag.ToolUnknown {
			t.Errorf("filtered get-env: code %q, want TOOL_UNKNOWN: %s", runtime.RefusalCode(res), text(res))
		}
		// Arguments that do not match the schema are a result the model reads.
		if res := callRaw(t, all, "echo", map[string]any{}); !res.IsError {
			t.Errorf("echo without message: not an error: %s", text(res))
		}
	})

	t.Run("get-sum", func(t *testing.T) {
		res := call(t, all, "get-sum", map[string]any{"a": 2, "b": 40})
		if got := text(res); !strings.Contains(got, "42") {
			t.Errorf("get-sum(2, 40) = %q, want 42 in it", got)
		}
	})

	t.Run("get-tiny-image", func(t *testing.T) {
		res := call(t, all, "get-tiny-image", nil)
		img := contentOf[*mcp.ImageContent](res)
		if len(img) != 1 {
			t.Fatalf("want 1 image, got %d in %s", len(img), contentKinds(res))
		}
		if img[0].MIMEType != "image/png" || !bytes.HasPrefix(img[0].Data, []byte("\x89PNG\r\n\x1a\n")) {
			t.Errorf("image: mimeType %q, %d bytes starting %q; want a PNG", img[0].MIMEType, len(img[0].Data), img[0].Data[:min(8, len(img[0].Data))])
		}
		if got, want := contentKinds(res), "text,image,text"; got != want {
			t.Errorf("content kinds %s, want %s", got, want)
		}
	})

	t.Run("get-structured-content", func(t *testing.T) {
		res := call(t, all, "get-structured-content", map[string]any{"location": "New York"})
		want := map[string]any{"conditions": "Cloudy", "humidity": 82.0, "temperature": 33.0}
		if diff := cmp.Diff(want, asJSON(t, res.StructuredContent)); diff != "" {
			t.Errorf("structuredContent (-want +got):\n%s", diff)
		}
	})

	t.Run("get-annotated-message", func(t *testing.T) {
		res := call(t, all, "get-annotated-message", map[string]any{"messageType": "error", "includeImage": true})
		txt, img := contentOf[*mcp.TextContent](res), contentOf[*mcp.ImageContent](res)
		if len(txt) != 1 || len(img) != 1 {
			t.Fatalf("content %s, want one text and one image", contentKinds(res))
		}
		if a := txt[0].Annotations; a == nil || a.Priority != 1 || !slices.Equal(a.Audience, []mcp.Role{"user", "assistant"}) {
			t.Errorf("text annotations = %+v, want priority 1, audience [user assistant]", a)
		}
		if a := img[0].Annotations; a == nil || len(a.Audience) == 0 {
			t.Errorf("image annotations = %+v, want an audience", a)
		}
	})

	t.Run("get-resource-links", func(t *testing.T) {
		res := call(t, all, "get-resource-links", map[string]any{"count": 3})
		links := contentOf[*mcp.ResourceLink](res)
		if len(links) != 3 {
			t.Fatalf("want 3 resource links, got %s", contentKinds(res))
		}
		for _, l := range links {
			if !strings.HasPrefix(l.URI, "demo://resource/") || l.Name == "" {
				t.Errorf("resource link %+v", l)
			}
		}
	})

	t.Run("one client", func(t *testing.T) {
		// Two agents, many calls: one session, so for stdio one process.
		want := 0
		if transport == "stdio" {
			want = 1
		}
		if ps := h.processes(); len(ps) != want {
			t.Errorf("%d server processes for this runtime (%v), want %d", len(ps), ps, want)
		}
	})
}

// The stdio child gets only the allow-listed environment plus what its
// server entry declares (DESIGN, runtime semantics 9).
func TestStdioEnvironment(t *testing.T) {
	const secret = "HEDDLE_INTEGRATION_WORKER_SECRET"
	t.Setenv(secret, "must-not-reach-the-child")
	t.Setenv("TERM", "heddle-test-term")
	api := "ai:\n  mcp_servers:" + everythingServer(t, "ev", "stdio")
	h := open(t, api, map[string]string{"a": `capabilities: [{kind: mcp, server: ev, include: [get-env]}]`})
	res := call(t, h.toolset(t, "a"), "get-env", nil)
	var env map[string]string
	if err := json.Unmarshal([]byte(text(res)), &env); err != nil {
		t.Fatalf("get-env: %v\n%s", err, text(res))
	}
	if v, ok := env[secret]; ok {
		t.Errorf("the child sees %s=%q from the worker's environment", secret, v)
	}
	if env["PATH"] == "" {
		t.Errorf("the child has no PATH")
	}
	if env["TERM"] != "heddle-test-term" {
		t.Errorf("TERM = %q; the allow-listed variable did not pass", env["TERM"])
	}
	if env["EVERYTHING_NAME"] != "ev" || env[markEnv] == "" {
		t.Errorf("declared env missing: EVERYTHING_NAME=%q %s=%q", env["EVERYTHING_NAME"], markEnv, env[markEnv])
	}
	// Nothing outside the allow-list and the declaration, except what node
	// itself may add.
	allowed := map[string]bool{"HOME": true, "LOGNAME": true, "PATH": true, "SHELL": true, "TERM": true, "USER": true,
		"EVERYTHING_NAME": true, markEnv: true}
	for k := range env {
		if !allowed[k] {
			t.Errorf("unexpected variable in the child: %s", k)
		}
	}
}

// contentOf returns a result's content parts of type T.
func contentOf[T mcp.Content](res *mcp.CallToolResult) []T {
	var out []T
	for _, c := range res.Content {
		if v, ok := c.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

// contentKinds lists a result's content types, e.g. "text,image,text".
func contentKinds(res *mcp.CallToolResult) string {
	kinds := make([]string, len(res.Content))
	for i, c := range res.Content {
		switch c.(type) {
		case *mcp.TextContent:
			kinds[i] = "text"
		case *mcp.ImageContent:
			kinds[i] = "image"
		case *mcp.AudioContent:
			kinds[i] = "audio"
		case *mcp.ResourceLink:
			kinds[i] = "resource_link"
		case *mcp.EmbeddedResource:
			kinds[i] = "resource"
		default:
			kinds[i] = fmt.Sprintf("%T", c)
		}
	}
	return strings.Join(kinds, ",")
}

// asJSON round-trips v through JSON, for comparing decoded values.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

package testmcp

import (
	"context"
	"flag"
	"mime"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestProtocolVersions: what a go-sdk client negotiates with each kind of
// server. Over SSE it is 2025-11-25, or now and then 2026-07-28: go-sdk's
// server (v1.8.0) sets the versions an SSE session can serve only once
// Server.Connect returns, and a server/discover that arrives first is
// answered with all of the server's.
func TestProtocolVersions(t *testing.T) {
	for kind, want := range map[string][]string{
		kindInMemory:   {"2026-07-28"},
		kindStdio:      {"2026-07-28"},
		kindStreamable: {"2025-11-25"},
		kindStateless:  {"2026-07-28"},
		kindSSE:        {"2025-11-25", "2026-07-28"},
	} {
		t.Run(kind, func(t *testing.T) {
			res := connect(t, kind, &Options{Name: "versions"}, nil).InitializeResult()
			if !slices.Contains(want, res.ProtocolVersion) {
				t.Errorf("negotiated %s, want %s", res.ProtocolVersion, strings.Join(want, " or "))
			}
			if res.ServerInfo.Name != "versions" {
				t.Errorf("server name %q, want versions", res.ServerInfo.Name)
			}
		})
	}
}

func TestOptionsArgsRoundTrip(t *testing.T) {
	for name, opts := range map[string]*Options{
		"zero": {},
		"all": {
			Name:             "custom",
			Tools:            []string{"a", "b"},
			NumTools:         7,
			NoFixedTools:     true,
			PageSize:         2,
			HandshakeDelay:   1500 * time.Millisecond,
			FailList:         true,
			FailListAfter:    4,
			HangHandshake:    true,
			CrashAfter:       3,
			HangOnCall:       []string{"sleep", "echo"},
			ListChangedEvery: 50 * time.Millisecond,
			Destructive:      []string{"delete_*", "drop"},
			OversizedBytes:   4096,
			GarbageOnStdout:  true,
			Stateless:        true,
			JSONResponse:     true,
			AnnotationShapes: true,
			TraceTool:        true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			got := RegisterFlags(fs)
			if err := fs.Parse(opts.Args()); err != nil {
				t.Fatalf("parsing %q: %v", opts.Args(), err)
			}
			want := *opts
			if want.Name == "" {
				want.Name = DefaultName
			}
			if diff := cmp.Diff(&want, got, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(Options{}, "Logger")); diff != "" {
				t.Errorf("Options → Args → RegisterFlags (-want +got):\n%s", diff)
			}
		})
	}
}

func TestListFlagRepeatsAndSplits(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	opts := RegisterFlags(fs)
	if err := fs.Parse([]string{"--tools", "a, b", "--tools=c", "--destructive", "x_*"}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, opts.Tools); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"x_*"}, opts.Destructive); diff != "" {
		t.Errorf("destructive (-want +got):\n%s", diff)
	}
}

func TestListenAndServeRefusesOtherHosts(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", "example.com:80", "10.0.0.1:8080", "no-port"} {
		ctx, cancel := context.WithCancel(t.Context())
		cancel() // must not matter: the address is refused before anything runs
		if err := ListenAndServe(ctx, addr, nil); err == nil {
			t.Errorf("ListenAndServe(%q) = nil, want an error", addr)
		} else if !strings.HasPrefix(err.Error(), "testmcp: ") {
			t.Errorf("ListenAndServe(%q): %v", addr, err)
		}
	}
}

// TestJSONResponse: with JSONResponse, a Streamable HTTP call is answered
// with one application/json body; without it, with an event stream.
func TestJSONResponse(t *testing.T) {
	for _, tc := range []struct {
		json bool
		want string
	}{{true, "application/json"}, {false, "text/event-stream"}} {
		ts := httptest.NewServer(Handler(&Options{JSONResponse: tc.json}))
		t.Cleanup(ts.Close)
		seen := &contentTypes{next: &http.Transport{}}
		t.Cleanup(seen.next.(*http.Transport).CloseIdleConnections)
		cs := connectTransport(t, &mcp.StreamableClientTransport{Endpoint: ts.URL + StreamablePath, HTTPClient: &http.Client{Transport: seen}}, nil)
		if got := text(call(t, cs, "echo", map[string]any{"text": "hi"})); got != "hi" {
			t.Errorf("JSONResponse %v: echo = %q", tc.json, got)
		}
		if got := seen.last(); got != tc.want {
			t.Errorf("JSONResponse %v: a call was answered with %q, want %q", tc.json, got, tc.want)
		}
	}
}

// contentTypes records the media type of the last answer to a POST.
type contentTypes struct {
	next http.RoundTripper
	mu   sync.Mutex
	ct   string
}

func (c *contentTypes) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err == nil && req.Method == http.MethodPost && resp.StatusCode == http.StatusOK {
		mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		c.mu.Lock()
		c.ct = mt
		c.mu.Unlock()
	}
	return resp, err
}

func (c *contentTypes) last() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ct
}

package heddlecmd

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/heddlehq/heddle/compile"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/metrics"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/serve"
)

// TestServeHandler drives the invoke API and the probes over real HTTP.
func TestServeHandler(t *testing.T) {
	fsys := fstest.MapFS{
		"config/api.yaml": {Data: []byte(loopbackProxy + "ai:\n  mcp_servers:\n    srv:\n      transport: stdio\n      command: " + testmcpBin + "\n")},
		"agents/a/agent.yaml": {Data: []byte("capabilities: [{kind: mcp, server: srv}]\n" +
			"policies:\n  rules:\n    - {when: 'tool.original_name == \"add\" && !(\"sre\" in caller.roles)', effect: deny}\n")},
	}
	cfg, ds := config.Load(config.Options{FS: fsys})
	p, cds := compile.Compile(compile.Input{Config: cfg})
	if p == nil {
		t.Fatal(append(ds, cds...))
	}
	m := metrics.New()
	rt, err := runtime.Open(context.Background(), p, runtime.Options{OnCall: m.Observe})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	srv := httptest.NewServer(frontDoor(t, rt, m))
	defer srv.Close()

	get := func(path string) (int, string) {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(res.Body)
		return res.StatusCode, b.String()
	}
	post := func(path, body string, hdr map[string]string) (int, map[string]any) {
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(res.Body).Decode(&out)
		return res.StatusCode, out
	}
	if code, _ := get("/livez"); code != 200 {
		t.Errorf("livez %d", code)
	}
	if code, body := get("/readyz"); code != 200 || !strings.Contains(body, `"ready": true`) {
		t.Errorf("readyz %d %s", code, body)
	}
	if code, body := get("/v1/agents/a/tools"); code != 200 || !strings.Contains(body, `"name":"echo"`) {
		t.Errorf("tools %d %s", code, body)
	}
	if code, _ := get("/v1/agents/nobody/tools"); code != 404 {
		t.Errorf("unknown agent %d", code)
	}
	code, out := post("/v1/agents/a/tools/echo", `{"text":"hi"}`, nil)
	if code != 200 || out["isError"] == true {
		t.Errorf("echo %d %v", code, out)
	}
	// The caller's roles come from the headers and reach the policy.
	code, out = post("/v1/agents/a/tools/add", `{"a":1,"b":2}`, nil)
	if meta, _ := out["_meta"].(map[string]any); code != 200 || meta["code"] != "TOOL_DENIED" {
		t.Errorf("add without role %d %v", code, out)
	}
	code, out = post("/v1/agents/a/tools/add", `{"a":1,"b":2}`, map[string]string{"X-Heddle-Subject": "alice", "X-Heddle-Roles": "dev, sre"})
	if code != 200 || out["isError"] == true {
		t.Errorf("add with role %d %v", code, out)
	}
	if code, _ := post("/v1/agents/a/tools/echo", `[1,2]`, nil); code != 400 {
		t.Errorf("bad body %d", code)
	}
	// The calls above are counted by outcome; the dependency is up.
	code, body := get("/metrics")
	for _, want := range []string{
		`heddle_calls_total{agent="a",code="ok",server="srv",source="mcp"} 2`,
		`heddle_calls_total{agent="a",code="TOOL_DENIED",server="srv",source="mcp"} 1`,
		`heddle_dependency_up{kind="mcp",name="srv",required="true"} 1`,
		`heddle_call_duration_seconds_count{agent="a",server="srv",source="mcp"} 3`,
	} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(body, `"hi"`) {
		t.Error("metrics carry an argument value")
	}
}

// loopbackProxy is a serve: section that believes the X-Heddle-* headers of
// requests from this machine, as the tests send them.
const loopbackProxy = "serve:\n  auth: {kind: trusted_headers, proxies: [127.0.0.1, \"::1\"]}\n"

// frontDoor is serve's handler of rt.
func frontDoor(t *testing.T, rt *runtime.Runtime, m *metrics.Metrics) http.Handler {
	t.Helper()
	s, err := serve.New(context.Background(), rt, &serve.Options{Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

package serve_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"mime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/serve"
)

// docURL is where the tests' schema compiler keeps the OpenAPI document.
const docURL = "https://heddle.invalid/openapi.json"

// apiDoc is the OpenAPI document, and the JSON Schema compiler its
// schemas are compiled by.
type apiDoc struct {
	doc      map[string]any
	compiler *jsonschema.Compiler
	mu       sync.Mutex
	schemas  map[string]*jsonschema.Schema // by JSON pointer
}

func loadAPIDoc(t *testing.T) *apiDoc {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(serve.OpenAPI, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if doc["openapi"] != "3.1.0" {
		t.Fatalf("openapi.json is OpenAPI %v, want 3.1.0", doc["openapi"])
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(serve.OpenAPI))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020) // OpenAPI 3.1's schema dialect
	c.AssertFormat()
	if err := c.AddResource(docURL, inst); err != nil {
		t.Fatal(err)
	}
	return &apiDoc{doc: doc, compiler: c, schemas: map[string]*jsonschema.Schema{}}
}

// schema compiles the schema at ptr, a JSON pointer into the document.
func (d *apiDoc) schema(ptr string) (*jsonschema.Schema, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.schemas[ptr]; ok {
		return s, nil
	}
	s, err := d.compiler.Compile(docURL + "#" + ptr)
	if err != nil {
		return nil, err
	}
	d.schemas[ptr] = s
	return s, nil
}

func pointer(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString("/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(p))
	}
	return b.String()
}

// operation finds the path template of the document that path matches,
// and the operation of method under it ("" when the path is not
// documented; no operation when the method is not).
func (d *apiDoc) operation(method, path string) (template string, op map[string]any) {
	paths, _ := d.doc["paths"].(map[string]any)
	segs := strings.Split(path, "/")
	for tmpl, item := range paths {
		tsegs := strings.Split(tmpl, "/")
		if len(tsegs) != len(segs) {
			continue
		}
		match := true
		for i, ts := range tsegs {
			if strings.HasPrefix(ts, "{") && segs[i] != "" {
				continue
			}
			if ts != segs[i] {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		if method == "HEAD" {
			method = "GET"
		}
		op, _ = item.(map[string]any)[strings.ToLower(method)].(map[string]any)
		return tmpl, op
	}
	return "", nil
}

// check validates one answer of the front door against the document: a
// documented status of a documented operation, its required headers, and
// its body against the schema of its media type. A path the document does
// not have must be 404, and a method it does not give for a path 405,
// both with the Error schema's body. It returns the answer's key:
// "METHOD TEMPLATE STATUS", or "" for those.
func (d *apiDoc) check(t *testing.T, r *response) string {
	t.Helper()
	what := fmt.Sprintf("%s %s → %d", r.req.Method, r.req.URL.Path, r.status)
	tmpl, op := d.operation(r.req.Method, r.req.URL.Path)
	var respPtr string
	switch {
	case tmpl == "" || op == nil:
		if want := map[bool]int{true: 404, false: 405}[tmpl == ""]; r.status != want {
			t.Errorf("%s: undocumented, want %d", what, want)
		}
		d.validateBody(t, what, pointer("components", "schemas", "Error"), r.body)
		return ""
	default:
		responses, _ := op["responses"].(map[string]any)
		resp, ok := responses[fmt.Sprint(r.status)].(map[string]any)
		if !ok {
			t.Errorf("%s: status not documented for the operation (%s)", what, strings.Join(slices.Sorted(maps.Keys(responses)), ", "))
			return ""
		}
		respPtr = pointer("paths", tmpl, strings.ToLower(methodOf(r)), "responses", fmt.Sprint(r.status))
		if ref, ok := resp["$ref"].(string); ok {
			respPtr = strings.TrimPrefix(ref, "#")
			resp = d.at(respPtr)
		}
		for name, h := range mapOf(resp["headers"]) {
			if mapOf(h)["required"] == true && r.header.Get(name) == "" {
				t.Errorf("%s: no %s header", what, name)
			}
		}
		mt, _, err := mime.ParseMediaType(r.header.Get("Content-Type"))
		if _, ok := mapOf(resp["content"])[mt]; err != nil || !ok {
			t.Errorf("%s: Content-Type %q is not documented", what, r.header.Get("Content-Type"))
			return ""
		}
		ptr := respPtr + pointer("content", mt, "schema")
		switch {
		case r.req.Method == "HEAD":
			if len(r.body) > 0 {
				t.Errorf("%s: a body", what)
			}
		case mt == "application/json":
			d.validateBody(t, what, ptr, r.body)
		default:
			d.validate(t, what, ptr, string(r.body))
		}
		return fmt.Sprintf("%s %s %d", methodOf(r), tmpl, r.status)
	}
}

func methodOf(r *response) string {
	if r.req.Method == "HEAD" {
		return "GET"
	}
	return r.req.Method
}

func (d *apiDoc) validateBody(t *testing.T, what, ptr string, body []byte) {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		t.Errorf("%s: the body is not JSON: %v\n%s", what, err, body)
		return
	}
	d.validate(t, what, ptr, inst)
}

func (d *apiDoc) validate(t *testing.T, what, ptr string, inst any) {
	t.Helper()
	s, err := d.schema(ptr)
	if err != nil {
		t.Fatalf("compiling %s: %v", ptr, err)
	}
	if err := s.Validate(inst); err != nil {
		b, _ := json.Marshal(inst)
		t.Errorf("%s: the answer does not match %s: %v\n%.600s", what, ptr, err, b)
	}
}

// at is the object at ptr in the document.
func (d *apiDoc) at(ptr string) map[string]any {
	var v any = d.doc
	for _, p := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		p = strings.NewReplacer("~1", "/", "~0", "~").Replace(p)
		v = mapOf(v)[p]
	}
	return mapOf(v)
}

func mapOf(v any) map[string]any { m, _ := v.(map[string]any); return m }

// documented lists every "METHOD TEMPLATE STATUS" the document gives.
func (d *apiDoc) documented() []string {
	var out []string
	for tmpl, item := range mapOf(d.doc["paths"]) {
		for method, op := range mapOf(item) {
			if method == "parameters" {
				continue
			}
			for status := range mapOf(mapOf(op)["responses"]) {
				out = append(out, fmt.Sprintf("%s %s %s", strings.ToUpper(method), tmpl, status))
			}
		}
	}
	sort.Strings(out)
	return out
}

// notProduced are the documented answers no test here can cause from
// outside, each with why. Their bodies follow schemas that the answers
// produced follow too.
var notProduced = map[string]string{
	"GET /metrics 401":                         "needs serve.auth kind jwt or tokens with metrics: true; trusted_headers refuses with 403",
	"GET /v1/agents 502":                       "a listing that fails inside the runtime (tool names that clash after a server re-lists)",
	"GET /v1/agents/{agent}/tools 502":         "as for /v1/agents",
	"POST /v1/agents/{agent}/tools/{tool} 502": "a kind failing without a code, which no built-in kind does",
}

// TestOpenAPI drives a running front door through every operation of
// docs/openapi.json, to each success and each error status it documents,
// and validates every real answer — status, headers, media type and body —
// against the document's schemas; a path the document does not have must
// answer 404, and a method it does not give 405, with the Error schema.
// Every documented answer must be among those seen, but for notProduced.
func TestOpenAPI(t *testing.T) {
	d := loadAPIDoc(t)
	seen := map[string]bool{}
	check := func(r *response) {
		t.Helper()
		if k := d.check(t, r); k != "" {
			seen[k] = true
		}
	}

	f := startTestFront(t)
	check(f.get("/livez"))
	check(f.get("/readyz"))
	check(f.get("/metrics"))
	check(f.get("/v1/openapi.json"))
	check(f.get("/v1/agents"))
	check(f.get("/v1/agents/a/tools"))
	check(f.get("/v1/agents/u/tools"))
	check(f.get("/v1/agents/nobody/tools"))
	badConv := f.request("GET", "/v1/agents/a/tools", "")
	badConv.Header.Set(serve.ConversationHeader, "not an id")
	check(f.send(badConv))
	for _, q := range []string{"json", "anthropic", "openai-chat&strict=true", "openai-responses", "gemini", "yaml"} {
		check(f.get("/v1/agents/a/tools?format=" + q))
	}
	for _, c := range []struct{ path, body string }{
		{"/v1/agents/a/tools/echo", `{"text": "hi"}`},
		{"/v1/agents/a/tools/image", `{}`},
		{"/v1/agents/a/tools/fail", `{}`},
		{"/v1/agents/a/tools/no_such_tool", `{}`},
		{"/v1/agents/a/tools/big", `{}`},
		{"/v1/agents/a/tools/echo", `{"text": 5}`},
		{"/v1/agents/a/tools/echo", ``},
		{"/v1/agents/u/tools/serve_echo", `{"text": "hi"}`},
		{"/v1/agents/u/tools/serve_hold", `{}`}, // past tool_timeout_ms: 504
		{"/v1/agents/nobody/tools/echo", `{}`},
		{"/v1/agents/a/tools/echo", `[1]`},
		{"/v1/agents/a/tools/echo", `{"text": "` + strings.Repeat("x", config.DefaultServeMaxBodyBytes) + `"}`},
	} {
		check(f.post(c.path, c.body))
	}
	<-holdStarted
	form := f.request("POST", "/v1/agents/a/tools/echo", `text=hi`)
	form.Header.Set("Content-Type", "text/plain")
	check(f.send(form))
	for _, path := range []string{"/metrics", "/v1/openapi.json", "/v1/agents", "/v1/agents/a/tools"} {
		req := f.request("GET", path, "")
		req.Host = "evil.example"
		check(f.send(req))
	}
	call := f.request("POST", "/v1/agents/a/tools/echo", `{}`)
	call.Header.Set("Sec-Fetch-Site", "cross-site")
	check(f.send(call))
	check(f.get("/v1/nothing"))
	check(f.get("/v1/agents/a/tools/echo"))
	check(f.send(f.request("PUT", "/v1/agents", "")))
	check(f.send(f.request("HEAD", "/livez", "")))

	// No serve.auth: every /v1/ path is 401.
	noAuth := startFront(t, inMemoryServer, testAgents)
	for _, path := range []string{"/v1/openapi.json", "/v1/agents", "/v1/agents/a/tools"} {
		check(noAuth.get(path))
	}
	check(noAuth.post("/v1/agents/a/tools/echo", `{}`))
	// Metrics behind serve.auth, from an address that is not a proxy.
	check(startFront(t, "serve:\n  auth: {kind: trusted_headers, proxies: [10.0.0.0/8], metrics: true}\n"+inMemoryServer, testAgents).get("/metrics"))

	// At max_in_flight: 503 TOO_BUSY.
	busy := startFront(t, trustLoopback+"  limits: {max_in_flight: 1}\n"+inMemoryServer, map[string]string{"h": holdAgent})
	held := make(chan *response, 1)
	go func() { held <- busy.post("/v1/agents/h/tools/serve_hold", `{}`) }()
	<-holdStarted
	check(busy.get("/v1/agents/h/tools"))
	check(busy.get("/v1/agents"))
	check(busy.post("/v1/agents/h/tools/serve_echo", `{"text": "x"}`))
	releaseHeld()
	check(<-held)

	// A closed runtime: 503 SHUTTING_DOWN, and not ready.
	closed := startTestFront(t)
	_ = closed.rt.Close()
	check(closed.get("/readyz"))
	check(closed.get("/v1/agents"))
	check(closed.get("/v1/agents/a/tools"))
	check(closed.post("/v1/agents/a/tools/echo", `{}`))

	for _, k := range d.documented() {
		if !seen[k] && notProduced[k] == "" {
			t.Errorf("documented, never answered: %s", k)
		}
	}
}

// TestOpenAPIServed: GET /v1/openapi.json is the embedded document, byte
// for byte.
func TestOpenAPIServed(t *testing.T) {
	r := startTestFront(t).get("/v1/openapi.json")
	if r.status != 200 || !bytes.Equal(r.body, serve.OpenAPI) {
		t.Errorf("%d, %d bytes; want the %d bytes of openapi.json", r.status, len(r.body), len(serve.OpenAPI))
	}
}

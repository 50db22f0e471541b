package serve

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/heddlehq/heddle"
	_ "github.com/heddlehq/heddle/builtin" // the built-in kinds, both halves
	"github.com/heddlehq/heddle/internal/plantest"
	"github.com/heddlehq/heddle/metrics"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/usecase"
)

// whoami is what the use case serve.whoami answers: the caller it runs as.
type whoami struct {
	Subject string            `json:"subject"`
	Roles   []string          `json:"roles"`
	Claims  map[string]string `json:"claims"`
}

func init() {
	usecase.Register("serve.whoami", func(ctx context.Context, _ struct{}) (whoami, error) {
		c := heddle.Caller(ctx)
		return whoami{Subject: c.Subject, Roles: c.Roles, Claims: c.Claims}, nil
	}, usecase.ReadOnly(), usecase.Description("Say who the caller is."))
}

// front opens a runtime of api (an api.yaml) with agent a, which grants
// serve.whoami, and serves its front door until the test ends.
func front(t *testing.T, api string, opts *Options) *httptest.Server {
	t.Helper()
	p := plantest.Must(t, api, map[string]string{"a": "capabilities: [{kind: usecase, keys: [serve.whoami]}]\n"}, usecase.Keys()...)
	rt, err := runtime.Open(context.Background(), p, runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	if opts == nil {
		opts = &Options{}
	}
	if opts.Metrics == nil {
		opts.Metrics = metrics.New()
	}
	s, err := New(context.Background(), rt, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv
}

// answer is one response of the front door.
type answer struct {
	status    int
	challenge string // WWW-Authenticate
	body      string
	code      string // error.code, for an error
	caller    whoami // structuredContent, for a call of serve_whoami
}

// call sends method path to srv with the headers given (name, value, …).
func call(t *testing.T, srv *httptest.Server, method, path string, headers ...string) answer {
	t.Helper()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader("{}")
	}
	req, err := http.NewRequest(method, srv.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	a := answer{status: res.StatusCode, challenge: res.Header.Get("WWW-Authenticate"), body: string(b)}
	var out struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
		StructuredContent whoami `json:"structuredContent"`
	}
	_ = json.Unmarshal(b, &out)
	a.code, a.caller = out.Error.Code, out.StructuredContent
	return a
}

// whoamiPath is the call of serve.whoami as agent a.
const whoamiPath = "/v1/agents/a/tools/serve_whoami"

package pluginsdk

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/structpb"
)

// fake is a strategy whose behaviour the tests set.
type fake struct {
	settings  map[string]string
	mints     atomic.Int64
	failWith  error
	panicWith any
	reasons   []string
}

func (f *fake) Configure(_ context.Context, s map[string]string) error {
	if s["bad"] != "" {
		return errors.New("bad is not a setting")
	}
	f.settings = s
	return nil
}

func (f *fake) Headers(context.Context) (Headers, error) {
	if f.panicWith != nil {
		panic(f.panicWith)
	}
	if f.failWith != nil {
		return Headers{}, f.failWith
	}
	n := f.mints.Add(1)
	return Headers{
		Values:    http.Header{"Authorization": {fmt.Sprintf("Bearer t%d-%s", n, f.settings["who"])}},
		ExpiresAt: time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC),
	}, nil
}

func (f *fake) Renew(ctx context.Context, reason string) (Headers, error) {
	f.reasons = append(f.reasons, reason)
	return f.Headers(ctx)
}

// conn serves a server over real gRPC on loopback.
func conn(t *testing.T, srv *server) *grpc.ClientConn {
	t.Helper()
	cc, gs := goplugin.TestGRPCConn(t, func(s *grpc.Server) { s.RegisterService(&serviceDesc, srv) })
	t.Cleanup(func() { _ = cc.Close(); gs.Stop() })
	return cc
}

func invoke(t *testing.T, cc *grpc.ClientConn, method string, in map[string]any) map[string]any {
	t.Helper()
	req, err := structpb.NewStruct(in)
	if err != nil {
		t.Fatal(err)
	}
	out := new(structpb.Struct)
	if err := cc.Invoke(context.Background(), method, req, out); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return out.AsMap()
}

func errCode(out map[string]any) string {
	e, _ := out["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func TestProtocol(t *testing.T) {
	var made []*fake
	srv := newServer(func() Strategy { f := &fake{}; made = append(made, f); return f })
	cc := conn(t, srv)

	// Before Configure, the instance is unknown.
	if got := errCode(invoke(t, cc, MethodHeaders, map[string]any{"instance": "1"})); got != string(CodeNotConfigured) {
		t.Fatalf("Headers before Configure: code %q, want NOT_CONFIGURED", got)
	}
	// A plain error from Configure refuses the settings.
	if got := errCode(invoke(t, cc, MethodConfigure, map[string]any{"instance": "1", "settings": map[string]any{"bad": "x"}})); got != string(CodeInvalidSettings) {
		t.Fatalf("Configure(bad): code %q, want INVALID_SETTINGS", got)
	}
	// Two instances, each its own strategy value.
	for _, id := range []string{"1", "2"} {
		out := invoke(t, cc, MethodConfigure, map[string]any{"instance": id, "settings": map[string]any{"who": "i" + id}})
		if len(out) != 0 {
			t.Fatalf("Configure(%s) = %v, want {}", id, out)
		}
	}
	got := invoke(t, cc, MethodHeaders, map[string]any{"instance": "2"})
	want := map[string]any{
		"headers":    map[string]any{"Authorization": []any{"Bearer t1-i2"}},
		"expires_at": "2030-01-02T03:04:05.000000006Z",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Headers(2) (-want +got):\n%s", d)
	}
	invoke(t, cc, MethodRenew, map[string]any{"instance": "1", "reason": ReasonUnauthorized})
	if len(made) != 3 || made[1].mints.Load() != 1 || made[2].mints.Load() != 1 {
		t.Fatalf("strategies made %d; want 3 (one refused, two configured), each called once", len(made))
	}
	if d := cmp.Diff([]string{ReasonUnauthorized}, made[1].reasons); d != "" {
		t.Errorf("Renew reasons (-want +got):\n%s", d)
	}
}

func TestProtocolErrors(t *testing.T) {
	logf = func(string, ...any) {}
	t.Cleanup(func() { logf = log.Printf })
	f := &fake{}
	cc := conn(t, newServer(func() Strategy { return f }))
	invoke(t, cc, MethodConfigure, map[string]any{"instance": "a", "settings": map[string]any{}})
	for _, c := range []struct {
		name      string
		failWith  error
		panicWith any
		code      ErrorCode
		message   string
	}{
		{"plain", errors.New("boom"), nil, CodeInternal, "boom"},
		{"coded", Errorf(CodeDenied, "revoked"), nil, CodeDenied, "revoked"},
		{"wrapped", fmt.Errorf("minting: %w", Errorf(CodeUnavailable, "down")), nil, CodeUnavailable, "minting: UNAVAILABLE: down"},
		{"panic", nil, "secret-in-panic", CodeInternal, "the strategy panicked (see the plugin's log)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f.failWith, f.panicWith = c.failWith, c.panicWith
			out := invoke(t, cc, MethodHeaders, map[string]any{"instance": "a"})
			want := map[string]any{"error": map[string]any{"code": string(c.code), "message": c.message}}
			if d := cmp.Diff(want, out); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestNoExpiry(t *testing.T) {
	out := headersResponse(Headers{Values: http.Header{"X-Key": {"v"}}}, nil).AsMap()
	if _, ok := out["expires_at"]; ok {
		t.Errorf("headers without expiry sent expires_at: %v", out)
	}
}

package serve

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/internal/plantest"
	"github.com/heddlehq/heddle/internal/testkinds"
	"github.com/heddlehq/heddle/runtime"
)

// TestConversationBounds: conversations are kept at most max, the least
// recently used forgotten first, and forgotten after idle.
func TestConversationBounds(t *testing.T) {
	c := newConversations()
	c.max, c.idle = 3, time.Minute
	now := time.Unix(1e9, 0)
	c.now = func() time.Time { return now }
	p := plantest.Must(t, "ai:\n  mcp_servers:\n    srv: {url: http://127.0.0.1:1/mcp}\n",
		map[string]string{"x": "capabilities: [{kind: mcp, server: srv, defer: true}]\n"})
	rt, err := runtime.Open(context.Background(), p, runtime.Options{Kinds: testkinds.InMemory(t, nil)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	ts, err := rt.Toolset("x")
	if err != nil {
		t.Fatal(err)
	}
	get := func(subject, id string) *runtime.View {
		t.Helper()
		r := httptest.NewRequest("GET", "/v1/agents/x/tools", nil)
		r.Header.Set(ConversationHeader, id)
		r = r.WithContext(heddle.WithCaller(context.Background(), heddle.Identity{Subject: subject}))
		v, err := c.view(r, ts)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	a := get("alice", "1")
	if get("alice", "1") != a {
		t.Fatal("the same caller and id got another view")
	}
	if get("bob", "1") == a {
		t.Fatal("another caller got alice's view")
	}
	get("alice", "2")
	get("alice", "1") // alice/1 is the most recent now, bob/1 the least
	get("alice", "3")
	if n := c.len(); n != 3 {
		t.Fatalf("%d conversations kept, want 3", n)
	}
	if get("alice", "1") != a {
		t.Error("the most recently used conversation was forgotten")
	}
	now = now.Add(2 * time.Minute)
	if get("alice", "1") == a {
		t.Error("an idle conversation was kept")
	}
	if n := c.len(); n != 1 {
		t.Errorf("%d conversations kept after the others went idle, want 1", n)
	}
}

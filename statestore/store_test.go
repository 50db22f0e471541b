package statestore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/heddlehq/heddle/config/setting"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/testredis"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime/driver"
	"github.com/heddlehq/heddle/secrets"
	"github.com/heddlehq/heddle/statestore"
)

// TestStoreIsADependency: a redis store is ready while Redis answers, down
// with STATE_UNAVAILABLE while it does not (its URL and password never
// shown), and ready again when it is back.
func TestStoreIsADependency(t *testing.T) {
	srv := testredis.Start(t)
	t.Setenv("HEDDLE_TEST_REDIS_URL", "redis://:hunter2-secret@"+srv.Addr()+"/0")
	ref := setting.Ref{Scheme: "env", Name: "HEDDLE_TEST_REDIS_URL"}
	s, err := statestore.Open(context.Background(), plan.ServeState{Kind: setting.StateRedis, URLRef: &ref, Prefix: "t:", OnError: "closed", TimeoutMS: 200},
		secrets.New(secrets.Options{}), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.Check(context.Background()); err != nil {
		t.Fatalf("check: %v", err)
	}
	if d, ok := s.Dependency(); !ok || d.State != driver.StateReady || d.Kind != "state" || !d.Required {
		t.Errorf("dependency %+v, want a required state dependency, ready", d)
	}
	srv.Stop()
	err = s.Check(context.Background())
	if diag.CodeOf(err) != diag.StateUnavailable || !strings.Contains(err.Error(), "refused") {
		t.Errorf("Redis stopped: %v, want STATE_UNAVAILABLE saying the connection was refused", err)
	}
	if d, _ := s.Dependency(); d.State != driver.StateDown || d.Code != diag.StateUnavailable || strings.Contains(d.Reason+err.Error(), "hunter2") {
		t.Errorf("dependency %+v (error %v): want down, coded, without the password", d, err)
	}
	srv.Start()
	if err := s.Check(context.Background()); err != nil {
		t.Errorf("Redis back: %v", err)
	}
	if d, _ := s.Dependency(); d.State != driver.StateReady {
		t.Errorf("after Redis came back: %+v", d)
	}
}

// TestOpenRefusesAURLItCannotRead: a value that is no Redis URL is
// SERVE_STATE_INVALID, the value not shown; memory needs no URL.
func TestOpenRefusesAURLItCannotRead(t *testing.T) {
	t.Setenv("HEDDLE_TEST_REDIS_URL", "http://user:pa55word@example/0")
	ref := setting.Ref{Scheme: "env", Name: "HEDDLE_TEST_REDIS_URL"}
	_, err := statestore.Open(context.Background(), plan.ServeState{Kind: setting.StateRedis, URLRef: &ref, Prefix: "t:", TimeoutMS: 200}, secrets.New(secrets.Options{}), nil)
	if diag.CodeOf(err) != diag.ServeStateInvalid || strings.Contains(err.Error(), "pa55word") {
		t.Errorf("an http URL: %v, want SERVE_STATE_INVALID without the value", err)
	}
	s, err := statestore.Open(context.Background(), plan.ServeState{Kind: setting.StateMemory}, nil, nil)
	if err != nil || s.Shared() {
		t.Errorf("memory: %v, shared %v", err, s.Shared())
	}
	if _, ok := s.Dependency(); ok {
		t.Error("a memory store reports a dependency")
	}
}

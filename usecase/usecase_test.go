package usecase_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/usecase"
)

type lookupIn struct {
	ID    string `json:"id" jsonschema:"the id"`
	Limit int    `json:"limit,omitempty"`
}

type lookupOut struct {
	ID string `json:"id"`
}

func lookup(_ context.Context, in lookupIn) (lookupOut, error) {
	if in.ID == "fail" {
		return lookupOut{}, errors.New("no such thing")
	}
	return lookupOut{ID: in.ID}, nil
}

func init() {
	usecase.Register("ut.lookup", lookup, usecase.Description("Look one up"), usecase.ReadOnly(),
		usecase.WithMCP("runbooks", "search_*"))
	usecase.Register("ut.list", func(context.Context, struct{}) ([]string, error) { return []string{"a"}, nil },
		usecase.WithMCP("runbooks", "search_*"), usecase.WithMCP("catalog"))
}

func TestRegisterDerivesTheTool(t *testing.T) {
	op, ok := usecase.Lookup("ut.lookup")
	if !ok {
		t.Fatal("ut.lookup is not registered")
	}
	if op.Key() != "ut.lookup" || op.Description() != "Look one up" {
		t.Errorf("operation = %q %q", op.Key(), op.Description())
	}
	if a := op.Annotations(); !a.ReadOnly || a.Destructive != nil || a.Idempotent {
		t.Errorf("annotations = %+v", a)
	}
	raw, err := op.InputSchema().MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"required":["id"]`, `"additionalProperties":false`, `"description":"the id"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("input schema %s lacks %s", raw, want)
		}
	}
	if op.OutputSchema() == nil || !op.StructuredOutput() {
		t.Error("an object output has no output schema")
	}
	// A list is not an object: no output schema, text only.
	list, _ := usecase.Lookup("ut.list")
	if list.OutputSchema() != nil || list.StructuredOutput() {
		t.Error("a list output has an output schema")
	}
}

func TestInvokeDecodesStrictly(t *testing.T) {
	op, _ := usecase.Lookup("ut.lookup")
	ctx := context.Background()
	out, err := op.Invoke(ctx, map[string]any{"id": "x", "limit": 3.0})
	if err != nil || out != (lookupOut{ID: "x"}) {
		t.Fatalf("Invoke = %v, %v", out, err)
	}
	for name, args := range map[string]map[string]any{
		"unknown field": {"id": "x", "extra": true},
		"wrong type":    {"id": 7},
		"fraction":      {"id": "x", "limit": 1.5},
	} {
		if _, err := op.Invoke(ctx, args); !diag.Has(err, diag.ToolArgsInvalid) {
			t.Errorf("%s: err = %v, want TOOL_ARGS_INVALID", name, err)
		}
	}
	// The operation's own error comes back unchanged.
	if _, err := op.Invoke(ctx, map[string]any{"id": "fail"}); err == nil || err.Error() != "no such thing" {
		t.Errorf("err = %v", err)
	}
	// Nil arguments are an empty object.
	list, _ := usecase.Lookup("ut.list")
	if out, err := list.Invoke(ctx, nil); err != nil || !slices.Equal(out.([]string), []string{"a"}) {
		t.Errorf("Invoke(nil) = %v, %v", out, err)
	}
}

func TestKeysAndMCPUses(t *testing.T) {
	keys := usecase.Keys()
	if !slices.IsSorted(keys) || !slices.Contains(keys, "ut.lookup") || !slices.Contains(keys, "ut.list") {
		t.Errorf("Keys() = %v", keys)
	}
	want := []usecase.MCPUse{{Server: "catalog"}, {Server: "runbooks", Include: []string{"search_*"}}}
	if diff := cmp.Diff(want, usecase.MCPUses()); diff != "" {
		t.Errorf("MCPUses (-want +got):\n%s", diff)
	}
	// Operation.MCPUses is the operation's own, in its order, and a copy.
	op, _ := usecase.Lookup("ut.list")
	uses := op.MCPUses()
	if diff := cmp.Diff([]usecase.MCPUse{{Server: "runbooks", Include: []string{"search_*"}}, {Server: "catalog"}}, uses); diff != "" {
		t.Errorf("Operation.MCPUses (-want +got):\n%s", diff)
	}
	uses[0].Include[0] = "changed"
	if got := op.MCPUses()[0].Include[0]; got != "search_*" {
		t.Errorf("changing a returned use changed the operation's: %q", got)
	}
}

func TestAnnotations(t *testing.T) {
	tr, fa := true, false
	for i, c := range []struct {
		opts            []usecase.Option
		readOnly, idemp bool
		destructive     *bool
	}{
		{nil, false, false, nil},
		{[]usecase.Option{usecase.ReadOnly(), usecase.Idempotent()}, true, true, nil},
		{[]usecase.Option{usecase.Destructive()}, false, false, &tr},
		{[]usecase.Option{usecase.Additive()}, false, false, &fa},
	} {
		key := fmt.Sprintf("ut.annotations.%d", i)
		usecase.Register(key, lookup, c.opts...)
		op, _ := usecase.Lookup(key)
		a := op.Annotations()
		if a.ReadOnly != c.readOnly || a.Idempotent != c.idemp || !cmp.Equal(a.Destructive, c.destructive) {
			t.Errorf("%s: annotations = %+v", key, a)
		}
		if a.Destructive != nil {
			*a.Destructive = !*a.Destructive
			if !cmp.Equal(op.Annotations().Destructive, c.destructive) {
				t.Errorf("%s: changing the returned annotations changed the operation's", key)
			}
		}
	}
}

func TestRegisterPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"duplicate": func() { usecase.Register("ut.lookup", lookup) },
		"empty key": func() { usecase.Register("", lookup) },
		"space":     func() { usecase.Register("a b", lookup) },
		"nil fn":    func() { usecase.Register[lookupIn, lookupOut]("ut.nil", nil) },
		"not an object": func() {
			usecase.Register("ut.string", func(context.Context, string) (string, error) { return "", nil })
		},
		"no schema": func() {
			usecase.Register("ut.chan", func(context.Context, struct{ C chan int }) (string, error) { return "", nil })
		},
		"contradiction": func() { usecase.Register("ut.both", lookup, usecase.ReadOnly(), usecase.Destructive()) },
		"empty server":  func() { usecase.Register("ut.mcp", lookup, usecase.WithMCP("")) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("Register did not panic")
				}
			}()
			f()
		})
	}
	for _, k := range []string{"ut.nil", "ut.string", "ut.chan", "ut.both", "ut.mcp"} {
		if _, ok := usecase.Lookup(k); ok {
			t.Errorf("%s was registered despite the panic", k)
		}
	}
}

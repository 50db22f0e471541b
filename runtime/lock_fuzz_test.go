package runtime_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/canonjson"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/runtime/driver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzParseLock feeds arbitrary bytes to ParseLock, the reader of
// heddle.lock. It may not panic; a refusal is LOCK_INVALID; a lock it
// accepts is of this version, each pin's hash is the hash of its canonical
// definition, and it encodes to bytes that parse back to the same lock and
// encode the same again.
//
// The seeds are locks of the tools in modelfmt/testdata/tools (the shipped
// example's agents and real servers'), as heddle lock writes them, and the
// malformed locks of TestLockFormat.
func FuzzParseLock(f *testing.F) {
	files, _ := filepath.Glob("../modelfmt/testdata/tools/*.json")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		var tools []struct {
			Name        string `json:"original_name"`
			Description string `json:"description"`
			InputSchema any    `json:"input_schema"`
		}
		if err := json.Unmarshal(data, &tools); err != nil {
			f.Fatalf("%s: %v", file, err)
		}
		l := &runtime.Lock{Version: runtime.LockVersion, Kinds: map[string]driver.Pins{"mcp": {}}}
		pins := map[string]driver.Pin{}
		for _, t := range tools {
			pins[t.Name] = driver.PinOf(&mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema,
				Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}})
		}
		l.Kinds["mcp"][filepath.Base(file)] = driver.Pinned{Tools: pins}
		b, err := l.Encode()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		`{"version": 1, "servers": {}}`,
		`{"version": 9, "servers": {}}`,
		`{"version": 2, "servers": {"s": {"tools": {"a": {"sha256": "00", "definition": {"name": "a"}}}}}}`,
		`{"version": 2, "servers": {"s": {"tools": {"a": {"sha256": "00", "definition": {"name": "b"}}}}}}`,
		`{"version": 2, "servers": {"s": null, "t": {"tools": null}}}`,
		`{"version": 2, "servers": {"s": {"tools": {"a": {"sha256": "00", "definition": [1, 2]}}}}}`,
		`{"version": 2.0, "version": 2, "servers": {}}`,
		`{"version": 3, "kinds": {"mcp": {"s": {"tools": {"a": {"sha256": "00", "definition": {"name": "a"}}}}}}}`,
		`{"version": 3, "kinds": {"mcp": null, "sql": {"s": null}}}`,
		`nope`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := runtime.ParseLock("heddle.lock", data)
		if err != nil {
			if l != nil || diag.CodeOf(err) != diag.LockInvalid {
				t.Fatalf("refused with %v and a lock %v, want LOCK_INVALID and none", err, l != nil)
			}
			return
		}
		if l.Version != runtime.LockVersion {
			t.Fatalf("accepted version %d", l.Version)
		}
		for server, sl := range allPins(l) {
			for tool, pin := range sl.Tools {
				c, err := canonjson.Generic(pin.Definition)
				if err != nil {
					t.Fatalf("%s/%s: the definition is not JSON: %v", server, tool, err)
				}
				canon, _ := canonjson.Marshal(c)
				sum := sha256.Sum256(canon)
				if !bytes.Equal(canon, pin.Definition) || hex.EncodeToString(sum[:]) != pin.SHA256 {
					t.Fatalf("%s/%s: the pin is not the canonical definition and its hash", server, tool)
				}
				_, _ = pin.Tool()
			}
		}
		b, err := l.Encode()
		if err != nil {
			t.Fatalf("an accepted lock does not encode: %v", err)
		}
		back, err := runtime.ParseLock("heddle.lock", b)
		if err != nil {
			t.Fatalf("an accepted lock, encoded, is refused: %v\n%s", err, b)
		}
		if !reflect.DeepEqual(l, back) {
			t.Fatalf("an accepted lock, encoded and parsed, changed:\n%+v\n%+v", l, back)
		}
		if b2, _ := back.Encode(); !bytes.Equal(b, b2) {
			t.Fatalf("a lock encodes two ways:\n%s\n%s", b, b2)
		}
	})
}

// allPins is every dependency's pins of a lock, keyed by kind and name.
func allPins(l *runtime.Lock) map[string]driver.Pinned {
	out := map[string]driver.Pinned{}
	for kind, pins := range l.Kinds {
		for name, p := range pins {
			out[kind+"/"+name] = p
		}
	}
	return out
}

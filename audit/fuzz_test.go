package audit_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/heddlehq/heddle/audit"
)

// FuzzVerify: whatever a file holds, Verify either accepts every line as a
// record of the chain, or names the line where the chain breaks; it never
// panics and never fails without naming one.
func FuzzVerify(f *testing.F) {
	var buf bytes.Buffer
	w, err := audit.Open(audit.Options{Path: "-", Stdout: &buf, Key: testKey})
	if err != nil {
		f.Fatal(err)
	}
	writeN(f, w, 3)
	if err := w.Close(); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte("{}\n"))
	f.Add([]byte(`{"chain":{"seq":0,"prev":"","mac":"00"}}` + "\n"))
	f.Add([]byte(`{"chain":{"seq":-1,"prev":1,"mac":"00"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "audit.jsonl")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := audit.Verify(testKey, p)
		var be *audit.BrokenError
		switch {
		case err == nil:
			lines := bytes.Count(data, []byte("\n"))
			if len(data) > 0 && data[len(data)-1] != '\n' {
				lines++
			}
			if s.Records != lines {
				t.Errorf("accepted %d records of %d lines", s.Records, lines)
			}
		case errors.As(err, &be):
			if be.File != p || be.Line < 1 {
				t.Errorf("a break names no record: %+v", be)
			}
		default:
			t.Errorf("Verify: %v, want nil or a *BrokenError", err)
		}
	})
}

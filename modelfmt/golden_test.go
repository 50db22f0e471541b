package modelfmt_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heddlehq/heddle/modelfmt"
	"github.com/heddlehq/heddle/runtime"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/golden")

// TestGolden renders real tool lists in every format and compares them
// with testdata/golden; -update rewrites the goldens. The lists are
// fixtures taken from the real runtime: the shipped example's agents
// (testdata/tools/capture-example.sh) and server-everything's and
// server-filesystem's tools (integration's TestFormatFixtures, which holds
// them to what the servers offer). Every rendering is also read by the
// provider's SDK and checked against its subset.
func TestGolden(t *testing.T) {
	fixtures, err := filepath.Glob(filepath.Join("testdata", "tools", "*.json"))
	if err != nil || len(fixtures) < 4 {
		t.Fatalf("fixtures %v: %v", fixtures, err)
	}
	for _, path := range fixtures {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var tools []runtime.Tool
		if err := json.Unmarshal(b, &tools); err != nil || len(tools) == 0 {
			t.Fatalf("%s: %d tools, %v", path, len(tools), err)
		}
		name := strings.TrimSuffix(filepath.Base(path), ".json")
		for _, r := range renderings {
			t.Run(name+"/"+r.name, func(t *testing.T) {
				raw, err := modelfmt.Render(r.format, tools, r.opts)
				if err != nil {
					t.Fatal(err)
				}
				checkRendered(t, r.format, raw)
				var out bytes.Buffer
				if err := json.Indent(&out, raw, "", "  "); err != nil {
					t.Fatal(err)
				}
				out.WriteByte('\n')
				golden := filepath.Join("testdata", "golden", name+"."+strings.ReplaceAll(r.name, " ", "-")+".json")
				if *update {
					if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (go test ./modelfmt -update writes it)", err)
				}
				if !bytes.Equal(want, out.Bytes()) {
					t.Errorf("%s differs from the rendering; go test ./modelfmt -update rewrites it, review the diff\ngot:\n%s", golden, out.Bytes())
				}
			})
		}
	}
}

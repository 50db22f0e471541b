package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var updateFixtures = flag.Bool("update", false, "rewrite modelfmt's fixtures of the real servers' tool lists")

// TestFormatFixtures: modelfmt's golden tests of the provider formats
// (modelfmt/golden_test.go) render the tool lists of server-everything and
// server-filesystem from fixtures, so that they run without npm. This test
// holds each fixture to the list the runtime really gets from the server
// (its tools as Toolset.Tools returns them, as JSON); -update rewrites it,
// and then `go test ./modelfmt -update` the goldens.
func TestFormatFixtures(t *testing.T) {
	servers := map[string]func(t *testing.T) string{
		"server-everything": func(t *testing.T) string { return everythingServer(t, "ev", "stdio") },
		"server-filesystem": func(t *testing.T) string { return filesystemServer(t, "fs", t.TempDir()) },
	}
	for name, server := range servers {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			api := "ai:\n  startup_timeout_ms: 30000\n  mcp_servers:" + server(t)
			srv := "ev"
			if name == "server-filesystem" {
				srv = "fs"
			}
			h := open(t, api, map[string]string{"all": "capabilities: [{kind: mcp, server: " + srv + "}]\n"})
			tools, err := h.toolset(t, "all").Tools(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(tools, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("..", "modelfmt", "testdata", "tools", name+".json")
			if *updateFixtures {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test ./integration -run TestFormatFixtures -update writes it)", err)
			}
			if !bytes.Equal(want, got) {
				t.Errorf("%s's tools differ from %s: run go test ./integration -run TestFormatFixtures -update, then go test ./modelfmt -update, and review the diff", name, path)
			}
		})
	}
}

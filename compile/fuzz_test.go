package compile_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/heddlehq/heddle/compile"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/grants"
	"golang.org/x/tools/txtar"
)

// FuzzLoadCompile feeds arbitrary api.yaml, overlay and agent.yaml bytes
// through loading and compiling. Neither may panic; every diagnostic must
// carry a catalogued code; a plan comes back exactly when there is no error.
func FuzzLoadCompile(f *testing.F) {
	files, _ := filepath.Glob("testdata/codes/*.txtar")
	more, _ := filepath.Glob("testdata/*.txtar")
	for _, file := range append(files, more...) {
		ar, err := txtar.ParseFile(file)
		if err != nil {
			f.Fatal(err)
		}
		var api, overlay, agent []byte
		for _, sec := range ar.Files {
			switch {
			case sec.Name == "config/api.yaml":
				api = sec.Data
			case strings.HasPrefix(sec.Name, "config/api."):
				overlay = sec.Data
			case strings.HasSuffix(sec.Name, "agent.yaml") && agent == nil:
				agent = sec.Data
			}
		}
		f.Add(api, overlay, agent)
	}
	// Hostile shapes, each as every file: an alias bomb, an alias inside
	// its own anchor, deep nesting, empty and dotted keys, a long scalar.
	bomb := "a0: &a0 [x]\n"
	for i := 1; i <= 9; i++ {
		bomb += fmt.Sprintf("a%d: &a%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 9), ", "))
	}
	for _, s := range []string{
		bomb,
		"ai: &x {mcp_servers: *x}\n",
		"ai: " + strings.Repeat("[", 500) + strings.Repeat("]", 500) + "\n",
		"\"\": 1\nai: {~: 1}\n",
		"\"ai.startup_timeout_ms\": 1\nai: {mcp_servers: {\"run.books\": {url: https://x.example.com/mcp}}}\n",
		"name: " + strings.Repeat("x", 32<<10) + "\n",
	} {
		f.Add([]byte(s), []byte(s), []byte(s))
	}
	f.Fuzz(func(t *testing.T, api, overlay, agent []byte) {
		fsys := fstest.MapFS{
			"config/api.yaml":     {Data: api},
			"config/api.x.yaml":   {Data: overlay},
			"agents/a/agent.yaml": {Data: agent},
		}
		cfg, ds := config.Load(config.Options{FS: fsys, Env: "x", Environ: []string{"HEDDLE_AI__REMOTE_CLIENTS=optional"}})
		p, cds := compile.Compile(compile.Input{Config: cfg, Usecases: []string{"k"}})
		ds = append(ds, cds...)
		for _, d := range ds {
			if _, ok := grants.Default().Entry(d.Code); !ok {
				t.Errorf("diagnostic with uncatalogued code %q: %v", d.Code, d)
			}
		}
		if (p != nil) == cds.HasErrors() {
			t.Errorf("plan returned %v with errors %v", p != nil, cds.HasErrors())
		}
	})
}

package compile_test

import (
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/heddlehq/heddle/compile"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
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
			if _, ok := diag.Lookup(d.Code); !ok {
				t.Errorf("diagnostic with uncatalogued code %q: %v", d.Code, d)
			}
		}
		if (p != nil) == cds.HasErrors() {
			t.Errorf("plan returned %v with errors %v", p != nil, cds.HasErrors())
		}
	})
}

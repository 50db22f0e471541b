package config_test

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
)

// laughs is a billion-laughs alias bomb: levels anchored lists, each
// holding width aliases to the one before.
func laughs(levels, width int) string {
	var b strings.Builder
	b.WriteString("a0: &a0 [lol]\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [*a%d", i, i, i-1)
		b.WriteString(strings.Repeat(fmt.Sprintf(", *a%d", i-1), width-1))
		b.WriteString("]\n")
	}
	return b.String()
}

// flowLaughs is the same bomb on one line, as a HEDDLE_ value can hold it.
func flowLaughs(levels, width int) string {
	var b strings.Builder
	b.WriteString("[&a0 [lol]")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, ", &a%d [*a%d", i, i-1)
		b.WriteString(strings.Repeat(fmt.Sprintf(", *a%d", i-1), width-1))
		b.WriteString("]")
	}
	return b.String() + "]"
}

// blockMappings nests n block mappings, one level of indentation each.
func blockMappings(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(strings.Repeat(" ", i) + "a:\n")
	}
	return b.String()
}

// hostile is one document that must be refused quickly and cheaply.
type hostile struct {
	name string
	doc  string
	code diag.Code
	at   string // "line:column" expected, "" for none (the file as a whole), "*" for any
	path string // expected config path, "*" for any
}

func hostileDocs() []hostile {
	return []hostile{
		{"laughs 9x9", laughs(9, 9), diag.ConfigLimit, "*", "*"},
		{"laughs 4x200", laughs(4, 200), diag.ConfigLimit, "*", "*"},
		{"laughs 2x2000", laughs(2, 2000), diag.ConfigLimit, "*", "*"},
		{"self alias", "a: &x [*x]\n", diag.ConfigLimit, "1:8", "a[0]"},
		{"self alias in a mapping", "a: &x {b: *x}\n", diag.ConfigLimit, "1:11", "a.b"},
		{"self merge", "a: &x {<<: *x}\n", diag.ConfigLimit, "1:12", "a.<<"},
		{"self alias at the top", "&x {a: *x}\n", diag.ConfigLimit, "1:8", "a"},
		{"flow nesting 10000 deep", "a: " + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + "\n", diag.ConfigLimit, "1:103", "*"},
		{"flow mappings 9000 deep", "a: " + strings.Repeat("{a: ", 9000) + "1" + strings.Repeat("}", 9000) + "\n", diag.ConfigLimit, "1:397", "*"},
		{"block lists 10000 deep", "a:\n" + strings.Repeat("- ", 10000) + "x\n", diag.ConfigLimit, "2:199", "*"},
		{"block mappings 150 deep", blockMappings(150), diag.ConfigLimit, "100:100", "*"},
		{"empty key", "\"\": 1\n", diag.ConfigParse, "1:1", ""},
		{"empty explicit key", "? \"\"\n: 1\n", diag.ConfigParse, "1:3", ""},
		{"null key", "~: 1\n", diag.ConfigParse, "1:1", ""},
		{"missing explicit key", "? \n: 1\n", diag.ConfigParse, "1:2", ""},
		{"nested empty key", "ai:\n  \"\": 1\n", diag.ConfigParse, "2:3", "ai"},
		{"list as key", "ai:\n  [a]: 1\n", diag.ConfigParse, "2:3", "ai"},
		{"3000 repeated keys", strings.Repeat("a: 1\n", 3000), diag.ConfigParse, "2:1", "a"},
		{"huge scalar", "a: " + strings.Repeat("x", config.MaxDocumentBytes) + "\n", diag.ConfigLimit, "", ""},
		{"long scalar behind aliases", "a: &a " + strings.Repeat("x", 512<<10) + "\nb: [" + strings.Repeat("*a, ", 100) + "]\n", diag.ConfigLimit, "*", "*"},
	}
}

// measure runs f three times and returns its best time and allocation.
// The time is the CPU time of the thread f runs on, where the system can
// say (threadCPU), so that a machine busy with other tests does not count
// as f's time; elsewhere it is the time f took.
func measure(f func()) (time.Duration, uint64) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	best, least := time.Duration(math.MaxInt64), uint64(math.MaxUint64)
	for range 3 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		cpu0, onCPU := threadCPU()
		start := time.Now()
		f()
		d := time.Since(start)
		if cpu1, ok := threadCPU(); onCPU && ok {
			d = cpu1 - cpu0
		}
		runtime.ReadMemStats(&after)
		best, least = min(best, d), min(least, after.TotalAlloc-before.TotalAlloc)
	}
	return best, least
}

const (
	maxHostileTime  = 100 * time.Millisecond * raceSlowdown
	maxHostileAlloc = 50 << 20
)

// TestHostileYAML feeds each hostile document through every way heddle
// reads a document and checks that it is refused with its code, at its
// place, in under 100 ms and 50 MB.
func TestHostileYAML(t *testing.T) {
	entries := []struct {
		name string
		file string
		read func(data []byte) diag.Diagnostics
	}{
		{"ParseYAML", "api.yaml", func(data []byte) diag.Diagnostics {
			_, ds := config.ParseYAML("api.yaml", data)
			return ds
		}},
		{"ParseArtifact", "agents/a/agent.yaml", func(data []byte) diag.Diagnostics {
			_, ds := config.ParseArtifact("agents/a/agent.yaml", "a", data)
			return ds
		}},
		{"LoadDeployment", "config/api.yaml", func(data []byte) diag.Diagnostics {
			_, ds := config.LoadDeployment(config.Options{FS: fstest.MapFS{"config/api.yaml": {Data: data}}})
			return ds
		}},
		{"overlay", "config/api.x.yaml", func(data []byte) diag.Diagnostics {
			fsys := fstest.MapFS{"config/api.yaml": {Data: []byte("ai: {}\n")}, "config/api.x.yaml": {Data: data}}
			_, ds := config.LoadDeployment(config.Options{FS: fsys, Env: "x"})
			return ds
		}},
	}
	for _, h := range hostileDocs() {
		data := []byte(h.doc)
		for _, e := range entries {
			t.Run(h.name+"/"+e.name, func(t *testing.T) {
				var ds diag.Diagnostics
				d, alloc := measure(func() { ds = e.read(data) })
				checkRefusal(t, ds, h, e.file)
				if d > maxHostileTime || alloc > maxHostileAlloc {
					t.Errorf("took %v and %.1f MB, want under %v and %d MB", d, float64(alloc)/(1<<20), maxHostileTime, maxHostileAlloc>>20)
				}
				t.Logf("%v, %.2f MB", d, float64(alloc)/(1<<20))
			})
		}
	}
}

func checkRefusal(t *testing.T, ds diag.Diagnostics, h hostile, file string) {
	t.Helper()
	if len(ds) != 1 {
		t.Fatalf("got %d diagnostics, want one %s: %v", len(ds), h.code, ds)
	}
	d := ds[0]
	if d.Code != h.code || d.Range == nil || d.Range.File != file {
		t.Fatalf("got %v, want %s in %s", d, h.code, file)
	}
	switch at := fmt.Sprintf("%d:%d", d.Range.Line, d.Range.Column); {
	case h.at == "" && d.Range.Line != 0:
		t.Errorf("located at %s, want the file as a whole", at)
	case h.at == "*" && (d.Range.Line <= 0 || d.Range.Column <= 0):
		t.Errorf("located at %s, want a line and column", at)
	case h.at != "" && h.at != "*" && at != h.at:
		t.Errorf("located at %s, want %s", at, h.at)
	}
	if h.path != "*" && d.Path != h.path {
		t.Errorf("path %q, want %q", d.Path, h.path)
	}
}

// TestHostileEnv refuses hostile HEDDLE_ values, naming the variable.
func TestHostileEnv(t *testing.T) {
	fsys := fstest.MapFS{"config/api.yaml": {Data: []byte("ai: {}\n")}}
	for _, tc := range []struct {
		name, value string
		code        diag.Code
	}{
		{"laughs", flowLaughs(9, 9), diag.ConfigLimit},
		{"self alias", "&x [*x]", diag.ConfigLimit},
		{"deep", strings.Repeat("[", 10000) + strings.Repeat("]", 10000), diag.ConfigLimit},
		{"empty key", `{"": 1}`, diag.ConfigParse},
		{"huge", strings.Repeat("x", config.MaxDocumentBytes+1), diag.ConfigLimit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			environ := []string{"HEDDLE_AI__STARTUP_TIMEOUT_MS=" + tc.value}
			var ds diag.Diagnostics
			d, alloc := measure(func() { _, ds = config.LoadDeployment(config.Options{FS: fsys, Environ: environ}) })
			if len(ds) != 1 || ds[0].Code != tc.code || ds[0].Range == nil || ds[0].Range.File != "$HEDDLE_AI__STARTUP_TIMEOUT_MS" {
				t.Fatalf("got %v, want one %s in $HEDDLE_AI__STARTUP_TIMEOUT_MS", ds, tc.code)
			}
			if d > maxHostileTime || alloc > maxHostileAlloc {
				t.Errorf("took %v and %.1f MB, want under %v and %d MB", d, float64(alloc)/(1<<20), maxHostileTime, maxHostileAlloc>>20)
			}
		})
	}
}

// TestLimitBoundaries checks that each limit lets through a document at
// it and refuses one just past it.
func TestLimitBoundaries(t *testing.T) {
	nested := func(levels int) string { // the top-level mapping is level 1
		return "a: " + strings.Repeat("[", levels-1) + strings.Repeat("]", levels-1) + "\n"
	}
	items := func(n int) string { return "a: [" + strings.Repeat("1,", n) + "]\n" }
	// 4 nodes, the anchored list of 1000, and aliases of 1000 each.
	aliases := func(n int) string {
		return "a: &a [" + strings.Repeat("1,", 999) + "]\nb: [" + strings.Repeat("*a,", n) + "]\n"
	}
	// An alias nests what it stands for at its own level.
	deepAlias := func(levels int) string {
		return "a: &a " + nested(50)[3:] + "b: " + strings.Repeat("[", levels-50) + "*a" + strings.Repeat("]", levels-50) + "\n"
	}
	for _, tc := range []struct {
		name     string
		at, past string
	}{
		{"depth", nested(config.MaxDepth), nested(config.MaxDepth + 1)},
		{"nodes", items(config.MaxNodes - 3), items(config.MaxNodes - 2)},
		{"aliases", aliases((config.MaxNodes-4)/1000 - 1), aliases((config.MaxNodes-4)/1000 + 0)},
		{"depth through an alias", deepAlias(config.MaxDepth), deepAlias(config.MaxDepth + 1)},
		{"size", "a: " + strings.Repeat("x", config.MaxDocumentBytes-4) + "\n", "a: " + strings.Repeat("x", config.MaxDocumentBytes-3) + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, ds := config.ParseYAML("api.yaml", []byte(tc.at)); len(ds) > 0 {
				t.Errorf("at the limit: %v", ds)
			}
			_, ds := config.ParseYAML("api.yaml", []byte(tc.past))
			if len(ds) != 1 || ds[0].Code != diag.ConfigLimit {
				t.Errorf("past the limit: %v, want CONFIG_LIMIT", ds)
			}
		})
	}
}

// TestLimitMessages checks that a refusal names its limit, never a value.
func TestLimitMessages(t *testing.T) {
	const secret = "hunter2-hunter2"
	for _, doc := range []string{
		"a: &x [" + secret + ", *x]\n",
		"a: " + strings.Repeat("[", 200) + secret + strings.Repeat("]", 200) + "\n",
		"a: &a [" + secret + "]\nb: [" + strings.Repeat("*a,", config.MaxNodes/2) + "]\n",
		"a: " + secret + strings.Repeat("x", config.MaxDocumentBytes) + "\n",
		"a: !!int " + secret + "\n",
		"a: !!binary '" + secret + "'\n",
	} {
		_, ds := config.ParseYAML("api.yaml", []byte(doc))
		if len(ds) != 1 {
			t.Fatalf("%.40q: %v", doc, ds)
		}
		if msg := ds[0].Summary + ds[0].Detail; strings.Contains(msg, "hunter2") {
			t.Errorf("%.40q: the message repeats a value: %s", doc, msg)
		}
	}
}

// TestLimitsDocumented keeps the Limits section of docs/configuration.md
// in step with the constants.
func TestLimitsDocumented(t *testing.T) {
	b, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## Limits\n")
	if !ok {
		t.Fatal("docs/configuration.md has no ## Limits section")
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	for _, want := range []string{
		fmt.Sprintf("| %d MiB |", config.MaxDocumentBytes>>20),
		fmt.Sprintf("| %d levels |", config.MaxDepth),
		fmt.Sprintf("| %d,%03d |", config.MaxNodes/1000, config.MaxNodes%1000),
		fmt.Sprintf("| %d MiB |", config.MaxFlatBytes>>20),
		"CONFIG_LIMIT",
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("the Limits section does not say %q", want)
		}
	}
}

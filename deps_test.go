package heddle_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// The import graph is part of heddle's design: the caller's identity is a
// leaf every layer can read, and the package application code registers
// its operations with stays light, so that a package of operations builds
// and tests without the runtime, its transports or its drivers. These tests
// hold that with `go list -deps`.

const module = "github.com/heddlehq/heddle"

// heavy are the packages an application's operations must not pull in:
// gRPC and the plugin host, CEL, the SQL drivers and go-sdk's mcp package.
var heavy = []string{
	`grpc`,
	`go-plugin`,
	`^cel\.dev/cel-go(/|$)`,
	`^github\.com/google/cel-go(/|$)`,
	`pgx`,
	`^modernc\.org/sqlite(/|$)`,
	`^github\.com/modelcontextprotocol/go-sdk/mcp(/|$)`,
}

// TestRootImportsOnlyTheStandardLibrary: package heddle (Identity,
// WithCaller, Caller, the embedded example) is a leaf that every other
// package, and application code, may import.
func TestRootImportsOnlyTheStandardLibrary(t *testing.T) {
	t.Parallel()
	var outside []string
	for _, p := range deps(t, module) {
		if p != module && !standard(p) {
			outside = append(outside, p)
		}
	}
	if len(outside) > 0 {
		t.Errorf("package %s imports, directly or not, %d packages outside the standard library:\n\t%s", module, len(outside), strings.Join(outside, "\n\t"))
	}
}

// TestUsecaseIsLight: what application code imports to register its
// operations, and the example application's operations themselves, pull in
// no runtime transport, plugin host, policy engine, driver or MCP SDK.
func TestUsecaseIsLight(t *testing.T) {
	t.Parallel()
	for _, pkg := range []string{module + "/usecase", module + "/examples/incidents"} {
		assertNoDeps(t, pkg, heavy...)
	}
}

// TestRuntimeNamesNoKind: the runtime's core — the deadline, the fan-out,
// toolsets, names, policy and approval, watch, health, the lock — opens
// every kind through its interface, so it depends on no kind's package, no
// auth strategy with a live half of its own (oauth, the plugin host), and
// no SQL driver or plugin machinery they bring.
func TestRuntimeNamesNoKind(t *testing.T) {
	t.Parallel()
	assertNoDeps(t, module+"/runtime",
		`^github\.com/heddlehq/heddle/grants/`,
		`^github\.com/heddlehq/heddle/auth/(oauth|plugin)(/|$)`,
		`^github\.com/heddlehq/heddle/builtin$`,
		`grpc`, `go-plugin`, `pgx`, `^modernc\.org/sqlite(/|$)`)
}

// TestRuntimeNamesNoStore: a fleet's shared state reaches the runtime
// through its interfaces (Options.Rates, a RateStore), so that an
// application embedding the runtime links no Redis client; package
// statestore implements them and the command wires them.
func TestRuntimeNamesNoStore(t *testing.T) {
	t.Parallel()
	for _, pkg := range []string{"runtime", "runtime/driver", "internal/limits"} {
		assertNoDeps(t, module+"/"+pkg, `^github\.com/redis/`, `^github\.com/heddlehq/heddle/statestore$`)
	}
}

// TestLiveHalvesImportTheDriver: the live halves of kinds and auth
// strategies implement package driver's contract and never import the
// runtime, as database drivers implement database/sql/driver and never
// import database/sql; the driver imports neither the runtime nor a kind.
func TestLiveHalvesImportTheDriver(t *testing.T) {
	t.Parallel()
	for _, pkg := range []string{"grants/mcpkind/mcplive", "grants/sqlkind/sqllive", "grants/a2akind/a2alive", "grants/usecasekind/usecaselive", "auth/authlive", "auth/oauth", "auth/plugin"} {
		assertNoDeps(t, module+"/"+pkg, `^github\.com/heddlehq/heddle/runtime$`)
	}
	assertNoDeps(t, module+"/runtime/driver",
		`^github\.com/heddlehq/heddle/runtime$`,
		`^github\.com/heddlehq/heddle/grants/`,
		`^github\.com/heddlehq/heddle/(builtin|serve|heddlecmd)$`)
}

// TestOnlyTheCommandLinksTheTracingSDK: the runtime, the kinds' live
// halves and the front door trace with the OpenTelemetry API alone, a no-op
// until a program installs a provider; the SDK and its exporters are
// heddlecmd's (or an application's) choice.
func TestOnlyTheCommandLinksTheTracingSDK(t *testing.T) {
	t.Parallel()
	for _, pkg := range []string{"runtime", "serve", "grants/mcpkind/mcplive", "grants/a2akind/a2alive", "grants/sqlkind/sqllive", "grants/usecasekind/usecaselive"} {
		assertNoDeps(t, module+"/"+pkg, `^go\.opentelemetry\.io/otel/sdk(/|$)`, `^go\.opentelemetry\.io/otel/exporters/`)
	}
}

// TestFacadeNamesNoKind: the MCP facade serves any toolset through the
// runtime's Toolset, so it depends on no kind, no strategy and no front
// door (serve imports it, not the other way round).
func TestFacadeNamesNoKind(t *testing.T) {
	t.Parallel()
	assertNoDeps(t, module+"/mcpfacade",
		`^github\.com/heddlehq/heddle/grants/`,
		`^github\.com/heddlehq/heddle/(builtin|serve|heddlecmd)$`,
		`^github\.com/heddlehq/heddle/auth/`,
		`grpc`, `go-plugin`, `pgx`, `^modernc\.org/sqlite(/|$)`)
}

// TestWireNamesNoFrontDoor: the JSON shapes of a tool and a result, which
// the invoke API answers and the command prints, are below both: wire
// imports no front door (serve, the facade, the command), no kind and no
// auth strategy, so that either prints them without the other's graph.
func TestWireNamesNoFrontDoor(t *testing.T) {
	t.Parallel()
	assertNoDeps(t, module+"/wire",
		`^github\.com/heddlehq/heddle/(serve|mcpfacade|heddlecmd|builtin|health|metrics)$`,
		`^github\.com/heddlehq/heddle/grants/`,
		`^github\.com/heddlehq/heddle/auth/`,
		`grpc`, `go-plugin`, `pgx`, `^modernc\.org/sqlite(/|$)`)
}

// TestReloadNamesNoFrontDoor: the reloader is for any front door over
// runtime.Generations — serve's, and an application's own — so it imports
// none (serve, the facade, the command), no kind, no auth strategy, and
// not the metrics package's Prometheus client: it reports a reload through
// a callback.
func TestReloadNamesNoFrontDoor(t *testing.T) {
	t.Parallel()
	assertNoDeps(t, module+"/reload",
		`^github\.com/heddlehq/heddle/(serve|mcpfacade|heddlecmd|builtin|health|metrics)$`,
		`^github\.com/heddlehq/heddle/grants/`,
		`^github\.com/heddlehq/heddle/auth/`,
		`^github\.com/prometheus/`,
		`grpc`, `go-plugin`, `pgx`, `^modernc\.org/sqlite(/|$)`)
}

// TestNoProviderSDKInTheProduct: the model providers' SDKs are in go.mod
// only for the tests of modelfmt, which decode what it writes with them.
// No package of the product — library, command, examples — imports one:
// modelfmt writes each API's JSON itself.
func TestNoProviderSDKInTheProduct(t *testing.T) {
	t.Parallel()
	assertNoDeps(t, module+"/...",
		`^github\.com/anthropics/`,
		`^github\.com/openai/`,
		`^google\.golang\.org/genai(/|$)`)
}

// TestModelfmtIsAboveTheRuntime: the provider formats read the runtime's
// tools and go-sdk's results, and name no kind, so that an application's
// model loop can use them over any toolset.
func TestModelfmtIsAboveTheRuntime(t *testing.T) {
	t.Parallel()
	assertNoDeps(t, module+"/modelfmt",
		`^github\.com/heddlehq/heddle/grants/`,
		`^github\.com/heddlehq/heddle/builtin$`,
		`^github\.com/heddlehq/heddle/(serve|heddlecmd)$`)
}

// TestRuntimeLinksNoConfigLoader: the runtime and the driver read a
// compiled plan, never configuration files, so they link neither package
// config nor the loader under it (koanf, mapstructure, a YAML parser): what
// the plan carries of the configuration's vocabulary — secret references,
// config paths, the serve: and mcp: sections — is config/setting's. Nor do
// they link the language of policies.rules (CEL, which brings a YAML parser
// of its own): the program registers it (policy/celrules, linked by
// builtin), as a database driver registers itself with database/sql.
func TestRuntimeLinksNoConfigLoader(t *testing.T) {
	t.Parallel()
	for _, pkg := range []string{module + "/runtime", module + "/runtime/driver"} {
		assertNoDeps(t, pkg,
			`^github\.com/heddlehq/heddle/config$`,
			`^github\.com/knadh/koanf`,
			`^github\.com/go-viper/mapstructure`,
			`yaml`,
			`^cel\.dev/cel-go`)
	}
}

// assertNoDeps fails t when pkg, or any package it imports directly or not,
// has an import path matching one of the regular expressions forbidden. It
// reports every such package, with the pattern it matched. One rule of the
// import graph is one call, for example that the runtime's core names no
// kind:
//
//	assertNoDeps(t, module+"/runtime", `^github\.com/heddlehq/heddle/grants/\w+kind(/|$)`)
func assertNoDeps(t *testing.T, pkg string, forbidden ...string) {
	t.Helper()
	res := make([]*regexp.Regexp, len(forbidden))
	for i, f := range forbidden {
		res[i] = regexp.MustCompile(f)
	}
	var found []string
	for _, p := range deps(t, pkg) {
		for _, re := range res {
			if re.MatchString(p) {
				found = append(found, p+" (matches "+re.String()+")")
				break
			}
		}
	}
	if len(found) > 0 {
		t.Errorf("%s must not depend on %d of the packages it does:\n\t%s", pkg, len(found), strings.Join(found, "\n\t"))
	}
}

// deps returns the import paths of pkg and of every package it imports,
// directly or not (go list -deps), as the module's own go.mod resolves them.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	cmd := exec.Command(goCommand(t), "list", "-deps", "-f", "{{.ImportPath}}", pkg)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, stderr.Bytes())
	}
	paths := strings.Fields(string(out))
	if len(paths) == 0 {
		t.Fatalf("go list -deps %s listed nothing", pkg)
	}
	return paths
}

// standard reports whether path is a standard-library package: the first
// element of every other import path is a domain, with a dot.
func standard(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// goCommand returns the go command: the one on PATH, else the one of the
// Go tree that built the test. It skips the test with a reason when there
// is none, and fails it under CI=true, where the check must run.
func goCommand(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	//lint:ignore SA1019 the fallback when PATH has no go: the test runs where it was built, so the build's root is meaningful
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("the go command is required under CI=true: none on PATH, nor at %s", p)
	}
	t.Skipf("the go command is not available: none on PATH, nor at %s", p)
	return ""
}

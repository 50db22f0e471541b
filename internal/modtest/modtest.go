// Package modtest builds programs of modules of their own that require
// heddle, for tests that show what an application outside this repository
// can do with nothing but heddle's public packages: a worker of its own, a
// kind of its own.
//
//	dir := modtest.Build(t, "example.com/desk", "desk-worker", map[string]string{
//		"main.go": src,
//	})
//	out, _ := exec.Command(filepath.Join(dir, "desk-worker"), "check").CombinedOutput()
//
// The module requires github.com/heddlehq/heddle, replaced by this checkout,
// and resolves every other module from the module cache (GOFLAGS=-mod=mod).
package modtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Build writes files (path → content) into a new temporary module called
// module, builds its main package into the binary bin in the module's
// directory, and returns that directory. It skips
// the test when the go command is not on PATH, unless CI=true, and with
// -short.
func Build(t *testing.T, module, bin string, files map[string]string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a program of its own module; skipped with -short")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("go is not on PATH (required with CI=true): %v", err)
		}
		t.Skipf("go is not on PATH: %v", err)
	}
	repo := Root(t)
	dir := t.TempDir()
	for name, data := range files {
		WriteFile(t, filepath.Join(dir, name), data)
	}
	WriteFile(t, filepath.Join(dir, "go.mod"), "module "+module+"\n\ngo 1.26.0\n\n"+
		"require github.com/heddlehq/heddle v0.0.0\n\n"+
		"replace github.com/heddlehq/heddle => "+repo+"\n")
	sum, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	WriteFile(t, filepath.Join(dir, "go.sum"), string(sum))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, goBin, "build", "-o", bin, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", module, err, out)
	}
	return dir
}

// Root returns the directory of this checkout's go.mod.
func Root(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// WriteFile writes data to path, making its directories.
func WriteFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

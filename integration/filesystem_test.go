package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/runtime"
)

// filesystemTools is every tool of server-filesystem.
var filesystemTools = []string{
	"create_directory",
	"directory_tree",
	"edit_file",
	"get_file_info",
	"list_allowed_directories",
	"list_directory",
	"list_directory_with_sizes",
	"move_file",
	"read_file",
	"read_media_file",
	"read_multiple_files",
	"read_text_file",
	"search_files",
	"write_file",
}

// filesystemServer returns the api.yaml entry (indented for mcp_servers) of
// a server-filesystem named name, allowed dir only.
func filesystemServer(t *testing.T, name, dir string) string {
	t.Helper()
	Need(t, "node")
	script := Need(t, "server-filesystem")
	return fmt.Sprintf(`
    %s:
      transport: stdio
      command: node
      args: [%s, %s]
      env: {%s: $MARK}
`, name, strconv.Quote(script), strconv.Quote(dir), markEnv)
}

func TestFilesystem(t *testing.T) {
	t.Parallel()
	// The server resolves symbolic links (macOS's /var → /private/var).
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	outside, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	write := func(path, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "hello.txt"), "hello from heddle\n")
	write(filepath.Join(dir, "sub", "nested.txt"), "nested\n")
	write(filepath.Join(outside, "secret.txt"), "not for the model\n")

	api := "ai:\n  startup_timeout_ms: 30000\n  mcp_servers:" + filesystemServer(t, "fs", dir)
	h := open(t, api, map[string]string{
		"writer":   "capabilities: [{kind: mcp, server: fs}]\npolicies: {approval: allow}\n",
		"reader":   "capabilities: [{kind: mcp, server: fs}]\npolicies: {approval: deny}\n",
		"asks":     "capabilities: [{kind: mcp, server: fs}]\n", // approval: ask, the default
		"filtered": "capabilities: [{kind: mcp, server: fs, include: [\"read_*\", \"list_*\"], exclude: [read_file, read_media_file]}]\n",
	})
	writer, reader, asks := h.toolset(t, "writer"), h.toolset(t, "reader"), h.toolset(t, "asks")

	t.Run("list", func(t *testing.T) {
		if diff := cmp.Diff(filesystemTools, toolNames(t, reader)); diff != "" {
			t.Errorf("tools (-want +got):\n%s", diff)
		}
		want := []string{"list_allowed_directories", "list_directory", "list_directory_with_sizes", "read_multiple_files", "read_text_file"}
		if diff := cmp.Diff(want, toolNames(t, h.toolset(t, "filtered"))); diff != "" {
			t.Errorf("filtered tools (-want +got):\n%s", diff)
		}
		for name, destructive := range map[string]bool{
			"write_file": true, "edit_file": true, "move_file": true,
			"read_text_file": false, "list_directory": false,
			"create_directory": false, // destructiveHint: false, readOnlyHint: false
		} {
			if got := toolByName(t, reader, name).Destructive; got != destructive {
				t.Errorf("%s: Destructive = %v, want %v", name, got, destructive)
			}
		}
		if tl := toolByName(t, reader, "read_text_file"); !tl.ReadOnly {
			t.Errorf("read_text_file is not read-only: %+v", tl)
		}
	})

	t.Run("read", func(t *testing.T) {
		for _, ts := range []*runtime.Toolset{writer, reader, asks} {
			res := call(t, ts, "read_text_file", map[string]any{"path": filepath.Join(dir, "hello.txt")})
			if got := text(res); !strings.Contains(got, "hello from heddle") {
				t.Errorf("%s: read_text_file = %q", ts.Agent(), got)
			}
		}
		res := call(t, reader, "list_directory", map[string]any{"path": dir})
		for _, want := range []string{"[FILE] hello.txt", "[DIR] sub"} {
			if !strings.Contains(text(res), want) {
				t.Errorf("list_directory = %q, want %q in it", text(res), want)
			}
		}
	})

	t.Run("outside the allowed directory", func(t *testing.T) {
		res := callRaw(t, reader, "read_text_file", map[string]any{"path": filepath.Join(outside, "secret.txt")})
		if !res.IsError || runtime.RefusalCode(res) != "" {
			t.Errorf("read outside: IsError %v, code %q, want the tool's own error: %s", res.IsError, runtime.RefusalCode(res), text(res))
		}
		if strings.Contains(text(res), "not for the model") {
			t.Errorf("read outside returned the file: %s", text(res))
		}
	})

	t.Run("approval", func(t *testing.T) {
		denied := filepath.Join(dir, "denied.txt")
		res := callRaw(t, reader, "write_file", map[string]any{"path": denied, "content": "x"})
		if got := runtime.RefusalCode(res); got != diag.ToolDenied || !res.IsError {
			t.Errorf("approval deny: code %q IsError %v, want TOOL_DENIED: %s", got, res.IsError, text(res))
		}
		res = callRaw(t, asks, "write_file", map[string]any{"path": denied, "content": "x"})
		if got := runtime.RefusalCode(res); got != diag.ToolApprovalRequired {
			t.Errorf("approval ask, no approver: code %q, want TOOL_APPROVAL_REQUIRED: %s", got, text(res))
		}
		if _, err := os.Stat(denied); !os.IsNotExist(err) {
			t.Errorf("a refused write reached the server: %s exists", denied)
		}

		allowed := filepath.Join(dir, "allowed.txt")
		call(t, writer, "write_file", map[string]any{"path": allowed, "content": "written through heddle"})
		if b, err := os.ReadFile(allowed); err != nil || string(b) != "written through heddle" {
			t.Errorf("approval allow: %s = %q, %v", allowed, b, err)
		}
	})
}

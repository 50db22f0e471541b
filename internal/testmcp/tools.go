package testmcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fixedTools lists the tools addFixedTools adds, sorted by name.
var fixedTools = []string{
	"add", "add_tool", "big", "echo", "env", "fail", "image", "pid", "remove_tool", "sleep", "spawn_child",
}

// FixedTools returns the names of the tools every server has unless
// [Options.NoFixedTools] is set, sorted by name (the order tools/list
// returns them in).
func FixedTools() []string { return slices.Clone(fixedTools) }

// maxBigBytes bounds the big tool, so that a typo cannot exhaust memory.
const maxBigBytes = 1 << 30

// addTool adds a typed tool after annotating it.
func addTool[In, Out any](s *server, t *mcp.Tool, h mcp.ToolHandlerFor[In, Out]) {
	s.annotate(t)
	mcp.AddTool(s.srv, t, h)
}

// addEchoTool adds (or replaces) a tool that echoes its arguments.
func (s *server) addEchoTool(name string) {
	t := &mcp.Tool{
		Name:        name,
		Description: "Echoes its arguments back as JSON text and structured content (a generated test tool).",
		InputSchema: map[string]any{"type": "object"},
	}
	s.annotate(t)
	s.define(t)
	s.srv.AddTool(t, echoArguments)
}

// define decodes the Options.Define entries naming t over it.
func (s *server) define(t *mcp.Tool) {
	for _, d := range s.opts.Define {
		name, def, ok := strings.Cut(d, "=")
		if !ok || name != t.Name {
			continue
		}
		if err := json.Unmarshal([]byte(def), t); err != nil {
			s.log.Error("define: not a JSON object of tool fields", "tool", name, "err", err)
		}
		t.Name = name
	}
}

// echoArguments is the handler of generated tools.
func echoArguments(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args := map[string]any{}
	if raw := req.Params.Arguments; len(raw) > 0 {
		if err := json.Unmarshal(raw, &args); err != nil {
			res := &mcp.CallToolResult{}
			res.SetError(fmt.Errorf("arguments are not a JSON object: %v", err))
			return res, nil
		}
		if args == nil { // "null"
			args = map[string]any{}
		}
	}
	text, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Content: textContent(string(text)), StructuredContent: args}, nil
}

func textContent(s string) []mcp.Content {
	return []mcp.Content{&mcp.TextContent{Text: s}}
}

// Inputs and outputs of the fixed tools; go-sdk infers their JSON Schemas.
type (
	echoIn struct {
		Text string `json:"text" jsonschema:"the text to echo back"`
	}
	echoOut struct {
		Text string `json:"text"`
	}
	addIn struct {
		A float64 `json:"a" jsonschema:"the first addend"`
		B float64 `json:"b" jsonschema:"the second addend"`
	}
	addOut struct {
		Sum float64 `json:"sum"`
	}
	sleepIn struct {
		Ms int64 `json:"ms" jsonschema:"how long to sleep, in milliseconds"`
	}
	sleepOut struct {
		SleptMs int64 `json:"slept_ms"`
	}
	failIn struct {
		Message string `json:"message,omitempty" jsonschema:"the error text to return"`
	}
	envIn struct {
		Name string `json:"name" jsonschema:"the environment variable to read"`
	}
	envOut struct {
		Name  string `json:"name"`
		Value string `json:"value"`
		Set   bool   `json:"set"`
	}
	bigIn struct {
		Bytes int `json:"bytes,omitempty" jsonschema:"the size of the text to return; the server's default when absent"`
	}
	nameIn struct {
		Name string `json:"name" jsonschema:"the tool name"`
	}
	pidOut struct {
		PID  int `json:"pid"`
		PGID int `json:"pgid"`
	}
	spawnOut struct {
		PID int `json:"pid"`
	}
)

// addFixedTools adds the tools listed in fixedTools.
func (s *server) addFixedTools() {
	addTool(s, &mcp.Tool{Name: "echo", Description: "Returns the given text unchanged."}, echoText)
	addTool(s, &mcp.Tool{Name: "add", Description: "Adds two numbers; the result is structured as {sum}."}, addNumbers)
	addTool(s, &mcp.Tool{Name: "sleep", Description: "Sleeps for the given number of milliseconds, or until the call is cancelled."}, sleepFor)
	addTool(s, &mcp.Tool{Name: "image", Description: "Returns a 1×1 PNG image and a line of text."}, returnImage)
	addTool(s, &mcp.Tool{Name: "fail", Description: "Always fails: returns a tool error (isError: true)."}, alwaysFail)
	addTool(s, &mcp.Tool{Name: "env", Description: "Returns the value of an environment variable of the server process (empty when unset)."}, readEnv)
	addTool(s, &mcp.Tool{Name: "big", Description: "Returns a text of the given number of bytes."}, s.bigText)
	addTool(s, &mcp.Tool{Name: "add_tool", Description: "Adds a tool that echoes its arguments; clients get notifications/tools/list_changed."}, s.addToolByName)
	addTool(s, &mcp.Tool{Name: "remove_tool", Description: "Removes a tool; clients get notifications/tools/list_changed."}, s.removeToolByName)
	addTool(s, &mcp.Tool{Name: "pid", Description: "Returns the server's process id and process group id."}, processIDs)
	addTool(s, &mcp.Tool{Name: "spawn_child", Description: "Starts a grandchild process that ignores stdin EOF and SIGTERM, and returns its pid."}, s.spawnChild)
}

// echoText is the echo tool: the text back, as content and structured.
func echoText(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoOut, error) {
	return &mcp.CallToolResult{Content: textContent(in.Text)}, echoOut(in), nil
}

// addNumbers is the add tool: a structured result and no content of its own.
func addNumbers(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
	return nil, addOut{Sum: in.A + in.B}, nil
}

// sleepFor is the sleep tool; a cancelled call ends it early with an error.
func sleepFor(ctx context.Context, _ *mcp.CallToolRequest, in sleepIn) (*mcp.CallToolResult, sleepOut, error) {
	if err := sleep(ctx, time.Duration(in.Ms)*time.Millisecond); err != nil {
		return nil, sleepOut{}, err
	}
	return nil, sleepOut{SleptMs: in.Ms}, nil
}

// returnImage is the image tool: content of two types in one result.
func returnImage(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.ImageContent{Data: tinyPNG(), MIMEType: "image/png"},
		&mcp.TextContent{Text: "a 1x1 PNG"},
	}}, nil, nil
}

// alwaysFail is the fail tool: its error becomes a tool error, not a
// protocol one.
func alwaysFail(_ context.Context, _ *mcp.CallToolRequest, in failIn) (*mcp.CallToolResult, any, error) {
	if in.Message == "" {
		in.Message = "the fail tool always fails"
	}
	return nil, nil, errors.New(in.Message)
}

// readEnv is the env tool, which shows what environment a server was
// started with.
func readEnv(_ context.Context, _ *mcp.CallToolRequest, in envIn) (*mcp.CallToolResult, envOut, error) {
	v, ok := os.LookupEnv(in.Name)
	return &mcp.CallToolResult{Content: textContent(v)}, envOut{Name: in.Name, Value: v, Set: ok}, nil
}

// bigText is the big tool: a text of the asked size, by default the
// server's oversized one.
func (s *server) bigText(_ context.Context, _ *mcp.CallToolRequest, in bigIn) (*mcp.CallToolResult, any, error) {
	n := in.Bytes
	if n == 0 {
		n = s.opts.oversizedBytes()
	}
	if n < 0 || n > maxBigBytes {
		return nil, nil, fmt.Errorf("bytes must be between 0 and %d", maxBigBytes)
	}
	return &mcp.CallToolResult{Content: textContent(strings.Repeat("x", n))}, nil, nil
}

// addToolByName is the add_tool tool, which changes the server's list.
func (s *server) addToolByName(_ context.Context, _ *mcp.CallToolRequest, in nameIn) (*mcp.CallToolResult, any, error) {
	if in.Name == "" {
		return nil, nil, errors.New("name is empty")
	}
	s.addEchoTool(in.Name)
	return &mcp.CallToolResult{Content: textContent("added " + in.Name)}, nil, nil
}

// removeToolByName is the remove_tool tool, which changes the server's list.
func (s *server) removeToolByName(_ context.Context, _ *mcp.CallToolRequest, in nameIn) (*mcp.CallToolResult, any, error) {
	s.srv.RemoveTools(in.Name)
	return &mcp.CallToolResult{Content: textContent("removed " + in.Name)}, nil, nil
}

// processIDs is the pid tool, which lets a test find the server's process
// and its group.
func processIDs(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, pidOut, error) {
	out := pidOut{PID: os.Getpid(), PGID: processGroup()}
	return &mcp.CallToolResult{Content: textContent(fmt.Sprintf("pid %d pgid %d", out.PID, out.PGID))}, out, nil
}

// spawnChild is the spawn_child tool, which leaves a process behind for a
// test of the runtime's clean-up to find.
func (s *server) spawnChild(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, spawnOut, error) {
	pid, err := spawnSleeper()
	if err != nil {
		return nil, spawnOut{}, err
	}
	s.log.Info("spawned grandchild", "pid", pid)
	return &mcp.CallToolResult{Content: textContent(fmt.Sprintf("pid %d", pid))}, spawnOut{PID: pid}, nil
}

// tinyPNG returns a valid 1×1 PNG.
var tinyPNG = sync.OnceValue(func() []byte {
	img := image.NewNRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.NRGBA{R: 0x2a, G: 0x7a, B: 0xe2, A: 0xff})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err) // encoding an in-memory image cannot fail
	}
	return buf.Bytes()
})

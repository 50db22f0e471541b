package runtime

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/argcheck"
)

// The names of the tools a view adds when its toolset has deferred grants.
// When a real tool of the toolset already answers to one, the view's is
// qualified as heddle__search_tools (heddle__load_tools), and numbered
// after that should that clash too.
const (
	SearchToolsName = "search_tools"
	LoadToolsName   = "load_tools"
)

// metaKind is the Source of the tools a view adds.
const metaKind = "heddle"

// maxLoadNames is how many names one load_tools call may give.
const maxLoadNames = 20

// maxSearchDescription is how many characters of the first line of a
// tool's description search_tools returns.
const maxSearchDescription = 200

// View is one conversation's view of a toolset: what a model is given.
// A tool of a grant that says defer is not listed until the conversation
// loads it: the view offers search_tools (words over the deferred tools'
// names, titles and descriptions, ranked by BM25) and load_tools (names →
// full definitions, added to this view and no other). A call to a
// deferred tool the view has not loaded is refused TOOL_UNKNOWN with a
// hint to load it first; once loaded it is called through Toolset.Call,
// under every policy the agent has (rules, denied_tools, approval,
// limits), as any other tool.
//
// A toolset without deferred grants gives views that are the toolset
// itself: Tools and Call are Toolset.Tools and Toolset.Call, and there is
// no search_tools or load_tools.
//
// A View is safe for concurrent use. It holds no resources: a
// conversation that ends simply drops it.
type View struct {
	t *Toolset

	mu     sync.Mutex
	loaded map[string]bool // model-facing names of the deferred tools loaded
}

// NewView returns a new conversation's view of the toolset, with nothing
// loaded.
func (t *Toolset) NewView() *View {
	return &View{t: t, loaded: map[string]bool{}}
}

// Toolset returns the toolset the view is of.
func (v *View) Toolset() *Toolset { return v.t }

// Loaded returns the names of the deferred tools the view loaded, sorted.
func (v *View) Loaded() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]string, 0, len(v.loaded))
	for n := range v.loaded {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Load adds tools to the view by name, as load_tools does, and returns the
// names it did not find among the toolset's deferred tools. It is how a
// conversation's view is carried over to a new toolset (after a reload)
// or restored from storage.
func (v *View) Load(ctx context.Context, names ...string) ([]string, error) {
	bi, err := v.t.viewIndex(ctx)
	if err != nil {
		return nil, err
	}
	_, unknown := v.load(bi, names, v.t.hiddenFor(ctx))
	return unknown, nil
}

// On returns the view carried to ts: v itself when it is ts's, otherwise
// a new view of ts with what v loaded (a conversation's view after a
// reload made a new toolset of its agent).
func (v *View) On(ctx context.Context, ts *Toolset) (*View, error) {
	if v.t == ts {
		return v, nil
	}
	nv := ts.NewView()
	if loaded := v.Loaded(); len(loaded) > 0 {
		if _, err := nv.Load(ctx, loaded...); err != nil {
			return nil, err
		}
	}
	return nv, nil
}

// Deferred reports whether any of the toolset's grants says defer: only
// then do a conversation's views of it differ, by what each loaded.
func (t *Toolset) Deferred() bool { return t.hasDeferred() }

// hasDeferred reports whether any of the toolset's grants says defer.
func (t *Toolset) hasDeferred() bool {
	return slices.ContainsFunc(t.sources, func(s *kindSource) bool { return s.deferred })
}

// Tools returns what the conversation's model is given: the toolset's
// tools that are not deferred, the deferred ones the view loaded, and
// search_tools and load_tools, sorted by name. Tools of a source that is
// unavailable are left out, as Toolset.Tools leaves them out.
func (v *View) Tools(ctx context.Context) ([]Tool, error) {
	all, err := v.t.Tools(ctx)
	if err != nil || !v.t.hasDeferred() {
		return all, err
	}
	bi, err := v.t.index(ctx)
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	out := slices.DeleteFunc(all, func(tl Tool) bool { return tl.Deferred && !v.loaded[tl.Name] })
	v.mu.Unlock()
	search, load := metaNames(bi)
	out = append(out, searchTool(search), loadTool(load, search))
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Call runs one tool as Toolset.Call does, seen from the conversation:
// search_tools and load_tools are answered by the view; a deferred tool
// the view has not loaded is refused TOOL_UNKNOWN; every other call is
// Toolset.Call's.
func (v *View) Call(ctx context.Context, name string, args map[string]any, opts ...CallOption) (*mcp.CallToolResult, error) {
	if !v.t.hasDeferred() {
		return v.t.Call(ctx, name, args, opts...)
	}
	var start time.Time
	if v.t.rt.opts.OnCall != nil {
		start = time.Now()
	}
	bi, err := v.t.viewIndex(ctx)
	if err != nil {
		return nil, err
	}
	var res *mcp.CallToolResult
	search, load := metaNames(bi)
	hidden := v.t.hiddenFor(ctx)
	switch name {
	case search:
		res = v.searchCall(bi, search, args, hidden)
	case load:
		res = v.loadCall(bi, load, args, hidden)
	default:
		i, ok := bi.names.lookup(name)
		if !ok || !bi.entries[i].tool.Deferred || v.isLoaded(bi.entries[i].tool.Name) || hidden(bi.entries[i]) {
			return v.t.Call(ctx, name, args, opts...)
		}
		res = refusal(diag.ToolUnknown, "%s is not loaded in this conversation; load it with %s first", diag.Quote(name), load)
	}
	if v.t.rt.opts.OnCall != nil {
		v.t.observe(ctx, name, args, res, nil, time.Since(start), nil)
	}
	return res, nil
}

func (v *View) isLoaded(name string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.loaded[name]
}

// viewIndex is the toolset's index, under the supervisor's deadline when
// it may have to list a source.
func (t *Toolset) viewIndex(ctx context.Context) (*builtIndex, error) {
	if !t.mayList() {
		return t.index(ctx)
	}
	bi, err := bounded(ctx, time.Now().Add(t.timeout), t.index)
	if err == errSupervisor {
		err = diag.Wrap(diag.ToolTimeout, context.DeadlineExceeded, "agent %s: the tools could not be listed within tool_timeout_ms (%d ms)", t.agent.Name, t.agent.Policies.ToolTimeoutMS)
	}
	return bi, err
}

// metaNames returns the names of search_tools and load_tools in the index:
// their own, unless a real tool answers to them.
func metaNames(bi *builtIndex) (search, load string) {
	free := func(base string) string {
		name := base
		for n := 1; ; n++ {
			if _, clash := bi.names.lookup(name); !clash {
				return name
			}
			name = "heddle__" + base
			if n > 1 {
				name += "_" + strconv.Itoa(n)
			}
		}
	}
	return free(SearchToolsName), free(LoadToolsName)
}

// searchResult is one tool search_tools found.
type searchResult struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Loaded      bool   `json:"loaded,omitempty"`
}

func (v *View) searchCall(bi *builtIndex, name string, args map[string]any, hidden func(*entry) bool) *mcp.CallToolResult {
	if msg := searchChecker().Check(args); msg != "" {
		return refusal(diag.ToolArgsInvalid, "the arguments do not match %s's input schema: %s", name, msg)
	}
	query, _ := args["query"].(string)
	limit := defaultSearchResults
	if l, ok := number(args["limit"]); ok {
		limit = min(max(int(l), 1), maxSearchResults)
	}
	idx := bi.search.Load()
	if idx == nil {
		idx = newSearchIndex(bi)
		bi.search.Store(idx)
	}
	// Every match is ranked, and those of sources that are away, or that
	// the caller may never use, skipped.
	away := v.t.awaySources()
	hits := idx.search(query, len(bi.entries), func(i int) string { return bi.entries[i].tool.Name })
	out := struct {
		Tools []searchResult `json:"tools"`
	}{Tools: []searchResult{}}
	v.mu.Lock()
	for _, i := range hits {
		e := bi.entries[i]
		if slices.Contains(away, e.src) || hidden(e) {
			continue
		}
		out.Tools = append(out.Tools, searchResult{Name: e.tool.Name, Description: oneLine(e.tool.Description), Loaded: v.loaded[e.tool.Name]})
		if len(out.Tools) == limit {
			break
		}
	}
	v.mu.Unlock()
	return structured(out)
}

// loadedTool is one definition load_tools returns.
type loadedTool struct {
	Name         string `json:"name"`
	Description  string `json:"description,omitempty"`
	InputSchema  any    `json:"inputSchema"`
	OutputSchema any    `json:"outputSchema,omitempty"`
}

func (v *View) loadCall(bi *builtIndex, name string, args map[string]any, hidden func(*entry) bool) *mcp.CallToolResult {
	if msg := loadChecker().Check(args); msg != "" {
		return refusal(diag.ToolArgsInvalid, "the arguments do not match %s's input schema: %s", name, msg)
	}
	raw, _ := args["names"].([]any)
	var names []string
	for _, n := range raw {
		if s, ok := n.(string); ok && len(names) < maxLoadNames {
			names = append(names, s)
		}
	}
	tools, unknown := v.load(bi, names, hidden)
	out := struct {
		Tools   []loadedTool `json:"tools"`
		Unknown []string     `json:"unknown,omitempty"`
	}{Tools: tools, Unknown: unknown}
	return structured(out)
}

// load adds the deferred tools named to the view and returns the
// definitions of every tool named that the toolset has (a tool that is
// not deferred is listed already: its definition is returned, nothing is
// added), and the names it does not have, clipped; a tool the caller may
// never use is one it does not have.
func (v *View) load(bi *builtIndex, names []string, hidden func(*entry) bool) ([]loadedTool, []string) {
	tools := []loadedTool{}
	var unknown []string
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, n := range names {
		i, ok := bi.names.lookup(n)
		if !ok || hidden(bi.entries[i]) {
			unknown = append(unknown, diag.Clip(n))
			continue
		}
		e := bi.entries[i]
		if slices.ContainsFunc(tools, func(l loadedTool) bool { return l.Name == e.tool.Name }) {
			continue
		}
		if e.tool.Deferred {
			v.loaded[e.tool.Name] = true
		}
		tools = append(tools, loadedTool{Name: e.tool.Name, Description: e.tool.Description, InputSchema: e.tool.InputSchema, OutputSchema: e.tool.OutputSchema})
	}
	return tools, unknown
}

// awaySources are the toolset's sources that are unavailable now.
func (t *Toolset) awaySources() []*kindSource {
	var away []*kindSource
	for _, src := range t.sources {
		if src.unavailable() {
			away = append(away, src)
		}
	}
	return away
}

// structured is a result whose structuredContent is v and whose text is
// v's JSON, for hosts that read only text.
func structured(v any) *mcp.CallToolResult {
	b, err := json.Marshal(v)
	if err != nil {
		return refusal(diag.ToolUnavailable, "the result could not be encoded")
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}
}

// number reads a JSON number as the arguments carry it.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// oneLine is the first line of a description, clipped.
func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > maxSearchDescription {
		s = string(r[:maxSearchDescription]) + "…"
	}
	return s
}

// searchTool is search_tools as the model is given it.
func searchTool(name string) Tool {
	return Tool{
		Name: name, Kind: metaKind, OriginalName: SearchToolsName, ReadOnly: true, Idempotent: true,
		Description: "Searches the tools that are not listed yet by words of their names and descriptions. " +
			"Returns the best matches, names and one-line descriptions; load the ones you need with load_tools.",
		InputSchema: searchSchema(),
	}
}

// loadTool is load_tools as the model is given it; search names the
// search tool in its description.
func loadTool(name, search string) Tool {
	return Tool{
		Name: name, Kind: metaKind, OriginalName: LoadToolsName, ReadOnly: true, Idempotent: true,
		Description: "Loads tools by name (as " + search + " returns them): their full definitions are returned " +
			"and they can be called from now on in this conversation.",
		InputSchema: loadSchema(),
	}
}

func searchSchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"query": map[string]any{"type": "string", "minLength": 1, "maxLength": maxQueryBytes,
				"description": "Words describing what the tool should do, e.g. \"restart a deployment\"."},
			"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": maxSearchResults, "default": defaultSearchResults,
				"description": "How many tools to return at most."},
		},
		"required":             []any{"query"},
		"additionalProperties": false,
	}
}

func loadSchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"names": map[string]any{"type": "array", "minItems": 1, "maxItems": maxLoadNames,
				"items":       map[string]any{"type": "string", "minLength": 1},
				"description": "The names of the tools to load."},
		},
		"required":             []any{"names"},
		"additionalProperties": false,
	}
}

var (
	searchChecker = sync.OnceValue(func() *argcheck.Checker { return argcheck.Compile(searchSchema()) })
	loadChecker   = sync.OnceValue(func() *argcheck.Checker { return argcheck.Compile(loadSchema()) })
)

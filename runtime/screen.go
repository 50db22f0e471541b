package runtime

import (
	"slices"
	"strings"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/toolscreen"
)

// flag sets each entry's Flags: what screening its definition found
// (hidden_unicode, instructions; see toolscreen), and shadowing for a tool
// whose name equals, but for case or look-alike characters, a tool of
// another source of this toolset — the runtime already qualifies clashing
// names (server__tool), but a clash may be one server's attempt to be
// called in another's place (OWASP MCP03), so it is flagged for rules and
// logged, TOOL_DESCRIPTOR_SUSPICIOUS, once per agent and name.
func (t *Toolset) flag(entries []*entry) {
	bySkeleton := map[string][]*entry{}
	for _, e := range entries {
		k := toolscreen.Fold(e.tool.OriginalName)
		bySkeleton[k] = append(bySkeleton[k], e)
	}
	for _, e := range entries {
		e.tool.Flags = slices.Clone(e.def.flags)
		group := bySkeleton[toolscreen.Fold(e.tool.OriginalName)]
		if !slices.ContainsFunc(group, func(o *entry) bool { return o.src != e.src }) {
			continue
		}
		e.tool.Flags = append(e.tool.Flags, toolscreen.Shadowing)
		slices.Sort(e.tool.Flags)
		e.tool.Flags = slices.Compact(e.tool.Flags)
		var others []string
		for _, o := range group {
			if o.src != e.src {
				others = append(others, o.src.name()+" "+toolscreen.Escape(o.tool.OriginalName, 80))
			}
		}
		slices.Sort(others)
		key := t.agent.Name + "\x00" + e.src.name() + "\x00" + e.tool.OriginalName + "\x00" + strings.Join(others, ",")
		if _, logged := t.rt.screened.LoadOrStore(key, true); !logged {
			t.rt.log.Warn("tool name shadows another source's tool: rules see it in tool.flags", "agent", t.agent.Name,
				"server", e.src.name(), "tool", toolscreen.Escape(e.tool.OriginalName, 80), "shadows", strings.Join(others, ", "),
				"code", diag.ToolDescriptorSuspicious, "flags", toolscreen.Shadowing)
		}
	}
}

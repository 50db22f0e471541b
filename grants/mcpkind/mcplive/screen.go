package mcplive

import (
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/internal/toolscreen"
)

// screen screens the definitions of a server's tools as they are listed —
// at start-up, by heddle lock, at every re-list — for hidden Unicode and
// instructions aimed at the model (OWASP MCP03), and logs what it finds,
// TOOL_DESCRIPTOR_SUSPICIOUS, once per tool definition: a warning, or under
// screen: strict an error saying the tool is withheld (withheld, by its
// sources). What it finds is escaped, never logged raw. Shadowing needs the
// other sources of an agent: the runtime's toolset flags it.
func (s *server) screen(tools []*mcp.Tool) {
	for _, t := range tools {
		fs := toolscreen.Tool(t)
		if len(fs) == 0 {
			continue
		}
		parts := make([]string, len(fs))
		for i, f := range fs {
			parts[i] = f.String()
		}
		found := strings.Join(parts, "; ")
		if _, logged := s.screened.LoadOrStore(t.Name+"\x00"+found, true); logged {
			continue
		}
		name := toolscreen.Escape(t.Name, 80)
		if s.spec.StrictScreen {
			s.log.Error("tool withheld: its definition is suspicious and the server is screen: strict", "server", s.name, "tool", name,
				"code", diag.ToolDescriptorSuspicious, "flags", strings.Join(toolscreen.Flags(fs), ","), "found", found)
			continue
		}
		s.log.Warn("tool definition is suspicious: rules see it in tool.flags", "server", s.name, "tool", name,
			"code", diag.ToolDescriptorSuspicious, "flags", strings.Join(toolscreen.Flags(fs), ","), "found", found)
	}
}

// withheld reports a tool that screen: strict withholds: one whose
// definition holds hidden Unicode or instructions aimed at the model.
func (s *server) withheld(t *mcp.Tool) bool {
	return s.spec.StrictScreen && len(toolscreen.Tool(t)) > 0
}

package heddlecmd

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/runtime"
)

// lockFilters checks, without the network, every include and exclude of
// the agents' mcp grants against the tools the lock file (./heddle.lock,
// when there is one) pins for their server: a filter that matches none of
// them is MCP_FILTER_UNMATCHED at its line of the agent's file, naming the
// server's tools — what start-up would find. A server the lock does not
// pin is not checked; nor is anything when there is no lock.
func lockFilters(arts []*config.Artifact) diag.Diagnostics {
	lock, err := runtime.ReadLock(DefaultLockFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return diag.Diagnostics{diag.Errorf(diag.LockInvalid, "", "%s", lockError(DefaultLockFile, err, false))}
	}
	var ds diag.Diagnostics
	for _, art := range arts {
		var ads diag.Diagnostics
		for i, c := range art.Capabilities {
			server, _ := c.Settings["server"].(string)
			pins, ok := lock.Kinds["mcp"][server]
			if c.Kind != "mcp" || !ok {
				continue
			}
			tools := slices.Sorted(maps.Keys(pins.Tools))
			for _, key := range []string{"include", "exclude"} {
				pats, _ := c.Settings[key].([]any)
				for j, p := range pats {
					pat, _ := p.(string)
					if pat == "" || slices.ContainsFunc(tools, func(t string) bool { ok, _ := path.Match(pat, t); return ok }) {
						continue
					}
					ads = append(ads, diag.Errorf(diag.MCPFilterUnmatched, config.Item(config.Join(config.Item("capabilities", i), key), j),
						"filter %q matches none of the %d tools %s pins for server %s", pat, len(tools), DefaultLockFile, server).
						WithDetail("its tools: %s", toolList(tools)))
				}
			}
		}
		art.Index.Locate(ads)
		for i := range ads {
			if ads[i].Range == nil {
				ads[i].Range = &diag.Range{File: art.File}
			}
		}
		ds = append(ds, ads...)
	}
	return ds
}

// toolList names tools, at most twenty of them.
func toolList(tools []string) string {
	const most = 20
	if len(tools) <= most {
		return strings.Join(tools, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(tools[:most], ", "), len(tools)-most)
}

package heddlecmd

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is set at build time with -ldflags "-X …/heddlecmd.Version=v1.2.3".
var Version = "devel"

type versionInfo struct {
	Version  string `json:"version"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
	Revision string `json:"revision,omitempty"`
	Modified bool   `json:"modified,omitempty"`
}

func (e *env) version(args []string) int {
	if _, err := e.parseCommand("version", args, 0, 0, nil); err != nil {
		return e.usageError(err)
	}
	v := versionInfo{Version: Version, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v.Version == "devel" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Revision = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	if e.g.format == "json" {
		writeJSON(e.stdout, v)
		return ExitOK
	}
	fmt.Fprintf(e.stdout, "heddle %s (%s, %s)\n", v.Version, v.Go, v.Platform)
	return ExitOK
}

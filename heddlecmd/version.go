package heddlecmd

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is set at build time with -ldflags "-X …/heddlecmd.Version=v1.2.3".
var Version = "devel"

// Revision, RevisionTime and RevisionModified stamp the VCS state into a
// binary built without it (-buildvcs=false, as make release builds):
//
//	-ldflags "-X …/heddlecmd.Revision=<commit> -X …/heddlecmd.RevisionTime=<RFC 3339>
//	          -X …/heddlecmd.RevisionModified=false"
//
// heddle version prints them only when the go command recorded no VCS state:
// what it records, when it does, wins. RevisionModified is "true" or
// "false"; anything else leaves it unknown.
var (
	Revision         string
	RevisionTime     string
	RevisionModified string
)

// modulePath is heddle's module: the main module of the stock binary, a
// dependency of an application's worker built in its own module.
const modulePath = "github.com/heddlehq/heddle"

// versionInfo is what heddle version prints. Revision, Time and Modified
// are known only when the go command stamped the binary with its VCS state
// (go build or go install in a clone, with the default -buildvcs=auto), or
// when the build stamped them with -ldflags (Revision above).
type versionInfo struct {
	Version  string `json:"version"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
	// Module is the main module's path and version: heddle's own, or the
	// application's of a worker.
	Module        string `json:"module,omitempty"`
	ModuleVersion string `json:"module_version,omitempty"`
	VCS           string `json:"vcs,omitempty"`
	Revision      string `json:"revision,omitempty"`
	Time          string `json:"time,omitempty"`
	// Modified is whether the working tree had changes the revision does
	// not hold; absent when there is no revision to compare with.
	Modified *bool `json:"modified,omitempty"`
	// Unknown says, when Revision is empty, why the binary cannot tell.
	Unknown string `json:"unknown,omitempty"`
}

// noVCS says why a binary records no VCS state.
const noVCS = "not recorded in this binary (go build and go install record it in a clone, " +
	"unless -buildvcs=false is given, on the command line or in GOFLAGS, or git is missing; go run and go test never do)"

func readVersion() versionInfo {
	v := versionInfo{Version: Version, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		if !v.stamped() {
			v.Unknown = "this binary records no build information"
		}
		return v
	}
	v.Module, v.ModuleVersion = bi.Main.Path, bi.Main.Version
	if v.Version == "devel" {
		heddle := bi.Main.Version
		if bi.Main.Path != modulePath {
			heddle = ""
			for _, d := range bi.Deps {
				if d.Path == modulePath {
					heddle = d.Version
					if d.Replace != nil {
						heddle = d.Replace.Version
					}
				}
			}
		}
		if heddle != "" && heddle != "(devel)" {
			v.Version = heddle
		}
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs":
			v.VCS = s.Value
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			m := s.Value == "true"
			v.Modified = &m
		}
	}
	if v.Revision == "" && !v.stamped() {
		v.Unknown = noVCS
	}
	return v
}

// stamped fills in the revision a release build stamped with -ldflags, and
// says whether there was one.
func (v *versionInfo) stamped() bool {
	if Revision == "" {
		return false
	}
	v.VCS, v.Revision, v.Time = "git", Revision, RevisionTime
	if RevisionModified == "true" || RevisionModified == "false" {
		m := RevisionModified == "true"
		v.Modified = &m
	}
	return true
}

func (e *invocation) version(args []string) int {
	if _, err := e.parseCommand("version", args, 0, 0, nil); err != nil {
		return e.usageError(err)
	}
	v := readVersion()
	if e.g.format == "json" {
		writeJSON(e.stdout, v)
		return ExitOK
	}
	fmt.Fprintf(e.stdout, "heddle %s (%s, %s)\n", v.Version, v.Go, v.Platform)
	if v.Module != "" {
		fmt.Fprintf(e.stdout, "module:   %s %s\n", v.Module, v.ModuleVersion)
	}
	if v.Revision == "" {
		fmt.Fprintf(e.stdout, "revision: unknown: %s\n", v.Unknown)
		return ExitOK
	}
	state := "clean: the tree held no uncommitted changes"
	if v.Modified == nil {
		state = "whether the tree had uncommitted changes is not recorded"
	} else if *v.Modified {
		state = "modified: the tree had uncommitted changes"
	}
	fmt.Fprintf(e.stdout, "revision: %s (%s", v.Revision, v.VCS)
	if v.Time != "" {
		fmt.Fprintf(e.stdout, ", committed %s", v.Time)
	}
	fmt.Fprintf(e.stdout, "), %s\n", state)
	return ExitOK
}

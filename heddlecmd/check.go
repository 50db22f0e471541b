package heddlecmd

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants/mcpkind"
	"github.com/heddlehq/heddle/plan"
)

// jsonDiagnostic is one diagnostic in --format json output.
type jsonDiagnostic struct {
	Code     diag.Code     `json:"code"`
	Severity diag.Severity `json:"severity"`
	Message  string        `json:"message"`
	File     string        `json:"file"`
	Line     int           `json:"line"`
	Column   int           `json:"column"`
	Path     string        `json:"path"`
}

type checkResult struct {
	OK          bool             `json:"ok"`
	Diagnostics []jsonDiagnostic `json:"diagnostics"`
}

func toJSON(ds diag.Diagnostics) checkResult {
	out := checkResult{OK: !ds.HasErrors(), Diagnostics: []jsonDiagnostic{}}
	for _, d := range ds {
		jd := jsonDiagnostic{Code: d.Code, Severity: d.Severity, Message: d.Summary, Path: d.Path}
		if d.Detail != "" {
			jd.Message += " (" + d.Detail + ")"
		}
		if d.Range != nil {
			jd.File, jd.Line, jd.Column = d.Range.File, d.Range.Line, d.Range.Column
		}
		out.Diagnostics = append(out.Diagnostics, jd)
	}
	return out
}

// printDiagnostics writes diagnostics as text, one per line with its
// remediation indented below.
func printDiagnostics(w io.Writer, ds diag.Diagnostics) {
	for _, d := range ds {
		fmt.Fprintln(w, d.Error())
		if d.Detail != "" {
			fmt.Fprintln(w, indent(d.Detail, "    "))
		}
	}
}

func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func summary(p *plan.Plan, ds diag.Diagnostics) string {
	return fmt.Sprintf("ok: %s, %s, %s",
		plural(len(p.Agents), "agent"), plural(len(mcpkind.PlanServers(p)), "MCP server"), plural(len(ds), "warning"))
}

// CheckOutput renders diagnostics with errors exactly as heddle check
// prints them: the text it writes to stderr, and the JSON --format json
// writes to stdout. The documentation generator shows its examples with it.
func CheckOutput(ds diag.Diagnostics) (text, js string) {
	var t, j strings.Builder
	printDiagnostics(&t, ds)
	fmt.Fprintf(&t, "%s\n", plural(len(ds.Errors()), "error"))
	writeJSON(&j, toJSON(ds))
	return t.String(), j.String()
}

func (e *invocation) check(args []string) int {
	if _, err := e.parseCommand("check", args, 0, 0, nil); err != nil {
		return e.usageError(err)
	}
	p, ds, cfg := e.compileConfig()
	if p != nil {
		// With a lock, the filters are checked against what it pins, as
		// start-up would check them against what the servers offer.
		if lds := lockFilters(cfg.Artifacts); len(lds) > 0 {
			ds = append(ds, lds...)
			ds.Sort()
			if lds.HasErrors() {
				p = nil
			}
		}
	}
	if e.g.format == "json" {
		writeJSON(e.stdout, toJSON(ds))
	} else {
		printDiagnostics(e.stderr, ds)
		if p != nil {
			fmt.Fprintln(e.stdout, summary(p, ds))
		} else {
			fmt.Fprintf(e.stderr, "%s\n", plural(len(ds.Errors()), "error"))
		}
	}
	if p == nil {
		return ExitFail
	}
	return ExitOK
}

func (e *invocation) plan(args []string) int {
	if _, err := e.parseCommand("plan", args, 0, 0, nil); err != nil {
		return e.usageError(err)
	}
	p, ds := e.compile()
	if p == nil {
		if e.g.format == "json" {
			writeJSON(e.stdout, toJSON(ds))
		} else {
			printDiagnostics(e.stderr, ds)
		}
		return ExitFail
	}
	printDiagnostics(e.stderr, ds) // warnings
	writeJSON(e.stdout, p)
	return ExitOK
}

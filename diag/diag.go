// Package diag holds heddle's diagnostics: problems found in configuration,
// at start-up or at call time, each with a stable [Code].
//
// A [Diagnostic] is recorded against a config path ("ai.mcp_servers.runbooks.auth")
// and located in its file later, by one pass over the YAML position index
// ("detect first, locate later"). [Diagnostics] is a nil-able slice: nil means
// no problems, and [Diagnostics.Err] is nil unless one of them is an error.
//
//	var ds diag.Diagnostics
//	ds = ds.Append(diag.Errorf(diag.MCPAuthConflict, "ai.mcp_servers.runbooks",
//		"server %q sets both headers_ref and auth", "runbooks"))
//	if err := ds.Err(); err != nil {
//		return err // prints "MCP_AUTH_CONFLICT ai.mcp_servers.runbooks: server "runbooks" sets …"
//	}
//
// Runtime failures stay ordinary Go errors that carry a code: [New] and [Wrap]
// build them, [Has] and [CodeOf] read them through any amount of %w wrapping.
//
// Tests match codes and paths, never wording: messages may be reworded, codes
// never change once published.
//
// Every code is documented by a catalogue [Entry]: the core's codes by
// [Catalog], a code only one grant kind reports by that kind (see
// grants.Coded), so that docs/errors.md is generated from the set of kinds a
// program links.
package diag

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Severity says whether a diagnostic stops compilation.
type Severity int

const (
	// SeverityError makes compilation fail: no plan is produced.
	SeverityError Severity = iota
	// SeverityWarning is reported but does not stop compilation.
	SeverityWarning
)

// String returns "error" or "warning".
func (s Severity) String() string {
	if s == SeverityWarning {
		return "warning"
	}
	return "error"
}

// MarshalText encodes the severity as "error" or "warning".
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Range locates a diagnostic in a file. Line and Column are 1-based; zero
// means unknown (for example a value that came from an environment variable).
type Range struct {
	File   string
	Line   int
	Column int
}

// String formats the range as file:line:column, dropping unknown parts.
func (r *Range) String() string {
	if r == nil || r.File == "" {
		return ""
	}
	switch {
	case r.Line == 0:
		return r.File
	case r.Column == 0:
		return fmt.Sprintf("%s:%d", r.File, r.Line)
	}
	return fmt.Sprintf("%s:%d:%d", r.File, r.Line, r.Column)
}

// Diagnostic is one problem.
//
// Summary and Detail never contain a secret value: code that builds a
// diagnostic about a value that might be one names the setting, not the value.
type Diagnostic struct {
	Code     Code
	Severity Severity
	Summary  string // one line; may be reworded between releases
	Detail   string // remediation; may be empty
	Path     string // config path, e.g. "ai.mcp_servers.runbooks.auth"; may be empty
	Range    *Range // filled in by a Locate pass; nil when unknown
}

// Error formats the diagnostic on one line: "file:line:col: CODE path: summary".
func (d Diagnostic) Error() string {
	var b strings.Builder
	if loc := d.Range.String(); loc != "" {
		b.WriteString(loc)
		b.WriteString(": ")
	}
	if d.Severity == SeverityWarning {
		b.WriteString("warning: ")
	}
	b.WriteString(string(d.Code))
	if d.Path != "" {
		b.WriteString(" ")
		b.WriteString(d.Path)
	}
	b.WriteString(": ")
	b.WriteString(d.Summary)
	return b.String()
}

// Errorf returns an error-severity diagnostic at path.
func Errorf(code Code, path, format string, args ...any) Diagnostic {
	return Diagnostic{Code: code, Severity: SeverityError, Path: path, Summary: fmt.Sprintf(format, args...)}
}

// Warnf returns a warning-severity diagnostic at path.
func Warnf(code Code, path, format string, args ...any) Diagnostic {
	return Diagnostic{Code: code, Severity: SeverityWarning, Path: path, Summary: fmt.Sprintf(format, args...)}
}

// WithDetail returns a copy of d with its remediation text set.
func (d Diagnostic) WithDetail(format string, args ...any) Diagnostic {
	d.Detail = fmt.Sprintf(format, args...)
	return d
}

// At returns a copy of d located at r.
func (d Diagnostic) At(r *Range) Diagnostic {
	d.Range = r
	return d
}

// Diagnostics is a list of problems; nil means none.
type Diagnostics []Diagnostic

// Append adds diagnostics and returns the extended list, like the builtin append.
func (ds Diagnostics) Append(more ...Diagnostic) Diagnostics { return append(ds, more...) }

// HasErrors reports whether any diagnostic has error severity.
func (ds Diagnostics) HasErrors() bool {
	return slices.ContainsFunc(ds, func(d Diagnostic) bool { return d.Severity == SeverityError })
}

// Errors returns only the error-severity diagnostics.
func (ds Diagnostics) Errors() Diagnostics {
	var out Diagnostics
	for _, d := range ds {
		if d.Severity == SeverityError {
			out = append(out, d)
		}
	}
	return out
}

// Codes returns the code of every diagnostic, in order, with repeats.
func (ds Diagnostics) Codes() []Code {
	out := make([]Code, len(ds))
	for i, d := range ds {
		out[i] = d.Code
	}
	return out
}

// Sort orders diagnostics by file, line, column, path and code, so that
// output is stable whatever order the checks ran in.
func (ds Diagnostics) Sort() {
	slices.SortStableFunc(ds, func(a, b Diagnostic) int {
		var af, bf string
		var al, bl, ac, bc int
		if a.Range != nil {
			af, al, ac = a.Range.File, a.Range.Line, a.Range.Column
		}
		if b.Range != nil {
			bf, bl, bc = b.Range.File, b.Range.Line, b.Range.Column
		}
		return cmp.Or(cmp.Compare(af, bf), cmp.Compare(al, bl), cmp.Compare(ac, bc),
			cmp.Compare(a.Path, b.Path), cmp.Compare(a.Code, b.Code))
	})
}

// Err returns nil when there is no error-severity diagnostic, and otherwise an
// error listing the errors (warnings are left out). The error matches every
// code it carries through [Has].
func (ds Diagnostics) Err() error {
	errs := ds.Errors()
	if len(errs) == 0 {
		return nil
	}
	return &ListError{Diagnostics: errs}
}

// ListError is the error form of a list of error diagnostics.
type ListError struct {
	Diagnostics Diagnostics
}

// Error prints one diagnostic per line.
func (e *ListError) Error() string {
	lines := make([]string, len(e.Diagnostics))
	for i, d := range e.Diagnostics {
		lines[i] = d.Error()
	}
	return strings.Join(lines, "\n")
}

// Error is a runtime failure that carries a code. Message is safe to show to
// anyone (it names settings and servers, never secret values); Cause is the
// underlying error, which may carry a library's own text and so is kept for
// debug logs and errors.Is/As, and left out of Error().
type Error struct {
	Code    Code
	Message string
	Cause   error
}

// Error returns "CODE: message".
func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Cause }

// New returns a coded error with a message that is safe to show.
func New(code Code, format string, args ...any) error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns a coded error with a safe message and the underlying cause.
// The cause is not part of Error(); read it with errors.Unwrap or [Reason].
func Wrap(code Code, cause error, format string, args ...any) error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Cause: cause}
}

// Reason returns the text of err's cause chain below its first coded error,
// for debug logs; it is "" when there is none.
func Reason(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Cause != nil {
		return e.Cause.Error()
	}
	return ""
}

// CodeOf returns the code of the first coded error or diagnostic in err's
// chain, or "" when there is none.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	var l *ListError
	if errors.As(err, &l) && len(l.Diagnostics) > 0 {
		return l.Diagnostics[0].Code
	}
	var d Diagnostic
	if errors.As(err, &d) {
		return d.Code
	}
	return ""
}

// Has reports whether err carries code anywhere in its chain, including any
// diagnostic of a [ListError] and every branch of errors.Join.
func Has(err error, code Code) bool {
	if err == nil {
		return false
	}
	switch e := err.(type) {
	case *Error:
		if e.Code == code {
			return true
		}
	case Diagnostic:
		if e.Code == code {
			return true
		}
	case *ListError:
		for _, d := range e.Diagnostics {
			if d.Code == code {
				return true
			}
		}
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return Has(u.Unwrap(), code)
	case interface{ Unwrap() []error }:
		for _, inner := range u.Unwrap() {
			if Has(inner, code) {
				return true
			}
		}
	}
	return false
}

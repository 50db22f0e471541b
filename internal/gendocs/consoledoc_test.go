package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The runnable documents (README.md, docs/getting-started.md) are the
// source of the tests that run them: TestDocsRun reads each one and runs
// its console blocks in order, in a sandbox, comparing what every command
// prints with what the document shows. The conventions a document follows:
//
// A console block (```console) holds "$ command" lines, each followed by the
// lines it prints: standard output and standard error as they interleave.
// Each command runs with bash -c in the sandbox's directory, `$?` being the
// exit status of the block's previous command, so "$ echo $?" shows it; only
// files carry over from one command to the next. The shown lines
// must be what the command prints, line by line (a carriage return at the
// end of a printed line is dropped), with one placeholder:
//
//   - a line that is only "…" stands for any number of lines, none included;
//   - "…" within a line stands for any text on that line (a time, a
//     duration, a version).
//
// An HTML comment on the lines before a block, or standing alone, is a
// directive to the harness, which a reader of the rendered page does not
// see:
//
//	<!-- not run: REASON -->   the next console block is not run
//	<!-- background -->        the next console block's one command keeps
//	                           running, as in another terminal: the harness
//	                           waits until it has printed the lines shown
//	                           (all it prints as it starts) and the
//	                           127.0.0.1 ports it names accept connections,
//	                           and interrupts it at the end
//	<!-- stop: COMMAND -->     interrupt (as Ctrl-C does) the background
//	                           command that starts with COMMAND, and wait
//	                           for it to exit
//	<!-- retry: DURATION -->   run the next console block again until every
//	                           command prints what it shows, for at most
//	                           DURATION: a state the program reaches by
//	                           itself, later
//	<!-- file: PATH -->        the next fenced block is the content of the
//	                           file PATH, which the reader creates
//	<!-- run: COMMAND -->      run COMMAND, showing nothing: an edit the
//	                           text asks the reader to make by hand
//	<!-- sandbox: TXTAR -->    run the next console block in a directory of
//	                           its own holding the files of the archive
//	                           TXTAR (a path from the repository's root)
//
// A console block that is neither run nor marked "not run" fails the test.

// A docCommand is one "$ command" of a console block and the lines shown
// after it.
type docCommand struct {
	line    int // the command's line in the document, from 1
	command string
	output  []string
}

// A docStep is one thing the harness does, in the document's order: a
// console block (with its directives), a file to write, a command to run
// unseen, or a background command to stop.
type docStep struct {
	line int    // the line of the block's first command, or of the directive
	kind string // "console", "file", "run", "stop"

	commands   []docCommand // console
	notRun     string       // console: the reason it is not run
	background bool         // console
	retry      time.Duration
	sandbox    string // console: a txtar archive to run it in

	arg     string // file: its path; run: the command; stop: the command's start
	content string // file
}

// directiveRE matches a directive: an HTML comment alone on its line.
var directiveRE = regexp.MustCompile(`^<!-- ([a-z ]+?)(?:: (.*?))? -->$`)

// fenceRE matches a fence's opening line and its info string.
var fenceRE = regexp.MustCompile("^```([a-z]*)$")

// parseDoc returns the steps of a document, and an error naming file:line
// for a directive it does not know or one that is not where it belongs.
func parseDoc(name, doc string) ([]docStep, error) {
	lines := strings.Split(doc, "\n")
	var steps []docStep
	var pending []docStep // block directives waiting for their block
	pendingLine := 0
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if m := directiveRE.FindStringSubmatch(l); m != nil {
			d := docStep{line: i + 1, arg: m[2]}
			switch m[1] {
			case "run", "stop":
				if d.arg == "" {
					return nil, fmt.Errorf("%s:%d: %q needs a command", name, i+1, m[1])
				}
				d.kind = m[1]
				steps = append(steps, d)
				continue
			case "not run", "background", "retry", "file", "sandbox":
				d.kind = m[1]
				if (m[1] == "background") != (d.arg == "") {
					return nil, fmt.Errorf("%s:%d: malformed directive %q", name, i+1, l)
				}
				if m[1] == "retry" {
					dur, err := time.ParseDuration(d.arg)
					if err != nil {
						return nil, fmt.Errorf("%s:%d: %v", name, i+1, err)
					}
					d.retry = dur
				}
				if len(pending) == 0 {
					pendingLine = i + 1
				}
				pending = append(pending, d)
				continue
			}
			return nil, fmt.Errorf("%s:%d: unknown directive %q", name, i+1, m[1])
		}
		m := fenceRE.FindStringSubmatch(l)
		if m == nil {
			if strings.TrimSpace(l) != "" && len(pending) > 0 {
				return nil, fmt.Errorf("%s:%d: a directive is not followed by a fenced block", name, pendingLine)
			}
			continue
		}
		start := i + 1 // the block's first line, from 0
		end := start
		for end < len(lines) && !strings.HasPrefix(lines[end], "```") {
			end++
		}
		if end == len(lines) {
			return nil, fmt.Errorf("%s:%d: unterminated fenced block", name, i+1)
		}
		body := lines[start:end]
		i = end
		step, err := blockStep(name, m[1], start, body, pending)
		pending = nil
		if err != nil {
			return nil, err
		}
		if step.kind != "" {
			steps = append(steps, step)
		}
	}
	if len(pending) > 0 {
		return nil, fmt.Errorf("%s:%d: a directive is not followed by a fenced block", name, pendingLine)
	}
	return steps, nil
}

// blockStep makes the step of one fenced block (lang, its lines body from
// the document's line start, from 0) and the directives before it. A block
// that is neither a console block nor a file has no step.
func blockStep(name, lang string, start int, body []string, directives []docStep) (docStep, error) {
	step := docStep{line: start + 1}
	for _, d := range directives {
		if d.kind == "file" {
			if len(directives) > 1 {
				return step, fmt.Errorf("%s:%d: a file block takes no other directive", name, d.line)
			}
			return docStep{line: d.line, kind: "file", arg: d.arg, content: strings.Join(body, "\n") + "\n"}, nil
		}
	}
	if lang != "console" {
		if len(directives) > 0 {
			return step, fmt.Errorf("%s:%d: directive %q before a %s block", name, directives[0].line, directives[0].kind, lang)
		}
		return step, nil
	}
	step.kind = "console"
	for _, d := range directives {
		switch d.kind {
		case "not run":
			step.notRun = d.arg
		case "background":
			step.background = true
		case "retry":
			step.retry = d.retry
		case "sandbox":
			step.sandbox = d.arg
		}
	}
	for j, l := range body {
		if c, ok := strings.CutPrefix(l, "$ "); ok {
			step.commands = append(step.commands, docCommand{line: start + j + 1, command: c})
			continue
		}
		if len(step.commands) == 0 {
			return step, fmt.Errorf("%s:%d: a console block starts with output, not a $ command", name, start+j+1)
		}
		last := &step.commands[len(step.commands)-1]
		last.output = append(last.output, l)
	}
	if len(step.commands) == 0 {
		return step, fmt.Errorf("%s:%d: a console block with no $ command", name, start)
	}
	if step.background && len(step.commands) != 1 {
		return step, fmt.Errorf("%s:%d: a background block holds one command", name, start)
	}
	return step, nil
}

// ellipsis is the placeholder of shown output: a line of its own stands for
// any lines, within a line for any text.
const ellipsis = "…"

// A mismatch is where shown output and printed output first differ: the
// index of the shown line that matched nothing (len(want) when the command
// printed more than is shown), and of the printed line it met (len(got)
// when the output had ended).
type mismatch struct{ want, got int }

// matchOutput matches the printed lines got against the shown lines want,
// with the placeholder. It returns nil when they match, or else the first
// place they differ on the match that went furthest.
func matchOutput(want, got []string) *mismatch {
	type pos struct{ i, j int }
	failed := map[pos]bool{}
	far := mismatch{-1, -1}
	note := func(i, j int) {
		if i > far.want || (i == far.want && j > far.got) {
			far = mismatch{i, j}
		}
	}
	var match func(i, j int) bool
	match = func(i, j int) bool {
		if failed[pos{i, j}] {
			return false
		}
		ok := false
		switch {
		case i == len(want):
			ok = j == len(got)
		case want[i] == ellipsis:
			for k := j; k <= len(got) && !ok; k++ {
				ok = match(i+1, k)
			}
		default:
			ok = j < len(got) && lineMatches(want[i], got[j]) && match(i+1, j+1)
		}
		if !ok {
			if i == len(want) || want[i] != ellipsis {
				note(i, j)
			}
			failed[pos{i, j}] = true
		}
		return ok
	}
	if match(0, 0) {
		return nil
	}
	return &far
}

// lineMatches reports whether the printed line got is the shown line want,
// where "…" in want stands for any text.
func lineMatches(want, got string) bool {
	if !strings.Contains(want, ellipsis) {
		return want == got
	}
	parts := strings.Split(want, ellipsis)
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$").MatchString(got)
}

// outputLines splits what a command printed into lines, without the final
// newline or a line's carriage return (HTTP's headers end in one): no output
// is no lines.
func outputLines(out string) []string {
	out = strings.TrimRight(out, "\n")
	if out == "" {
		return nil
	}
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// describeMismatch says where a command's output first differs from what
// document name shows for it, naming the shown line's file:line.
func describeMismatch(name string, c docCommand, got []string, m *mismatch) string {
	gotLine := "(the output ends)"
	if m.got < len(got) {
		gotLine = fmt.Sprintf("%q", got[m.got])
	}
	var where, wantLine string
	if m.want < len(c.output) {
		where = fmt.Sprintf("%s:%d", name, c.line+1+m.want)
		wantLine = fmt.Sprintf("%q", c.output[m.want])
	} else {
		where = fmt.Sprintf("%s:%d", name, c.line+len(c.output))
		wantLine = "(the shown output ends)"
	}
	return fmt.Sprintf("%s: $ %s\n  shows   %s\n  prints  %s\nfull output:\n%s",
		where, c.command, wantLine, gotLine, strings.Join(got, "\n"))
}

// TestMatchOutput holds the placeholder to its two meanings, and the
// mismatch to the first line that differs.
func TestMatchOutput(t *testing.T) {
	for _, tc := range []struct {
		name      string
		want, got []string
		miss      *mismatch
	}{
		{"equal", []string{"a", "b"}, []string{"a", "b"}, nil},
		{"one character", []string{"a", "b"}, []string{"a", "c"}, &mismatch{1, 1}},
		{"shown output ends", []string{"a"}, []string{"a", "b"}, &mismatch{1, 1}},
		{"output ends", []string{"a", "b"}, []string{"a"}, &mismatch{1, 1}},
		{"no output", nil, nil, nil},
		{"lines for none", []string{"a", "…", "b"}, []string{"a", "b"}, nil},
		{"lines for some", []string{"…", "x", "…"}, []string{"a", "b", "x", "c"}, nil},
		{"lines, then a difference", []string{"…", "x", "y"}, []string{"a", "x", "z"}, &mismatch{2, 2}},
		{"within a line", []string{"time=… level=WARN"}, []string{"time=2026-12-01T08:36:16.624Z level=WARN"}, nil},
		{"within a line, not across", []string{"a…b"}, []string{"a", "b"}, &mismatch{0, 0}},
		{"within a line, the rest differs", []string{"time=… level=WARN"}, []string{"time=1 level=INFO"}, &mismatch{0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.miss, matchOutput(tc.want, tc.got), cmp.AllowUnexported(mismatch{})); diff != "" {
				t.Errorf("matchOutput(%q, %q) (-want +got):\n%s", tc.want, tc.got, diff)
			}
		})
	}
}

// TestParseDoc reads each directive into its step, and refuses one that
// is unknown or stands where it belongs to nothing.
func TestParseDoc(t *testing.T) {
	doc := strings.Join([]string{
		"Text.",
		"<!-- file: a/b.yaml -->",
		"```yaml",
		"k: v",
		"```",
		"<!-- run: touch x -->",
		"<!-- background -->",
		"```console",
		"$ server --listen 127.0.0.1:8090",
		"listening",
		"```",
		"<!-- stop: server -->",
		"<!-- retry: 5s -->",
		"```console",
		"$ one",
		"$ two",
		"2",
		"…",
		"```",
		"<!-- not run: another machine's -->",
		"```console",
		"$ three",
		"```",
		"```sh",
		"make",
		"```",
	}, "\n")
	steps, err := parseDoc("d.md", doc)
	if err != nil {
		t.Fatal(err)
	}
	want := []docStep{
		{line: 2, kind: "file", arg: "a/b.yaml", content: "k: v\n"},
		{line: 6, kind: "run", arg: "touch x"},
		{line: 9, kind: "console", background: true, commands: []docCommand{{9, "server --listen 127.0.0.1:8090", []string{"listening"}}}},
		{line: 12, kind: "stop", arg: "server"},
		{line: 15, kind: "console", retry: 5 * time.Second, commands: []docCommand{{15, "one", nil}, {16, "two", []string{"2", "…"}}}},
		{line: 22, kind: "console", notRun: "another machine's", commands: []docCommand{{22, "three", nil}}},
	}
	if diff := cmp.Diff(want, steps, cmp.AllowUnexported(docStep{}, docCommand{})); diff != "" {
		t.Errorf("parseDoc (-want +got):\n%s", diff)
	}
	for _, bad := range []string{
		"<!-- backgrond -->\n```console\n$ x\n```",
		"<!-- background -->\n\nText.\n```console\n$ x\n```",
		"<!-- retry: soon -->\n```console\n$ x\n```",
		"<!-- not run -->\n```console\n$ x\n```",
		"<!-- background -->\n```console\n$ x\n$ y\n```",
		"```console\noutput first\n```",
		"<!-- background -->\n```sh\nx\n```",
	} {
		if _, err := parseDoc("d.md", bad); err == nil {
			t.Errorf("parseDoc accepts %q", bad)
		}
	}
}

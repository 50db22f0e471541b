package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heddlehq/heddle/internal/syncbuf"
	"golang.org/x/tools/txtar"
)

// runDocs are the documents whose console blocks TestDocsRun runs, each in
// a fresh sandbox. Console blocks elsewhere are run by the test named here,
// or must be marked "not run".
var (
	runDocs      = []string{"README.md", "docs/getting-started.md", "docs/policies.md"}
	docsRunBy    = map[string]string{embeddingDoc: "TestEmbeddingWorker"}
	commandLimit = 30 * time.Second       // one foreground command
	readyLimit   = 20 * time.Second       // a background command's start
	stopLimit    = 10 * time.Second       // a background command's exit after SIGINT
	settle       = 300 * time.Millisecond // how long a background command's start lasts
	slowStep     = 2 * time.Second        // a step that takes longer is logged
)

// TestDocsRun follows each runnable document from top to bottom, as a new
// user would on a fresh clone: in a copy of the repository's files (those
// git tracks or would track) with bin/ built as `make build` builds it and
// on PATH, it runs every console block and fails at the first line where a
// command prints something other than what the document shows. Afterwards
// the copy's `git status` must be clean: the document's clean-up step
// removes whatever it had the reader create, and nothing it has the reader
// do touches a file of the repository.
func TestDocsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the commands and follows the guides; skipped with -short")
	}
	for _, tool := range []string{"go", "git", "bash", "curl", "diff"} {
		if _, err := exec.LookPath(tool); err != nil {
			needed(t, "%s is not on PATH: %v", tool, err)
		}
	}
	start := time.Now()
	docs := map[string][]docStep{}
	for _, name := range runDocs {
		steps, err := parseDoc(name, readDoc(t, name))
		if err != nil {
			t.Fatal(err)
		}
		docs[name] = steps
		for _, port := range docPorts(steps) {
			l, err := net.Listen("tcp", "127.0.0.1:"+port)
			if err != nil {
				needed(t, "%s needs 127.0.0.1:%s, which is taken: %v", name, port, err)
			}
			l.Close()
		}
	}
	bin, built := t.TempDir(), false
	ran := 0
	for _, name := range runDocs {
		t.Run(name, func(t *testing.T) {
			s := newSandbox(t)
			if !built {
				s.build(bin)
				built = true
			}
			s.linkBin(bin)
			ran += s.follow(name, docs[name])
			s.stopAll()
			s.assertClean(name)
		})
	}
	t.Logf("ran %d commands in %v", ran, time.Since(start).Round(time.Millisecond))
}

// TestConsoleBlocksRun fails when a console block of a document of the
// repository is neither run by a test nor marked "not run" with its reason,
// or when a document's directives do not parse.
func TestConsoleBlocksRun(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		needed(t, "git is not on PATH: %v", err)
	}
	for _, name := range repoFiles(t) {
		if !strings.HasSuffix(name, ".md") {
			continue
		}
		steps, err := parseDoc(name, readDoc(t, name))
		if err != nil {
			t.Error(err)
			continue
		}
		if slices.Contains(runDocs, name) || docsRunBy[name] != "" {
			continue
		}
		for _, s := range steps {
			if s.kind == "console" && s.notRun == "" {
				t.Errorf("%s:%d: a console block no test runs; run it (internal/gendocs runDocs) or mark it <!-- not run: REASON -->", name, s.line)
			}
		}
	}
}

// repoFiles returns the files of the repository that git tracks or would
// track (not those .gitignore covers), as paths from its root; a tracked
// file deleted from the working tree is left out.
func repoFiles(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v\n%s", err, exitStderr(err))
	}
	var files []string
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if _, err := os.Lstat(filepath.Join(root, name)); err == nil && !slices.Contains(files, name) {
			files = append(files, name)
		}
	}
	return files
}

// needed skips the test for a missing tool or a taken port, and fails it
// with CI=true.
func needed(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format+" (required with CI=true)", args...)
	}
	t.Skipf(format, args...)
}

// localPortRE matches a loopback address a document's command listens on.
var localPortRE = regexp.MustCompile(`127\.0\.0\.1:([0-9]+)`)

// docPorts returns the ports the background commands of steps listen on.
func docPorts(steps []docStep) []string {
	var ports []string
	for _, s := range steps {
		if s.kind == "console" && s.background && s.notRun == "" {
			ports = append(ports, commandPorts(s.commands[0])...)
		}
	}
	return ports
}

// commandPorts returns the loopback ports a command or its shown output
// names.
func commandPorts(c docCommand) []string {
	var ports []string
	for _, text := range append([]string{c.command}, c.output...) {
		for _, m := range localPortRE.FindAllStringSubmatch(text, -1) {
			if !slices.Contains(ports, m[1]) {
				ports = append(ports, m[1])
			}
		}
	}
	return ports
}

// A sandbox is a copy of the repository's files, a git repository of its
// own so that its status shows what following a document changed.
type sandbox struct {
	t   *testing.T
	dir string
	env []string
	bg  []*background
}

func newSandbox(t *testing.T) *sandbox {
	t.Helper()
	s := &sandbox{t: t, dir: t.TempDir()}
	s.env = sandboxEnv(s.dir)
	copyRepo(t, s.dir)
	s.git(s.dir, "init", "-q")
	s.git(s.dir, "add", ".")
	s.git(s.dir, "-c", "user.name=docs", "-c", "user.email=docs@example.com", "commit", "-q", "--no-verify", "-m", "clone")
	return s
}

// sandboxEnv is the environment of the commands run in the sandbox dir:
// the test's, with dir/bin first on PATH, the go command as a clone has it,
// and no HEDDLE_ variable or git setting of the test's own.
func sandboxEnv(dir string) []string {
	env := []string{
		"PATH=" + filepath.Join(dir, "bin") + string(os.PathListSeparator) + os.Getenv("PATH"),
		// What a clone's `make build` does: the build records the
		// repository's revision.
		"GOFLAGS=-buildvcs=auto", "GOWORK=off",
		// The sandbox's git knows only the repository's own .gitignore.
		"GIT_CONFIG_GLOBAL=" + os.DevNull, "GIT_CONFIG_NOSYSTEM=1",
	}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		set := slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, k+"=") })
		if !set && !strings.HasPrefix(k, "HEDDLE_") && !strings.HasPrefix(k, "GIT_") {
			env = append(env, kv)
		}
	}
	return env
}

// copyRepo copies the repository's files (repoFiles) into dir.
func copyRepo(t *testing.T, dir string) {
	t.Helper()
	for _, name := range repoFiles(t) {
		src := filepath.Join(root, name)
		info, err := os.Lstat(src)
		if err != nil {
			t.Fatal(err)
		}
		if !info.Mode().IsRegular() {
			continue
		}
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
}

// git runs git in dir and returns its output, failing the test on an error.
func (s *sandbox) git(dir string, args ...string) string {
	s.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = s.env
	out, err := cmd.Output()
	if err != nil {
		s.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, exitStderr(err))
	}
	return string(out)
}

func exitStderr(err error) []byte {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.Stderr
	}
	return nil
}

// build builds the commands of the sandbox's copy into bin as `make build`
// builds them into bin/.
func (s *sandbox) build(bin string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin+string(filepath.Separator), "./cmd/...", "./examples/incidents/cmd/...")
	cmd.Dir = s.dir
	cmd.Env = s.env
	if out, err := cmd.CombinedOutput(); err != nil {
		s.t.Fatalf("go build: %v\n%s", err, out)
	}
}

// linkBin gives the sandbox the binaries another one built.
func (s *sandbox) linkBin(from string) {
	s.t.Helper()
	entries, err := os.ReadDir(from)
	if err != nil {
		s.t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(s.dir, "bin"), 0o755); err != nil {
		s.t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.Link(filepath.Join(from, e.Name()), filepath.Join(s.dir, "bin", e.Name())); err != nil {
			s.t.Fatal(err)
		}
	}
}

// follow does the steps of document name in order and returns how many
// commands it ran.
func (s *sandbox) follow(name string, steps []docStep) int {
	s.t.Helper()
	ran := 0
	for _, st := range steps {
		began := time.Now()
		ran += s.step(name, st)
		if d := time.Since(began); d > slowStep {
			s.t.Logf("%s:%d: %s took %v", name, st.line, st.kind, d.Round(time.Millisecond))
		}
	}
	return ran
}

// step does one step of document name and returns how many commands it
// ran.
func (s *sandbox) step(name string, st docStep) int {
	s.t.Helper()
	switch st.kind {
	case "file":
		path := filepath.Join(s.dir, filepath.FromSlash(st.arg))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			s.t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(st.content), 0o644); err != nil {
			s.t.Fatal(err)
		}
	case "run":
		if out, status := s.run(s.dir, st.arg, 0); status != 0 {
			s.t.Errorf("%s:%d: <!-- run: %s --> exited %d:\n%s", name, st.line, st.arg, status, out)
		}
	case "stop":
		s.stop(name, st)
	case "console":
		switch {
		case st.notRun != "":
			return 0
		case st.background:
			s.start(name, st.commands[0])
		case st.sandbox != "":
			s.console(name, st, s.unpack(st.sandbox))
		default:
			s.console(name, st, s.dir)
		}
		return len(st.commands)
	}
	return 0
}

// unpack writes the files of the txtar archive (a path from the
// repository's root) into a new directory and returns it.
func (s *sandbox) unpack(archive string) string {
	s.t.Helper()
	a, err := txtar.ParseFile(filepath.Join(root, archive))
	if err != nil {
		s.t.Fatal(err)
	}
	dir := s.t.TempDir()
	for _, f := range a.Files {
		path := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			s.t.Fatal(err)
		}
		if err := os.WriteFile(path, f.Data, 0o644); err != nil {
			s.t.Fatal(err)
		}
	}
	return dir
}

// console runs a console block's commands in dir and reports each one that
// prints other than the block shows; with retry, it runs the block again
// until none does or the time is up.
func (s *sandbox) console(name string, st docStep, dir string) {
	s.t.Helper()
	deadline := time.Now().Add(st.retry)
	for {
		var failures []string
		status := 0
		for _, c := range st.commands {
			var out string
			out, status = s.run(dir, c.command, status)
			got := outputLines(out)
			if m := matchOutput(c.output, got); m != nil {
				failures = append(failures, describeMismatch(name, c, got, m))
			}
		}
		if len(failures) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, f := range failures {
				s.t.Error(f)
			}
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// run runs command with bash in dir, `$?` being status, and returns what it
// printed on standard output and standard error, interleaved, and its exit
// status. It stops every process the command started.
func (s *sandbox) run(dir, command string, status int) (string, int) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandLimit)
	defer cancel()
	var out bytes.Buffer
	cmd := s.command(ctx, dir, command, status, &out)
	err := cmd.Run()
	killGroup(cmd)
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0
	case ctx.Err() != nil:
		s.t.Errorf("$ %s: still running after %v", command, commandLimit)
		return out.String(), -1
	case errors.As(err, &ee):
		return out.String(), ee.ExitCode()
	}
	s.t.Fatalf("$ %s: %v", command, err)
	return "", 0
}

// command is bash running command in a process group of its own, with its
// output (both streams, one pipe) to out.
func (s *sandbox) command(ctx context.Context, dir, command string, status int, out *bytes.Buffer) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "bash", "-c", fmt.Sprintf("(exit %d); %s", status, command))
	cmd.Dir = dir
	cmd.Env = s.env
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

// killGroup kills what is left of a finished command's process group.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// A background is a command that keeps running, as in a terminal of its
// own.
type background struct {
	command string
	cmd     *exec.Cmd
	out     *syncbuf.Buffer
	done    chan struct{} // closed when it has exited
}

// start starts a background command and waits until it has printed the
// lines shown and the loopback ports it names accept connections; what it
// prints from settle later on is not compared.
func (s *sandbox) start(name string, c docCommand) {
	s.t.Helper()
	out := &syncbuf.Buffer{}
	cmd := exec.Command("bash", "-c", c.command)
	cmd.Dir = s.dir
	cmd.Env = s.env
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("%s:%d: $ %s: %v", name, c.line, c.command, err)
	}
	b := &background{command: c.command, cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		killGroup(cmd)
		close(b.done)
	}()
	s.bg = append(s.bg, b)
	s.t.Cleanup(func() { s.interrupt(b) })

	deadline := time.Now().Add(readyLimit)
	for {
		got := outputLines(out.String())
		m := matchOutput(c.output, got)
		exited := false
		select {
		case <-b.done:
			exited = true
		default:
		}
		if m == nil && portsOpen(commandPorts(c)) {
			// What it prints as it starts is what the block shows: a
			// line it prints a moment later is not left out.
			time.Sleep(settle)
			if got := outputLines(out.String()); matchOutput(c.output, got) != nil {
				s.t.Fatal(describeMismatch(name, c, got, matchOutput(c.output, got)))
			}
			return
		}
		if exited || time.Now().After(deadline) {
			if m != nil {
				s.t.Fatal(describeMismatch(name, c, got, m))
			}
			s.t.Fatalf("%s:%d: $ %s: its ports %v do not accept connections (exited: %v)", name, c.line, c.command, commandPorts(c), exited)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// portsOpen reports whether every loopback port accepts a connection.
func portsOpen(ports []string) bool {
	for _, p := range ports {
		conn, err := net.DialTimeout("tcp", "127.0.0.1:"+p, time.Second)
		if err != nil {
			return false
		}
		conn.Close()
	}
	return true
}

// stop interrupts the background command a stop directive names.
func (s *sandbox) stop(name string, st docStep) {
	s.t.Helper()
	for _, b := range s.bg {
		if strings.HasPrefix(b.command, st.arg) {
			s.interrupt(b)
			return
		}
	}
	s.t.Fatalf("%s:%d: no background command starts with %q", name, st.line, st.arg)
}

// stopAll interrupts every background command still running.
func (s *sandbox) stopAll() {
	for _, b := range s.bg {
		s.interrupt(b)
	}
}

// interrupt sends SIGINT to a background command's process group, as
// Ctrl-C in its terminal would, and waits for it to exit; after stopLimit
// it kills the group.
func (s *sandbox) interrupt(b *background) {
	select {
	case <-b.done:
		return
	default:
	}
	_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGINT)
	select {
	case <-b.done:
	case <-time.After(stopLimit):
		s.t.Errorf("$ %s: still running %v after SIGINT; killed", b.command, stopLimit)
		_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
		<-b.done
	}
}

// assertClean fails when following the document left the sandbox's git
// status other than clean.
func (s *sandbox) assertClean(name string) {
	s.t.Helper()
	if st := s.git(s.dir, "status", "--porcelain", "--untracked-files=all"); st != "" {
		s.t.Errorf("%s: following it leaves git status unclean:\n%s", name, st)
	}
}

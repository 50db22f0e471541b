package sqllive_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver, to set up test databases
)

// pgServer is a throwaway PostgreSQL cluster: initdb into a temporary
// directory, listening on 127.0.0.1 at a random port only (no Unix socket),
// trust authentication, durability off. As root, initdb and the server run
// as the unprivileged user nobody (initdb refuses root).
type pgServer struct {
	bin  string // the directory of initdb, pg_ctl
	dir  string // owned by the server's user; data/ and log inside
	port int
	as   string // user to run as, "" for the current one
}

// pgDirPrefix names the directories of test clusters, so a later run can
// find the leftovers of one that was killed.
const pgDirPrefix = "heddle-pg-"

// needPostgres skips the test with a reason, or fails it under CI=true.
func needPostgres(t *testing.T, format string, args ...any) {
	t.Helper()
	reason := fmt.Sprintf(format, args...) + " (install it with integration/postgres-install.sh)"
	if os.Getenv("CI") == "true" {
		t.Fatalf("PostgreSQL is required under CI=true: %s", reason)
	}
	t.Skipf("PostgreSQL is not available: %s", reason)
}

// pgBinDir finds initdb and pg_ctl: Debian's /usr/lib/postgresql/<major>/bin
// (newest first), then PATH.
func pgBinDir() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		return pgMajor(b) - pgMajor(a)
	})
	for _, d := range dirs {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "pg_ctl")) {
			return d
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		d := filepath.Dir(p)
		if isExec(filepath.Join(d, "pg_ctl")) {
			return d
		}
	}
	return ""
}

func pgMajor(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func isExec(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// startPostgres starts a cluster for the test and stops it (and removes its
// files) in t.Cleanup.
func startPostgres(t *testing.T) *pgServer {
	t.Helper()
	bin := pgBinDir()
	if bin == "" {
		needPostgres(t, "initdb and pg_ctl were not found under /usr/lib/postgresql/*/bin or on PATH")
	}
	killLeftoverClusters(t)
	dir, err := os.MkdirTemp("", pgDirPrefix)
	if err != nil {
		t.Fatal(err)
	}
	s := &pgServer{bin: bin, dir: dir}
	if err := os.WriteFile(filepath.Join(dir, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.stop)
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			needPostgres(t, "running as root, and there is no user nobody to run initdb as")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		s.as = "nobody"
	}
	if out, err := s.run("initdb", "-D", s.data(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	var lastErr error
	for range 3 { // a free port may be taken between choosing and binding it
		s.port = freePort(t)
		conf := fmt.Sprintf("\nport = %d\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = ''\n"+
			"fsync = off\nsynchronous_commit = off\nfull_page_writes = off\nmax_connections = 50\nshared_buffers = 16MB\n", s.port)
		f, err := os.OpenFile(filepath.Join(s.data(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.WriteString(conf)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		out, err := s.run("pg_ctl", "-D", s.data(), "-l", filepath.Join(s.dir, "log"), "-w", "-t", "30", "start")
		if err == nil {
			return s
		}
		lastErr = fmt.Errorf("pg_ctl start: %v\n%s\n%s", err, out, s.log())
	}
	t.Fatal(lastErr)
	return nil
}

func (s *pgServer) data() string { return filepath.Join(s.dir, "data") }

func (s *pgServer) log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "log"))
	return string(b)
}

// run runs one of the cluster's programs as its user.
func (s *pgServer) run(prog string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	path := filepath.Join(s.bin, prog)
	var cmd *exec.Cmd
	if s.as != "" {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", s.as, "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "LANG=C")
	return cmd.CombinedOutput()
}

// stop stops the server, killing it if pg_ctl cannot, and removes its files.
func (s *pgServer) stop() {
	if _, err := os.Stat(filepath.Join(s.data(), "postmaster.pid")); err == nil {
		if _, err := s.run("pg_ctl", "-D", s.data(), "-m", "immediate", "-w", "-t", "10", "stop"); err != nil {
			killPostmaster(s.dir)
		}
	}
	_ = os.RemoveAll(s.dir)
}

// killLeftoverClusters stops the clusters of earlier test processes that
// died without cleaning up: directories named pgDirPrefix* whose owner.pid
// is no longer running. Clusters of live test processes are left alone.
func killLeftoverClusters(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), pgDirPrefix+"*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, "owner.pid"))
		if err != nil {
			continue
		}
		if owner, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && alive(owner) {
			continue
		}
		killPostmaster(dir)
		if err := os.RemoveAll(dir); err == nil {
			t.Logf("removed the leftover test cluster %s", dir)
		}
	}
}

// killPostmaster kills the postmaster whose data directory is dir/data,
// after checking that the process is that postmaster.
func killPostmaster(dir string) {
	b, err := os.ReadFile(filepath.Join(dir, "data", "postmaster.pid"))
	if err != nil {
		return
	}
	lines := strings.SplitN(string(b), "\n", 3)
	pid, err := strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil || pid <= 1 || len(lines) < 2 || strings.TrimSpace(lines[1]) != filepath.Join(dir, "data") {
		return
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !bytes.Contains(cmdline, []byte("postgres")) {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGKILL) // its children exit when it does
	for i := 0; i < 50 && alive(pid); i++ {
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports whether a process runs; a zombie (killed, not yet reaped)
// does not.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && err != syscall.EPERM {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // no procfs: trust kill
	}
	// pid (comm) state …; comm may contain spaces and parentheses.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z' && stat[i+2] != 'X'
	}
	return true
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// dsn is a connection string for user to database db.
func (s *pgServer) dsn(user, db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable&connect_timeout=5", user, s.port, db)
}

// exec runs SQL as the superuser on db (simple protocol: several statements
// may be given at once).
func (s *pgServer) exec(t *testing.T, db string, stmts ...string) {
	t.Helper()
	conn, err := sql.Open("pgx", s.dsn("postgres", db))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, st := range stmts {
		if _, err := conn.Exec(st); err != nil {
			t.Fatalf("%s: %v", st, err)
		}
	}
}

// count returns the number of rows of a table, read as the superuser.
func (s *pgServer) count(t *testing.T, db, table string) int {
	t.Helper()
	conn, err := sql.Open("pgx", s.dsn("postgres", db))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var n int
	if err := conn.QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

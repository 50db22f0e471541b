package serve_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/heddlehq/heddle/internal/benchpair"
)

// The load test's callers over HTTP run in a process of their own, as a
// worker's callers do: the test binary run again with loadClientEnv set
// reads loadJobs on its standard input, one at a time, makes the calls of
// each and writes a loadReport on its standard output, until its input
// ends. The worker's process then spends nothing on the callers' side of
// HTTP, its garbage collector scans no caller's goroutine and counts no
// caller's allocation; the callers still share the machine's CPUs with it.
const loadClientEnv = "HEDDLE_LOAD_CLIENT"

// loadJob is what the load client is asked to do: Calls POSTs of Body to
// URL with Header, made by Callers goroutines at once, after Warmup calls
// that are not timed.
type loadJob struct {
	URL     string
	Header  http.Header
	Body    string
	Want    string // a call succeeds when its status is 200 and its body contains Want
	Callers int
	Calls   int
	Warmup  int
}

// loadReport is what the load client measured of the timed calls: how
// long they took, each and all together, and the CPU time the client's
// process spent on them.
type loadReport struct {
	Seconds   float64
	CPU       time.Duration
	Durations []time.Duration
	Err       string
}

// runLoadClient is the load client's main. For each job (a line of JSON)
// it reads on stdin, it makes the warm-up calls, says "warm" on stdout,
// waits for a line on stdin, makes the timed calls and writes the report
// (a line of JSON) on stdout. The calls of every job to one URL share one
// client, so that a job finds the connections the jobs before it left
// open, as a worker's callers keep theirs.
func runLoadClient() int {
	in := bufio.NewReader(os.Stdin)
	clients := map[string]*http.Client{}
	defer func() {
		for _, c := range clients {
			c.CloseIdleConnections()
		}
	}()
	for {
		line, err := in.ReadBytes('\n')
		if err == io.EOF && len(bytes.TrimSpace(line)) == 0 {
			return 0
		}
		var job loadJob
		if err := json.Unmarshal(line, &job); err != nil {
			fmt.Fprintln(os.Stderr, "load client:", err)
			return 2
		}
		client := clients[job.URL]
		if client == nil {
			client = &http.Client{
				Transport: &http.Transport{MaxIdleConnsPerHost: max(job.Callers, 2), DisableCompression: true},
				Timeout:   30 * time.Second,
			}
			clients[job.URL] = client
		}
		if err := json.NewEncoder(os.Stdout).Encode(job.run(client, in)); err != nil {
			return 2
		}
	}
}

// run makes the job's calls with client; between the warm-up and the
// timed calls it says "warm" on stdout and reads a line of go.
func (job loadJob) run(client *http.Client, goAhead *bufio.Reader) loadReport {
	want := []byte(job.Want)
	call := func() error { return post(client, job.URL, job.Header, job.Body, want) }
	if _, err := callAtOnce(job.Callers, job.Warmup, call); err != nil {
		return loadReport{Err: err.Error()}
	}
	fmt.Println("warm")
	if _, err := goAhead.ReadString('\n'); err != nil {
		return loadReport{Err: "no go-ahead: " + err.Error()}
	}
	cpu0, start := processCPU(), time.Now()
	ds, err := callAtOnce(job.Callers, job.Calls, call)
	rep := loadReport{Seconds: time.Since(start).Seconds(), CPU: processCPU() - cpu0, Durations: ds}
	if err != nil {
		rep.Err = err.Error()
	}
	return rep
}

// post POSTs body to url with header h and reports an error unless the
// answer is a 200 whose body contains want.
func post(client *http.Client, url string, h http.Header, body string, want []byte) error {
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header = h.Clone()
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	got, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || res.StatusCode != 200 || !bytes.Contains(got, want) {
		return fmt.Errorf("%d %v %.200s", res.StatusCode, err, got)
	}
	return nil
}

// callAtOnce makes n calls with callers goroutines at once and returns
// how long each took; a caller stops at its first error, and the first
// error is returned.
func callAtOnce(callers, n int, call func() error) ([]time.Duration, error) {
	var (
		next  atomic.Int64
		mu    sync.Mutex
		all   = make([]time.Duration, 0, n)
		first error
		wg    sync.WaitGroup
	)
	for range callers {
		wg.Go(func() {
			var ds []time.Duration
			for next.Add(1) <= int64(n) {
				t0 := time.Now()
				if err := call(); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
				ds = append(ds, time.Since(t0))
			}
			mu.Lock()
			all = append(all, ds...)
			mu.Unlock()
		})
	}
	wg.Wait()
	return all, first
}

// loadRemote makes b.N calls of job through the load client, in a process
// of its own, and reports what it measured as load does. The timer runs
// from the end of the client's warm-up to its report.
func loadRemote(b *testing.B, job loadJob) {
	job.Calls, job.Warmup = b.N, 4*job.Callers
	c := startLoadClient(b)
	defer c.close()
	var cpu0, cpu time.Duration
	rep := c.run(job, func() {
		b.ReportAllocs()
		b.ResetTimer()
		cpu0 = processCPU()
	}, func() {
		cpu = processCPU() - cpu0
		b.StopTimer()
	})
	if rep.Err != "" {
		b.Fatal(rep.Err)
	}
	b.ReportMetric(float64(b.N)/rep.Seconds, "calls/s")
	reportCPU(b, cpu)
	if rep.CPU > 0 {
		b.ReportMetric(float64(rep.CPU.Microseconds())/float64(b.N), "client-cpu-µs/call")
	}
	b.ReportMetric(benchpair.Percentile(rep.Durations, 50)/1e3, "p50-µs")
	b.ReportMetric(benchpair.Percentile(rep.Durations, 99)/1e3, "p99-µs")
}

// runLoadClientProcess runs the load client on job in a process of its own
// and returns its report; timed is called between its warm-up and its
// timed calls. The process has ended when it returns.
func runLoadClientProcess(tb testing.TB, job loadJob, timed func()) loadReport {
	tb.Helper()
	c := startLoadClient(tb)
	defer c.close()
	return c.run(job, timed, func() {})
}

// A loadClient is the load client running in a process of its own, given
// one job after another. It is not safe for concurrent use.
type loadClient struct {
	tb     testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Reader
	stderr *bytes.Buffer
}

// startLoadClient starts the load client's process. The caller closes it.
func startLoadClient(tb testing.TB) *loadClient {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), loadClientEnv+"=1")
	c := &loadClient{tb: tb, cmd: cmd, stderr: &bytes.Buffer{}}
	cmd.Stderr = c.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	c.stdin, c.out = stdin, bufio.NewReader(stdout)
	return c
}

// close ends the client's input and waits for its process to end.
func (c *loadClient) close() {
	_ = c.stdin.Close()
	_ = c.cmd.Wait()
}

// run has the client do job and returns its report: timed is called
// between its warm-up and its timed calls, done as soon as its report
// arrives, before it is decoded.
func (c *loadClient) run(job loadJob, timed, done func()) loadReport {
	c.tb.Helper()
	fail := func(what string, err error) {
		_ = c.cmd.Process.Kill()
		c.tb.Fatalf("load client: %s: %v: %s", what, err, c.stderr.Bytes())
	}
	if err := json.NewEncoder(c.stdin).Encode(job); err != nil {
		fail("job", err)
	}
	line, err := c.out.ReadString('\n')
	if err != nil {
		fail("warm-up", err)
	}
	if line != "warm\n" { // the warm-up failed: the report follows at once
		var rep loadReport
		if json.Unmarshal([]byte(line), &rep) != nil || rep.Err == "" {
			fail("warm-up: "+line, err)
		}
		return rep
	}
	timed()
	if _, err := io.WriteString(c.stdin, "go\n"); err != nil {
		fail("go-ahead", err)
	}
	report, err := c.out.ReadBytes('\n')
	done()
	if err != nil {
		fail("report", err)
	}
	var rep loadReport
	if err := json.Unmarshal(report, &rep); err != nil {
		fail("report", err)
	}
	return rep
}

// TestLoadClient: the load client makes the calls it is asked for from a
// process of its own, times each, and reports a failed call (here, an
// answer without what the job wants) rather than counting it.
func TestLoadClient(t *testing.T) {
	f := startTestFront(t)
	job := loadJob{
		URL:    f.url + "/v1/agents/u/tools/serve_echo",
		Header: http.Header{"Content-Type": {"application/json"}, "X-Heddle-Subject": {"bench"}},
		Body:   `{"text": "hello"}`, Want: `"text":"hello"`,
		Callers: 4, Calls: 40, Warmup: 8,
	}
	timed := false
	rep := runLoadClientProcess(t, job, func() { timed = true })
	if rep.Err != "" || !timed || len(rep.Durations) != 40 || rep.Seconds <= 0 || rep.CPU <= 0 {
		t.Errorf("40 calls by 4 callers: timed %v, %d durations in %vs using %v of CPU, error %q", timed, len(rep.Durations), rep.Seconds, rep.CPU, rep.Err)
	}
	job.Want = `"text":"goodbye"`
	rep = runLoadClientProcess(t, job, func() { t.Error("a warm-up that failed went on to the timed calls") })
	if !strings.Contains(rep.Err, "200") || !strings.Contains(rep.Err, "hello") {
		t.Errorf("an answer without what the job wants: error %q, want the status and the body", rep.Err)
	}
}

// TestLoadClientJobs: one load client process does one job after another,
// and the calls of a later job to the same URL go over the connections the
// earlier one opened.
func TestLoadClientJobs(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"text":"hello"}`)
	}))
	var conns atomic.Int64
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	job := loadJob{
		URL: srv.URL, Body: `{"text": "hello"}`, Want: `"text":"hello"`,
		Callers: 1, Calls: 10, Warmup: 2,
	}
	c := startLoadClient(t)
	defer c.close()
	for i := range 3 {
		timed, done := false, false
		rep := c.run(job, func() { timed = true }, func() { done = true })
		if rep.Err != "" || !timed || !done || len(rep.Durations) != 10 {
			t.Fatalf("job %d: timed %v, done %v, %d durations, error %q", i, timed, done, len(rep.Durations), rep.Err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("3 jobs of one caller to one URL opened %d connections, want 1", n)
	}
}

// processCPU returns the CPU time this process has used so far, user and
// system, all threads.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

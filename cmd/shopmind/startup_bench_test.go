package main

// End-to-end checks of the built binary: how fast `shopmind serve` becomes ready against an
// already migrated database, how much memory it holds when idle, and that it starts, refuses
// bad configuration and shuts down the way operators rely on.
//
//	go test ./cmd/shopmind/ -run TestServe -count=1 -v
//	go test ./cmd/shopmind/ -run '^$' -bench . -benchtime 5x
//
// The binary is built once per test process (lazily, so runs that select nothing here do not
// build it) by internal/testutil/proc, whose Main removes it at the end.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shopmind/shopmind/internal/testutil/proc"
	"github.com/shopmind/shopmind/internal/testutil/tier"
)

const (
	// benchDatabaseURL is the database the started processes use; the first start creates
	// and migrates it, later starts find it migrated.
	benchDatabaseURL = "postgres://postgres@127.0.0.1:5432/shopmind_bench?sslmode=disable"
	postgresAddr     = "127.0.0.1:5432"
	// benchJWTSecret is a fixed secret long enough for production mode (config.MinSecretLen).
	benchJWTSecret = "shopmind-bench-jwt-secret-0123456789abcdef"

	readyPoll    = 2 * time.Millisecond
	readyTimeout = 30 * time.Second
	stopTimeout  = 20 * time.Second
)

func TestMain(m *testing.M) { proc.Main(m) }

// requirePostgres skips tb when PostgreSQL does not accept connections.
func requirePostgres(tb testing.TB) {
	tb.Helper()
	tier.Needs(tb, "PostgreSQL")
	conn, err := net.DialTimeout("tcp", postgresAddr, 2*time.Second)
	if err != nil {
		tb.Skipf("PostgreSQL is not reachable at %s (start it, e.g. `make deps`): %v", postgresAddr, err)
	}
	_ = conn.Close()
}

// server is one running `shopmind serve`.
type server struct {
	cmd      *exec.Cmd
	httpAddr string
	started  time.Time // just before exec
	stderr   *proc.Buffer
	client   *http.Client
	exited   chan struct{} // closed when the process has exited and waitErr is set
	waitErr  error
}

// startServer starts `shopmind serve` on fresh loopback ports against the bench database.
// The process is killed at the end of tb if it still runs.
func startServer(tb testing.TB) *server {
	tb.Helper()
	s := newServer(tb)
	s.start(tb)
	return s
}

// newServer prepares, without starting it, `shopmind serve` on fresh loopback ports
// against the bench database.
func newServer(tb testing.TB) *server {
	tb.Helper()
	bin := proc.Binary(tb)
	ports := proc.FreePorts(tb, 2)
	s := &server{
		httpAddr: ports[0],
		stderr:   &proc.Buffer{},
		// No keep-alive: every poll is a fresh loopback connection, nothing lingers after stop.
		client: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}},
		exited: make(chan struct{}),
	}
	s.cmd = exec.Command(bin, "serve")
	s.cmd.Env = proc.Env(
		"SHOPMIND_HTTP_ADDR="+ports[0],
		"SHOPMIND_GRPC_ADDR="+ports[1],
		"SHOPMIND_JWT_SECRET="+benchJWTSecret,
		"SHOPMIND_DATABASE_URL="+benchDatabaseURL,
	)
	s.cmd.Stdout = io.Discard
	s.cmd.Stderr = s.stderr
	return s
}

// start execs the prepared process; it is killed at the end of tb if it still runs.
func (s *server) start(tb testing.TB) {
	tb.Helper()
	s.started = time.Now()
	if err := s.cmd.Start(); err != nil {
		tb.Fatalf("start shopmind: %v", err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.exited)
	}()
	tb.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	})
}

// waitReady polls GET /readyz every readyPoll until it answers 200 and returns the time
// from exec to that answer. It fails tb, with the process's stderr, when the process exits
// first or readyTimeout passes.
func (s *server) waitReady(tb testing.TB) time.Duration {
	tb.Helper()
	url := "http://" + s.httpAddr + "/readyz"
	deadline := s.started.Add(readyTimeout)
	for {
		resp, err := s.client.Get(url)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(s.started)
			}
		}
		select {
		case <-s.exited:
			tb.Fatalf("shopmind exited before ready (%v); stderr:\n%s", s.waitErr, s.stderr)
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("shopmind not ready after %v (last: %v); stderr:\n%s", readyTimeout, err, s.stderr)
		}
		time.Sleep(readyPoll)
	}
}

// stop sends SIGTERM and fails tb unless the process exits 0 within stopTimeout.
func (s *server) stop(tb testing.TB) {
	tb.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		tb.Fatalf("SIGTERM: %v", err)
	}
	select {
	case <-s.exited:
	case <-time.After(stopTimeout):
		_ = s.cmd.Process.Kill()
		<-s.exited
		tb.Fatalf("shopmind did not exit within %v of SIGTERM; stderr:\n%s", stopTimeout, s.stderr)
	}
	if s.waitErr != nil {
		tb.Fatalf("shopmind exited with %v after SIGTERM; stderr:\n%s", s.waitErr, s.stderr)
	}
}

// rssMiB reads VmRSS of the process from /proc.
func (s *server) rssMiB(tb testing.TB) float64 {
	tb.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		tb.Skipf("VmRSS needs /proc: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// VmRSS:	   23456 kB
		fields := strings.Fields(sc.Text())
		if len(fields) == 3 && fields[0] == "VmRSS:" && fields[2] == "kB" {
			kb, err := strconv.ParseFloat(fields[1], 64)
			if err != nil {
				tb.Fatalf("VmRSS %q: %v", sc.Text(), err)
			}
			return kb / 1024
		}
	}
	tb.Fatalf("no VmRSS in /proc/%d/status (%v)", s.cmd.Process.Pid, sc.Err())
	return 0
}

// BenchmarkServeStartup measures exec-to-ready of `shopmind serve` with a migrated
// database. ns/op covers only startup; port picking and shutdown run with the timer stopped.
func BenchmarkServeStartup(b *testing.B) {
	requirePostgres(b)
	proc.Binary(b)
	warm := startServer(b) // creates and migrates shopmind_bench on the very first run
	warm.waitReady(b)
	warm.stop(b)

	var total time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		s := newServer(b) // ports are picked with the timer stopped
		b.StartTimer()
		s.start(b)
		total += s.waitReady(b)
		b.StopTimer()
		s.stop(b)
	}
	b.ReportMetric(float64(total.Microseconds())/1e3/float64(b.N), "ms/ready")
}

// idleRSS is the last BenchmarkIdleRSS measurement. The framework calls a benchmark with
// b.N == 1 first and then with growing b.N; the process is measured once per such series.
var idleRSS struct {
	measured bool
	mib      float64
}

// BenchmarkIdleRSS reports the resident memory of a ready, idle `shopmind serve`. It is a
// single measurement, not a per-iteration cost, so ns/op is suppressed.
func BenchmarkIdleRSS(b *testing.B) {
	if b.N == 1 || !idleRSS.measured {
		requirePostgres(b)
		s := startServer(b)
		s.waitReady(b)
		time.Sleep(time.Second)
		idleRSS.mib = s.rssMiB(b)
		idleRSS.measured = true
		s.stop(b)
	}
	// Nothing is repeated per iteration. The timer is left running so that, under the
	// default -benchtime, the idle second of the first call ends the series at b.N == 1.
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(idleRSS.mib, "MiB-idle-rss")
}

// runRefused runs the binary with args and env (added to a SHOPMIND_-free environment) and
// returns its output, failing t unless it exits non-zero on its own.
func runRefused(t *testing.T, env []string, args ...string) string {
	t.Helper()
	bin := proc.Binary(t) // built (once) before the clock starts: a loaded machine builds slowly
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = proc.Env(env...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("shopmind %s did not refuse to start (killed after 15s); output:\n%s", strings.Join(args, " "), out)
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("shopmind %s: want a non-zero exit, got %v; output:\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestServeGracefulShutdown(t *testing.T) {
	// The refusals happen before the database is touched, so they run without PostgreSQL.
	t.Run("unknown target", func(t *testing.T) {
		ports := proc.FreePorts(t, 2)
		out := runRefused(t, []string{
			"SHOPMIND_HTTP_ADDR=" + ports[0], "SHOPMIND_GRPC_ADDR=" + ports[1],
			"SHOPMIND_JWT_SECRET=" + benchJWTSecret, "SHOPMIND_DATABASE_URL=" + benchDatabaseURL,
		}, "serve", "--target=nope")
		if !strings.Contains(out, `unknown target "nope"`) {
			t.Errorf("output does not name the unknown target:\n%s", out)
		}
	})
	t.Run("production without JWT secret", func(t *testing.T) {
		ports := proc.FreePorts(t, 2)
		out := runRefused(t, []string{
			"SHOPMIND_MODE=production",
			"SHOPMIND_HTTP_ADDR=" + ports[0], "SHOPMIND_GRPC_ADDR=" + ports[1],
			"SHOPMIND_DATABASE_URL=" + benchDatabaseURL,
		}, "serve")
		if !strings.Contains(out, "SHOPMIND_JWT_SECRET") {
			t.Errorf("output does not name SHOPMIND_JWT_SECRET:\n%s", out)
		}
	})

	requirePostgres(t)
	s := startServer(t)
	t.Logf("ready after %v", s.waitReady(t))

	t.Run("healthz", func(t *testing.T) {
		resp, err := s.client.Get("http://" + s.httpAddr + "/healthz")
		if err != nil {
			t.Fatalf("GET /healthz: %v", err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("read /healthz: %v", err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET /healthz: status %d, body %s", resp.StatusCode, body)
		}
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("GET /healthz: Content-Type %q, want application/json", ct)
		}
		var env struct {
			Code *int `json:"code"`
		}
		if err := json.Unmarshal(body, &env); err != nil || env.Code == nil || *env.Code != 0 {
			t.Errorf("GET /healthz: want a JSON envelope with code 0, got %s (%v)", body, err)
		}
	})

	s.stop(t)
	if !loggedMessage(s.stderr.String(), "shopmind stopped") {
		t.Errorf(`stderr has no log record "shopmind stopped":\n%s`, s.stderr)
	}
}

// loggedMessage reports whether the JSON log lines hold a record with msg.
func loggedMessage(logs, msg string) bool {
	for _, line := range strings.Split(logs, "\n") {
		var rec struct {
			Msg string `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == msg {
			return true
		}
	}
	return false
}

// Package proc runs real programs in tests: the shopmind binary built once per test process
// (Binary), and any program as a Process that can be stopped gracefully (SIGTERM), killed
// (SIGKILL) or left to the test's cleanup. The process tests (cmd/shopmind's startup and
// shutdown, tests/cluster's one process per target) use it.
package proc

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shopmind/shopmind/internal/testutil/tier"
)

var build struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// Main is TestMain for packages that use Binary: it runs the tests and removes the built
// binary afterwards.
func Main(m *testing.M) {
	code := m.Run()
	if build.dir != "" {
		_ = os.RemoveAll(build.dir)
	}
	os.Exit(code)
}

// Binary builds ./cmd/shopmind once per test process (into a temporary folder that Main
// removes) and returns its path. It skips tb in the unit tier.
func Binary(tb testing.TB) string {
	tb.Helper()
	tier.Needs(tb, "the built shopmind binary (go build, exec)")
	build.once.Do(func() {
		root, err := ModuleRoot()
		if err != nil {
			build.err = err
			return
		}
		goTool, err := exec.LookPath("go")
		if err != nil {
			build.err = fmt.Errorf("go tool not found: %w", err)
			return
		}
		if build.dir, err = os.MkdirTemp("", "shopmind-bin-"); err != nil {
			build.err = err
			return
		}
		out := filepath.Join(build.dir, "shopmind")
		cmd := exec.Command(goTool, "build", "-o", out, "./cmd/shopmind")
		cmd.Dir = root
		if msg, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go build ./cmd/shopmind: %w\n%s", err, msg)
			return
		}
		build.path = out
	})
	if build.err != nil {
		tb.Fatalf("build shopmind: %v", build.err)
	}
	return build.path
}

// ModuleRoot is the directory holding go.mod, found upwards from this file (or from the
// working directory, the package directory under go test, when the file path is not
// usable, e.g. with -trimpath).
func ModuleRoot() (string, error) {
	var starts []string
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		starts = append(starts, filepath.Dir(file))
	}
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	for _, dir := range starts {
		for d := dir; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				return d, nil
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return "", errors.New("go.mod not found above the test file")
}

// FreePorts returns n distinct loopback addresses that were free a moment ago. All
// listeners stay open until every port is picked, so the ports differ.
func FreePorts(tb testing.TB, n int) []string {
	tb.Helper()
	addrs := make([]string, n)
	for i := range addrs {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatalf("free port: %v", err)
		}
		defer l.Close()
		addrs[i] = l.Addr().String()
	}
	return addrs
}

// Env is the environment of a started shopmind: the test's own environment without any
// SHOPMIND_* variable (so a developer's settings cannot leak in), plus vars (KEY=value).
func Env(vars ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SHOPMIND_") {
			env = append(env, kv)
		}
	}
	return append(env, vars...)
}

// Buffer collects a process's output; exec copies into it from its own goroutine.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// Process is one started program. Its stdout and stderr go to Output.
type Process struct {
	Name    string
	Cmd     *exec.Cmd
	Output  *Buffer
	Started time.Time // just before exec
	exited  chan struct{}
	waitErr error
}

// Start execs cmd (whose Stdout and Stderr it sets) under name; the process is killed at
// the end of tb if it still runs.
func Start(tb testing.TB, name string, cmd *exec.Cmd) *Process {
	tb.Helper()
	p := &Process{Name: name, Cmd: cmd, Output: &Buffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.Output, p.Output
	p.Started = time.Now()
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	tb.Cleanup(func() { p.Kill() })
	return p
}

// Exited is closed once the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Running reports whether the process has not exited yet.
func (p *Process) Running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Err is the process's exit error (nil for exit 0); valid once Exited is closed.
func (p *Process) Err() error { return p.waitErr }

// Kill sends SIGKILL, as a crash would, and waits for the process to be gone.
func (p *Process) Kill() {
	if p.Running() {
		_ = p.Cmd.Process.Signal(syscall.SIGKILL)
	}
	<-p.exited
}

// Terminate sends SIGTERM and fails tb unless the process exits, however, within timeout
// (it is killed then).
func (p *Process) Terminate(tb testing.TB, timeout time.Duration) {
	tb.Helper()
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		tb.Fatalf("%s: SIGTERM: %v", p.Name, err)
	}
	select {
	case <-p.exited:
	case <-time.After(timeout):
		p.Kill()
		tb.Fatalf("%s did not exit within %v of SIGTERM; output:\n%s", p.Name, timeout, p.Output)
	}
}

// Stop is Terminate, and fails tb unless the process exited 0.
func (p *Process) Stop(tb testing.TB, timeout time.Duration) {
	tb.Helper()
	p.Terminate(tb, timeout)
	if p.waitErr != nil {
		tb.Fatalf("%s exited with %v after SIGTERM; output:\n%s", p.Name, p.waitErr, p.Output)
	}
}

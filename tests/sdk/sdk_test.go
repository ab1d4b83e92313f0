//go:build platform

// Package sdk runs the SDKs' own test suites (sdk/typescript, sdk/python) against a running
// platform: the whole platform with demo data behind the real gateway, and its gRPC
// listener. `make sdk` generates both SDKs from the contract first, so a change of the
// contract that breaks a client fails here. The toolchain comes from scripts/sdk-deps.sh
// (run by scripts/test-deps.sh); a missing tool fails the test, naming it.
package sdk

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/testutil/stack"
	"github.com/shopmind/shopmind/internal/version"
)

// repoRoot is the repository's root, two folders above this file.
func repoRoot(t *testing.T) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("runtime.Caller failed")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func run(t *testing.T, dir string, env []string, name string, args ...string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Fatalf("%s is not installed: run scripts/sdk-deps.sh (scripts/test-deps.sh runs it)", name)
	}
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s in %s: %v\n%s", name, strings.Join(args, " "), dir, err, out)
	}
	t.Logf("%s %s: ok\n%s", name, strings.Join(args, " "), tail(out, 1500))
}

func tail(b []byte, n int) string {
	if len(b) > n {
		return "..." + string(b[len(b)-n:])
	}
	return string(b)
}

func TestSDKs(t *testing.T) {
	s := stack.Start(t, func(c *app.Config) { c.DemoData = true })
	root := repoRoot(t)
	run(t, root, nil, "make", "sdk")
	env := []string{"SHOPMIND_URL=" + s.BaseURL, "SHOPMIND_GRPC_URL=http://" + s.GRPCAddr,
		"SHOPMIND_GRPC_ADDR=" + s.GRPCAddr, "SHOPMIND_PASSWORD=" + stack.AdminPassword}
	t.Run("typescript", func(t *testing.T) {
		run(t, filepath.Join(root, "sdk", "typescript"), env, "npm", "test")
	})
	t.Run("python", func(t *testing.T) {
		// Debian's interpreter, which python3-grpcio and python3-protobuf serve.
		run(t, filepath.Join(root, "sdk", "python"), env, "/usr/bin/python3", "-m", "unittest", "-v")
	})
}

// The SDKs carry the contract's version (internal/version), which the served documents say.
func TestSDKVersionsFollowTheContract(t *testing.T) {
	root := repoRoot(t)
	files := map[string]string{
		"sdk/typescript/package.json":         `"version": "` + version.Version + `"`,
		"sdk/python/pyproject.toml":           `version = "` + version.Version + `"`,
		"sdk/python/shopmind_sdk/__init__.py": `__version__ = "` + version.Version + `"`,
	}
	for name, want := range files {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), want) {
			t.Errorf("%s does not say %s (internal/version)", name, want)
		}
	}
}

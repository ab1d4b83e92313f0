//go:build platform

// Package web runs the web console's tests (web/, README.md "Web console"): its Vitest unit
// tests and its browser tests (web/e2e/run.mjs: Debian's chromium driven by playwright-core)
// against a platform started here with demo data on random ports, with short-lived access
// tokens so that the console's refresh is exercised, captchas after failed logins, and an
// empty tenant. The console is the one embedded in the binary (internal/console/dist): what
// `make run` serves. The browser suite writes screenshots and the measured budgets to
// web/e2e/out.
package web

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/testutil/stack"
	"github.com/shopmind/shopmind/services/tenant"
)

// tokenTTL is the access token lifetime of the platform under test: short, so the console
// refreshes several times during the suite and the refresh test waits past one expiry.
const tokenTTL = 8 * time.Second

func webDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../../web")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "playwright-core")); err != nil {
		t.Fatalf("web/node_modules is not installed: run scripts/web-deps.sh (make deps does): %v", err)
	}
	return dir
}

func run(t *testing.T, dir string, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	t.Logf("%s", out)
}

// TestConsoleUnit runs the Vitest suite (the chat stream reducer on recorded streams and
// the helpers).
func TestConsoleUnit(t *testing.T) {
	dir := webDir(t)
	run(t, dir, []string{"CI=true"}, "npx", "--no-install", "vitest", "run")
}

// TestConsoleInBrowser runs every browser flow in English and in Chinese.
func TestConsoleInBrowser(t *testing.T) {
	dir := webDir(t)
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is not installed: run scripts/browser-deps.sh (make deps does)")
	}
	s := stack.Start(t, func(c *app.Config) {
		c.Auth.AccessTTL = tokenTTL
		c.CaptchaMode = "on-failure"
		c.DemoData = true
	})
	const emptyTenant = "empty"
	if _, err := tenant.CreateTenant(context.Background(), s.DB.Pool, tenant.NewTenant{Code: emptyTenant, Name: "Empty shop",
		AdminUsername: "admin", AdminPassword: stack.AdminPassword}, 4); err != nil {
		t.Fatal(err)
	}
	run(t, dir, []string{
		"SHOPMIND_URL=" + s.BaseURL,
		"SHOPMIND_PASSWORD=" + stack.AdminPassword,
		"SHOPMIND_EMPTY_TENANT=" + emptyTenant,
		"SHOPMIND_TOKEN_TTL=" + strconv.Itoa(int(tokenTTL/time.Second)),
		"CHROMIUM=" + chromium,
	}, "node", "e2e/run.mjs")
}

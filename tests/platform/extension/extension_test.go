//go:build platform

// Package extension runs the browser extension's suite (extension/test) in Debian's chromium
// against the whole platform: the extension built into the binary (internal/crxbundle, the
// files the platform serves as its download), loaded unpacked, signing in through its popup,
// collecting from local pages that imitate a merchant back office and uploading through a
// proxy of the suite's that counts batches and injects faults. The toolchain comes from
// scripts/extension-deps.sh (run by scripts/test-deps.sh); a missing tool fails the test.
package extension

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/testutil/stack"
	"github.com/shopmind/shopmind/services/crx"
)

func repoRoot(t *testing.T) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("runtime.Caller failed")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

func TestExtensionInChromium(t *testing.T) {
	for _, tool := range []string{"node", "chromium"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed: run scripts/test-deps.sh", tool)
		}
	}
	root := repoRoot(t)
	ext := filepath.Join(root, "extension")
	if _, err := os.Stat(filepath.Join(ext, "node_modules", "playwright-core")); err != nil {
		t.Fatal("extension/node_modules is missing: run scripts/extension-deps.sh (scripts/test-deps.sh runs it)")
	}
	// A newer release exists (1.1.0) while the built one (the manifest's) is still accepted:
	// the popup shows the update notice.
	s := stack.Start(t, func(c *app.Config) {
		cfg := app.ServiceConfig[crx.Config](c, "crx")
		cfg.LatestVersion, cfg.MinVersion = "1.1.0", crx.DefaultLatestVersion
	})
	admin := s.DemoAdmin(t)
	shop := stack.AddShop(t, s.DB, admin.Tenant, "Back office shop", "taobao", "tb-ext-1")
	out := filepath.Join(ext, "test-output")
	cmd := exec.Command("node", "--test", "--test-reporter=spec", "--test-concurrency=1", "test/")
	cmd.Dir = ext
	cmd.Env = append(os.Environ(),
		"SHOPMIND_URL="+s.BaseURL, "SHOPMIND_TENANT=demo", "SHOPMIND_USER=admin", "SHOPMIND_PASSWORD="+stack.AdminPassword,
		"SHOPMIND_ADMIN_TOKEN="+admin.Token, "SHOPMIND_SHOP_ID="+strconv.FormatInt(shop, 10),
		"EXTENSION_DIR="+filepath.Join(root, "internal", "crxbundle", "dist"), "TEST_OUTPUT="+out)
	b, err := cmd.CombinedOutput()
	t.Logf("extension suite (screenshots in %s):\n%s", out, b)
	if err != nil {
		t.Fatalf("extension suite failed: %v", err)
	}
}

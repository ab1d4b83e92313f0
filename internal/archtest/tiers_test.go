package archtest

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// platformConstraint is the first line of every Go file in tests/: the whole-platform tests
// build only with -tags platform (make test), so the unit tier does not link them.
const platformConstraint = "//go:build platform\n"

// TestPlatformTestsCarryTheTag fails naming a file of tests/ that would build without the
// tag: it would be linked by `go test -short ./...`, where it can only skip.
func TestPlatformTestsCarryTheTag(t *testing.T) {
	root := filepath.Join("..", "..", "tests")
	seen := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		seen++
		if b, err := os.ReadFile(path); err != nil {
			return err
		} else if !bytes.HasPrefix(b, []byte(platformConstraint)) {
			t.Errorf("%s: first line must be %q", path, strings.TrimSpace(platformConstraint))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen == 0 {
		t.Fatalf("no Go files under %s", root)
	}
}

package crxbundle

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// The version is the extension's manifest's, and the zip holds the built files.
func TestZipHoldsTheBuiltExtension(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "extension", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct{ Version string }
	if err := json.Unmarshal(src, &m); err != nil {
		t.Fatal(err)
	}
	if Version() != m.Version || m.Version == "" {
		t.Fatalf("version %q, manifest.json says %q: run make extension", Version(), m.Version)
	}
	b, err := Zip()
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range zr.File {
		names[f.Name] = true
	}
	for _, want := range []string{"manifest.json", "background.js", "content.js", "page-hook.js", "popup.html", "popup.js", "_locales/en/messages.json", "_locales/zh_CN/messages.json"} {
		if !names[want] {
			t.Errorf("the zip lacks %s (has %v)", want, names)
		}
	}
	again, _ := build()
	if !bytes.Equal(again, b) {
		t.Error("two builds of the zip differ")
	}
}

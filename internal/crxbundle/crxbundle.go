// Package crxbundle holds the built browser extension (extension/, built by `make extension`
// into dist/, committed so `go build` needs no Node.js) and serves it as a zip. The version
// is the one of the extension's manifest.json: the single source of the version the crx
// service announces.
package crxbundle

import (
	"archive/zip"
	"bytes"
	"embed"
	"encoding/json"
	"io/fs"
	"sync"
	"time"
)

//go:embed all:dist
var files embed.FS

// DownloadPath is where the gateway serves the zip (the crx service's route); the version
// check's download_url names it when SHOPMIND_CRX_DOWNLOAD_URL is not set.
const DownloadPath = "/api/v1/data/crx/download/shopmind-extension.zip"

var (
	once    sync.Once
	zipped  []byte
	version string
	failure error
)

func load() {
	b, err := files.ReadFile("dist/manifest.json")
	if err != nil {
		failure = err
		return
	}
	var m struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		failure = err
		return
	}
	version = m.Version
	zipped, failure = build()
}

// build zips dist/ with fixed times and sorted names, so the same files give the same bytes.
func build() ([]byte, error) {
	sub, err := fs.Sub(files, "dist")
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	stamp := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	err = fs.WalkDir(sub, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(sub, path)
		if err != nil {
			return err
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: path, Method: zip.Deflate, Modified: stamp})
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Version is the built extension's version (its manifest's).
func Version() string {
	once.Do(load)
	return version
}

// Zip is the built extension as a zip archive (load it unpacked after extracting, or
// publish it to a store).
func Zip() ([]byte, error) {
	once.Do(load)
	return zipped, failure
}

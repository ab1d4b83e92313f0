// Package console serves the web console (web/, README.md "Web console"): the single-page
// application built by `make web` into dist/ and embedded in the binary, so `go build` needs
// no Node.js. The gateway mounts Handler at / for the GET and HEAD requests that are not the
// API's (gateway.Options.Console); internal/app passes it, so neither the gateway nor the
// services depend on this package.
//
// Files under assets/ carry a content hash in their names and are cached for a year; every
// other path that is not a file of the build answers index.html (the application routes it),
// never cached, so a new build is picked up at the next load.
package console

import (
	"bytes"
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed all:dist
var dist embed.FS

// Files is the embedded build (dist/ of `make web`).
func Files() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // dist is embedded above: cannot happen
	}
	return sub
}

// Handler serves the embedded console.
func Handler() http.Handler { return handler(Files()) }

func handler(files fs.FS) http.Handler {
	started := time.Now()
	index, err := fs.ReadFile(files, "index.html")
	if err != nil {
		index = []byte("<!doctype html><title>ShopMind</title><p>The console is not built: run <code>make web</code>.</p>\n")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
		if name != "" && name != "index.html" {
			if b, err := fs.ReadFile(files, name); err == nil {
				if strings.HasPrefix(name, "assets/") {
					h.Set("Cache-Control", "public, max-age=31536000, immutable")
				} else {
					h.Set("Cache-Control", "no-cache")
				}
				http.ServeContent(w, r, name, started, bytes.NewReader(b))
				return
			}
			if strings.HasPrefix(name, "assets/") { // a missing hashed file is a real 404, not the page
				http.NotFound(w, r)
				return
			}
		}
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Frame-Options", "DENY")
		http.ServeContent(w, r, "index.html", started, bytes.NewReader(index))
	})
}

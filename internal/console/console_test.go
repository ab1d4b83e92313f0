package console

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
)

func TestHandler(t *testing.T) {
	files := fstest.MapFS{
		"index.html":        {Data: []byte(`<!doctype html><div id="root"></div>`)},
		"assets/app-abc.js": {Data: []byte("console.log(1)")},
		"favicon.svg":       {Data: []byte("<svg/>")},
	}
	h := handler(files)
	for _, c := range []struct {
		method, path string
		status       int
		body, cache  string
	}{
		{"GET", "/", 200, `id="root"`, "no-cache"},
		{"GET", "/chat/123", 200, `id="root"`, "no-cache"},         // the application's route
		{"GET", "/../../etc/passwd", 200, `id="root"`, "no-cache"}, // cleaned: never leaves the build
		{"GET", "/assets/app-abc.js", 200, "console.log", "immutable"},
		{"GET", "/assets/gone-123.js", 404, "", ""}, // a missing hashed file is not the page
		{"GET", "/favicon.svg", 200, "<svg/>", "no-cache"},
		{"POST", "/", 405, "", ""},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
		b, _ := io.ReadAll(rec.Body)
		if rec.Code != c.status || !strings.Contains(string(b), c.body) || !strings.Contains(rec.Header().Get("Cache-Control"), c.cache) {
			t.Errorf("%s %s: %d %q cache %q", c.method, c.path, rec.Code, b, rec.Header().Get("Cache-Control"))
		}
	}
	if Handler() == nil {
		t.Fatal("no handler")
	}
	if _, err := Files().Open("index.html"); err != nil {
		t.Errorf("the embedded build has no index.html: run make web (%v)", err)
	}
}

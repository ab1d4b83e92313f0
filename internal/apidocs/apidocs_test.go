package apidocs

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	genopenapi "github.com/shopmind/shopmind/gen/openapi"
)

// discard is a ResponseWriter that keeps only what it needs to check the answer.
type discard struct {
	h    http.Header
	n    int
	host bool
}

func (d *discard) Header() http.Header { return d.h }
func (d *discard) WriteHeader(int)     {}
func (d *discard) Write(b []byte) (int, error) {
	d.n += len(b)
	if bytes.Contains(b, []byte(`"host": "docs.example:8443"`)) {
		d.host = true
	}
	return len(b), nil
}

// The documents are served with the request's host without being copied on each request
// (they were copied twice: one bytes.Replace per placeholder).
func TestDocumentsServedWithoutCopies(t *testing.T) {
	h := Handler("")
	serve := func() *discard {
		r := httptest.NewRequest("GET", PathOpenAPI, nil)
		r.Host = "docs.example:8443"
		d := &discard{h: http.Header{}}
		h.ServeHTTP(d, r)
		return d
	}
	if d := serve(); !d.host || d.n < len(genopenapi.V2)-100 {
		t.Fatalf("served %d bytes (document %d), host replaced %v", d.n, len(genopenapi.V2), d.host)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const n = 10
	for range n {
		serve()
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > uint64(len(genopenapi.V2))/4 {
		t.Errorf("%d bytes allocated per request for a %d-byte document: it is copied", per, len(genopenapi.V2))
	}
}

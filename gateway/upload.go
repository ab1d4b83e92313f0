package gateway

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
)

// File uploads (restapi.Upload): the body goes to the service as it comes, past the body
// limit and the WAF's body inspection, without the upstream timeout.

type uploadRoute struct {
	method string
	// path matches the request path, whatever environment or service prefix precedes it.
	path *regexp.Regexp
}

// registerUploads records the backends' upload routes (once per route).
func (g *Gateway) registerUploads(backends []Backend) {
	for _, b := range backends {
		for _, u := range b.Uploads {
			method := u.Method
			if method == "" {
				method = http.MethodPost
			}
			key := method + " " + templateVar.ReplaceAllString(u.Path, "{$1=*}")
			if g.streaming[key] {
				continue
			}
			g.streaming[key] = true
			expr := "(^|/)" + regexp.QuoteMeta(strings.TrimPrefix(u.Path, "/")) + "$"
			expr = regexp.MustCompile(`\\\{[^}]*\}`).ReplaceAllString(expr, "[^/]+")
			g.uploads = append(g.uploads, uploadRoute{method: method, path: regexp.MustCompile(expr)})
		}
	}
}

// isUpload reports whether r is a file upload.
func (g *Gateway) isUpload(r *http.Request) bool {
	for _, u := range g.uploads {
		if r.Method == u.method && u.path.MatchString(r.URL.Path) {
			return true
		}
	}
	return false
}

type uploadBodyKey struct{}

type uploadBody struct {
	body   io.ReadCloser
	length int64
	header http.Header
	te     []string
}

// wafExceptUploadBodies inspects every request with the WAF; an upload is inspected
// without its body and content type, which are put back for the service.
func (g *Gateway) wafExceptUploadBodies(waf func(http.Handler) http.Handler, next http.Handler) http.Handler {
	inspected := waf(next)
	if len(g.uploads) == 0 {
		return inspected
	}
	withoutBody := waf(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b, ok := r.Context().Value(uploadBodyKey{}).(uploadBody); ok {
			r.Body, r.ContentLength, r.Header, r.TransferEncoding = b.body, b.length, b.header, b.te
		}
		next.ServeHTTP(w, r)
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.isUpload(r) {
			inspected.ServeHTTP(w, r)
			return
		}
		hidden := r.WithContext(context.WithValue(r.Context(), uploadBodyKey{}, uploadBody{body: r.Body, length: r.ContentLength, header: r.Header, te: r.TransferEncoding}))
		// The file's type (text/csv, an xlsx type) is no body the WAF parses.
		hidden.Body, hidden.ContentLength, hidden.Header = http.NoBody, 0, r.Header.Clone()
		hidden.Header.Del("Content-Type")
		hidden.Header.Set("Content-Length", "0")
		hidden.TransferEncoding = nil
		withoutBody.ServeHTTP(w, hidden)
	})
}

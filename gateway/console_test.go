package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/shopmind/shopmind/gateway"
)

// TestConsoleMount: the console answers GET and HEAD on the paths that are not the API's;
// API paths (plain, partner, service- or environment-prefixed), health, metrics and the
// documents keep their answers, and other methods never reach the console.
func TestConsoleMount(t *testing.T) {
	console := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "<html>console "+r.URL.Path+"</html>")
	})
	docs := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "docs") })
	gw, err := gateway.New(context.Background(), gateway.Options{Console: console, Documentation: docs,
		DocumentationPaths: func(p string) bool { return p == "/docs" || p == "/openapi.json" }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	defer srv.Close()
	for _, c := range []struct {
		method, path string
		console      bool
		contains     string
	}{
		{"GET", "/", true, "console /"},
		{"GET", "/chat/3f1c0f7e", true, "console /chat/3f1c0f7e"},
		{"HEAD", "/explorer", true, ""},
		{"GET", "/analysis/metrics", true, "console /analysis/metrics"}, // a menu path, not an API one
		{"GET", "/assets/app-1234.js", true, "console /assets/app-1234.js"},
		{"GET", "/api/v1/nope", false, `"code":404`},
		{"GET", "/api", false, `"code":404`},
		{"GET", "/tenant/api/v1/nope", false, `"code":404`},
		{"GET", "/analysis/api/v1/nope", false, `"code":404`},
		{"GET", "/shop/api/v1/basic/goods", false, `"code":404`}, // a mistyped service prefix is still the API
		{"GET", "/test/api/v1/nope", false, `"code":404`},
		{"GET", "/local/anything", false, `"code":404`},
		{"GET", "/api-partner_a/x", false, `"code":404`},
		{"POST", "/chat", false, `"code":404`},
		{"GET", "/healthz", false, `"status":"ok"`},
		{"GET", "/metrics", false, "# HELP"},
		{"GET", "/docs", false, "docs"},
		{"GET", "/openapi.json", false, "docs"},
	} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		isConsole := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html")
		if isConsole != c.console {
			t.Errorf("%s %s: console %v, want %v (HTTP %d %s)", c.method, c.path, isConsole, c.console, resp.StatusCode, b)
		}
		if c.contains != "" && !strings.Contains(string(b), c.contains) {
			t.Errorf("%s %s: %q lacks %q", c.method, c.path, b, c.contains)
		}
	}
}

//go:build platform

package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/shopmind/shopmind/internal/testutil/stack"
	"github.com/shopmind/shopmind/internal/version"
)

// The documents and the reference page answer without a token, through the whole edge
// (WAF, authentication, environment routing), naming the address they were reached at and
// the binary's version.
func TestDocumentationServedWithoutToken(t *testing.T) {
	s := stack.Start(t)
	host := strings.TrimPrefix(s.BaseURL, "http://")
	for _, c := range []struct{ path, key, want string }{
		{"/openapi.json", "swagger", "2.0"},
		{"/openapi-3.1.json", "openapi", "3.1.0"},
	} {
		r := s.Do(t, "GET", c.path, "")
		var doc map[string]any
		if r.Status != 200 || json.Unmarshal(r.Body, &doc) != nil || doc[c.key] != c.want {
			t.Fatalf("GET %s: HTTP %d %.200s", c.path, r.Status, r.Body)
		}
		info, _ := doc["info"].(map[string]any)
		if info["title"] != "ShopMind API" || info["version"] != version.Version {
			t.Errorf("GET %s: info %v", c.path, info)
		}
		if !strings.Contains(string(r.Body), `"`+host+`"`) && !strings.Contains(string(r.Body), `"http://`+host+`"`) {
			t.Errorf("GET %s does not name the server it was reached at (%s)", c.path, host)
		}
		if r.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("GET %s: no CORS header for generators and editors", c.path)
		}
	}
	for _, c := range []struct{ path, contentType, contains string }{
		{"/docs", "text/html", "swagger-ui-bundle.js"},
		{"/docs/init.js", "text/javascript", "/openapi-3.1.json"},
		{"/docs/swagger-ui-bundle.js", "text/javascript", "SwaggerUIBundle"},
		{"/docs/swagger-ui.css", "text/css", ".swagger-ui"},
	} {
		r := s.Do(t, "GET", c.path, "")
		if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), c.contentType) || !strings.Contains(string(r.Body), c.contains) {
			t.Errorf("GET %s: HTTP %d %s %.100s", c.path, r.Status, r.Header.Get("Content-Type"), r.Body)
		}
	}
	if r := s.Do(t, "GET", "/docs/nothing", ""); r.Status != 404 {
		t.Errorf("GET /docs/nothing: HTTP %d", r.Status)
	}
	// Whatever path is asked under /docs/, the metrics count it under one route label.
	s.Do(t, "GET", "/docs/nothing-"+strings.Repeat("x", 20), "")
	metrics := string(s.Do(t, "GET", "/metrics", "").Body)
	if strings.Contains(metrics, "/docs/nothing") || !strings.Contains(metrics, `route="documentation"`) {
		t.Errorf("documentation paths in the metrics' route labels:\n%s", grepLines(metrics, "/docs"))
	}
}

func grepLines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

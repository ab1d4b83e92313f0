package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// envPathSeeds are request targets from EDGE.md, the README and the tests, with escapes.
var envPathSeeds = []string{
	"/tenant/api/v1/tenant/auth/login", "/api/v1/auth/login", "/local/tenant/api/v1/tenant/users",
	"/test/basic/api/v1/basic/orders", "/local/api/v1/chat/messages", "/test/api/v1/auth/login",
	"/api/v1/chat/sessions/1/messages", "/analysis/api/v1/analytics/metrics", "/notify/api/v1/notify/x",
	"/basic/api/v1/basic/goods?sort=name,desc", "/local", "/local/", "/localx/api/v1", "/tenant/api",
	"/tenantx/api/v1/x", "/local%2Fapi/v1/x", "/tenant%2Fapi/v1/tenant/auth/login", "/%6cocal/api/v1/x",
	"/api/v1/basic/goods/a%2Fb", "/local/tenant/api/v1/a%20b", "/", "*", "", "/local/local/api/v1/x",
}

// checkRawPath is the rewrite's promise about escaping: a RawPath left on the URL is still
// an encoding of Path (EscapedPath, x-http-path and the partner proxies read it).
func checkRawPath(t *testing.T, in string, u *url.URL) {
	t.Helper()
	if u.RawPath == "" {
		return
	}
	if p, err := url.PathUnescape(u.RawPath); err != nil || p != u.Path || u.RawPath[0] != u.Path[0] {
		t.Fatalf("%q: RawPath %q does not encode Path %q", in, u.RawPath, u.Path)
	}
}

// FuzzPathRewrite checks cutPathPrefix and stripServicePrefix: the result is the input or a
// suffix of it (or "/" for a bare prefix), never a path with a prefix it did not have.
func FuzzPathRewrite(f *testing.F) {
	for _, p := range envPathSeeds {
		f.Add(p, "/local")
	}
	f.Add("/tenant/api/v1/x", "/tenant")
	f.Add("/x", "")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, path, prefix string) {
		rest, ok := cutPathPrefix(path, prefix)
		if !ok {
			if rest != path {
				t.Fatalf("cutPathPrefix(%q, %q) = %q, false: changed the path", path, prefix, rest)
			}
			if after, has := strings.CutPrefix(path, prefix); has && (after == "" || after[0] == '/') {
				t.Fatalf("cutPathPrefix(%q, %q): whole-segment prefix not cut", path, prefix)
			}
		} else if !(path == prefix && rest == "/") && (path != prefix+rest || rest[0] != '/') {
			t.Fatalf("cutPathPrefix(%q, %q) = %q, true", path, prefix, rest)
		}

		u, err := url.ParseRequestURI(path)
		if err != nil {
			return
		}
		before := *u
		stripServicePrefix(u)
		if u.Path == before.Path {
			if u.RawPath != before.RawPath {
				t.Fatalf("%q: RawPath changed alone: %q", path, u.RawPath)
			}
			return
		}
		if !strings.HasPrefix(u.Path, "/api/") || !strings.HasSuffix(before.Path, u.Path) {
			t.Fatalf("%q: stripped to %q", path, u.Path)
		}
		if svc := strings.TrimSuffix(before.Path, u.Path); !slices.Contains(servicePrefixes, svc) {
			t.Fatalf("%q: stripped %q, not a service prefix", path, svc)
		}
		checkRawPath(t, path, u)
	})
}

// FuzzRouteEnvironment drives routeEnvironment as the edge chain does, with a request target
// and 0, 1 or 2 X-Env headers. The environment is the URL prefix's or the header's (dev by
// default); an unknown, repeated or conflicting X-Env is a 400 envelope; the handler after
// it sees a suffix of the original path and never the X-Env header, and the caller's URL is
// left alone.
func FuzzRouteEnvironment(f *testing.F) {
	for _, p := range envPathSeeds {
		f.Add(p, "", uint8(0))
		f.Add(p, "local", uint8(1))
	}
	for _, h := range []string{"dev", " TEST ", "Local", "prod", "", "local\x00", "dev,test"} {
		f.Add("/tenant/api/v1/tenant/auth/login", h, uint8(1))
		f.Add("/local/api/v1/chat/messages", h, uint8(2))
	}
	g, err := New(context.Background(), Options{})
	if err != nil {
		f.Fatal(err)
	}
	known := map[string]bool{}
	for _, name := range (EdgeConfig{}).EnvironmentNames() {
		known[name] = true
	}
	f.Fuzz(func(t *testing.T, target, xenv string, headers uint8) {
		u, err := url.ParseRequestURI(target)
		if err != nil {
			return
		}
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.URL = u
		orig := *u
		for range headers % 3 {
			req.Header.Add(EnvHeader, xenv)
		}
		sentHeaders := req.Header.Clone()

		// What EDGE.md promises, worked out independently.
		prefixEnv := ""
		for name := range known {
			if name != DefaultEnvironment && (u.Path == "/"+name || strings.HasPrefix(u.Path, "/"+name+"/")) {
				prefixEnv = name
			}
		}
		wantEnv, refused := prefixEnv, false
		switch h := strings.ToLower(strings.TrimSpace(xenv)); headers % 3 {
		case 1:
			refused = !known[h] || prefixEnv != "" && h != prefixEnv
			wantEnv = h
		case 2:
			refused = true
		}
		if wantEnv == "" {
			wantEnv = DefaultEnvironment
		}

		var seen *http.Request
		next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = r })
		rec := httptest.NewRecorder()
		g.routeEnvironment(next).ServeHTTP(rec, req)

		if orig != *u || req.Header.Get(EnvHeader) != sentHeaders.Get(EnvHeader) {
			t.Fatalf("%q: the caller's URL or headers changed: %+v", target, u)
		}
		if refused {
			var body errorBody
			if seen != nil || rec.Code != http.StatusBadRequest ||
				json.Unmarshal(rec.Body.Bytes(), &body) != nil || body.Code != 400 || !strings.Contains(body.Message, "X-Env") {
				t.Fatalf("%q X-Env %q x%d: want a 400 X-Env envelope, got %d %s (handler called: %v)",
					target, xenv, headers%3, rec.Code, rec.Body, seen != nil)
			}
			return
		}
		if seen == nil {
			t.Fatalf("%q X-Env %q x%d: refused: %d %s", target, xenv, headers%3, rec.Code, rec.Body)
		}
		if env := EnvironmentFrom(seen.Context()); env != wantEnv {
			t.Fatalf("%q X-Env %q x%d: environment %q, want %q", target, xenv, headers%3, env, wantEnv)
		}
		if _, ok := seen.Header[EnvHeader]; ok {
			t.Fatalf("%q: X-Env reached the handler", target)
		}
		out := seen.URL
		if !strings.HasSuffix(orig.Path, out.Path) && !(out.Path == "/" && prefixEnv != "") {
			t.Fatalf("%q: rewritten to %q, not a suffix", target, out.Path)
		}
		if strings.HasPrefix(orig.Path, "/") != strings.HasPrefix(out.Path, "/") {
			t.Fatalf("%q: rewritten to %q", target, out.Path)
		}
		if out.RawQuery != orig.RawQuery {
			t.Fatalf("%q: query %q, want %q", target, out.RawQuery, orig.RawQuery)
		}
		checkRawPath(t, target, out)
	})
}

// Regression (found by FuzzRouteEnvironment and FuzzPathRewrite): the prefixes were cut from
// RawPath by their decoded text, so an escaped prefix or an escaped slash after it left a
// RawPath that no longer encoded Path, and x-http-path became "%2Fapi/...".
func TestRouteEnvironmentEscapedPrefixes(t *testing.T) {
	g, err := New(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for target, want := range map[string]string{
		"/local%2Fapi/v1/x":                  "/api/v1/x",
		"/%6cocal/api/v1/a%2Fb":              "/api/v1/a%2Fb",
		"/tenant%2Fapi/v1/tenant/auth/login": "/api/v1/tenant/auth/login",
		"/local/%74enant/api/v1/a%20b":       "/api/v1/a%20b",
		"/test/basic%2fapi/v1/basic/orders":  "/api/v1/basic/orders",
	} {
		var got *url.URL
		req := httptest.NewRequest(http.MethodGet, target, nil)
		g.routeEnvironment(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.URL })).
			ServeHTTP(httptest.NewRecorder(), req)
		if got == nil {
			t.Fatalf("%s: refused", target)
		}
		if got.EscapedPath() != want {
			t.Errorf("%s: escaped path %q, want %q", target, got.EscapedPath(), want)
		}
		checkRawPath(t, target, got)
	}
}

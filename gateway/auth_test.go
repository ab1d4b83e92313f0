package gateway_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/shopmind/shopmind/gateway"
	"github.com/shopmind/shopmind/internal/authn"
)

func edgeAuth(t *testing.T, admin bool) (*gateway.EdgeAuth, *authn.Tokens, *authn.Revocations) {
	t.Helper()
	tokens := authn.NewTokens("edge-test-secret-0123456789abcdef0123", time.Hour, 24*time.Hour)
	rev := authn.NewRevocations(nil, nil)
	return &gateway.EdgeAuth{Tokens: tokens, Revocations: rev, Public: gateway.DefaultPublicRoutes,
		AdminCheck: func(context.Context, *authn.Identity, string, string) (bool, string, error) { return admin, "", nil }}, tokens, rev
}

func TestEdgeAuth(t *testing.T) {
	auth, tokens, rev := edgeAuth(t, false)
	var seen metadata.MD
	h := auth.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = metadata.Pairs(gateway.IdentityMetadata(r.Context())...)
		w.WriteHeader(204)
	}))
	pair, err := tokens.Issue(authn.Subject{UserID: 5, Username: "ann", TenantID: 2, RoleIDs: []int64{3, 4}}, "dev", "")
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, path, token string, header ...string) int {
		req := httptest.NewRequest(method, path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	if c := do("POST", "/api/v1/tenant/auth/login", ""); c != 204 {
		t.Fatalf("public login: %d", c)
	}
	if c := do("GET", "/api/v1/tenant/users", ""); c != 401 {
		t.Fatalf("no token: %d", c)
	}
	if c := do("GET", "/api/v1/tenant/users", "garbage"); c != 401 {
		t.Fatalf("bad token: %d", c)
	}
	seen = nil
	if c := do("GET", "/api/v1/tenant/users", pair.Access, "X-User-Id", "1", "X-Is-Admin", "true"); c != 204 {
		t.Fatalf("good token: %d", c)
	}
	want := map[string]string{"x-user-id": "5", "x-tenant-id": "2", "x-username": "ann", "x-is-admin": "false", "x-role-ids": "3,4"}
	for k, v := range want {
		if got := seen.Get(k); len(got) != 1 || got[0] != v {
			t.Errorf("%s = %v, want %s", k, got, v)
		}
	}
	// Administrator paths go through the system service's decision.
	if c := do("GET", "/api/v1/tenant/users-m", pair.Access); c != 403 {
		t.Fatalf("admin path for a non-admin: %d", c)
	}
	allowAll, _, _ := edgeAuth(t, true)
	allowAll.Tokens, allowAll.Revocations = tokens, rev
	h2 := allowAll.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }))
	req := httptest.NewRequest("GET", "/api/v1/tenant/users-m", nil)
	req.Header.Set("Authorization", "Bearer "+pair.Access)
	rec := httptest.NewRecorder()
	h2.ServeHTTP(rec, req)
	if rec.Code != 204 {
		t.Fatalf("admin path for an admin: %d", rec.Code)
	}
	// Revoked tokens stop at the edge.
	if err := rev.Revoke(context.Background(), authn.KindToken, pair.AccessID, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if c := do("GET", "/api/v1/tenant/users", pair.Access); c != 401 {
		t.Fatalf("revoked token: %d", c)
	}
	if !strings.HasPrefix(gateway.DefaultPublicRoutes[0], "POST ") {
		t.Fatal("public routes are METHOD /path")
	}
}

func TestPublicRoutePatterns(t *testing.T) {
	auth := &gateway.EdgeAuth{Public: []string{"POST /api/v1/tenant/auth/login", "GET /api/v1/things/*/info", "GET /"}}
	for _, c := range []struct {
		method, path string
		public       bool
	}{
		{"POST", "/api/v1/tenant/auth/login", true},
		{"POST", "/api/v1/tenant/auth/login/", true},
		{"GET", "/api/v1/tenant/auth/login", false},
		{"POST", "/api/v1/tenant/auth", false},
		{"POST", "/api/v1/tenant/auth/login/extra", false},
		{"GET", "/api/v1/things/42/info", true},
		{"GET", "/api/v1/things/42/43/info", false},
		{"GET", "/api/v1/things/info", false},
		{"GET", "/", true},
		{"GET", "/x", false},
	} {
		if got := gateway.PublicRoute(auth, c.method, c.path); got != c.public {
			t.Errorf("%s %s: public %v, want %v", c.method, c.path, got, c.public)
		}
	}
}

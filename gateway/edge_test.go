package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/shopmind/shopmind/gateway"
	notifyv1 "github.com/shopmind/shopmind/gen/go/shopmind/notify/v1"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/grpcserver"
)

// recordingNotify is a fake notify backend that remembers the metadata of every call.
type recordingNotify struct {
	fakeNotify
	name  string
	mu    sync.Mutex
	calls []metadata.MD
}

func (f *recordingNotify) ListCollected(ctx context.Context, req *notifyv1.ListCollectedRequest) (*notifyv1.ListCollectedResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	f.mu.Lock()
	f.calls = append(f.calls, md)
	f.mu.Unlock()
	if req.GetKeyword() == "slow" {
		select {
		case <-time.After(2 * time.Second):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return &notifyv1.ListCollectedResponse{Total: 1, PageNum: 1, PageSize: 10}, nil
}

func (f *recordingNotify) last(t *testing.T) metadata.MD {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) == 0 {
		t.Fatalf("backend %s was not called", f.name)
	}
	return f.calls[len(f.calls)-1]
}

func (f *recordingNotify) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

// startBackend runs a fake notify service on a loopback port.
func startBackend(t *testing.T, name string) (*grpc.ClientConn, *recordingNotify) {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	srv, err := grpcserver.New(grpcserver.Options{Logger: log, Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	fake := &recordingNotify{name: name}
	notifyv1.RegisterNotifyServiceServer(srv, fake)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(lis) }()
	srv.MarkServing()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(); srv.Server.Stop() })
	return conn, fake
}

// notifyRoutes registers the notify service plus two hand-written routes: a v2 twin of
// /api/v1/notify/collect/list and a v1-only route, for version negotiation.
func notifyRoutes(ctx context.Context, mux *runtime.ServeMux, conn grpc.ClientConnInterface) error {
	if err := notifyv1.RegisterNotifyServiceHandlerClient(ctx, mux, notifyv1.NewNotifyServiceClient(conn)); err != nil {
		return err
	}
	if err := mux.HandlePath("POST", "/api/v2/notify/collect/list", func(w http.ResponseWriter, r *http.Request, _ map[string]string) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"code":0,"message":"success","data":{"version":"v2"}}`)
	}); err != nil {
		return err
	}
	return mux.HandlePath("GET", "/api/v1/notify/hello", func(w http.ResponseWriter, r *http.Request, _ map[string]string) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"code":0,"message":"success","data":{"version":"v1"}}`)
	})
}

func startEdge(t *testing.T, opts gateway.Options) *httptest.Server {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxBodyBytes == 0 {
		opts.MaxBodyBytes = 1 << 20
	}
	ctx, cancel := context.WithCancel(context.Background())
	gw, err := gateway.New(ctx, opts)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	hs := httptest.NewServer(gw)
	t.Cleanup(func() { hs.Close(); cancel() })
	return hs
}

func backend(conn *grpc.ClientConn) []gateway.Backend {
	return []gateway.Backend{{Target: "notify", Conn: conn, Register: notifyRoutes}}
}

const listPath = "/api/v1/notify/collect/list"

func TestEnvironmentRouting(t *testing.T) {
	devConn, dev := startBackend(t, "dev")
	localConn, local := startBackend(t, "local")
	testConn, test := startBackend(t, "test")
	var authSaw struct {
		mu        sync.Mutex
		env, path string
	}
	hs := startEdge(t, gateway.Options{
		Backends:    backend(devConn),
		EnvBackends: map[string][]gateway.Backend{"local": backend(localConn), "test": backend(testConn)},
		Authenticate: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				authSaw.mu.Lock()
				authSaw.env, authSaw.path = gateway.EnvironmentFrom(r.Context()), r.URL.Path
				authSaw.mu.Unlock()
				next.ServeHTTP(w, r)
			})
		},
		Metadata: func(context.Context) []string {
			return []string{"x-user-id", "7", "x-env", "prod"} // the gateway's own x-env wins
		},
	})
	cases := []struct {
		name, path string
		header     []string
		want       *recordingNotify
		env        string
	}{
		{"default", "/notify" + listPath, nil, dev, "dev"},
		{"unprefixed backend path", listPath, nil, dev, "dev"},
		{"local prefix", "/local/notify" + listPath, nil, local, "local"},
		{"test prefix", "/test/notify" + listPath, nil, test, "test"},
		{"local api path", "/local" + listPath, nil, local, "local"},
		{"test api path", "/test" + listPath, nil, test, "test"},
		{"header", "/notify" + listPath, []string{"X-Env", "test"}, test, "test"},
		{"header any case", listPath, []string{"X-Env", " Local "}, local, "local"},
		{"header dev", "/notify" + listPath, []string{"X-Env", "dev"}, dev, "dev"},
		{"header agrees with prefix", "/local/notify" + listPath, []string{"X-Env", "local"}, local, "local"},
		{"client metadata header ignored", listPath, []string{"Grpc-Metadata-X-Env", "test"}, dev, "dev"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := c.want.count()
			status, _, env, raw := call(t, hs, "POST", c.path, `{}`, c.header...)
			if status != 200 || env.Code != 0 {
				t.Fatalf("got %d %s", status, raw)
			}
			if c.want.count() != before+1 {
				t.Fatalf("backend %s not called", c.want.name)
			}
			md := c.want.last(t)
			if got := md.Get("x-env"); len(got) != 1 || got[0] != c.env {
				t.Errorf("x-env metadata = %v, want [%s]", got, c.env)
			}
			if got := md.Get("x-user-id"); len(got) != 1 || got[0] != "7" {
				t.Errorf("Metadata hook pairs not merged: %v", md)
			}
			authSaw.mu.Lock()
			defer authSaw.mu.Unlock()
			if authSaw.env != c.env || authSaw.path != listPath {
				t.Errorf("authentication hook saw env %q path %q", authSaw.env, authSaw.path)
			}
		})
	}
	for _, c := range []struct {
		name, path string
		header     []string
		message    string
	}{
		{"unknown environment", listPath, []string{"X-Env", "prod"}, `X-Env: unknown environment "prod"`},
		{"conflict", "/local/notify" + listPath, []string{"X-Env", "test"}, `X-Env: "test" conflicts with the URL prefix /local`},
		{"conflict dev", "/test" + listPath, []string{"X-Env", "dev"}, `X-Env: "dev" conflicts`},
	} {
		t.Run(c.name, func(t *testing.T) {
			calls := dev.count() + local.count() + test.count()
			status, _, env, raw := call(t, hs, "POST", c.path, `{}`, c.header...)
			if status != 400 || env.Code != 400 || !strings.Contains(env.Message, c.message) {
				t.Fatalf("got %d %s", status, raw)
			}
			if dev.count()+local.count()+test.count() != calls {
				t.Fatal("a rejected request reached a backend")
			}
		})
	}
	// An environment prefix is a whole segment: /localhost/... is just an unknown path.
	if status, _, _, raw := call(t, hs, "POST", "/localnotify"+listPath, `{}`); status != 404 {
		t.Fatalf("got %d %s", status, raw)
	}
}

func TestEnvironmentsShareBackendsByDefault(t *testing.T) {
	conn, fake := startBackend(t, "only")
	hs := startEdge(t, gateway.Options{Backends: backend(conn),
		Edge: gateway.EdgeConfig{Environments: []string{"dev", "staging"}}})
	if status, _, _, raw := call(t, hs, "POST", "/staging/notify"+listPath, `{}`); status != 200 {
		t.Fatalf("got %d %s", status, raw)
	}
	if got := fake.last(t).Get("x-env"); len(got) != 1 || got[0] != "staging" {
		t.Fatalf("x-env = %v", got)
	}
	if status, _, env, _ := call(t, hs, "POST", listPath, `{}`, "X-Env", "test"); status != 400 || !strings.Contains(env.Message, "known: dev, staging") {
		t.Fatalf("unconfigured environment: %d %+v", status, env)
	}
}

func TestAuthenticationHookAndCORSPreflight(t *testing.T) {
	conn, fake := startBackend(t, "dev")
	hs := startEdge(t, gateway.Options{Backends: backend(conn),
		Edge: gateway.EdgeConfig{CORSAllowedOrigins: []string{"https://app.example.com", "http://localhost:*"},
			CORSAllowCredentials: true, CORSMaxAge: 600 * time.Second},
		Authenticate: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Authorization") != "Bearer good" {
					gateway.WriteError(w, r, apperr.KindUnauthenticated, "missing or invalid token")
					return
				}
				next.ServeHTTP(w, r)
			})
		},
	})
	preflight := func(origin string) *http.Response {
		req, _ := http.NewRequest("OPTIONS", hs.URL+"/tenant/api/v1/tenant/users", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "authorization, content-type, x-env")
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	resp := preflight("http://localhost:5173")
	h := resp.Header
	if resp.StatusCode != 204 || h.Get("Access-Control-Allow-Origin") != "http://localhost:5173" ||
		h.Get("Access-Control-Allow-Credentials") != "true" || h.Get("Access-Control-Max-Age") != "600" ||
		!strings.Contains(strings.ToLower(h.Get("Access-Control-Allow-Headers")), "authorization") {
		t.Fatalf("preflight: %d %v", resp.StatusCode, h)
	}
	for _, origin := range []string{"https://evil.example", "http://localhost.evil.example", "https://app.example.com.evil.example", "http://app.example.com"} {
		if got := preflight(origin).Header.Get("Access-Control-Allow-Origin"); got != "" {
			t.Errorf("origin %s allowed: %q", origin, got)
		}
	}
	// A real request without a token: the hook's 401, with CORS headers for the SPA to read.
	status, h, env, raw := call(t, hs, "POST", "/notify"+listPath, `{}`, "Origin", "https://app.example.com")
	if status != 401 || env.Code != 401 || h.Get("Access-Control-Allow-Origin") != "https://app.example.com" {
		t.Fatalf("got %d %s %v", status, raw, h)
	}
	for _, exposed := range []string{"X-Request-Id", "Retry-After", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} {
		if !strings.Contains(strings.ToLower(h.Get("Access-Control-Expose-Headers")), strings.ToLower(exposed)) {
			t.Errorf("%s not exposed: %q", exposed, h.Get("Access-Control-Expose-Headers"))
		}
	}
	if fake.count() != 0 {
		t.Fatal("unauthenticated request reached the backend")
	}
	if status, _, _, raw := call(t, hs, "POST", "/notify"+listPath, `{}`, "Authorization", "Bearer good"); status != 200 {
		t.Fatalf("authenticated: %d %s", status, raw)
	}
	if status, _, _, raw := call(t, hs, "GET", "/healthz", ``); status != 200 {
		t.Fatalf("healthz behind authentication: %d %s", status, raw)
	}
}

func TestDefaultCORSOrigins(t *testing.T) {
	conn, _ := startBackend(t, "dev")
	hs := startEdge(t, gateway.Options{Backends: backend(conn)})
	for origin, allowed := range map[string]bool{
		"http://localhost:3000": true, "http://127.0.0.1:8081": true, "http://localhost": true,
		"https://localhost:3000": false, "http://evil.example": false, "null": false,
	} {
		_, h, _, _ := call(t, hs, "POST", listPath, `{}`, "Origin", origin)
		if got := h.Get("Access-Control-Allow-Origin") == origin; got != allowed {
			t.Errorf("origin %s: allowed %v, want %v", origin, got, allowed)
		}
	}
}

func TestRateLimit(t *testing.T) {
	conn, _ := startBackend(t, "dev")
	hs := startEdge(t, gateway.Options{Backends: backend(conn),
		Edge: gateway.EdgeConfig{RateLimitRPS: 4, RateLimitBurst: 3}})
	limited := 0
	for i := 0; i < 4; i++ { // burst + 1
		status, h, env, raw := call(t, hs, "POST", listPath, `{}`)
		if h.Get("RateLimit-Limit") != "3" || h.Get("RateLimit-Remaining") == "" || h.Get("RateLimit-Reset") == "" {
			t.Errorf("request %d lacks RateLimit headers: %v", i, h)
		}
		switch status {
		case 200:
			if want := []string{"2", "1", "0"}[i]; h.Get("RateLimit-Remaining") != want {
				t.Errorf("request %d: remaining %s, want %s", i, h.Get("RateLimit-Remaining"), want)
			}
		case 429:
			limited++
			if env.Code != 429 || h.Get("Retry-After") != "1" || h.Get("RateLimit-Remaining") != "0" || string(env.Data) != "null" {
				t.Errorf("rejection: %v %s", h, raw)
			}
		default:
			t.Fatalf("request %d: %d %s", i, status, raw)
		}
	}
	if limited != 1 {
		t.Fatalf("burst+1 requests: %d rejected, want exactly 1", limited)
	}
	// Health, readiness and metrics are never limited.
	for i := 0; i < 10; i++ {
		for _, p := range []string{"/healthz", "/readyz"} {
			if status, _, _, raw := call(t, hs, "GET", p, ``); status != 200 {
				t.Fatalf("%s limited: %d %s", p, status, raw)
			}
		}
	}
	time.Sleep(time.Second/4 + 20*time.Millisecond) // 1/rate: one token back
	if status, _, _, raw := call(t, hs, "POST", listPath, `{}`); status != 200 {
		t.Fatalf("after 1/rate: %d %s", status, raw)
	}
	if status, _, _, _ := call(t, hs, "POST", listPath, `{}`); status != 429 {
		t.Fatalf("second request after 1/rate: %d, want 429", status)
	}
}

func TestRateLimitKeysAndTrustedProxies(t *testing.T) {
	conn, _ := startBackend(t, "dev")
	untrusted := startEdge(t, gateway.Options{Backends: backend(conn), Edge: gateway.EdgeConfig{RateLimitRPS: 0.01, RateLimitBurst: 1}})
	// The peer (127.0.0.1) is not a trusted proxy: X-Forwarded-For changes nothing.
	if status, _, _, _ := call(t, untrusted, "POST", listPath, `{}`, "X-Forwarded-For", "203.0.113.1"); status != 200 {
		t.Fatal("first request limited")
	}
	if status, _, _, _ := call(t, untrusted, "POST", listPath, `{}`, "X-Forwarded-For", "203.0.113.2"); status != 429 {
		t.Fatal("a forged X-Forwarded-For escaped the limit")
	}
	trusted := startEdge(t, gateway.Options{Backends: backend(conn), Edge: gateway.EdgeConfig{RateLimitRPS: 0.01, RateLimitBurst: 1,
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("10.0.0.0/8")}}})
	for _, c := range []struct {
		xff    string
		status int
	}{
		{"203.0.113.1", 200},
		{"203.0.113.2", 200},
		{"203.0.113.1", 429},
		{"198.51.100.7, 203.0.113.2", 429},    // the client wrote the left part: the right one counts
		{"203.0.113.3, 10.1.2.3", 200},        // 10.1.2.3 is a trusted hop: skip it
		{"2001:db8:1:2::1", 200},              // IPv6 by /64
		{"2001:db8:1:2:ffff::9", 429},         // same /64
		{"2001:db8:1:3::1", 200},              // another /64
		{"not-an-address, 203.0.113.3", 429},  // garbage left of the valid hop is ignored
		{"203.0.113.9, not-an-address", 200},  // garbage nearest to us: the peer counts (first use)
		{"203.0.113.10, not-an-address", 429}, // ... and again the peer
		{"", 429},                             // no header: the peer, already used
		{"192.0.2.44", 200},
	} {
		status, _, _, raw := call(t, trusted, "POST", listPath, `{}`, "X-Forwarded-For", c.xff)
		if status != c.status {
			t.Errorf("X-Forwarded-For %q: %d %s, want %d", c.xff, status, raw, c.status)
		}
	}
}

func TestUpstreamTimeoutAndUnreachableBackend(t *testing.T) {
	conn, _ := startBackend(t, "dev")
	hs := startEdge(t, gateway.Options{Backends: backend(conn), Edge: gateway.EdgeConfig{UpstreamTimeout: 100 * time.Millisecond}})
	start := time.Now()
	status, _, env, raw := call(t, hs, "POST", listPath, `{"keyword":"slow"}`)
	if status != 504 || env.Code != 504 || string(env.Data) != "null" {
		t.Fatalf("slow backend: %d %s", status, raw)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("timeout took %v", d)
	}
	if status, _, _, raw := call(t, hs, "POST", listPath, `{}`); status != 200 {
		t.Fatalf("fast call: %d %s", status, raw)
	}
	dead, err := grpc.NewClient("127.0.0.1:1", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	hsDead := startEdge(t, gateway.Options{Backends: backend(dead)})
	status, _, env, raw = call(t, hsDead, "POST", "/local/notify"+listPath, `{}`)
	if status != 503 || env.Code != 503 {
		t.Fatalf("unreachable backend: %d %s", status, raw)
	}
}

// fakePartner records what reached it and answers by path.
type fakePartner struct {
	mu       sync.Mutex
	requests []*http.Request
}

func (f *fakePartner) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, r.Clone(context.Background()))
	f.mu.Unlock()
	switch {
	case strings.HasSuffix(r.URL.Path, "/boom"):
		http.Error(w, "partner exploded", http.StatusInternalServerError)
		return
	case strings.HasSuffix(r.URL.Path, "/hang"):
		select {
		case <-time.After(3 * time.Second):
		case <-r.Context().Done():
		}
		return
	case strings.HasSuffix(r.URL.Path, "/missing"):
		http.Error(w, "no such thing", http.StatusNotFound)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: "partner_session", Value: "x"})
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"partner":"a","path":"`+r.URL.Path+`"}`)
}

func (f *fakePartner) last() *http.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.requests) == 0 {
		return nil
	}
	return f.requests[len(f.requests)-1]
}

func (f *fakePartner) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

func TestPartnerPassThrough(t *testing.T) {
	partner := &fakePartner{}
	ps := httptest.NewServer(partner)
	defer ps.Close()
	base, _ := url.Parse(ps.URL + "/partner/api")
	refused, _ := url.Parse("http://127.0.0.1:1/x")
	conn, _ := startBackend(t, "dev")
	var authCalls sync.Map
	hs := startEdge(t, gateway.Options{Backends: backend(conn),
		Edge: gateway.EdgeConfig{PartnerTimeout: 200 * time.Millisecond, PartnerKeyHeader: "X-Partner-Key", Partners: []gateway.Partner{
			{Name: "partner_a", BaseURL: base, Key: "secret-a"},
			{Name: "partner_down", BaseURL: refused, Key: "secret-b"},
		}},
		Authenticate: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				authCalls.Store(r.URL.Path, true)
				next.ServeHTTP(w, r)
			})
		},
	})
	resp := rawCall(t, hs, "GET", "/api-partner_a/items/42?page=2&q=a%20b", "Authorization", "Bearer platform-token",
		"Cookie", "session=abc", "X-Partner-Key", "client-forged", "X-Env", "dev", "X-Request-Id", "req-partner")
	if resp.status != 200 || !strings.Contains(resp.body, `"path":"/partner/api/items/42"`) {
		t.Fatalf("pass-through: %d %s", resp.status, resp.body)
	}
	if resp.header.Get("Set-Cookie") != "" {
		t.Errorf("partner cookie reached the client: %v", resp.header)
	}
	got := partner.last()
	if got.URL.RawQuery != "page=2&q=a%20b" || got.Header.Get("X-Partner-Key") != "secret-a" ||
		got.Header.Get("Authorization") != "" || got.Header.Get("Cookie") != "" || got.Header.Get("X-Env") != "" ||
		got.Header.Get("X-Request-Id") != "req-partner" || got.Host != strings.TrimPrefix(ps.URL, "http://") {
		t.Errorf("partner saw %s %v host %s", got.URL, got.Header, got.Host)
	}
	if _, ok := authCalls.Load("/api-partner_a/items/42"); !ok {
		t.Error("the authentication hook did not run before the partner proxy")
	}
	// Environment prefixes reach the same partner; a partner 404 passes through untouched.
	if resp := rawCall(t, hs, "GET", "/local/api-partner_a/items"); resp.status != 200 || !strings.Contains(resp.body, `"/partner/api/items"`) {
		t.Fatalf("env prefix: %d %s", resp.status, resp.body)
	}
	if resp := rawCall(t, hs, "GET", "/api-partner_a/missing"); resp.status != 404 || !strings.Contains(resp.body, "no such thing") {
		t.Fatalf("partner 404: %d %s", resp.status, resp.body)
	}

	// Nothing can leave the base path or the host.
	before := partner.count()
	for _, path := range []string{
		"/api-partner_a/../../secret",
		"/api-partner_a/items/..",
		"/api-partner_a/./items",
		"/api-partner_a/%2e%2e/secret",
		"/api-partner_a/%2E%2E%2Fsecret",
		"/api-partner_a/items%2f..%2fsecret",
		"/api-partner_a/items%5c..%5csecret",
		"/api-partner_a/%252e%252e/secret",
		"/api-partner_a//evil.example/x",
		"/api-partner_a/a//b",
		"/api-partner_a/..%5csecret",
	} {
		resp := rawRequestLine(t, hs, "GET "+path+" HTTP/1.1")
		if resp.status != 400 || !strings.Contains(resp.body, `"code":400`) {
			t.Errorf("%s: %d %s", path, resp.status, resp.body)
		}
	}
	for _, line := range []string{
		"GET http://evil.example/api-partner_a/x HTTP/1.1",
		"GET http://" + strings.TrimPrefix(hs.URL, "http://") + "/api-partner_a/x HTTP/1.1",
	} {
		if resp := rawRequestLine(t, hs, line); resp.status != 400 {
			t.Errorf("%s: %d %s", line, resp.status, resp.body)
		}
	}
	if partner.count() != before {
		t.Fatalf("a refused path reached the partner: %v", partner.last().URL)
	}

	// Failures: 5xx, a hanging partner (timeout), a refused connection: all 502.
	for _, path := range []string{"/api-partner_a/boom", "/api-partner_a/hang", "/api-partner_down/x"} {
		start := time.Now()
		status, _, env, raw := call(t, hs, "GET", path, ``)
		if status != 502 || env.Code != 502 || strings.Contains(raw, "exploded") {
			t.Errorf("%s: %d %s", path, status, raw)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s took %v", path, d)
		}
	}
	// Unknown partners are unknown routes.
	if status, _, _, raw := call(t, hs, "GET", "/api-partner_z/x", ``); status != 404 {
		t.Errorf("unknown partner: %d %s", status, raw)
	}
}

type rawResponse struct {
	status int
	header http.Header
	body   string
}

func rawCall(t *testing.T, hs *httptest.Server, method, path string, header ...string) rawResponse {
	t.Helper()
	req, _ := http.NewRequest(method, hs.URL+path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return rawResponse{resp.StatusCode, resp.Header, string(b)}
}

// rawRequestLine sends a request line exactly as written (clients would clean the path).
func rawRequestLine(t *testing.T, hs *httptest.Server, line string) rawResponse {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(hs.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, line+"\r\nHost: "+strings.TrimPrefix(hs.URL, "http://")+"\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return rawResponse{resp.StatusCode, resp.Header, string(b)}
}

func TestVersionNegotiation(t *testing.T) {
	conn, fake := startBackend(t, "dev")
	hs := startEdge(t, gateway.Options{Backends: backend(conn)})
	v2 := "application/vnd.shopmind.v2+json"
	cases := []struct {
		name, method, path, accept string
		status                     int
		version                    string // "v2", "v1" (hand-written), "backend" (the gRPC v1 route)
	}{
		{"v2 twin", "POST", listPath, v2, 200, "v2"},
		{"v2 twin through the service prefix", "POST", "/notify" + listPath, v2, 200, "v2"},
		{"v2 twin in another environment", "POST", "/test" + listPath, v2, 200, "v2"},
		{"v2 without +json", "POST", listPath, "application/vnd.shopmind.v2", 200, "v2"},
		{"v1 on v1", "POST", listPath, "application/vnd.shopmind.v1+json", 200, "backend"},
		{"plain json", "POST", listPath, "application/json", 200, "backend"},
		{"anything", "POST", listPath, "*/*", 200, "backend"},
		{"v1 preferred by q", "POST", listPath, v2 + ";q=0.5, application/vnd.shopmind.v1+json", 200, "backend"},
		{"v2 preferred by q", "POST", listPath, "application/vnd.shopmind.v1+json;q=0.2, " + v2, 200, "v2"},
		{"v3 with a plain fallback", "POST", listPath, "application/vnd.shopmind.v3+json, application/json;q=0.1", 200, "backend"},
		{"v1 asked on the v2 path", "POST", "/api/v2/notify/collect/list", "application/vnd.shopmind.v1+json", 200, "backend"},
		{"v3 does not exist", "POST", listPath, "application/vnd.shopmind.v3+json", 406, ""},
		{"v2 has no twin here", "GET", "/api/v1/notify/hello", v2, 406, ""},
		{"v2 twin has another method", "GET", listPath, v2, 406, ""},
		{"v1 on a v1-only route", "GET", "/api/v1/notify/hello", "application/vnd.shopmind.v1+json", 200, "v1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := fake.count()
			status, _, env, raw := call(t, hs, c.method, c.path, `{}`, "Accept", c.accept)
			if status != c.status {
				t.Fatalf("got %d %s", status, raw)
			}
			switch c.version {
			case "":
				if env.Code != 406 || !strings.Contains(env.Message, "Accept") {
					t.Errorf("406 envelope: %s", raw)
				}
			case "backend":
				if fake.count() != before+1 {
					t.Errorf("the v1 backend route was not called: %s", raw)
				}
			default:
				if !strings.Contains(raw, `"version":"`+c.version+`"`) {
					t.Errorf("want %s, got %s", c.version, raw)
				}
			}
		})
	}
}

func TestAccessLogAndRouteMetrics(t *testing.T) {
	conn, _ := startBackend(t, "dev")
	var buf syncBuffer
	reg := prometheus.NewRegistry()
	hs := startEdge(t, gateway.Options{Backends: backend(conn), Registry: reg,
		Logger: slog.New(slog.NewJSONHandler(&buf, nil)),
		Authenticate: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				gateway.SetAccessIdentity(r.Context(), 3, 5)
				next.ServeHTTP(w, r)
			})
		}})
	call(t, hs, "POST", "/local/notify"+listPath, `{}`, "X-Request-Id", "log-1")
	call(t, hs, "GET", "/api/v1/nothing/here/12345", ``, "X-Request-Id", "log-2")
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "http" {
			lines = append(lines, m)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("access log lines: %s", buf.String())
	}
	first := lines[0]
	for k, want := range map[string]any{"method": "POST", "path": "/local/notify" + listPath, "route": listPath,
		"status": 200.0, "code": 0.0, "env": "local", "tenant_id": 3.0, "user_id": 5.0, "request_id": "log-1", "remote": "127.0.0.1"} {
		if first[k] != want {
			t.Errorf("log %s = %v, want %v (%v)", k, first[k], want, first)
		}
	}
	if _, ok := first["duration"]; !ok {
		t.Error("no duration in the access log")
	}
	if lines[1]["route"] != "unmatched" || lines[1]["code"] != 404.0 {
		t.Errorf("unknown route logged as %v", lines[1])
	}
	body := rawCall(t, hs, "GET", "/metrics").body
	for _, want := range []string{
		`shopmind_http_requests_total{code="0",method="POST",route="/api/v1/notify/collect/list",status="200"} 1`,
		`shopmind_http_requests_total{code="404",method="GET",route="unmatched",status="404"} 1`,
		`shopmind_http_request_duration_seconds_count{method="POST",route="/api/v1/notify/collect/list"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(body, "12345") {
		t.Error("a raw path reached the metric labels")
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestTLSServesHTTP2(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, err := gateway.WriteDevCert(dir)
	if err != nil {
		t.Fatal(err)
	}
	conn, _ := startBackend(t, "dev")
	gw, err := gateway.New(context.Background(), gateway.Options{Logger: slog.New(slog.DiscardHandler), MaxBodyBytes: 1024, Backends: backend(conn)})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: gw, ReadHeaderTimeout: 5 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	if err := gateway.ConfigureServer(srv, gateway.EdgeConfig{TLSCertFile: certFile, TLSKeyFile: keyFile}); err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = gateway.Serve(srv, lis) }()
	defer srv.Close()

	pemBytes, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		t.Fatal("cert not PEM")
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	for _, host := range []string{"127.0.0.1", "localhost"} {
		u := "https://" + strings.Replace(lis.Addr().String(), "127.0.0.1", host, 1)
		resp, err := client.Post(u+"/notify"+listPath, "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.ProtoMajor != 2 || resp.StatusCode != 200 || !strings.Contains(string(body), `"code":0`) {
			t.Fatalf("%s: %s %d %s", host, resp.Proto, resp.StatusCode, body)
		}
	}
	// A second call reuses the existing certificate.
	if c2, k2, err := gateway.WriteDevCert(dir); err != nil || c2 != certFile || k2 != keyFile {
		t.Fatalf("WriteDevCert again: %v", err)
	}
	// Plain HTTP/1.1 clients are not served on the TLS port.
	if resp, err := http.Get("http://" + lis.Addr().String() + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatal("plain HTTP answered on the TLS listener")
		}
	}
	// Missing files are named.
	if err := gateway.ConfigureServer(&http.Server{}, gateway.EdgeConfig{TLSCertFile: dir + "/none.pem", TLSKeyFile: keyFile}); err == nil ||
		!strings.Contains(err.Error(), "SHOPMIND_TLS_CERT_FILE") {
		t.Fatalf("missing cert: %v", err)
	}
}

package gateway_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/shopmind/shopmind/gateway"
	tenantv1 "github.com/shopmind/shopmind/gen/go/shopmind/tenant/v1"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/grpcserver"
	"github.com/shopmind/shopmind/internal/restapi"
	"github.com/shopmind/shopmind/internal/testutil"
	"github.com/shopmind/shopmind/internal/waf"
	"github.com/shopmind/shopmind/internal/waf/crs"
)

// infoBackend answers GetInfo with a fixed user, so the benchmark measures the edge and the
// transcoding, not a database.
type infoBackend struct {
	tenantv1.UnimplementedTenantAuthServiceServer
}

var benchUser = &tenantv1.UserInfo{Id: 7, Username: "admin", Nickname: "Administrator", IsAdmin: true,
	Tenant: &tenantv1.TenantSummary{Id: 1, Code: "demo", Name: "Demo"}, Permissions: []string{"tenant:user:list"}}

func (infoBackend) GetInfo(ctx context.Context, _ *tenantv1.GetInfoRequest) (*tenantv1.GetInfoResponse, error) {
	if authn.FromContext(ctx) == nil {
		return nil, apperr.New(apperr.KindUnauthenticated, "missing bearer token")
	}
	return &tenantv1.GetInfoResponse{User: benchUser}, nil
}

// load sends requests from workers for d and returns how many completed and their latencies.
func load(b *testing.B, url, token string, distinct bool, workers int, d time.Duration) (int, []time.Duration) {
	b.Helper()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers, MaxConnsPerHost: workers}}
	defer client.CloseIdleConnections()
	lat := make([][]time.Duration, workers)
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for n := 0; time.Now().Before(deadline); n++ {
				req, _ := http.NewRequest("GET", url, nil)
				req.Header.Set("Authorization", "Bearer "+token)
				if distinct { // a request id of its own: no request equals one the WAF has passed
					req.Header.Set("X-Request-Id", strconv.Itoa(w)+"-"+strconv.Itoa(n))
				}
				t0 := time.Now()
				if !testutil.DrainOK(b, client, req) {
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		}(w)
	}
	wg.Wait()
	all := slices.Concat(lat...)
	return len(all), all
}

// edgeFixture is the backend and the gateway builder the edge benchmarks share: a gRPC
// server with the platform's interceptor chain (authentication included) serving infoBackend,
// a loopback connection to it, and an access token.
type edgeFixture struct {
	srv    *grpcserver.Server
	conn   *grpc.ClientConn
	access string
	// handler builds a gateway with the WAF on or off, calling the backend over conn.
	handler func(waf bool, backend grpc.ClientConnInterface) http.Handler
}

func newEdgeFixture(b *testing.B) *edgeFixture {
	log := slog.New(slog.DiscardHandler)
	tokens := authn.NewTokens("bench-secret-0123456789abcdef0123456789", time.Hour, 24*time.Hour)
	pair, err := tokens.Issue(authn.Subject{UserID: 7, Username: "admin", TenantID: 1, IsAdmin: true}, "dev", "")
	if err != nil {
		b.Fatal(err)
	}
	rev := authn.NewRevocations(nil, log)
	srv, err := grpcserver.New(grpcserver.Options{Logger: log,
		Unary: []grpc.UnaryServerInterceptor{(&authn.Authenticator{Tokens: tokens, Revocations: rev, DefaultEnv: "dev"}).Unary}})
	if err != nil {
		b.Fatal(err)
	}
	tenantv1.RegisterTenantAuthServiceServer(srv, infoBackend{})
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	go func() { _ = srv.Serve(lis) }()
	b.Cleanup(srv.Server.Stop)
	conn, _ := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	b.Cleanup(func() { _ = conn.Close() })

	handler := func(withWAF bool, backend grpc.ClientConnInterface) http.Handler {
		var wafMW func(http.Handler) http.Handler
		if withWAF {
			rules, err := crs.New(waf.Config{Enabled: true, ParanoiaLevel: waf.DefaultParanoia,
				AnomalyThreshold: waf.DefaultAnomalyThreshold, BodyLimit: waf.DefaultBodyLimit}, log)
			if err != nil {
				b.Fatal(err)
			}
			wafMW = gateway.WAF(rules.Inspect)
		}
		gw, err := gateway.New(context.Background(), gateway.Options{Logger: log, MaxBodyBytes: 1 << 20, WAF: wafMW,
			Backends:     []gateway.Backend{{Target: "tenant", Conn: backend, Register: restapi.Routes(restapi.Route(tenantv1.RegisterTenantAuthServiceHandlerClient, tenantv1.NewTenantAuthServiceClient))}},
			Authenticate: (&gateway.EdgeAuth{Tokens: tokens, Revocations: rev, Public: gateway.DefaultPublicRoutes}).Middleware,
			Metadata:     gateway.IdentityMetadata})
		if err != nil {
			b.Fatal(err)
		}
		return gw
	}
	return &edgeFixture{srv: srv, conn: conn, access: pair.Access, handler: handler}
}

// BenchmarkEdge compares, in one run on this machine, an authenticated GET through the
// gateway (JWT check, envelope, REST to gRPC transcoding, the backend's interceptor chain)
// with a bare net/http handler returning the same JSON: bare; the gateway calling the backend
// over a loopback gRPC connection (as to a target in another process), WAF off; the gateway
// calling it in process (as `shopmind serve` does for the targets it hosts), WAF off and on.
// Each configuration gets 3 s of load from 16 connections, in turns of 0.5 s; b.N is ignored.
func BenchmarkEdge(b *testing.B) {
	f := newEdgeFixture(b)
	body := []byte(`{"code":0,"message":"success","data":{"user":{"id":"7","username":"admin","nickname":"Administrator","tenant":{"id":"1","code":"demo","name":"Demo"},"org":null,"roles":[],"permissions":["tenant:user:list"],"is_admin":true}}}`)
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	defer bare.Close()

	inProcess := f.srv.InProcess(f.conn) // what `shopmind serve` uses for the targets it hosts
	loopback, off, on := httptest.NewServer(f.handler(false, f.conn)), httptest.NewServer(f.handler(false, inProcess)), httptest.NewServer(f.handler(true, inProcess))
	defer loopback.Close()
	defer off.Close()
	defer on.Close()
	// The WAF passes a request equal to one it passed without running a rule (its verdict
	// memo, internal/waf/WAF.md): the same GET repeated measures that; distinct requests
	// (each with its own X-Request-Id) measure the rules.
	type edgeCase struct {
		name, url string
		distinct  bool
	}
	cases := []edgeCase{
		{"bare", bare.URL + "/api/v1/tenant/auth/info", false},
		{"gateway_loopback_grpc_waf_off", loopback.URL + "/tenant/api/v1/tenant/auth/info", false},
		{"gateway_waf_off", off.URL + "/tenant/api/v1/tenant/auth/info", false},
		{"gateway_waf_on_repeated", on.URL + "/tenant/api/v1/tenant/auth/info", false},
		{"gateway_waf_on_distinct", on.URL + "/tenant/api/v1/tenant/auth/info", true},
	}
	if only := os.Getenv("SHOPMIND_BENCH_EDGE_ONLY"); only != "" { // one configuration, for profiling
		cases = slices.DeleteFunc(cases, func(c edgeCase) bool { return c.name != only })
	}
	// The configurations take turns in short rounds, so a change in the machine's other load
	// affects them alike and the shares of bare stay comparable.
	const rounds, round = 6, 500 * time.Millisecond
	counts := make([]int, len(cases))
	lats := make([][]time.Duration, len(cases))
	for _, c := range cases {
		load(b, c.url, f.access, c.distinct, 16, 300*time.Millisecond) // warm up
	}
	for range rounds {
		for i, c := range cases {
			n, l := load(b, c.url, f.access, c.distinct, 16, round)
			counts[i] += n
			lats[i] = append(lats[i], l...)
		}
	}
	bareRPS := float64(counts[0]) / (rounds * round).Seconds()
	if cases[0].name != "bare" {
		bareRPS = 0
	}
	for i, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			rps := float64(counts[i]) / (rounds * round).Seconds()
			slices.Sort(lats[i])
			b.ReportMetric(rps, "req/s")
			if len(lats[i]) > 0 {
				b.ReportMetric(float64(lats[i][len(lats[i])*99/100].Microseconds())/1000, "p99-ms")
			}
			if bareRPS > 0 && i > 0 {
				b.ReportMetric(100*rps/bareRPS, "%-of-bare")
			}
		})
	}
}

// BenchmarkEdgeHandler is the gateway's own cost per request, without sockets: the
// authenticated GET of BenchmarkEdge served by the gateway handler into a recorder, the
// backend called in process, WAF off.
func BenchmarkEdgeHandler(b *testing.B) {
	f := newEdgeFixture(b)
	h := f.handler(false, f.srv.InProcess(f.conn))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r := httptest.NewRequest("GET", "/tenant/api/v1/tenant/auth/info", nil)
		r.Header.Set("Authorization", "Bearer "+f.access)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != 200 {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}

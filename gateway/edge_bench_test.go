package gateway_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/shopmind/shopmind/gateway"
	tenantv1 "github.com/shopmind/shopmind/gen/go/shopmind/tenant/v1"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/config"
	"github.com/shopmind/shopmind/internal/grpcserver"
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

// load sends requests from workers for d and returns requests/s and the p99 latency.
func load(b *testing.B, url, token string, workers int, d time.Duration) (float64, time.Duration) {
	b.Helper()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers, MaxConnsPerHost: workers}}
	defer client.CloseIdleConnections()
	var n atomic.Int64
	lat := make([][]time.Duration, workers)
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for time.Now().Before(deadline) {
				req, _ := http.NewRequest("GET", url, nil)
				req.Header.Set("Authorization", "Bearer "+token)
				t0 := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Errorf("status %d", resp.StatusCode)
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
				n.Add(1)
			}
		}(w)
	}
	wg.Wait()
	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) == 0 {
		return 0, 0
	}
	return float64(n.Load()) / d.Seconds(), all[len(all)*99/100]
}

// BenchmarkEdge compares, in one run on this machine, an authenticated GET through the
// gateway (JWT check, envelope, REST to gRPC transcoding over loopback) with a bare net/http
// handler returning the same JSON: bare, gateway with the WAF off, gateway with the WAF on.
// Each sub-benchmark is a fixed 3 s load from 16 connections; b.N is ignored.
func BenchmarkEdge(b *testing.B) {
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
	defer srv.Server.Stop()
	conn, _ := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	defer conn.Close()

	body := []byte(`{"code":0,"message":"success","data":{"user":{"id":"7","username":"admin","nickname":"Administrator","tenant":{"id":"1","code":"demo","name":"Demo"},"org":null,"roles":[],"permissions":["tenant:user:list"],"is_admin":true}}}`)
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	defer bare.Close()

	edge := func(waf bool) *httptest.Server {
		var wafMW func(http.Handler) http.Handler
		if waf {
			wafMW, err = gateway.NewWAF(config.WAFConfig{Enabled: true, ParanoiaLevel: config.DefaultWAFParanoia,
				AnomalyThreshold: config.DefaultWAFAnomalyThreshold, BodyLimit: config.DefaultWAFBodyLimit}, log,
				func(w http.ResponseWriter, r *http.Request, _ int, msg string) {
					gateway.WriteError(w, r, apperr.KindForbidden, msg)
				})
			if err != nil {
				b.Fatal(err)
			}
		}
		gw, err := gateway.New(context.Background(), gateway.Options{Logger: log, MaxBodyBytes: 1 << 20, WAF: wafMW,
			Backends:     []gateway.Backend{{Target: "tenant", Conn: conn, Register: gateway.Routes(tenantv1.RegisterTenantAuthServiceHandler)}},
			Authenticate: (&gateway.EdgeAuth{Tokens: tokens, Revocations: rev, Public: gateway.DefaultPublicRoutes}).Middleware,
			Metadata:     gateway.IdentityMetadata})
		if err != nil {
			b.Fatal(err)
		}
		return httptest.NewServer(gw)
	}
	off, on := edge(false), edge(true)
	defer off.Close()
	defer on.Close()
	results := map[string]float64{}
	for _, c := range []struct{ name, url string }{
		{"bare", bare.URL + "/api/v1/tenant/auth/info"},
		{"gateway_waf_off", off.URL + "/tenant/api/v1/tenant/auth/info"},
		{"gateway_waf_on", on.URL + "/tenant/api/v1/tenant/auth/info"},
	} {
		b.Run(c.name, func(b *testing.B) {
			load(b, c.url, pair.Access, 16, 500*time.Millisecond) // warm up
			rps, p99 := load(b, c.url, pair.Access, 16, 3*time.Second)
			results[c.name] = rps
			b.ReportMetric(rps, "req/s")
			b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
			if c.name != "bare" && results["bare"] > 0 {
				b.ReportMetric(100*rps/results["bare"], "%-of-bare")
			}
		})
	}
	fmt.Fprintf(io.Discard, "%v", results)
}

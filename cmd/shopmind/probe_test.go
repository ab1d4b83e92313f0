package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func TestProbe(t *testing.T) {
	hs := health.NewServer()
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	addr := lis.Addr().String()

	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	if err := runProbe([]string{"--grpc=" + addr}); err == nil || !strings.Contains(err.Error(), "NOT_SERVING") {
		t.Fatalf("not serving: %v", err)
	}
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	if err := runProbe([]string{"--grpc=" + addr}); err != nil {
		t.Fatalf("serving: %v", err)
	}

	var ready atomic.Bool
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !ready.Load() {
			http.Error(w, `{"code":503}`, http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(web.Close)
	if err := runProbe([]string{"--http=" + web.URL + "/readyz"}); err == nil || !strings.Contains(err.Error(), "HTTP 503") {
		t.Fatalf("not ready: %v", err)
	}
	ready.Store(true)
	if err := runProbe([]string{"--http=" + web.URL + "/readyz"}); err != nil {
		t.Fatalf("ready: %v", err)
	}
	for _, args := range [][]string{nil, {"--grpc=" + addr, "--http=" + web.URL}} {
		if err := runProbe(args); err == nil || !strings.Contains(err.Error(), "exactly one") {
			t.Errorf("%v: %v", args, err)
		}
	}
	if err := runProbe([]string{"--grpc=127.0.0.1:1", "--timeout=200ms"}); err == nil {
		t.Error("nothing listening: want an error")
	}
}

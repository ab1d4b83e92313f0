// Package stack runs the whole platform in process for tests: a fresh migrated database,
// every service on one gRPC server, the real gateway in front, all on loopback ports.
package stack

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/config"
	"github.com/shopmind/shopmind/internal/postgres"
	"github.com/shopmind/shopmind/internal/testutil/pgtest"
	"github.com/shopmind/shopmind/services"
)

// TestSecret signs tokens in tests.
const TestSecret = "test-secret-0123456789abcdef0123456789abcdef"

// Stack is a running platform.
type Stack struct {
	// BaseURL is the gateway, e.g. http://127.0.0.1:41234.
	BaseURL string
	// Conn is a gRPC client connection to the services.
	Conn *grpc.ClientConn
	// DB is the test's database.
	DB *pgtest.Database
	// HTTP is a client with a timeout.
	HTTP *http.Client
}

// Option adjusts the configuration before start.
type Option func(*config.Config)

// Start runs the platform until the test ends.
func Start(t testing.TB, opts ...Option) *Stack {
	t.Helper()
	defs := services.All()
	var sets []postgres.Migrations
	for _, d := range defs {
		if d.Migrations != nil {
			sets = append(sets, *d.Migrations)
		}
	}
	db := pgtest.New(t, sets...)
	cfg := &config.Config{
		Mode: config.ModeDevelopment, HTTPAddr: "127.0.0.1:0", GRPCAddr: "127.0.0.1:0",
		ServiceAddrs: map[string]string{}, DatabaseURL: db.URL, JWTSecret: TestSecret,
		AdminPassword: "admin-test-password", CaptchaMode: "off",
		ShutdownTimeout: 5 * time.Second, MaxBodyBytes: 1 << 20, LogLevel: slog.LevelWarn,
	}
	for _, o := range opts {
		o(cfg)
	}
	var logOut io.Writer = io.Discard
	if os.Getenv("SHOPMIND_TEST_LOG") != "" {
		logOut = os.Stderr
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan app.Addrs, 1)
	done := make(chan error, 1)
	go func() {
		done <- app.Run(ctx, app.Options{Config: cfg, Logger: slog.New(slog.NewJSONHandler(logOut, nil)),
			Targets: app.TargetAll, Services: defs, OnReady: func(a app.Addrs) { ready <- a }})
	}()
	var addrs app.Addrs
	select {
	case addrs = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("stack: platform did not start: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("stack: platform not ready after 30s")
	}
	conn, err := grpc.NewClient(addrs.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("stack: platform stopped with %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("stack: platform did not stop within 10s")
		}
	})
	return &Stack{BaseURL: "http://" + addrs.HTTP, Conn: conn, DB: db, HTTP: &http.Client{Timeout: 30 * time.Second}}
}

// Response is a decoded envelope answer.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Do sends a request to the gateway; body may be "" for none.
func (s *Stack) Do(t testing.TB, method, path, body string, header ...string) Response {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.BaseURL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := s.HTTP.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

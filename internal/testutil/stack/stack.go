// Package stack runs the whole platform in process for tests: a fresh migrated database,
// every service on one gRPC server, the real gateway in front, all on loopback ports.
package stack

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/config"
	"github.com/shopmind/shopmind/internal/postgres"
	"github.com/shopmind/shopmind/internal/service"
	"github.com/shopmind/shopmind/internal/testutil/pgtest"
	"github.com/shopmind/shopmind/internal/testutil/tier"
	"github.com/shopmind/shopmind/services"
)

// TestSecret signs tokens in tests.
const TestSecret = "test-secret-0123456789abcdef0123456789abcdef"

// AdminPassword is the demo admin's password in tests.
const AdminPassword = "admin-test-password"

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
	// GRPCAddr is the gRPC listener's address (empty without one).
	GRPCAddr string

	stop func()
}

// Option adjusts the configuration before start.
type Option func(*config.Config)

// Start runs the platform on a fresh database until the test ends.
func Start(t testing.TB, opts ...Option) *Stack {
	t.Helper()
	tier.Needs(t, "the platform (stack)")
	sets := []postgres.Migrations{authn.Migrations()}
	for _, d := range services.All() {
		if d.Migrations != nil {
			sets = append(sets, *d.Migrations)
		}
	}
	return StartOn(t, pgtest.New(t, sets...), opts...)
}

// StartOn runs the platform on an existing test database (for example to restart it).
func StartOn(t testing.TB, db *pgtest.Database, opts ...Option) *Stack {
	t.Helper()
	tier.Needs(t, "the platform (stack)")
	return StartTargets(t, db, app.TargetAll, opts...)
}

// StartWith runs the platform like Start, with the service definitions of replace taking
// the place of the services of the same name (a test's own agent in the chat service, say).
func StartWith(t testing.TB, replace []service.Def, opts ...Option) *Stack {
	t.Helper()
	tier.Needs(t, "the platform (stack)")
	defs := services.All()
	for i, d := range defs {
		for _, r := range replace {
			if r.Name == d.Name {
				defs[i] = r
			}
		}
	}
	sets := []postgres.Migrations{authn.Migrations()}
	for _, d := range defs {
		if d.Migrations != nil {
			sets = append(sets, *d.Migrations)
		}
	}
	return startDefs(t, pgtest.New(t, sets...), app.TargetAll, defs, opts...)
}

// StartTargets runs the given targets (a --target list) on an existing test database.
// BaseURL is empty without the gateway, Conn nil without a gRPC server.
func StartTargets(t testing.TB, db *pgtest.Database, targets string, opts ...Option) *Stack {
	t.Helper()
	tier.Needs(t, "the platform (stack)")
	return startDefs(t, db, targets, services.All(), opts...)
}

func startDefs(t testing.TB, db *pgtest.Database, targets string, defs []service.Def, opts ...Option) *Stack {
	t.Helper()
	cfg, err := config.FromMap(map[string]string{
		"SHOPMIND_HTTP_ADDR": "127.0.0.1:0", "SHOPMIND_GRPC_ADDR": "127.0.0.1:0",
		"SHOPMIND_DATABASE_URL": db.URL, "SHOPMIND_JWT_SECRET": TestSecret,
		"SHOPMIND_ADMIN_PASSWORD": AdminPassword, "SHOPMIND_CAPTCHA_MODE": "off",
		"SHOPMIND_SHUTDOWN_TIMEOUT": "5s", "SHOPMIND_MAX_BODY_BYTES": "1048576", "SHOPMIND_LOG_LEVEL": "warn",
		"SHOPMIND_BCRYPT_COST":    "4", // fast hashing in tests; the cost is measured in benchmarks
		"SHOPMIND_RATE_LIMIT_RPS": "0", // no edge rate limit in tests; gateway/ tests it (an Option can set it)
	})
	if err != nil {
		t.Fatal(err)
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
			Targets: targets, Services: defs, OnReady: func(a app.Addrs) { ready <- a }})
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
	st := &Stack{DB: db, HTTP: &http.Client{Timeout: 30 * time.Second}, GRPCAddr: addrs.GRPC}
	if addrs.HTTP != "" {
		st.BaseURL = "http://" + addrs.HTTP
	}
	var conn *grpc.ClientConn
	if addrs.GRPC != "" {
		var err error
		if conn, err = grpc.NewClient(addrs.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
			t.Fatal(err)
		}
		st.Conn = conn
	}
	var once sync.Once
	st.stop = func() {
		once.Do(func() {
			if conn != nil {
				_ = conn.Close()
			}
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
	}
	t.Cleanup(st.stop)
	return st
}

// Stop shuts the platform down gracefully (the database stays for StartOn).
func (s *Stack) Stop() { s.stop() }

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

// Tokens is a signed-in session.
type Tokens struct {
	Access, Refresh string
}

// Login signs in through the gateway and fails the test unless it succeeds.
func (s *Stack) Login(t testing.TB, tenant, username, password string) Tokens {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"tenant_code": tenant, "username": username, "password": password})
	r := s.Do(t, "POST", "/tenant/api/v1/tenant/auth/login", string(body))
	var env struct {
		Code int `json:"code"`
		Data struct {
			AccessToken  string `json:"access_token"`
			RefreshToken string `json:"refresh_token"`
		} `json:"data"`
	}
	if err := json.Unmarshal(r.Body, &env); err != nil || env.Code != 0 || env.Data.AccessToken == "" {
		t.Fatalf("login %s/%s: HTTP %d %s", tenant, username, r.Status, r.Body)
	}
	return Tokens{Access: env.Data.AccessToken, Refresh: env.Data.RefreshToken}
}

// Admin signs in as the demo administrator.
func (s *Stack) Admin(t testing.TB) Tokens { return s.Login(t, "demo", "admin", AdminPassword) }

// Bearer is the header pair for Do.
func Bearer(token string) []string { return []string{"Authorization", "Bearer " + token} }

// Package stack runs ShopMind in process for tests, on a fresh migrated database and
// loopback ports. It serves the two outer test tiers (see internal/testutil/tier):
//
//   - contract: StartServices hosts services on the gRPC server only (no gateway, no WAF)
//     and signs the demo admin in over gRPC; services/<name>/contract_test.go call one
//     service's RPCs through the generated typed clients.
//   - platform: Start, StartOn, StartWith and StartTargets run every service behind the
//     real gateway (and its WAF), for tests of what goes through the edge. They live in
//     tests/ (built with -tags platform): tests/platform/<name> per service, the
//     cross-service ones in tests/defects, tests/reliability and tests/badinput.
//
// Both skip under -short (the unit tier).
package stack

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	tenantv1 "github.com/shopmind/shopmind/gen/go/shopmind/tenant/v1"
	"github.com/shopmind/shopmind/internal/analytics/warehouse"
	"github.com/shopmind/shopmind/internal/analytics/warehouse/warehousetest"
	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/authn"
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
type Option func(*app.Config)

// Start runs the platform on a fresh database until the test ends. With
// SHOPMIND_TEST_ANALYTICS=clickhouse its analytical store is a fresh ClickHouse database
// (on the cluster too, with SHOPMIND_TEST_CLICKHOUSE_CLUSTER: make test-ch-cluster runs the
// chat's tests so) unless an option sets another.
func Start(t testing.TB, opts ...Option) *Stack {
	t.Helper()
	tier.Needs(t, "the platform (stack)")
	if os.Getenv("SHOPMIND_TEST_ANALYTICS") == warehouse.DialectClickHouse {
		db := warehousetest.ClickHouse(t)
		opts = append([]Option{func(c *app.Config) { c.Analytics.URL = db.URL }}, opts...)
	}
	return StartOn(t, NewDatabase(t), opts...)
}

// NewDatabase is a fresh test database migrated for the platform: the authentication
// tables and the schemas of defs (every service when none is given).
func NewDatabase(t testing.TB, defs ...service.Def) *pgtest.Database {
	t.Helper()
	if len(defs) == 0 {
		defs = services.All()
	}
	sets := []postgres.Migrations{authn.Migrations()}
	for _, d := range defs {
		if d.Migrations != nil {
			sets = append(sets, *d.Migrations)
		}
	}
	return pgtest.New(t, sets...)
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
	return startDefs(t, NewDatabase(t, defs...), app.TargetAll, defs, opts...)
}

// StartTargets runs the given targets (a --target list) on an existing test database.
// BaseURL is empty without the gateway, Conn nil without a gRPC server.
func StartTargets(t testing.TB, db *pgtest.Database, targets string, opts ...Option) *Stack {
	t.Helper()
	tier.Needs(t, "the platform (stack)")
	return startDefs(t, db, targets, services.All(), opts...)
}

// Services is the gRPC-only stack of a contract test.
type Services struct {
	// Conn reaches the hosted services; wrap it in the generated clients.
	Conn *grpc.ClientConn
	// DB is the test's database.
	DB *pgtest.Database
	// Admin carries the demo administrator's access token as outgoing metadata.
	Admin context.Context
	// AdminToken is that access token.
	AdminToken string
}

// StartServices hosts the named service targets on the gRPC server only (no gateway, no
// WAF) on a fresh database until the test ends, and signs the demo administrator in over
// gRPC. The tenant service is always hosted (sign-in and permissions); no targets hosts
// every service.
func StartServices(t testing.TB, targets ...string) *Services {
	t.Helper()
	tier.Needs(t, "PostgreSQL and the services (stack.StartServices)")
	if len(targets) == 0 {
		for _, d := range services.All() {
			targets = append(targets, d.Name)
		}
	}
	if !slices.Contains(targets, "tenant") {
		targets = append([]string{"tenant"}, targets...)
	}
	st := startDefs(t, NewDatabase(t), strings.Join(targets, ","), services.All())
	s := &Services{Conn: st.Conn, DB: st.DB}
	s.AdminToken = s.Login(t, "demo", "admin", AdminPassword)
	s.Admin = WithToken(context.Background(), s.AdminToken)
	return s
}

// Login signs in over gRPC (TenantAuthService.Login) and returns the access token, failing
// the test unless it succeeds.
func (s *Services) Login(t testing.TB, tenant, username, password string) string {
	t.Helper()
	resp, err := tenantv1.NewTenantAuthServiceClient(s.Conn).Login(context.Background(),
		&tenantv1.LoginRequest{TenantCode: tenant, Username: username, Password: password})
	if err != nil || resp.GetAccessToken() == "" {
		t.Fatalf("login %s/%s over gRPC: %v", tenant, username, err)
	}
	return resp.GetAccessToken()
}

// WithToken returns ctx carrying token as the outgoing authorization metadata.
func WithToken(ctx context.Context, token string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

// Violations are the fields named by the BadRequest details of a gRPC error (an
// InvalidArgument's field violations), in order.
func Violations(err error) []string {
	var fields []string
	for _, d := range status.Convert(err).Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				fields = append(fields, v.GetField())
			}
		}
	}
	return fields
}

func startDefs(t testing.TB, db *pgtest.Database, targets string, defs []service.Def, opts ...Option) *Stack {
	t.Helper()
	cfg, err := app.LoadConfigFromMap(map[string]string{
		"SHOPMIND_HTTP_ADDR": "127.0.0.1:0", "SHOPMIND_GRPC_ADDR": "127.0.0.1:0",
		"SHOPMIND_DATABASE_URL": db.URL, "SHOPMIND_JWT_SECRET": TestSecret,
		"SHOPMIND_ADMIN_PASSWORD": AdminPassword, "SHOPMIND_CAPTCHA_MODE": "off",
		"SHOPMIND_SHUTDOWN_TIMEOUT": "5s", "SHOPMIND_MAX_BODY_BYTES": "1048576", "SHOPMIND_LOG_LEVEL": "warn",
		"SHOPMIND_BCRYPT_COST":    "4", // fast hashing in tests; the cost is measured in benchmarks
		"SHOPMIND_RATE_LIMIT_RPS": "0", // no edge rate limit in tests; gateway/ tests it (an Option can set it)
	}, defs)
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
		if !cfg.AlwaysHTTP200 {
			checkAnswers(t, st.HTTP) // openapi.go
		}
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

// Unimplemented checks the contract of a service whose issue has not landed: calls holds,
// by method name, one call of every method of desc (through the typed client, with a
// request that passes validation), and each must answer codes.Unimplemented with a message
// naming the full method ("not implemented: /pkg.Service/Method").
func Unimplemented(t *testing.T, desc grpc.ServiceDesc, calls map[string]func() error) {
	t.Helper()
	var methods []string
	for _, m := range desc.Methods {
		methods = append(methods, m.MethodName)
	}
	for _, m := range desc.Streams {
		methods = append(methods, m.StreamName)
	}
	for _, m := range methods {
		call, ok := calls[m]
		if !ok {
			t.Errorf("%s/%s: no call in the test", desc.ServiceName, m)
			continue
		}
		st := status.Convert(call())
		want := "not implemented: /" + desc.ServiceName + "/" + m
		if st.Code() != codes.Unimplemented || !strings.Contains(st.Message(), want) {
			t.Errorf("%s: want Unimplemented %q, got %v %q", m, want, st.Code(), st.Message())
		}
	}
	for m := range calls {
		if !slices.Contains(methods, m) {
			t.Errorf("%s has no method %s", desc.ServiceName, m)
		}
	}
}

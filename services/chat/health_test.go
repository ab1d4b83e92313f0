package chat

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	chatv1 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v1"
)

type fakeChecker struct {
	name  string
	err   error
	delay time.Duration
}

func (f fakeChecker) Name() string { return f.name }

func (f fakeChecker) Check(ctx context.Context) error {
	select {
	case <-time.After(f.delay):
		return f.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func health(t *testing.T, checkers ...HealthChecker) *chatv1.HealthResponse {
	t.Helper()
	resp, err := (&healthServer{checkers: checkers}).Health(context.Background(), &chatv1.HealthRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Services) != len(checkers) || resp.CheckedAt == nil {
		t.Fatalf("entries: %v", resp)
	}
	for i, c := range checkers {
		if resp.Services[i].Name != c.Name() {
			t.Fatalf("order: %v", resp.Services)
		}
	}
	return resp
}

func TestHealthStatuses(t *testing.T) {
	if r := health(t, fakeChecker{name: "postgres"}, fakeChecker{name: "vector_store"}); r.Status != healthHealthy ||
		r.Services[0].Status != healthHealthy || r.Services[0].Error != "" {
		t.Fatalf("healthy: %v", r)
	}
	r := health(t, fakeChecker{name: "postgres"}, fakeChecker{name: "vector_store", err: errors.New("dial qdrant://admin:hunter2@10.0.0.5:6334: connection reset")})
	if r.Status != healthUnhealthy || r.Services[1].Status != healthUnhealthy || r.Services[1].LatencyMs != 0 {
		t.Fatalf("one store down: %v", r)
	}
	if e := r.Services[1].Error; !strings.Contains(e, "connection reset") || strings.Contains(e, "hunter2") || strings.Contains(e, "admin") {
		t.Fatalf("error detail leaks or misses: %q", e)
	}
	if r := health(t, fakeChecker{name: "postgres", delay: 1100 * time.Millisecond}); r.Status != healthDegraded ||
		r.Services[0].Status != healthDegraded || r.Services[0].LatencyMs < 1000 {
		t.Fatalf("slow: %v", r)
	}
	start := time.Now()
	if r := health(t, fakeChecker{name: "postgres", delay: time.Minute}); r.Status != healthUnhealthy ||
		!strings.Contains(r.Services[0].Error, "timeout") || time.Since(start) > checkTimeout+time.Second {
		t.Fatalf("hanging store: %v after %s", r, time.Since(start))
	}
}

// A PostgreSQL that cannot be reached is reported with the cause, never the connection
// string (user, password, database).
func TestHealthPostgresUnreachable(t *testing.T) {
	pool, err := pgxpool.New(context.Background(), "postgres://shopmind:s3cret@127.0.0.1:1/secretdb?sslmode=disable&connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	r := health(t, postgresChecker{pool: pool})
	e := r.Services[0].Error
	if r.Status != healthUnhealthy || e == "" {
		t.Fatalf("unreachable postgres: %v", r)
	}
	for _, secret := range []string{"s3cret", "shopmind", "secretdb", "user="} {
		if strings.Contains(e, secret) {
			t.Fatalf("error detail %q carries %q", e, secret)
		}
	}
	t.Logf("error detail: %s", e)
}

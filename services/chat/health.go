package chat

import (
	"context"
	"errors"
	"net"
	"regexp"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/types/known/timestamppb"

	chatv1 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v1"
)

// HealthChecker is a store the health endpoint checks. Name is the entry's name
// ("postgres", "vector_store"); Check returns nil when the store answers.
type HealthChecker interface {
	Name() string
	Check(ctx context.Context) error
}

// Health statuses.
const (
	healthHealthy   = "healthy"
	healthDegraded  = "degraded"
	healthUnhealthy = "unhealthy"
)

// Bounds of one check: slower than slowCheck is degraded, checkTimeout is a failure.
const (
	slowCheck    = time.Second
	checkTimeout = 3 * time.Second
)

// postgresChecker pings the relational database.
type postgresChecker struct{ pool *pgxpool.Pool }

func (postgresChecker) Name() string { return "postgres" }

func (c postgresChecker) Check(ctx context.Context) error {
	if c.pool == nil {
		return errors.New("no database configured")
	}
	return c.pool.Ping(ctx)
}

// healthServer is the v1 HealthService: every checker runs at once, each bounded, and the
// answer is a success envelope whatever the outcome.
type healthServer struct {
	chatv1.UnimplementedHealthServiceServer
	checkers []HealthChecker
}

func (s *healthServer) Health(ctx context.Context, _ *chatv1.HealthRequest) (*chatv1.HealthResponse, error) {
	out := &chatv1.HealthResponse{Status: healthHealthy, CheckedAt: timestamppb.Now(),
		Services: make([]*chatv1.ServiceHealth, len(s.checkers))}
	var wg sync.WaitGroup
	for i, c := range s.checkers {
		wg.Go(func() { out.Services[i] = check(ctx, c) })
	}
	wg.Wait()
	for _, sh := range out.Services {
		switch {
		case sh.Status == healthUnhealthy:
			out.Status = healthUnhealthy
		case sh.Status == healthDegraded && out.Status == healthHealthy:
			out.Status = healthDegraded
		}
	}
	return out, nil
}

// check runs one checker within checkTimeout.
func check(ctx context.Context, c HealthChecker) *chatv1.ServiceHealth {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	start := time.Now()
	err := c.Check(ctx)
	elapsed := time.Since(start)
	sh := &chatv1.ServiceHealth{Name: c.Name(), Status: healthHealthy, LatencyMs: elapsed.Milliseconds()}
	switch {
	case err != nil:
		sh.Status, sh.Error, sh.LatencyMs = healthUnhealthy, safeError(err), 0
	case elapsed > slowCheck:
		sh.Status = healthDegraded
	}
	return sh
}

// credentialPattern finds what must never reach a client: user:password@ in URLs and
// key=value pairs naming users, passwords, hosts or databases (pgx's connect errors list
// them).
var credentialPattern = regexp.MustCompile(`(?i)([a-z][a-z0-9+.-]*://)[^\s/@]*@|\b(user|password|host|dbname|database)=\S+`)

// safeError describes a check failure without credentials or connection strings.
func safeError(err error) string {
	var pgErr *pgconn.PgError
	var opErr *net.OpError
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout after " + checkTimeout.String()
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.As(err, &pgErr):
		return pgErr.Severity + " " + pgErr.Code + ": " + pgErr.Message
	case errors.As(err, &opErr):
		return opErr.Op + ": " + credentialPattern.ReplaceAllString(opErr.Err.Error(), "$1")
	}
	return credentialPattern.ReplaceAllString(err.Error(), "$1")
}

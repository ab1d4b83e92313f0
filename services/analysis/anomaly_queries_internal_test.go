package analysis

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	analysisv1 "github.com/shopmind/shopmind/gen/go/shopmind/analysis/v1"
	"github.com/shopmind/shopmind/internal/analytics/warehouse"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/postgres"
	"github.com/shopmind/shopmind/internal/testutil/pgtest"
)

// metricReads counts the statements that read the metric definitions.
type metricReads struct{ n atomic.Int64 }

func (c *metricReads) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.Contains(d.SQL, "FROM analysis.metrics") {
		c.n.Add(1)
	}
	return ctx
}
func (c *metricReads) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// CheckAnomalies reads the tenant's metric definitions once per request (it read them twice:
// once to compile the query, once to know how each metric treats a day without data).
func TestCheckAnomaliesReadsMetricsOnce(t *testing.T) {
	db := pgtest.New(t, authn.Migrations(), *postgres.Embedded("analysis", migrationFiles))
	ctx := context.Background()
	store, err := warehouse.Open(ctx, "", db.Pool, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.EnsureSchema(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO analysis.metrics (tenant_id, name, display_name, description, metric_group, type, config, synonyms)
		VALUES (1, 'gmv', 'GMV', '', 'Sales', 'derived', '{"derived":{"sourceField":"basic_orders.paid_amount","aggregation":"sum"}}', '{}')`); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	reads := &metricReads{}
	cfg.ConnConfig.Tracer = reads
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s := &queryServer{metrics: &metrics{pool: pool, catalog: store.Catalog}, store: store, timeout: 10 * time.Second}
	caller := authn.WithIdentity(ctx, &authn.Identity{TenantID: 1, UserID: 1, IsAdmin: true})
	r, err := s.CheckAnomalies(caller, &analysisv1.CheckAnomaliesRequest{MetricNames: []string{"gmv"}})
	if err != nil || len(r.GetMetrics()) != 1 {
		t.Fatalf("CheckAnomalies: %v %v", r, err)
	}
	if n := reads.n.Load(); n != 1 {
		t.Errorf("CheckAnomalies read the metric definitions %d times, want 1", n)
	}
}

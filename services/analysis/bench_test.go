package analysis

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/shopmind/shopmind/internal/analytics/demodata"
	"github.com/shopmind/shopmind/internal/analytics/warehouse"
	"github.com/shopmind/shopmind/internal/analytics/warehouse/warehousetest"
	"github.com/shopmind/shopmind/internal/postgres"
	"github.com/shopmind/shopmind/internal/testutil/pgtest"
	"github.com/shopmind/shopmind/services/analysis/semantic"
)

// benchTenant owns the benchmark's rows.
const benchTenant = 1

// benchStore opens (and fills once, kept between runs) the benchmark store of a dialect.
func benchStore(b *testing.B, dialect string, orders int) warehouse.Store {
	ctx := context.Background()
	var store warehouse.Store
	var err error
	if dialect == "postgres" {
		url := pgtest.URLFor(pgtest.ServerURL(), "shopmind_bench_analytics")
		if err := postgres.EnsureDatabase(ctx, url); err != nil {
			b.Fatal(err)
		}
		pool, err := postgres.Open(ctx, url, 0)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(pool.Close)
		store, err = warehouse.Open(ctx, "", pool, slog.New(slog.DiscardHandler))
		if err != nil {
			b.Fatal(err)
		}
	} else {
		u := warehousetest.ClickHouseURL()
		u = u[:len(u)-len("default")] + "shopmind_bench"
		if store, err = warehouse.Open(ctx, u, nil, slog.New(slog.DiscardHandler)); err != nil {
			b.Skipf("ClickHouse: %v", err)
		}
	}
	if err := store.EnsureSchema(ctx); err != nil {
		b.Fatal(err)
	}
	have, err := demodata.ExistingOrders(ctx, store, benchTenant)
	if err != nil {
		b.Fatal(err)
	}
	if have != int64(orders) {
		b.Logf("%s: loading %d orders (kept for later runs)", dialect, orders)
		if err := store.Writer().DeleteTenant(ctx, benchTenant); err != nil {
			b.Fatal(err)
		}
		stats, err := demodata.Generate(ctx, store.Writer(), demodata.Options{TenantID: benchTenant, Orders: orders, Seed: 42,
			Now: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), Days: 365, Progress: os.Stderr})
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("%s: loaded %d orders in %s (%.0f orders/s)", dialect, stats.Orders, stats.Elapsed, stats.OrdersPerSecond())
	}
	return store
}

// benchMetrics are the demo metrics as the semantic layer sees them.
func benchMetrics() map[string]*semantic.Metric {
	out := map[string]*semantic.Metric{}
	for i, m := range demodata.Metrics() {
		rec := &metricRecord{ID: int64(i + 1), Name: m.GetName(), Type: m.GetType(), Config: m.GetConfig()}
		out[m.GetName()] = toSemantic(rec)
	}
	out["avg_order_value"] = &semantic.Metric{ID: 99, Name: "avg_order_value", Type: "formula",
		Formula: &semantic.FormulaConfig{Expression: "gmv / order_count", DependencyIDs: []int64{out["gmv"].ID, out["order_count"].ID}}}
	return out
}

// BenchmarkTenMillionOrders runs the three queries over SHOPMIND_BENCH_ORDERS orders
// (make bench: 10,000,000) on both stores, the generated SQL against a hand-written
// equivalent in the same run; it reports the median of each and their ratio.
func BenchmarkTenMillionOrders(b *testing.B) {
	orders, _ := strconv.Atoi(os.Getenv("SHOPMIND_BENCH_ORDERS"))
	if orders <= 0 {
		b.Skip("set SHOPMIND_BENCH_ORDERS (make bench-analytics uses 10000000)")
	}
	ms := benchMetrics()
	end := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	start90 := end.AddDate(0, 0, -90)
	for _, dialect := range []string{"postgres", "clickhouse"} {
		b.Run(dialect, func(b *testing.B) {
			store := benchStore(b, dialect, orders)
			cat, err := store.Catalog(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			d, tbl, p := semantic.Postgres(), "analytics.", func(n int) string { return fmt.Sprintf("$%d", n) }
			day, distinct := "date_trunc('day', ordered_at AT TIME ZONE 'UTC')", "count(DISTINCT order_id)"
			if dialect == "clickhouse" {
				d, tbl, p = semantic.ClickHouse(), "", func(int) string { return "?" }
				day, distinct = "toStartOfDay(ordered_at)", "uniqExact(order_id)"
			}
			paid := "status IN ('paid', 'shipped', 'completed')"
			cases := []struct {
				name string
				q    *semantic.Query
				hand string
				args []any
			}{
				{"gmv_by_day_90d", &semantic.Query{Metrics: []*semantic.Metric{ms["gmv"]}, Granularity: "day", Start: start90, End: end, Limit: 1000},
					fmt.Sprintf("SELECT %s AS d, sum(paid_amount) FROM %sbasic_orders WHERE i_tenant_id = %s AND %s AND ordered_at >= %s AND ordered_at < %s GROUP BY d ORDER BY d",
						day, tbl, p(1), paid, p(2), p(3)), []any{int64(benchTenant), start90, end}},
				{"top20_goods_by_sales", &semantic.Query{Metrics: []*semantic.Metric{ms["line_amount"]}, Dimensions: []string{"goods"}, Start: start90, End: end,
					Sort: []semantic.SortKey{{Field: "line_amount", Desc: true}}, Limit: 20},
					fmt.Sprintf("SELECT goods_id, sum(amount) AS s FROM %sbasic_order_items WHERE i_tenant_id = %s AND ordered_at >= %s AND ordered_at < %s GROUP BY goods_id ORDER BY s DESC LIMIT 20",
						tbl, p(1), p(2), p(3)), []any{int64(benchTenant), start90, end}},
				{"aov_by_shop", &semantic.Query{Metrics: []*semantic.Metric{ms["avg_order_value"]}, Dimensions: []string{"shop"}, Start: start90, End: end, Limit: 100},
					fmt.Sprintf("SELECT shop_id, sum(paid_amount) / %s FROM %sbasic_orders WHERE i_tenant_id = %s AND %s AND ordered_at >= %s AND ordered_at < %s GROUP BY shop_id",
						distinct, tbl, p(1), paid, p(2), p(3)), []any{int64(benchTenant), start90, end}},
			}
			for _, c := range cases {
				c.q.TenantID = benchTenant
				c.q.Resolve = func(name string) *semantic.Metric { return ms[name] }
				compiled, err := semantic.Compile(c.q, cat, d)
				if err != nil {
					b.Fatal(err)
				}
				b.Run(c.name, func(b *testing.B) {
					run := func(sql string, args []any) time.Duration {
						t0 := time.Now()
						if _, err := store.Query(context.Background(), sql, args, warehouse.QueryOptions{MaxRows: 10000, Timeout: 5 * time.Minute}); err != nil {
							b.Fatal(err)
						}
						return time.Since(t0)
					}
					run(compiled.SQL, compiled.Args) // warm the caches for both
					run(c.hand, c.args)
					var gen, hand []time.Duration
					for i := 0; i < max(b.N, 5); i++ {
						gen = append(gen, run(compiled.SQL, compiled.Args))
						hand = append(hand, run(c.hand, c.args))
					}
					slices.Sort(gen)
					slices.Sort(hand)
					g, h := gen[len(gen)/2], hand[len(hand)/2]
					b.ReportMetric(float64(g.Microseconds())/1000, "ms-generated")
					b.ReportMetric(float64(h.Microseconds())/1000, "ms-hand")
					b.ReportMetric(float64(g)/float64(h), "ratio")
				})
			}
		})
	}
}

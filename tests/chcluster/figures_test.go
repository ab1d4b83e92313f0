//go:build platform

package chcluster

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	analysisv1 "github.com/shopmind/shopmind/gen/go/shopmind/analysis/v1"
	"github.com/shopmind/shopmind/internal/analytics/demodata"
	"github.com/shopmind/shopmind/internal/analytics/warehouse"
	"github.com/shopmind/shopmind/internal/analytics/warehouse/warehousetest"
	"github.com/shopmind/shopmind/services/analysis/semantic"
)

// TestScaleFigures measures what the README's cluster figures report, when
// SHOPMIND_CH_CLUSTER_FIGURES_ORDERS is set (make ch-cluster-figures): that many orders of
// one tenant over a year loaded into the 2x2 cluster, a 1-shard cluster (shopmind_1x2) and
// the single server; the demo metrics' preview by day and by shop (the semantic layer's SQL)
// against the same query written by hand, p50 and p99 of 20 runs each; crx batches stored
// per second. It logs figures and asserts nothing about time. The databases are kept
// (shopmind_fig_*), so a second run measures without loading.
func TestScaleFigures(t *testing.T) {
	needCluster(t)
	orders, _ := strconv.Atoi(os.Getenv("SHOPMIND_CH_CLUSTER_FIGURES_ORDERS"))
	if orders <= 0 {
		t.Skip("set SHOPMIND_CH_CLUSTER_FIGURES_ORDERS (make ch-cluster-figures)")
	}
	ctx := context.Background()
	clusterURL := warehousetest.ClickHouseURL()
	single := os.Getenv("SHOPMIND_TEST_CLICKHOUSE_SINGLE_URL")
	if single == "" {
		single = warehousetest.DefaultClickHouseURL
	}
	stores := []struct{ name, server, cluster string }{
		{"2 shards x 2 replicas", clusterURL, "shopmind"},
		{"1 shard x 2 replicas", clusterURL, "shopmind_1x2"},
		{"one server", single, ""},
	}
	ms := map[string]*semantic.Metric{}
	for i, m := range demodata.Metrics() {
		ms[m.GetName()] = semanticMetric(int64(i+1), m.GetName(), m.GetType(), m.GetConfig())
	}
	end := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	start := end.AddDate(-1, 0, 0)
	const tenant = 1
	for _, st := range stores {
		db := fmt.Sprintf("shopmind_fig_%d", orders)
		u := st.server[:len(st.server)-len("default")] + db
		if st.cluster != "" {
			db += "_" + st.cluster
			u = st.server[:len(st.server)-len("default")] + db + "?cluster=" + st.cluster
		}
		store, err := warehouse.Open(ctx, u, nil, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		defer store.Close()
		if err := store.EnsureSchema(ctx); err != nil {
			t.Fatal(err)
		}
		if err := store.Collector().EnsureCollected(ctx); err != nil {
			t.Fatal(err)
		}
		have, err := demodata.ExistingOrders(ctx, store, tenant)
		if err != nil {
			t.Fatal(err)
		}
		if have != int64(orders) {
			if err := store.Writer().DeleteTenant(ctx, tenant); err != nil {
				t.Fatal(err)
			}
			stats, err := demodata.Generate(ctx, store.Writer(), demodata.Options{TenantID: tenant, Orders: orders, Seed: 42,
				Now: end, Days: 365})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: loaded %d orders, %d lines in %s: %.0f orders/s, %.0f lines/s", st.name, stats.Orders, stats.Items,
				stats.Elapsed.Round(time.Millisecond), float64(stats.Orders)/stats.Elapsed.Seconds(), float64(stats.Items)/stats.Elapsed.Seconds())
		}
		cat, err := store.Catalog(ctx)
		if err != nil {
			t.Fatal(err)
		}
		paid := "status IN ('paid', 'shipped', 'completed')"
		cases := []struct {
			name string
			q    *semantic.Query
			hand string
		}{
			{"gmv by day, 1 year", &semantic.Query{Metrics: []*semantic.Metric{ms["gmv"]}, Granularity: "day", Start: start, End: end, Limit: 1000},
				"SELECT toStartOfDay(ordered_at) AS d, sum(paid_amount) FROM basic_orders WHERE i_tenant_id = ? AND " + paid + " AND ordered_at >= ? AND ordered_at < ? GROUP BY d ORDER BY d"},
			{"gmv and orders by shop, 1 year", &semantic.Query{Metrics: []*semantic.Metric{ms["gmv"], ms["order_count"]}, Dimensions: []string{"shop"}, Start: start, End: end, Limit: 100},
				"SELECT shop_id, sum(paid_amount), uniqExact(order_id) FROM basic_orders WHERE i_tenant_id = ? AND " + paid + " AND ordered_at >= ? AND ordered_at < ? GROUP BY shop_id"},
		}
		for _, c := range cases {
			c.q.TenantID = tenant
			c.q.Resolve = func(name string) *semantic.Metric { return ms[name] }
			compiled, err := semantic.Compile(c.q, cat, semantic.ClickHouse())
			if err != nil {
				t.Fatal(err)
			}
			run := func(sql string, args []any) time.Duration {
				t0 := time.Now()
				if _, err := store.Query(ctx, sql, args, warehouse.QueryOptions{MaxRows: 10000, Timeout: 5 * time.Minute}); err != nil {
					t.Fatalf("%s: %v\n%s", c.name, err, sql)
				}
				return time.Since(t0)
			}
			handArgs := []any{int64(tenant), start, end}
			run(compiled.SQL, compiled.Args)
			run(c.hand, handArgs)
			var gen, hand []time.Duration
			for i := 0; i < 20; i++ {
				gen = append(gen, run(compiled.SQL, compiled.Args))
				hand = append(hand, run(c.hand, handArgs))
			}
			slices.Sort(gen)
			slices.Sort(hand)
			ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
			t.Logf("%s, %s: preview p50 %s p99 %s; hand-written p50 %s p99 %s; ratio of p50 %.2f", st.name, c.name,
				ms(gen[10]), ms(gen[19]), ms(hand[10]), ms(hand[19]), float64(gen[10])/float64(hand[10]))
		}
		// crx ingestion: 100 batches of 100 values (new keys each), as the crx service stores them.
		dims, key := warehouse.CanonicalDims(nil)
		base := time.Now().UTC().Truncate(time.Second)
		t0 := time.Now()
		stored := 0
		for b := 0; b < 100; b++ {
			rows := make([]warehouse.CollectedValue, 100)
			for i := range rows {
				rows[i] = warehouse.CollectedValue{TenantID: tenant, StatTime: base.Add(-time.Duration(b*100+i) * time.Second), ShopID: int64(1 + i%5),
					Platform: "tmall", MetricKey: "uv", Value: float64(i), Dims: dims, DimsKey: key, CollectedAt: base, ReceivedAt: base, BatchID: fmt.Sprint(b)}
			}
			n, err := store.Collector().InsertCollected(ctx, rows)
			if err != nil {
				t.Fatal(err)
			}
			stored += n
		}
		el := time.Since(t0)
		t.Logf("%s: crx batches of 100 values: %.0f batches/s, %.0f values/s (%d stored)", st.name, 100/el.Seconds(), float64(stored)/el.Seconds(), stored)
	}
}

// semanticMetric is a demo metric as the analysis service hands it to the semantic layer
// (services/analysis toSemantic, for the order and derived kinds the demo metrics use).
func semanticMetric(id int64, name, typ string, cfg *analysisv1.MetricConfig) *semantic.Metric {
	out := &semantic.Metric{ID: id, Name: name, Type: typ}
	switch c := cfg.GetKind().(type) {
	case *analysisv1.MetricConfig_Derived:
		out.Derived = &semantic.DerivedConfig{SourceField: c.Derived.GetSourceField(), Aggregation: c.Derived.GetAggregation(),
			TimeRangeField: c.Derived.GetTimeRangeField()}
	case *analysisv1.MetricConfig_Order:
		oc := &semantic.OrderConfig{OrderField: c.Order.GetOrderField(), TimeBasis: c.Order.GetTimeBasis()}
		for _, cond := range c.Order.GetQueryCondition() {
			var v any
			if cond.GetValue() != nil {
				v = cond.GetValue().AsInterface()
			}
			oc.Conditions = append(oc.Conditions, semantic.Condition{Field: cond.GetField(), Operator: cond.GetOperator(), Value: v})
		}
		out.Order = oc
	}
	return out
}

package demodata_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/shopmind/shopmind/internal/analytics/demodata"
	"github.com/shopmind/shopmind/internal/analytics/warehouse"
	"github.com/shopmind/shopmind/internal/analytics/warehouse/warehousetest"
)

// TestLoadRate measures the load rate into both stores (fresh databases, dropped after).
// It runs only when SHOPMIND_DEMO_LOAD_ORDERS is set:
//
//	SHOPMIND_DEMO_LOAD_ORDERS=1000000 go test ./internal/analytics/demodata -run TestLoadRate -v -timeout 30m
func TestLoadRate(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SHOPMIND_DEMO_LOAD_ORDERS"))
	if n <= 0 {
		t.Skip("set SHOPMIND_DEMO_LOAD_ORDERS to measure the load rate")
	}
	batch, _ := strconv.Atoi(os.Getenv("SHOPMIND_DEMO_LOAD_BATCH"))
	writers, _ := strconv.Atoi(os.Getenv("SHOPMIND_DEMO_LOAD_WRITERS"))
	warehousetest.Each(t, func(t *testing.T, db *warehousetest.DB) {
		size := batch
		if size == 0 && db.Store.Dialect() == warehouse.DialectClickHouse {
			size = 50_000 // as shopmind demo-data does
		}
		stats, err := demodata.Generate(context.Background(), db.Store.Writer(),
			demodata.Options{TenantID: 1, Orders: n, Seed: 1, Now: now, BatchSize: size, Writers: writers, Progress: os.Stderr})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d orders, %d lines in %s: %.0f orders/s", db.Store.Dialect(), stats.Orders, stats.Items,
			stats.Elapsed.Round(1e8), stats.OrdersPerSecond())
		// Typical analytical questions over the last 30 days of the tenant.
		day, from := "date_trunc('day', ordered_at)", now.AddDate(0, 0, -30)
		if db.Store.Dialect() == warehouse.DialectClickHouse {
			day = "toStartOfDay(ordered_at)"
		}
		p := db.P
		// ClickHouse 18.16 joins two tables per SELECT: a third one takes a subquery.
		for _, q := range []struct {
			name, sql string
			args      []any
		}{
			{"daily GMV", "SELECT " + day + " AS d, sum(paid_amount), count(*) FROM basic_orders WHERE i_tenant_id = " + p(1) +
				" AND ordered_at >= " + p(2) + " AND status IN ('paid', 'shipped', 'completed') GROUP BY d ORDER BY d", []any{int64(1), from}},
			{"top goods", "SELECT g.goods_name, sum(i.amount) AS a FROM basic_order_items i JOIN basic_goods g ON g.i_tenant_id = i.i_tenant_id AND g.goods_id = i.goods_id" +
				" WHERE i.i_tenant_id = " + p(1) + " AND i.ordered_at >= " + p(2) + " GROUP BY g.goods_name ORDER BY a DESC LIMIT 10", []any{int64(1), from}},
			{"GMV by category", "SELECT c.category_name, sum(x.amount) FROM (SELECT i.amount AS amount, g.category_id AS category_id" +
				" FROM basic_order_items i JOIN basic_goods g ON g.i_tenant_id = i.i_tenant_id AND g.goods_id = i.goods_id" +
				" WHERE i.i_tenant_id = " + p(1) + " AND i.ordered_at >= " + p(2) + ") AS x JOIN basic_categories AS c ON c.category_id = x.category_id" +
				" WHERE c.i_tenant_id = " + p(3) + " GROUP BY c.category_name", []any{int64(1), from, int64(1)}},
		} {
			name := q.name
			start := time.Now()
			res, err := db.Store.Query(context.Background(), q.sql, q.args, warehouse.QueryOptions{})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			t.Logf("%s: %s: %d rows in %s", db.Store.Dialect(), name, len(res.Rows), time.Since(start).Round(time.Millisecond))
		}
	})
}

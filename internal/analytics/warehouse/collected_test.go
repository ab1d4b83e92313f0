package warehouse_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopmind/shopmind/internal/analytics/catalog"
	"github.com/shopmind/shopmind/internal/analytics/warehouse"
	"github.com/shopmind/shopmind/internal/analytics/warehouse/warehousetest"
)

// collected makes n values of tenant for shop, one per minute from day0, metric gmv, with a
// channel dimension.
func collected(tenant, shop int64, n int, channel string) []warehouse.CollectedValue {
	dims, key := warehouse.CanonicalDims(map[string]string{"channel": channel})
	out := make([]warehouse.CollectedValue, n)
	for i := range out {
		at := day0.Add(time.Duration(i) * time.Minute)
		out[i] = warehouse.CollectedValue{TenantID: tenant, StatTime: at, ShopID: shop, Platform: "taobao", MetricKey: "gmv",
			Value: float64(i), Dims: dims, DimsKey: key, CollectedAt: at, PageURL: "https://sycm.taobao.com/",
			UserID: 7, BatchID: "b", ReceivedAt: at}
	}
	return out
}

func TestCanonicalDims(t *testing.T) {
	a, ka := warehouse.CanonicalDims(map[string]string{"b": "2", "a": "1\""})
	b, kb := warehouse.CanonicalDims(map[string]string{"a": "1\"", "b": "2"})
	if a != `{"a":"1\"","b":"2"}` || a != b || ka != kb || len(ka) != 32 {
		t.Fatalf("%s %s %s %s", a, b, ka, kb)
	}
	if e, ke := warehouse.CanonicalDims(nil); e != "{}" || ke == ka {
		t.Fatalf("empty: %s %s", e, ke)
	}
}

func TestCollectedValuesAreStoredOnceAndListed(t *testing.T) {
	warehousetest.Each(t, func(t *testing.T, db *warehousetest.DB) {
		ctx := context.Background()
		w := db.Store.Collector()
		if err := w.EnsureCollected(ctx); err != nil {
			t.Fatal(err)
		}
		if err := w.EnsureCollected(ctx); err != nil { // idempotent
			t.Fatal(err)
		}
		rows := collected(1, 10, 50, "search")
		// A repeat inside the call counts once.
		n, err := w.InsertCollected(ctx, append(rows, rows[0]))
		if err != nil || n != 50 {
			t.Fatalf("first insert: %d %v", n, err)
		}
		// Stored before: nothing again; other dims, shop or tenant: new values.
		n, err = w.InsertCollected(ctx, rows[:10])
		if err != nil || n != 0 {
			t.Fatalf("repeat: %d %v", n, err)
		}
		more := append(append(collected(1, 10, 5, "ads"), collected(1, 11, 5, "search")...), collected(2, 10, 5, "search")...)
		more = append(more, rows[20])
		n, err = w.InsertCollected(ctx, more)
		if err != nil || n != 15 {
			t.Fatalf("new keys: %d %v", n, err)
		}
		if got := scalar(t, db, "SELECT count(*) FROM diy_crx_metrics WHERE i_tenant_id = "+db.P(1), int64(1)); fmt.Sprint(got) != "60" {
			t.Fatalf("tenant 1 rows: %v", got)
		}
		if got := scalar(t, db, "SELECT sum(value) FROM diy_crx_metrics WHERE i_tenant_id = "+db.P(1)+" AND shop_id = 10", int64(1)); fmt.Sprint(got) != fmt.Sprint(float64(49*50/2+10)) {
			t.Fatalf("sum: %v", got)
		}

		cat, err := db.Store.Catalog(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tab := cat.Table(warehouse.TableCollected)
		if tab == nil || !tab.Diy || tab.TimeColumn != "stat_time" {
			t.Fatalf("catalog table: %+v", tab)
		}
		if c := tab.Column("value"); c == nil || c.Role != catalog.RoleMeasure {
			t.Fatalf("value column: %+v", c)
		}
		if c := tab.Column("metric_key"); c == nil || c.Role != catalog.RoleDimension {
			t.Fatalf("metric_key column: %+v", c)
		}
	})
}

func TestCollectedConcurrentInsertsStoreOnce(t *testing.T) {
	warehousetest.Each(t, func(t *testing.T, db *warehousetest.DB) {
		ctx := context.Background()
		w := db.Store.Collector()
		if err := w.EnsureCollected(ctx); err != nil {
			t.Fatal(err)
		}
		rows := collected(3, 1, 100, "search")
		var wg sync.WaitGroup
		counts := make([]int, 4)
		for i := range counts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n, err := w.InsertCollected(ctx, rows)
				if err != nil {
					t.Error(err)
				}
				counts[i] = n
			}()
		}
		wg.Wait()
		if total := counts[0] + counts[1] + counts[2] + counts[3]; total != 100 {
			t.Fatalf("inserted %v, want 100 in total", counts)
		}
		if got := scalar(t, db, "SELECT count(*) FROM diy_crx_metrics"); fmt.Sprint(got) != "100" {
			t.Fatalf("rows: %v", got)
		}
	})
}

// freshCollector is the collected-values writer of a fresh store of dialect, its table made.
func freshCollector(b *testing.B, dialect string) warehouse.Collector {
	b.Helper()
	db := warehousetest.Postgres
	if dialect == warehouse.DialectClickHouse {
		db = warehousetest.ClickHouse
	}
	w := db(b).Store.Collector()
	if err := w.EnsureCollected(context.Background()); err != nil {
		b.Fatal(err)
	}
	return w
}

// BenchmarkInsertCollected measures ingestion of collected values: each iteration stores one
// batch of new values (items/s reported). 500 is the API's batch bound (one SyncMetrics
// call); 5000 and 50000 are what bulk writers send (ClickHouse wants large batches).
func BenchmarkInsertCollected(b *testing.B) {
	for _, dialect := range []string{"postgres", "clickhouse"} {
		for _, size := range []int{500, 5000, 50000} {
			b.Run(fmt.Sprintf("%s/batch=%d", dialect, size), func(b *testing.B) {
				ctx := context.Background()
				w := freshCollector(b, dialect)
				base := collected(1, 1, size, "search")
				b.ResetTimer()
				for i := range b.N {
					rows := make([]warehouse.CollectedValue, size)
					copy(rows, base)
					for j := range rows {
						rows[j].ShopID = int64(i + 1) // a new key for every value
					}
					if n, err := w.InsertCollected(ctx, rows); err != nil || n != size {
						b.Fatalf("inserted %d of %d: %v", n, size, err)
					}
				}
				b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "items/s")
			})
		}
	}
}

// BenchmarkInsertCollectedConcurrent is the service's shape: several SyncMetrics calls of
// 500 values at once (GOMAXPROCS*4 writers), each a new set of keys.
func BenchmarkInsertCollectedConcurrent(b *testing.B) {
	for _, dialect := range []string{"postgres", "clickhouse"} {
		b.Run(dialect, func(b *testing.B) {
			ctx := context.Background()
			w := freshCollector(b, dialect)
			const size = 500
			base := collected(1, 1, size, "search")
			var next atomic.Int64
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					shop := next.Add(1)
					rows := make([]warehouse.CollectedValue, size)
					copy(rows, base)
					for j := range rows {
						rows[j].ShopID = shop
					}
					if n, err := w.InsertCollected(ctx, rows); err != nil || n != size {
						b.Errorf("inserted %d of %d: %v", n, size, err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "items/s")
		})
	}
}

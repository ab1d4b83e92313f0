package warehouse_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/shopmind/shopmind/internal/analytics/catalog"
	"github.com/shopmind/shopmind/internal/analytics/warehouse"
	"github.com/shopmind/shopmind/internal/analytics/warehouse/warehousetest"
	"github.com/shopmind/shopmind/internal/apperr"
)

var day0 = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

// sample is a small data set for one tenant: 2 shops, 2 categories, 3 goods, n orders
// (order i has i%3+1 items; every third order is cancelled and unpaid).
type sample struct {
	shops      []warehouse.Shop
	categories []warehouse.Category
	goods      []warehouse.Goods
	orders     []warehouse.Order
	items      []warehouse.OrderItem
}

func newSample(tenant int64, n int) sample {
	s := sample{
		shops: []warehouse.Shop{
			{TenantID: tenant, ShopID: 1, ShopName: "旗舰店 Flagship", Platform: "tmall", Status: "open", CreatedAt: day0.AddDate(-1, 0, 0)},
			{TenantID: tenant, ShopID: 2, ShopName: "京东自营 JD Store", Platform: "jd", Status: "open", CreatedAt: day0.AddDate(-1, 0, 0)},
		},
		categories: []warehouse.Category{
			{TenantID: tenant, CategoryID: 1, ParentID: 0, CategoryName: "服装 Apparel", Level: 1},
			{TenantID: tenant, CategoryID: 2, ParentID: 1, CategoryName: "T恤 T-Shirts", Level: 2},
		},
		goods: []warehouse.Goods{
			{TenantID: tenant, GoodsID: 1, ShopID: 1, CategoryID: 2, StaffID: 3, GoodsName: "经典T恤 Classic Tee", ItemNo: "T-1", Platform: "tmall", Status: "on_sale", Price: 99.5, Cost: 40, CreatedAt: day0, UpdatedAt: day0},
			{TenantID: tenant, GoodsID: 2, ShopID: 1, CategoryID: 2, StaffID: 4, GoodsName: "礼品卡 Gift card", ItemNo: "G-2", Platform: "tmall", IsVirtual: true, Status: "on_sale", Price: 50, Cost: 50, CreatedAt: day0, UpdatedAt: day0},
			{TenantID: tenant, GoodsID: 3, ShopID: 2, CategoryID: 2, StaffID: 3, GoodsName: "运动T恤 Sport Tee", ItemNo: "T-3", Platform: "jd", Status: "off_sale", Price: 120, Cost: 60, CreatedAt: day0, UpdatedAt: day0},
		},
	}
	itemID := int64(0)
	for i := 1; i <= n; i++ {
		shop := int64(1 + i%2)
		at := day0.Add(time.Duration(i) * time.Hour)
		o := warehouse.Order{TenantID: tenant, OrderID: int64(i), OrderNo: fmt.Sprintf("NO%05d", i), ShopID: shop,
			Platform: s.shops[shop-1].Platform, Status: "completed", BuyerID: int64(100 + i%5), OrderedAt: at}
		if i%3 == 0 {
			o.Status = "cancelled"
		} else {
			paid, shipped, done := at.Add(time.Minute), at.Add(24*time.Hour), at.Add(72*time.Hour)
			o.PaidAt, o.ShippedAt, o.CompletedAt = &paid, &shipped, &done
		}
		for k := 0; k <= i%3; k++ {
			itemID++
			g := s.goods[k]
			amount := g.Price * float64(k+1)
			s.items = append(s.items, warehouse.OrderItem{TenantID: tenant, ItemID: itemID, OrderID: o.OrderID, GoodsID: g.GoodsID,
				SkuID: g.GoodsID * 10, ShopID: shop, Status: o.Status, Quantity: int64(k + 1), UnitPrice: g.Price, Amount: amount,
				CostAmount: g.Cost * float64(k+1), OrderedAt: at})
			o.TotalAmount += amount
			o.PaidAmount += amount
			o.ItemCount += int64(k + 1)
		}
		s.orders = append(s.orders, o)
	}
	return s
}

func (s sample) load(t *testing.T, w warehouse.Writer) {
	t.Helper()
	ctx := context.Background()
	if err := w.Shops(ctx, s.shops); err != nil {
		t.Fatal(err)
	}
	if err := w.Categories(ctx, s.categories); err != nil {
		t.Fatal(err)
	}
	if err := w.Goods(ctx, s.goods); err != nil {
		t.Fatal(err)
	}
	if err := w.Orders(ctx, s.orders, s.items); err != nil {
		t.Fatal(err)
	}
}

func query(t *testing.T, db *warehousetest.DB, sql string, args ...any) *warehouse.Result {
	t.Helper()
	res, err := db.Store.Query(context.Background(), sql, args, warehouse.QueryOptions{MaxRows: 1000, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return res
}

func scalar(t *testing.T, db *warehousetest.DB, sql string, args ...any) any {
	t.Helper()
	res := query(t, db, sql, args...)
	if len(res.Rows) != 1 || len(res.Rows[0]) != 1 {
		t.Fatalf("%s: want one value, got %v", sql, res.Rows)
	}
	return res.Rows[0][0]
}

func TestOpenRefusesOtherURLs(t *testing.T) {
	for _, u := range []string{"postgres://x/y", "http://127.0.0.1:8123"} {
		if _, err := warehouse.Open(context.Background(), u, nil, nil); err == nil {
			t.Errorf("%s: want an error", u)
		}
	}
	if _, err := warehouse.Open(context.Background(), "", nil, nil); err == nil {
		t.Error("postgres without a pool: want an error")
	}
}

func TestSchemaIsIdempotentAndConcurrent(t *testing.T) {
	warehousetest.Each(t, func(t *testing.T, db *warehousetest.DB) {
		ctx := context.Background()
		newSample(1, 3).load(t, db.Store.Writer())
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			wg.Add(1)
			go func() { defer wg.Done(); errs <- db.Store.EnsureSchema(ctx) }()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if n := scalar(t, db, "SELECT count(*) FROM basic_orders"); n != int64(3) {
			t.Fatalf("data lost by a repeated EnsureSchema: %v orders", n)
		}
		cat, err := db.Store.Catalog(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, base := range catalog.Base().Tables {
			if cat.Table(base.Name) == nil {
				t.Errorf("catalog lacks %s", base.Name)
			}
			// Every catalog column is queryable under its name.
			query(t, db, fmt.Sprintf("SELECT * FROM %s WHERE %s = %s", base.Name, catalog.TenantColumn, db.P(1)), int64(1))
		}
	})
}

func TestLoadAndQueryTypedRows(t *testing.T) {
	warehousetest.Each(t, func(t *testing.T, db *warehousetest.DB) {
		one, two := newSample(1, 30), newSample(2, 12)
		one.load(t, db.Store.Writer())
		two.load(t, db.Store.Writer())

		res := query(t, db, "SELECT order_id, order_no, paid_amount, ordered_at, paid_at, item_count FROM basic_orders WHERE i_tenant_id = "+
			db.P(1)+" ORDER BY order_id", int64(1))
		wantTypes := []string{"int", "string", "float", "time", "time", "int"}
		for i, c := range res.Columns {
			if c.Type != wantTypes[i] {
				t.Errorf("column %s: type %s, want %s", c.Name, c.Type, wantTypes[i])
			}
		}
		if res.Columns[0].Name != "order_id" || res.Truncated || len(res.Rows) != 30 {
			t.Fatalf("result: %+v", res)
		}
		first, third := res.Rows[0], res.Rows[2]
		o := one.orders[0]
		if first[0] != int64(1) || first[1] != "NO00001" || first[2] != o.PaidAmount || first[5] != o.ItemCount {
			t.Errorf("row 1: %#v", first)
		}
		if at, ok := first[3].(time.Time); !ok || !at.Equal(o.OrderedAt) || at.Location() != time.UTC {
			t.Errorf("ordered_at: %#v", first[3])
		}
		if at, ok := first[4].(time.Time); !ok || !at.Equal(*o.PaidAt) {
			t.Errorf("paid_at: %#v", first[4])
		}
		if third[4] != nil {
			t.Errorf("paid_at of a cancelled order: %#v, want nil", third[4])
		}

		// The tenant filter: each tenant sees its own rows.
		for tenant, s := range map[int64]sample{1: one, 2: two} {
			var want float64
			for _, o := range s.orders {
				if o.Status == "completed" {
					want += o.PaidAmount
				}
			}
			res := query(t, db, "SELECT count(*), sum(paid_amount) FROM basic_orders WHERE i_tenant_id = "+db.P(1)+" AND status = "+db.P(2),
				tenant, "completed")
			if got := res.Rows[0][1].(float64); math.Abs(got-want) > 1e-6 {
				t.Errorf("tenant %d: GMV %v, want %v", tenant, got, want)
			}
		}

		// A join across tables, grouped by a label, with time and float arguments.
		// On a ClickHouse 18.16 cluster a JOIN of two Distributed tables named directly does
		// not resolve qualified names: the sides are subqueries there, as the semantic layer
		// and the sandbox write them (WAREHOUSE.md, "Cluster mode").
		from := "basic_order_items i JOIN basic_shops s"
		if warehousetest.ClickHouseCluster() != "" && db.Store.Dialect() == warehouse.DialectClickHouse {
			from = "(SELECT * FROM basic_order_items) AS i JOIN (SELECT * FROM basic_shops) AS s"
		}
		res = query(t, db, `SELECT s.shop_name, count(*) AS lines, sum(i.quantity) AS units
			FROM `+from+` ON s.i_tenant_id = i.i_tenant_id AND s.shop_id = i.shop_id
			WHERE i.i_tenant_id = `+db.P(1)+` AND i.ordered_at >= `+db.P(2)+` AND i.unit_price > `+db.P(3)+`
			GROUP BY s.shop_name ORDER BY s.shop_name`, int64(2), day0, 10.5)
		if len(res.Rows) != 2 || res.Rows[0][0] != "京东自营 JD Store" || res.Columns[2].Name != "units" {
			t.Fatalf("join: %+v", res)
		}
		var lines int64
		for _, row := range res.Rows {
			lines += row[1].(int64)
		}
		if lines != int64(len(two.items)) {
			t.Errorf("join lines %d, want %d", lines, len(two.items))
		}

		// Booleans: PostgreSQL answers bool, ClickHouse (UInt8) 0/1.
		v := scalar(t, db, "SELECT is_virtual FROM basic_goods WHERE i_tenant_id = "+db.P(1)+" AND goods_id = 2", int64(1))
		if v != true && v != int64(1) {
			t.Errorf("is_virtual: %#v", v)
		}
		// A time bucket comes back as a UTC time.
		bucket := "date_trunc('day', ordered_at)"
		if db.Store.Dialect() == warehouse.DialectClickHouse {
			bucket = "toStartOfDay(ordered_at)"
		}
		res = query(t, db, "SELECT "+bucket+" AS d, count(*) FROM basic_orders WHERE i_tenant_id = "+db.P(1)+" GROUP BY d ORDER BY d", int64(1))
		if len(res.Rows) != 2 || !res.Rows[0][0].(time.Time).Equal(day0) || res.Rows[0][1] != int64(23) {
			t.Errorf("daily buckets: %+v", res.Rows)
		}
	})
}

func TestMaxRowsTruncates(t *testing.T) {
	warehousetest.Each(t, func(t *testing.T, db *warehousetest.DB) {
		newSample(1, 10).load(t, db.Store.Writer())
		ctx := context.Background()
		sql := "SELECT order_id FROM basic_orders WHERE i_tenant_id = " + db.P(1) + " ORDER BY order_id"
		res, err := db.Store.Query(ctx, sql, []any{int64(1)}, warehouse.QueryOptions{MaxRows: 3})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Truncated || len(res.Rows) != 3 || res.Rows[2][0] != int64(3) {
			t.Fatalf("cap 3: %+v", res)
		}
		res, err = db.Store.Query(ctx, sql, []any{int64(1)}, warehouse.QueryOptions{MaxRows: 10})
		if err != nil || res.Truncated || len(res.Rows) != 10 {
			t.Fatalf("cap 10 with 10 rows: %+v %v", res, err)
		}
		// An endless result: the cap must stop it, not the timeout.
		endless := "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT i FROM r"
		if db.Store.Dialect() == warehouse.DialectClickHouse {
			endless = "SELECT number FROM system.numbers"
		}
		start := time.Now()
		res, err = db.Store.Query(ctx, endless, nil, warehouse.QueryOptions{MaxRows: 5, Timeout: 20 * time.Second})
		if err != nil || !res.Truncated || len(res.Rows) != 5 {
			t.Fatalf("endless: %+v %v", res, err)
		}
		if time.Since(start) > 5*time.Second {
			t.Errorf("endless query took %s to cap", time.Since(start))
		}
		// The store still answers afterwards.
		if n := scalar(t, db, "SELECT count(*) FROM basic_orders"); n != int64(10) {
			t.Errorf("after a cap: %v", n)
		}
	})
}

func TestTimeout(t *testing.T) {
	warehousetest.Each(t, func(t *testing.T, db *warehousetest.DB) {
		slow, limit := "SELECT pg_sleep(10)", 300*time.Millisecond
		if db.Store.Dialect() == warehouse.DialectClickHouse {
			slow, limit = "SELECT count() FROM numbers(10000000000)", time.Second
		}
		start := time.Now()
		_, err := db.Store.Query(context.Background(), slow, nil, warehouse.QueryOptions{Timeout: limit})
		var ae *apperr.Error
		if !errors.As(err, &ae) || ae.Kind != apperr.KindTimeout {
			t.Fatalf("want a timeout error, got %v", err)
		}
		if elapsed := time.Since(start); elapsed > limit+3*time.Second {
			t.Errorf("timeout took %s", elapsed)
		}
		t.Logf("%s: %v", db.Store.Dialect(), err)
		// The store still answers afterwards.
		if v := scalar(t, db, "SELECT 1"); v != int64(1) {
			t.Errorf("after a timeout: %v", v)
		}
	})
}

func TestCallerCancellation(t *testing.T) {
	warehousetest.Each(t, func(t *testing.T, db *warehousetest.DB) {
		slow := "SELECT pg_sleep(10)"
		if db.Store.Dialect() == warehouse.DialectClickHouse {
			slow = "SELECT count() FROM numbers(10000000000)"
		}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, err := db.Store.Query(ctx, slow, nil, warehouse.QueryOptions{Timeout: 20 * time.Second})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("want the caller's context error, got %v", err)
		}
	})
}

func TestQueriesAreReadOnly(t *testing.T) {
	warehousetest.Each(t, func(t *testing.T, db *warehousetest.DB) {
		newSample(1, 5).load(t, db.Store.Writer())
		ctx := context.Background()
		writes := []string{
			"DELETE FROM basic_orders",
			"INSERT INTO basic_shops (i_tenant_id, shop_id) SELECT 1, 99",
			"DROP TABLE basic_orders",
			"  /* hidden */ TRUNCATE TABLE basic_orders",
		}
		if db.Store.Dialect() == warehouse.DialectPostgres {
			writes = append(writes,
				"WITH d AS (DELETE FROM basic_orders RETURNING 1) SELECT count(*) FROM d",
				"SELECT nextval('shopmind_seq')", // passes the SELECT check, refused by the READ ONLY transaction
			)
			if err := db.Exec(ctx, "CREATE SEQUENCE shopmind_seq"); err != nil {
				t.Fatal(err)
			}
		}
		for _, sql := range writes {
			_, err := db.Store.Query(ctx, sql, nil, warehouse.QueryOptions{})
			var ae *apperr.Error
			if !errors.As(err, &ae) || ae.Kind != apperr.KindForbidden {
				t.Errorf("%s: want a read-only refusal, got %v", sql, err)
			}
		}
		if n := scalar(t, db, "SELECT count(*) FROM basic_orders"); n != int64(5) {
			t.Fatalf("orders after refused writes: %v", n)
		}
		// The session really is read-only and bounded.
		probe := "SELECT current_setting('transaction_read_only'), current_setting('statement_timeout')"
		want := []any{"on", "7s"}
		if db.Store.Dialect() == warehouse.DialectClickHouse {
			probe = "SELECT value FROM system.settings WHERE name IN ('readonly', 'max_execution_time') ORDER BY name"
			want = []any{"7", "2"}
		}
		res, err := db.Store.Query(ctx, probe, nil, warehouse.QueryOptions{Timeout: 7 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		var got []any
		for _, row := range res.Rows {
			got = append(got, row...)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("session settings %v, want %v", got, want)
		}
	})
}

func TestSQLErrorIsInternal(t *testing.T) {
	warehousetest.Each(t, func(t *testing.T, db *warehousetest.DB) {
		_, err := db.Store.Query(context.Background(), "SELECT no_such_column FROM basic_orders", nil, warehouse.QueryOptions{})
		var ae *apperr.Error
		if !errors.As(err, &ae) || ae.Kind != apperr.KindInternal || ae.Message != "internal server error" {
			t.Fatalf("want a 500 hiding the cause, got %#v", err)
		}
	})
}

func TestDiyTablesAreDiscovered(t *testing.T) {
	warehousetest.Each(t, func(t *testing.T, db *warehousetest.DB) {
		ctx := context.Background()
		stmts := []string{
			`CREATE TABLE diy_campaigns (i_tenant_id bigint NOT NULL, campaign_id bigint NOT NULL, channel text NOT NULL,
				spend double precision NOT NULL, clicks integer NOT NULL, started_at timestamptz NOT NULL, note text, tags text[])`,
			`CREATE TABLE diy_orphans (id bigint, amount double precision)`,
			`INSERT INTO diy_campaigns VALUES (1, 7, 'douyin', 1200.5, 300, '2026-03-02 10:00:00+00', NULL, NULL), (2, 8, 'weibo', 10, 1, '2026-03-02 10:00:00+00', 'x', NULL)`,
		}
		if db.Store.Dialect() == warehouse.DialectClickHouse {
			stmts = []string{
				`CREATE TABLE diy_campaigns (i_tenant_id Int64, campaign_id Int64, channel String, spend Float64, clicks UInt32,
					started_at DateTime, note Nullable(String), tags Array(String)) ENGINE = MergeTree() ORDER BY (i_tenant_id, campaign_id)`,
				`CREATE TABLE diy_orphans (id Int64, amount Float64) ENGINE = Memory`,
				`INSERT INTO diy_campaigns (i_tenant_id, campaign_id, channel, spend, clicks, started_at, note, tags) SELECT 1, 7, 'douyin', 1200.5, 300, toDateTime('2026-03-02 10:00:00', 'UTC'), NULL, []`,
			}
		}
		for _, stmt := range stmts {
			if err := db.Exec(ctx, stmt); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
		cat, err := db.Store.Catalog(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if cat.Table("diy_orphans") != nil {
			t.Error("a diy table without i_tenant_id is in the catalog")
		}
		if cat.Table("basic_orders") == nil || cat.Dimension("shop") == nil {
			t.Error("base catalog missing")
		}
		camp := cat.Table("diy_campaigns")
		if camp == nil {
			t.Fatalf("diy_campaigns not discovered: %+v", cat.Tables)
		}
		if !camp.Diy || camp.TimeColumn != "started_at" || camp.Key != "campaign_id" {
			t.Errorf("diy_campaigns: %+v", camp)
		}
		want := []struct {
			name string
			typ  catalog.Type
			role catalog.Role
			null bool
		}{
			{"i_tenant_id", catalog.TypeInt, catalog.RoleDimension, false},
			{"campaign_id", catalog.TypeInt, catalog.RoleDimension, false},
			{"channel", catalog.TypeString, catalog.RoleDimension, false},
			{"spend", catalog.TypeFloat, catalog.RoleMeasure, false},
			{"clicks", catalog.TypeInt, catalog.RoleMeasure, false},
			{"started_at", catalog.TypeTime, catalog.RoleTime, false},
			{"note", catalog.TypeString, catalog.RoleDimension, true},
		}
		if len(camp.Columns) != len(want) {
			t.Fatalf("columns: %+v", camp.Columns)
		}
		for i, w := range want {
			c := camp.Columns[i]
			if c.Name != w.name || c.Type != w.typ || c.Role != w.role || c.Nullable != w.null {
				t.Errorf("column %d: %+v, want %+v", i, c, w)
			}
		}
		// The discovered table is queryable, tenant by tenant.
		res := query(t, db, "SELECT channel, spend, started_at FROM diy_campaigns WHERE i_tenant_id = "+db.P(1), int64(1))
		if len(res.Rows) != 1 || res.Rows[0][0] != "douyin" || res.Rows[0][1] != 1200.5 ||
			!res.Rows[0][2].(time.Time).Equal(time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)) {
			t.Errorf("diy rows: %+v", res.Rows)
		}
	})
}

func TestUpsertsReplaceByKey(t *testing.T) {
	warehousetest.Each(t, func(t *testing.T, db *warehousetest.DB) {
		ctx := context.Background()
		w := db.Store.Writer()
		one, two := newSample(1, 3), newSample(2, 3)
		one.load(t, w)
		two.load(t, w)

		g := one.goods[0]
		g.Price, g.GoodsName, g.UpdatedAt = 79.9, "经典T恤 Classic Tee v2", day0.Add(time.Hour)
		added := warehouse.Goods{TenantID: 1, GoodsID: 4, ShopID: 2, CategoryID: 2, StaffID: 9, GoodsName: "新品 New", ItemNo: "N-4",
			Platform: "jd", Status: "on_sale", Price: 10, Cost: 5, CreatedAt: day0, UpdatedAt: day0}
		if err := w.UpsertGoods(ctx, []warehouse.Goods{g, added}); err != nil {
			t.Fatal(err)
		}
		shop := one.shops[1]
		shop.Status = "closed"
		if err := w.UpsertShops(ctx, []warehouse.Shop{shop}); err != nil {
			t.Fatal(err)
		}
		cat := one.categories[1]
		cat.CategoryName = "短袖 Short sleeves"
		if err := w.UpsertCategories(ctx, []warehouse.Category{cat}); err != nil {
			t.Fatal(err)
		}

		res := query(t, db, "SELECT goods_id, goods_name, price FROM basic_goods WHERE i_tenant_id = "+db.P(1)+" ORDER BY goods_id", int64(1))
		if len(res.Rows) != 4 || res.Rows[0][1] != "经典T恤 Classic Tee v2" || res.Rows[0][2] != 79.9 || res.Rows[3][0] != int64(4) {
			t.Errorf("goods after upsert: %+v", res.Rows)
		}
		if v := scalar(t, db, "SELECT status FROM basic_shops WHERE i_tenant_id = "+db.P(1)+" AND shop_id = 2", int64(1)); v != "closed" {
			t.Errorf("shop status %v", v)
		}
		if v := scalar(t, db, "SELECT count(*) FROM basic_categories WHERE i_tenant_id = "+db.P(1)+" AND category_name = "+db.P(2),
			int64(1), "短袖 Short sleeves"); v != int64(1) {
			t.Errorf("categories renamed: %v", v)
		}
		// The other tenant's rows with the same keys are untouched.
		if v := scalar(t, db, "SELECT price FROM basic_goods WHERE i_tenant_id = "+db.P(1)+" AND goods_id = 1", int64(2)); v != 99.5 {
			t.Errorf("tenant 2 goods price %v", v)
		}

		// DeleteTenant removes one tenant's rows everywhere and nothing else.
		if err := w.DeleteTenant(ctx, 1); err != nil {
			t.Fatal(err)
		}
		for _, table := range []string{"basic_shops", "basic_categories", "basic_goods", "basic_orders", "basic_order_items"} {
			res := query(t, db, "SELECT i_tenant_id, count(*) FROM "+table+" GROUP BY i_tenant_id")
			if len(res.Rows) != 1 || res.Rows[0][0] != int64(2) {
				t.Errorf("%s after DeleteTenant(1): %v", table, res.Rows)
			}
		}
		if err := w.Analyze(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

package demodata_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/shopmind/shopmind/internal/analytics/demodata"
	"github.com/shopmind/shopmind/internal/analytics/warehouse"
	"github.com/shopmind/shopmind/internal/analytics/warehouse/warehousetest"
)

// memWriter records what Generate writes (Orders is called concurrently).
type memWriter struct {
	mu         sync.Mutex
	shops      []warehouse.Shop
	categories []warehouse.Category
	goods      []warehouse.Goods
	orders     []warehouse.Order
	items      []warehouse.OrderItem
	batches    []int
	analyzed   bool
}

func (w *memWriter) Shops(_ context.Context, r []warehouse.Shop) error {
	w.shops = append(w.shops, r...)
	return nil
}

func (w *memWriter) Categories(_ context.Context, r []warehouse.Category) error {
	w.categories = append(w.categories, r...)
	return nil
}

func (w *memWriter) Goods(_ context.Context, r []warehouse.Goods) error {
	w.goods = append(w.goods, r...)
	return nil
}

func (w *memWriter) Orders(_ context.Context, o []warehouse.Order, i []warehouse.OrderItem) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.orders = append(w.orders, o...)
	w.items = append(w.items, i...)
	w.batches = append(w.batches, len(o))
	return nil
}

func (w *memWriter) UpsertShops(context.Context, []warehouse.Shop) error          { return nil }
func (w *memWriter) UpsertCategories(context.Context, []warehouse.Category) error { return nil }
func (w *memWriter) UpsertGoods(context.Context, []warehouse.Goods) error         { return nil }
func (w *memWriter) UpsertOrders(context.Context, []warehouse.Order, []warehouse.OrderItem) error {
	return nil
}
func (w *memWriter) DeleteTenant(context.Context, int64) error { return nil }
func (w *memWriter) Analyze(context.Context) error             { w.analyzed = true; return nil }

var now = time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)

func generate(t *testing.T, opts demodata.Options) (*memWriter, demodata.Stats) {
	t.Helper()
	w := &memWriter{}
	stats, err := demodata.Generate(context.Background(), w, opts)
	if err != nil {
		t.Fatal(err)
	}
	// Batches arrive in any order from the concurrent writers.
	sort.Slice(w.orders, func(a, b int) bool { return w.orders[a].OrderID < w.orders[b].OrderID })
	sort.Slice(w.items, func(a, b int) bool { return w.items[a].ItemID < w.items[b].ItemID })
	w.batches = nil
	return w, stats
}

func TestDeterministic(t *testing.T) {
	opts := demodata.Options{TenantID: 3, Orders: 3000, Seed: 7, Now: now, BatchSize: 700}
	a, _ := generate(t, opts)
	b, _ := generate(t, opts)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed gave different data")
	}
	opts.Seed = 8
	c, _ := generate(t, opts)
	if reflect.DeepEqual(a.orders, c.orders) || reflect.DeepEqual(a.goods, c.goods) {
		t.Fatal("different seeds gave the same data")
	}
	// The catalog data does not depend on the order count or the batch size.
	opts.Seed, opts.Orders, opts.BatchSize = 7, 50, 0
	d, _ := generate(t, opts)
	if !reflect.DeepEqual(a.goods, d.goods) || !reflect.DeepEqual(a.shops, d.shops) || !reflect.DeepEqual(a.categories, d.categories) {
		t.Fatal("goods depend on the order count")
	}
}

func TestShape(t *testing.T) {
	const n = 20000
	opts := demodata.Options{TenantID: 42, Orders: n, Seed: 1, Now: now, BatchSize: 3000}
	w, stats := generate(t, opts)

	// Catalog data.
	platforms := map[string]bool{}
	shopPlatform := map[int64]string{}
	for _, s := range w.shops {
		platforms[s.Platform] = true
		shopPlatform[s.ShopID] = s.Platform
		if !bilingual(s.ShopName) || s.TenantID != 42 || !s.CreatedAt.Before(now.AddDate(0, 0, -180)) {
			t.Errorf("shop %+v", s)
		}
	}
	if len(w.shops) != 5 || len(platforms) != 3 || !platforms["tmall"] || !platforms["jd"] || !platforms["pdd"] {
		t.Fatalf("shops: %+v", w.shops)
	}
	level := map[int64]int64{}
	for _, c := range w.categories {
		level[c.CategoryID] = c.Level
		if (c.Level == 1) != (c.ParentID == 0) || (c.Level == 2 && level[c.ParentID] != 1) || !bilingual(c.CategoryName) {
			t.Errorf("category %+v", c)
		}
	}
	if len(w.categories) != 30 {
		t.Fatalf("%d categories", len(w.categories))
	}
	staff := map[int64]bool{}
	goodsShop := map[int64]int64{}
	status := map[string]int{}
	for _, g := range w.goods {
		staff[g.StaffID] = true
		goodsShop[g.GoodsID] = g.ShopID
		status[g.Status]++
		if level[g.CategoryID] != 2 || g.Platform != shopPlatform[g.ShopID] || g.Price <= 0 || g.Cost <= 0 || g.Cost > g.Price ||
			g.StaffID < 1 || g.StaffID > 20 || !bilingual(g.GoodsName) || g.UpdatedAt.Before(g.CreatedAt) || g.UpdatedAt.After(now) {
			t.Errorf("goods %+v", g)
		}
	}
	if len(w.goods) != 500 || len(staff) != 20 || status["on_sale"] < 400 || status["off_sale"] == 0 || status["deleted"] == 0 {
		t.Fatalf("goods: %d, staff %d, status %v", len(w.goods), len(staff), status)
	}

	// Orders.
	if len(w.orders) != n || stats.Orders != n || stats.Items != len(w.items) || !w.analyzed {
		t.Fatalf("stats %+v, %d orders, %d items", stats, len(w.orders), len(w.items))
	}
	type sums struct {
		lines, qty, gross, amount int64
	}
	byOrder := map[int64]*sums{}
	orderShop := map[int64]int64{}
	orderStatus := map[int64]string{}
	for i, o := range w.orders {
		byOrder[o.OrderID] = &sums{}
		orderShop[o.OrderID] = o.ShopID
		orderStatus[o.OrderID] = o.Status
		if o.OrderID != int64(i+1) || o.Platform != shopPlatform[o.ShopID] || o.TenantID != 42 {
			t.Fatalf("order %+v", o)
		}
	}
	for _, it := range w.items {
		s, ok := byOrder[it.OrderID]
		if !ok {
			t.Fatalf("item %d of a missing order %d", it.ItemID, it.OrderID)
		}
		if it.ShopID != orderShop[it.OrderID] || goodsShop[it.GoodsID] != it.ShopID || it.Status != orderStatus[it.OrderID] ||
			it.Quantity < 1 || it.Amount < 0 || it.SkuID/10 != it.GoodsID {
			t.Fatalf("item %+v", it)
		}
		s.lines++
		s.qty += it.Quantity
		s.gross += cents(it.UnitPrice) * it.Quantity
		s.amount += cents(it.Amount)
	}
	start := now.AddDate(0, 0, -180)
	statuses := map[string]int{}
	var gmv float64
	perWeekday := [7]int{}
	for _, o := range w.orders {
		s := byOrder[o.OrderID]
		statuses[o.Status]++
		if m := o.OrderedAt.Month(); m >= time.July && m <= time.October { // months without festivals
			perWeekday[o.OrderedAt.Weekday()]++
		}
		if s.lines < 1 || s.lines > 4 || s.qty != o.ItemCount || s.gross != cents(o.TotalAmount) ||
			cents(o.PaidAmount) != cents(o.TotalAmount)-cents(o.DiscountAmount) || s.amount != cents(o.PaidAmount) || o.DiscountAmount < 0 {
			t.Fatalf("order %+v does not add up: %+v", o, s)
		}
		if o.OrderedAt.Before(start) || !o.OrderedAt.Before(now) || o.OrderedAt.Location() != time.UTC || o.OrderedAt.Nanosecond() != 0 {
			t.Fatalf("ordered_at %v", o.OrderedAt)
		}
		if err := checkLifecycle(o); err != "" {
			t.Fatalf("order %d (%s): %s", o.OrderID, o.Status, err)
		}
		if o.Status == "paid" || o.Status == "shipped" || o.Status == "completed" {
			gmv += o.PaidAmount
		}
	}
	if math.Abs(gmv-stats.GMV) > 0.01 {
		t.Errorf("GMV %v, stats %v", gmv, stats.GMV)
	}
	share := func(s string) float64 { return float64(statuses[s]) / n }
	if share("completed") < 0.75 || share("cancelled") < 0.04 || share("cancelled") > 0.1 || share("refunded") < 0.02 ||
		share("refunded") > 0.06 || statuses["pending"] == 0 || statuses["paid"] == 0 || statuses["shipped"] == 0 {
		t.Errorf("status mix %v", statuses)
	}
	weekend := float64(perWeekday[time.Saturday]+perWeekday[time.Sunday]) / 2
	midweek := float64(perWeekday[time.Tuesday]+perWeekday[time.Wednesday]) / 2
	if weekend < midweek*1.1 {
		t.Errorf("no weekly pattern: %v", perWeekday)
	}
	// 11.11 towers over an ordinary day.
	day := func(d time.Time) (c int) {
		for _, o := range w.orders {
			if !o.OrderedAt.Before(d) && o.OrderedAt.Before(d.AddDate(0, 0, 1)) {
				c++
			}
		}
		return c
	}
	if singles, ordinary := day(time.Date(2026, 11, 11, 0, 0, 0, 0, time.UTC)), day(time.Date(2026, 9, 15, 0, 0, 0, 0, time.UTC)); singles < 3*ordinary {
		t.Errorf("11.11 has %d orders, an ordinary day %d", singles, ordinary)
	}
}

// checkLifecycle says what is wrong with an order's timestamps for its status.
func checkLifecycle(o warehouse.Order) string {
	set := func(p *time.Time) bool { return p != nil }
	want := map[string][3]bool{
		"pending": {false, false, false}, "cancelled": {false, false, false}, "paid": {true, false, false},
		"shipped": {true, true, false}, "completed": {true, true, true},
	}
	got := [3]bool{set(o.PaidAt), set(o.ShippedAt), set(o.CompletedAt)}
	if o.Status == "refunded" {
		if !got[0] || got[2] {
			return "refunded orders are paid and not completed"
		}
	} else if w, ok := want[o.Status]; !ok || w != got {
		return "timestamps do not fit the status"
	}
	prev := o.OrderedAt
	for _, p := range []*time.Time{o.PaidAt, o.ShippedAt, o.CompletedAt} {
		if p == nil {
			continue
		}
		if p.Before(prev) || p.After(now) || p.Nanosecond() != 0 {
			return "timestamps out of order or in the future"
		}
		prev = *p
	}
	if o.Status == "pending" && now.Sub(o.OrderedAt) > 24*time.Hour {
		return "pending for more than a day"
	}
	return ""
}

func cents(f float64) int64 { return int64(math.Round(f * 100)) }

func bilingual(s string) bool {
	han, latin := false, false
	for _, r := range s {
		han = han || unicode.Is(unicode.Han, r)
		latin = latin || unicode.In(r, unicode.Latin)
	}
	return han && latin
}

func TestBatches(t *testing.T) {
	w := &memWriter{}
	if _, err := demodata.Generate(context.Background(), w, demodata.Options{Orders: 2500, Seed: 1, Now: now, BatchSize: 1000, Writers: 3}); err != nil {
		t.Fatal(err)
	}
	sort.Ints(w.batches)
	if fmt.Sprint(w.batches) != "[500 1000 1000]" {
		t.Fatalf("batches %v", w.batches)
	}
}

func TestWriterErrorStops(t *testing.T) {
	_, err := demodata.Generate(context.Background(), &failWriter{}, demodata.Options{Orders: 100000, Seed: 1, Now: now, BatchSize: 100})
	if err == nil || err.Error() != "disk full" {
		t.Fatalf("want the writer's error, got %v", err)
	}
}

type failWriter struct{ memWriter }

func (w *failWriter) Orders(context.Context, []warehouse.Order, []warehouse.OrderItem) error {
	return errors.New("disk full")
}

func TestProgressLines(t *testing.T) {
	var buf bytes.Buffer
	generate(t, demodata.Options{Orders: 5000, Seed: 1, Now: now, BatchSize: 500, Progress: &buf})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 10 || !strings.Contains(lines[0], " 10% (500/5000 orders") || !strings.Contains(lines[9], "100% (5000/5000 orders") {
		t.Fatalf("progress:\n%s", buf.String())
	}
}

func TestNoOrders(t *testing.T) {
	w, stats := generate(t, demodata.Options{Seed: 1, Now: now})
	if len(w.orders) != 0 || stats.Goods != 500 || len(w.goods) != 500 {
		t.Fatalf("stats %+v", stats)
	}
	if _, err := demodata.Generate(context.Background(), &memWriter{}, demodata.Options{Orders: -1}); err == nil {
		t.Fatal("negative orders accepted")
	}
}

func TestLoadIntoStores(t *testing.T) {
	warehousetest.Each(t, func(t *testing.T, db *warehousetest.DB) {
		ctx := context.Background()
		stats, err := demodata.Generate(ctx, db.Store.Writer(), demodata.Options{TenantID: 5, Orders: 5000, Seed: 3, Now: now, BatchSize: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if n, err := demodata.ExistingOrders(ctx, db.Store, 5); err != nil || n != 5000 {
			t.Fatalf("existing orders %d %v", n, err)
		}
		if n, err := demodata.ExistingOrders(ctx, db.Store, 6); err != nil || n != 0 {
			t.Fatalf("another tenant's orders %d %v", n, err)
		}
		q := func(sql string) [][]any {
			res, err := db.Store.Query(ctx, sql, []any{int64(5)}, warehouse.QueryOptions{})
			if err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
			return res.Rows
		}
		p := db.P(1)
		if rows := q("SELECT count(*) FROM basic_order_items WHERE i_tenant_id = " + p); rows[0][0] != int64(stats.Items) {
			t.Errorf("items %v, want %d", rows[0][0], stats.Items)
		}
		// Every order's paid amount is the sum of its lines, in the store too.
		// (A subquery on the left: an 18.16 cluster does not resolve o.order_id when both
		// sides of a JOIN read Distributed tables and the left one is named directly.)
		bad := q(`SELECT count(*) FROM (SELECT * FROM basic_orders) AS o JOIN (
				SELECT order_id, sum(amount) AS amount FROM basic_order_items WHERE i_tenant_id = ` + p + ` GROUP BY order_id
			) i ON i.order_id = o.order_id
			WHERE o.i_tenant_id = 5 AND abs(o.paid_amount - i.amount) > 0.005`)
		if bad[0][0] != int64(0) {
			t.Errorf("%v orders do not add up", bad[0][0])
		}
		gmv := q("SELECT sum(paid_amount) FROM basic_orders WHERE i_tenant_id = " + p + " AND status IN ('paid', 'shipped', 'completed')")
		if got := gmv[0][0].(float64); math.Abs(got-stats.GMV) > 0.01 {
			t.Errorf("GMV %v, stats %v", got, stats.GMV)
		}
		if rows := q("SELECT count(*) FROM basic_goods WHERE i_tenant_id = " + p); rows[0][0] != int64(500) {
			t.Errorf("goods %v", rows[0][0])
		}
	})
}

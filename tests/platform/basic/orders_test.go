//go:build platform

package basic

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/shopmind/shopmind/internal/analytics/demodata"
	"github.com/shopmind/shopmind/internal/analytics/warehouse"
	"github.com/shopmind/shopmind/internal/analytics/warehouse/warehousetest"
	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/testutil/stack"
)

type order struct {
	ID             id      `json:"id"`
	OrderNo        string  `json:"order_no"`
	ShopID         id      `json:"shop_id"`
	ShopName       string  `json:"shop_name"`
	Platform       string  `json:"platform"`
	Status         string  `json:"status"`
	Buyer          string  `json:"buyer"`
	TotalAmount    float64 `json:"total_amount"`
	DiscountAmount float64 `json:"discount_amount"`
	PaidAmount     float64 `json:"paid_amount"`
	Lines          []struct {
		GoodsID         id      `json:"goods_id"`
		SkuID           id      `json:"sku_id"`
		PlatformGoodsID string  `json:"platform_goods_id"`
		GoodsName       string  `json:"goods_name"`
		ItemNo          string  `json:"item_no"`
		Quantity        int     `json:"quantity"`
		UnitPrice       float64 `json:"unit_price"`
		Amount          float64 `json:"amount"`
	} `json:"lines"`
	OrderedAt string `json:"ordered_at"`
	PaidAt    string `json:"paid_at"`
	CreatedAt string `json:"created_at"`
}

const gmvMetric = `{"name":"gmv","display_name":"GMV","group":"Sales","type":"order","config":{"order":{"order_field":"paid_amount","time_basis":"ordered_at","query_condition":[{"field":"status","operator":"in","value":["paid","shipped","completed"]}]}}}`
const lineMetric = `{"name":"line_amount","display_name":"Line amount","group":"Goods","type":"derived","config":{"derived":{"source_field":"basic_order_items.amount","aggregation":"sum"}}}`

// preview runs an analysis preview and returns its rows as maps of column to value.
func preview(t *testing.T, tn *tenant, body string) []map[string]any {
	t.Helper()
	env := tn.Expect(t, "POST", "/api/v1/anls/query/preview", body, 0, `"rows"`)
	var d struct {
		Columns []struct{ Name string } `json:"columns"`
		Rows    [][]any                 `json:"rows"`
	}
	if err := json.Unmarshal(env.Data, &d); err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, r := range d.Rows {
		m := map[string]any{}
		for i, c := range d.Columns {
			m[c.Name] = r[i]
		}
		out = append(out, m)
	}
	return out
}

func near(a, b float64) bool { return math.Abs(a-b) < 0.005 }

// storeFor starts the platform on a store of the dialect: PostgreSQL (schema analytics)
// or a fresh ClickHouse database. restart starts it again on the same data.
func storeFor(t *testing.T, dialect string) (s *stack.Stack, wh warehouse.Store, restart func() *stack.Stack) {
	t.Helper()
	if dialect == warehouse.DialectClickHouse {
		db := warehousetest.ClickHouse(t)
		opt := func(c *app.Config) { c.Analytics.URL = db.URL }
		s = stack.Start(t, opt)
		return s, db.Store, func() *stack.Stack { s.Stop(); return stack.StartOn(t, s.DB, opt) }
	}
	s = stack.Start(t)
	wh, err := warehouse.Open(context.Background(), "", s.DB.Pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s, wh, func() *stack.Stack { s.Stop(); return stack.StartOn(t, s.DB) }
}

// Orders come from the analytical store: an order the demo data generator inserts appears
// in the listing and in the GMV metric; filters, sorts and paging work on both dialects;
// goods changes reach metrics by category and staff at once; a second tenant sees none of
// it.
func TestOrdersAndMetrics(t *testing.T) {
	for _, dialect := range []string{warehouse.DialectPostgres, warehouse.DialectClickHouse} {
		t.Run(dialect, func(t *testing.T) {
			s, wh, restart := storeFor(t, dialect)
			d := demo(t, s)
			ctx := context.Background()
			now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
			stats, err := demodata.Generate(ctx, wh.Writer(), demodata.Options{TenantID: d.Tenant, Orders: 250, Seed: 5, Now: now, Days: 30})
			if err != nil {
				t.Fatal(err)
			}
			// Generated straight into the store: the next start adopts its shops,
			// categories and goods into basic, with their ids.
			s = restart()
			d = demo(t, s)
			var adopted pageOf[goods]
			d.get(t, "/basic/api/v1/basic/goods?status=deleted", &adopted)
			var shops pageOf[struct{}]
			d.get(t, "/basic/api/v1/basic/shops", &shops)
			if adopted.Total == 0 || shops.Total != id(stats.Shops) {
				t.Fatalf("not adopted: %d deleted goods, %d shops", adopted.Total, shops.Total)
			}
			acme := addTenant(t, s, "acme")

			// Every order, page by page, in the default order (ordered_at desc).
			var all []order
			for p := 1; ; p++ {
				var pg pageOf[order]
				d.get(t, fmt.Sprintf("/basic/api/v1/basic/orders?page_size=100&page_num=%d", p), &pg)
				if pg.Total != id(stats.Orders) || pg.PageSize != 100 || pg.PageNum != p {
					t.Fatalf("page %d: total %d, want %d", p, pg.Total, stats.Orders)
				}
				all = append(all, pg.Items...)
				if len(pg.Items) < 100 {
					break
				}
			}
			if len(all) != stats.Orders {
				t.Fatalf("listed %d orders, generated %d", len(all), stats.Orders)
			}
			if !sort.SliceIsSorted(all, func(i, j int) bool { return all[i].OrderedAt > all[j].OrderedAt }) {
				t.Fatal("not ordered by ordered_at desc")
			}
			gmv := 0.0
			for _, o := range all {
				if len(o.Lines) == 0 || o.OrderNo == "" || o.Platform == "" || o.Buyer == "" || o.OrderedAt == "" || o.CreatedAt != o.OrderedAt {
					t.Fatalf("order incomplete: %+v", o)
				}
				lines := 0.0
				if o.ShopName == "" {
					t.Fatalf("no shop name: %+v", o)
				}
				for _, l := range o.Lines {
					lines += l.Amount
					if l.Quantity < 1 || l.GoodsID == 0 || l.GoodsName == "" || l.ItemNo == "" {
						t.Fatalf("line: %+v", l)
					}
				}
				if !near(lines, o.PaidAmount) || !near(o.TotalAmount-o.DiscountAmount, o.PaidAmount) {
					t.Fatalf("amounts do not add up: %+v", o)
				}
				switch o.Status {
				case "paid", "shipped", "completed":
					gmv += o.PaidAmount
				}
			}
			if !near(gmv, stats.GMV) {
				t.Fatalf("GMV of the listing %.2f, generator %.2f", gmv, stats.GMV)
			}
			// The GMV metric counts the same orders.
			d.Expect(t, "POST", "/analysis/api/v1/analytics/metrics", gmvMetric, 0, "gmv")
			rng := fmt.Sprintf(`"start_time":"%s","end_time":"%s"`, now.AddDate(0, 0, -40).Format(time.RFC3339), now.Format(time.RFC3339))
			rows := preview(t, d, `{"metric_names":["gmv"],`+rng+`}`)
			if len(rows) != 1 || !near(rows[0]["gmv"].(float64), gmv) {
				t.Fatalf("GMV metric %v, listing %.2f", rows, gmv)
			}
			// One generated order: found by its number, and its paid amount is the metric's
			// value for that order.
			var one order
			for _, o := range all {
				if o.Status == "completed" {
					one = o
					break
				}
			}
			var byNo pageOf[order]
			d.get(t, "/basic/api/v1/basic/orders?order_no="+url.QueryEscape(one.OrderNo), &byNo)
			if byNo.Total != 1 || byNo.Items[0].ID != one.ID || len(byNo.Items[0].Lines) != len(one.Lines) {
				t.Fatalf("by order number: %+v", byNo)
			}
			rows = preview(t, d, `{"metric_names":["gmv"],`+rng+`,"filters":[{"field":"order_no","operator":"eq","value":"`+one.OrderNo+`"}]}`)
			if len(rows) != 1 || !near(rows[0]["gmv"].(float64), one.PaidAmount) {
				t.Fatalf("GMV of order %s: %v, listed paid %.2f", one.OrderNo, rows, one.PaidAmount)
			}

			// Filters.
			count := func(pred func(o order) bool) int {
				n := 0
				for _, o := range all {
					if pred(o) {
						n++
					}
				}
				return n
			}
			mid := now.AddDate(0, 0, -10)
			for _, c := range []struct {
				query string
				want  int
			}{
				{"status=completed", count(func(o order) bool { return o.Status == "completed" })},
				{"status=cancelled", count(func(o order) bool { return o.Status == "cancelled" })},
				{"shop_id=2", count(func(o order) bool { return o.ShopID == 2 })},
				{"shop_id=2&status=paid", count(func(o order) bool { return o.ShopID == 2 && o.Status == "paid" })},
				{"start_time=" + url.QueryEscape(mid.Format(time.RFC3339)), count(func(o order) bool { return o.OrderedAt >= mid.Format(time.RFC3339) })},
				{"end_time=" + url.QueryEscape(mid.Format(time.RFC3339)), count(func(o order) bool { return o.OrderedAt < mid.Format(time.RFC3339) })},
				{"order_no=nope", 0},
			} {
				var pg pageOf[order]
				d.get(t, "/basic/api/v1/basic/orders?page_size=100&"+c.query, &pg)
				if int(pg.Total) != c.want || len(pg.Items) != min(c.want, 100) {
					t.Fatalf("orders?%s: total %d items %d, want %d", c.query, pg.Total, len(pg.Items), c.want)
				}
			}
			// Sorts.
			for _, c := range []struct {
				sort string
				less func(a, b order) bool
			}{
				{"paid_amount,asc", func(a, b order) bool { return a.PaidAmount <= b.PaidAmount }},
				{"total_amount,desc", func(a, b order) bool { return a.TotalAmount >= b.TotalAmount }},
				{"id,asc", func(a, b order) bool { return a.ID < b.ID }},
				{"ordered_at,asc", func(a, b order) bool { return a.OrderedAt <= b.OrderedAt }},
				{"created_at,desc", func(a, b order) bool { return a.OrderedAt >= b.OrderedAt }},
				{"paid_at,desc", func(a, b order) bool { return b.PaidAt == "" || a.PaidAt != "" && a.PaidAt >= b.PaidAt }},
			} {
				var pg pageOf[order]
				d.get(t, "/basic/api/v1/basic/orders?page_size=100&sort="+c.sort, &pg)
				for i := 1; i < len(pg.Items); i++ {
					if !c.less(pg.Items[i-1], pg.Items[i]) {
						t.Fatalf("sort %s: %+v before %+v", c.sort, pg.Items[i-1], pg.Items[i])
					}
				}
			}
			var unpaidLast pageOf[order]
			d.get(t, fmt.Sprintf("/basic/api/v1/basic/orders?page_size=1&page_num=%d&sort=paid_at,desc", stats.Orders), &unpaidLast)
			if unpaidLast.Items[0].PaidAt != "" {
				t.Fatalf("unpaid orders are not last: %+v", unpaidLast.Items[0])
			}
			var beyond pageOf[order]
			d.get(t, "/basic/api/v1/basic/orders?page_size=100&page_num=99", &beyond)
			if len(beyond.Items) != 0 || beyond.Total != id(stats.Orders) {
				t.Fatalf("beyond the last page: %+v", beyond)
			}
			// Bad inputs.
			for _, q := range []struct{ query, contains string }{
				{"sort=buyer,asc", `unknown sort field "buyer"`},
				{"sort=i_tenant_id,asc", "unknown sort field"},
				{"sort=paid_at", "sort"},
				{"page_size=101", "page_size"},
				{"page_num=0", "page_num"},
				{"shop_id=0", "shop_id"},
				{"status=lost", "status"},
				{"order_no=" + strings.Repeat("x", 65), "order_no"},
				{"start_time=2026-10-02T00:00:00Z&end_time=2026-10-01T00:00:00Z", "start_time must be earlier than end_time"},
				{"start_time=yesterday", "start_time"},
			} {
				d.Expect(t, "GET", "/basic/api/v1/basic/orders?"+q.query, "", 400, q.contains)
			}

			// The second tenant sees no order of the first.
			var none pageOf[order]
			acme.get(t, "/basic/api/v1/basic/orders", &none)
			if none.Total != 0 || len(none.Items) != 0 {
				t.Fatalf("acme sees orders: %+v", none)
			}
			acme.get(t, "/basic/api/v1/basic/orders?order_no="+url.QueryEscape(one.OrderNo), &none)
			if none.Total != 0 {
				t.Fatalf("acme finds order %s", one.OrderNo)
			}

			// Goods changes reach metrics by category and staff at once: a goods of
			// basic, an order line of it in the store, then a new category and staff.
			shop := d.addShop(t, "Metrics shop", "tmall", "ms", "active")
			catA := d.addCategory(t, 0, "Category A", 1, 0)
			catB := d.addCategory(t, 0, "Category B", 1, 0)
			staff := d.addUser(t, "seller", "Seller")
			g := d.createGoods(t, fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"Metric goods","category_id":%d,"status":"on_sale","price":10}}`, shop, catA))
			at := now.Add(-time.Hour)
			if err := wh.Writer().Orders(ctx, []warehouse.Order{{TenantID: d.Tenant, OrderID: 900001, OrderNo: "MX-1", ShopID: shop, Platform: "tmall",
				Status: "completed", BuyerID: 1, TotalAmount: 30, PaidAmount: 30, ItemCount: 3, OrderedAt: at, PaidAt: &at, ShippedAt: &at, CompletedAt: &at}},
				[]warehouse.OrderItem{{TenantID: d.Tenant, ItemID: 900001, OrderID: 900001, GoodsID: int64(g.ID), ShopID: shop, Status: "completed",
					Quantity: 3, UnitPrice: 10, Amount: 30, OrderedAt: at}}); err != nil {
				t.Fatal(err)
			}
			var mx pageOf[order]
			d.get(t, "/basic/api/v1/basic/orders?order_no=MX-1", &mx)
			if mx.Total != 1 || mx.Items[0].ShopName != "Metrics shop" || mx.Items[0].Lines[0].GoodsID != g.ID || mx.Items[0].Lines[0].GoodsName != "Metric goods" {
				t.Fatalf("order of a basic goods: %+v", mx)
			}
			d.Expect(t, "POST", "/analysis/api/v1/analytics/metrics", lineMetric, 0, "line_amount")
			byDim := func(dim string) map[string]float64 {
				out := map[string]float64{}
				for _, r := range preview(t, d, `{"metric_names":["line_amount"],"dimensions":["`+dim+`"],`+rng+`,"limit":10000}`) {
					out[fmt.Sprint(r[dim])] = r["line_amount"].(float64)
				}
				return out
			}
			if v := byDim("category")[fmt.Sprint(catA)]; !near(v, 30) {
				t.Fatalf("line amount of category A: %v", byDim("category"))
			}
			staffBefore := byDim("staff")[fmt.Sprint(staff)] // generated goods name staff 1..20
			d.post(t, "/api/v1/basic/goods/update", fmt.Sprintf(`{"id":%d,"goods":{"category_id":%d,"staff_id":%d},"update_mask":"categoryId,staffId"}`, g.ID, catB, staff), nil)
			cats := byDim("category")
			if !near(cats[fmt.Sprint(catB)], 30) || cats[fmt.Sprint(catA)] != 0 {
				t.Fatalf("after the category change: %v", cats)
			}
			if v := byDim("staff")[fmt.Sprint(staff)]; !near(v-staffBefore, 30) {
				t.Fatalf("line amount of the staff member: %v, before %v", v, staffBefore)
			}
		})
	}
}

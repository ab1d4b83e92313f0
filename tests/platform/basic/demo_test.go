//go:build platform

package basic

import (
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/testutil/stack"
)

// SHOPMIND_DEMO_DATA: the analysis seed generates the demo tenant's data into the
// analytical store, the basic seed imports its shops, categories and goods, and listings
// and metrics agree.
func TestDemoDataAgrees(t *testing.T) {
	demoData := func(c *app.Config) { c.DemoData = true }
	s := stack.Start(t, demoData)
	d := demo(t, s)

	var shops pageOf[struct {
		Status string `json:"status"`
	}]
	d.get(t, "/basic/api/v1/basic/shops", &shops)
	var cats pageOf[struct{}]
	d.get(t, "/basic/api/v1/basic/good-category", &cats)
	total := 0
	for _, st := range []string{"on_sale", "off_sale", "deleted"} {
		var g pageOf[goods]
		d.get(t, "/basic/api/v1/basic/goods?status="+st, &g)
		total += int(g.Total)
	}
	if shops.Total != 5 || cats.Total != 30 || total != 500 || shops.Items[0].Status != "active" {
		t.Fatalf("imported: %d shops (%+v), %d categories, %d goods", shops.Total, shops.Items, cats.Total, total)
	}
	if n := countRows(t, s, "SELECT count(*) FROM analytics.basic_shops WHERE i_tenant_id = $1 AND status = 'active'", d.Tenant); n != 5 {
		t.Fatalf("the store's shops do not agree: %d active", n)
	}
	stored := countRows(t, s, "SELECT count(*) FROM analytics.basic_orders WHERE i_tenant_id = $1", d.Tenant)
	var orders pageOf[order]
	d.get(t, "/basic/api/v1/basic/orders?page_size=20", &orders)
	if int(orders.Total) != stored || stored == 0 {
		t.Fatalf("orders listed %d, stored %d", orders.Total, stored)
	}
	for _, o := range orders.Items {
		if o.ShopName == "" || len(o.Lines) == 0 || o.Lines[0].GoodsName == "" || o.Lines[0].GoodsID == 0 {
			t.Fatalf("demo order incomplete: %+v", o)
		}
	}
	// The seeded order_count metric counts the listed paid, shipped and completed orders.
	end := time.Now().UTC().Truncate(24 * time.Hour)
	start := end.AddDate(0, 0, -30)
	rng := fmt.Sprintf("start_time=%s&end_time=%s", url.QueryEscape(start.Format(time.RFC3339)), url.QueryEscape(end.Format(time.RFC3339)))
	listed := 0
	for _, st := range []string{"paid", "shipped", "completed"} {
		var p pageOf[order]
		d.get(t, "/basic/api/v1/basic/orders?status="+st+"&"+rng, &p)
		listed += int(p.Total)
	}
	rows := preview(t, d, fmt.Sprintf(`{"metric_names":["order_count"],"start_time":%q,"end_time":%q}`, start.Format(time.RFC3339), end.Format(time.RFC3339)))
	if len(rows) != 1 || int(rows[0]["order_count"].(float64)) != listed || listed == 0 {
		t.Fatalf("order_count %v, listed %d", rows, listed)
	}

	// A restart imports nothing twice.
	s.Stop()
	s2 := stack.StartOn(t, s.DB, demoData)
	d2 := demo(t, s2)
	d2.get(t, "/basic/api/v1/basic/shops", &shops)
	if shops.Total != 5 {
		t.Fatalf("after restart: %d shops", shops.Total)
	}
	// New goods get ids above the imported ones.
	g := d2.createGoods(t, `{"goods":{"shop_id":1,"name":"New after import"}}`)
	if g.ID <= 500 {
		t.Fatalf("new goods id %d collides with imported ids", g.ID)
	}
}

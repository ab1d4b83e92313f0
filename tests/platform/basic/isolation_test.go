//go:build platform

package basic

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shopmind/shopmind/internal/analytics/warehouse"
	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/testutil/stack"
	"github.com/shopmind/shopmind/services/basic"
)

// A second tenant can neither see nor change the first tenant's goods, orders, shops,
// categories or templates, through any of the 17 endpoints or the listings.
func TestTenantIsolation(t *testing.T) {
	s := stack.Start(t)
	d := demo(t, s)
	shop := d.addShop(t, "Demo shop", "tmall", "d-1", "active")
	cat := d.addCategory(t, 0, "Demo category", 1, 0)
	g := d.createGoods(t, fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"Demo goods","item_no":"D-1","category_id":%d,"status":"on_sale","price":5}}`, shop, cat))
	var tpl struct {
		LinkTemplate linkTemplate `json:"link_template"`
	}
	d.post(t, "/api/v1/basic/goods/link-template/create", fmt.Sprintf(`{"link_template":{"name":"Demo template","goods_ids":[%d]}}`, g.ID), &tpl)
	wh, err := warehouse.Open(context.Background(), "", s.DB.Pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)
	if err := wh.Writer().Orders(context.Background(), []warehouse.Order{{TenantID: d.Tenant, OrderID: 1, OrderNo: "DEMO-1", ShopID: shop, Platform: "tmall",
		Status: "paid", TotalAmount: 5, PaidAmount: 5, ItemCount: 1, OrderedAt: at, PaidAt: &at}},
		[]warehouse.OrderItem{{TenantID: d.Tenant, ItemID: 1, OrderID: 1, GoodsID: int64(g.ID), ShopID: shop, Status: "paid", Quantity: 1, UnitPrice: 5, Amount: 5, OrderedAt: at}}); err != nil {
		t.Fatal(err)
	}
	d.Expect(t, "GET", "/basic/api/v1/basic/orders", "", 0, "DEMO-1")

	acme := addTenant(t, s, "acme")
	acmeShop := acme.addShop(t, "Acme shop", "tmall", "a-1", "active")

	// Nothing of demo is visible.
	for _, path := range []string{"/basic/api/v1/basic/goods", "/basic/api/v1/basic/goods?status=deleted", "/basic/api/v1/basic/shops",
		"/basic/api/v1/basic/good-category", "/basic/api/v1/basic/orders", fmt.Sprintf("/basic/api/v1/basic/orders?shop_id=%d", shop),
		fmt.Sprintf("/basic/api/v1/basic/goods?shop_id=%d", shop)} {
		var p pageOf[struct{}]
		acme.get(t, path, &p)
		want := 0
		if path == "/basic/api/v1/basic/shops" {
			want = 1 // its own
		}
		if int(p.Total) != want {
			t.Fatalf("acme %s: total %d", path, p.Total)
		}
	}
	var tpls pageOf[linkTemplate]
	acme.post(t, "/api/v1/basic/goods/link-template/list", `{}`, &tpls)
	if tpls.Total != 0 {
		t.Fatalf("acme sees templates: %+v", tpls)
	}
	var q pageOf[goods]
	acme.post(t, "/api/v1/basic/goods/list", `{"item_no":"D-1"}`, &q)
	if q.Total != 0 {
		t.Fatal("acme finds demo goods by item number")
	}

	// Nothing of demo can be read or changed.
	for _, c := range []struct {
		path, body string
		code       int
		contains   string
	}{
		{"/api/v1/basic/goods/get", fmt.Sprintf(`{"id":%d}`, g.ID), 404, "not found"},
		{"/api/v1/basic/goods/detail", fmt.Sprintf(`{"id":%d}`, g.ID), 404, "not found"},
		{"/api/v1/basic/goods/update", fmt.Sprintf(`{"id":%d,"goods":{"name":"x"},"update_mask":"name"}`, g.ID), 404, "not found"},
		{"/api/v1/basic/goods/delete", fmt.Sprintf(`{"ids":[%d]}`, g.ID), 0, `"deleted":0`},
		{"/api/v1/basic/goods/batch", fmt.Sprintf(`{"ids":[%d],"goods":{"cost":9},"update_mask":"cost"}`, g.ID), 0, `"updated":0`},
		{"/api/v1/basic/goods/set_virtual", fmt.Sprintf(`{"ids":[%d],"is_virtual":true}`, g.ID), 0, `"updated":0`},
		{"/api/v1/basic/goods/import", fmt.Sprintf(`{"rows":[{"goods_id":%d,"item_no":"HIJACK"}]}`, g.ID), 0, "not found"},
		{"/api/v1/basic/goods/batch-by-shop", fmt.Sprintf(`{"shop_id":%d,"staff_id":0}`, shop), 404, "not found"},
		{"/api/v1/basic/goods/display", fmt.Sprintf(`{"shop_id":%d}`, shop), 404, "not found"},
		{"/api/v1/basic/goods", fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"Planted"}}`, shop), 400, "no shop"},
		{"/api/v1/basic/goods", fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"x","category_id":%d}}`, acmeShop, cat), 400, "no category"},
		{"/api/v1/basic/goods/link-template/create", fmt.Sprintf(`{"link_template":{"name":"x","goods_ids":[%d]}}`, g.ID), 400, "no goods"},
		{"/api/v1/basic/goods/link-template/update", fmt.Sprintf(`{"id":%d,"link_template":{"name":"x"},"update_mask":"name"}`, tpl.LinkTemplate.ID), 404, "not found"},
		{"/api/v1/basic/goods/link-template/sort", fmt.Sprintf(`{"items":[{"id":%d,"sort_order":9}]}`, tpl.LinkTemplate.ID), 0, `"updated":0`},
	} {
		acme.Expect(t, "POST", c.path, c.body, c.code, c.contains)
	}
	got := d.getGoods(t, g.ID)
	if got.Name != "Demo goods" || got.Status != "on_sale" || got.Cost != 0 || got.IsVirtual || got.ItemNo != "D-1" || got.CategoryID != id(cat) {
		t.Fatalf("demo goods changed by another tenant: %+v", got)
	}
	var mine pageOf[linkTemplate]
	d.post(t, "/api/v1/basic/goods/link-template/list", `{}`, &mine)
	if mine.Total != 1 || mine.Items[0].Name != "Demo template" || mine.Items[0].SortOrder != 0 {
		t.Fatalf("demo template changed: %+v", mine)
	}
}

// A failed write to the analytical store does not fail the request; the change stays
// queued and the background loop delivers it once the store is back.
func TestWarehouseWriteRetried(t *testing.T) {
	s := stack.Start(t, func(c *app.Config) {
		app.ServiceConfig[basic.Config](c, "basic").WarehouseRetryInterval = 100 * time.Millisecond
	})
	d := demo(t, s)
	shop := d.addShop(t, "Shop", "tmall", "s", "active")
	g := d.createGoods(t, fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"Before"}}`, shop))
	ctx := context.Background()
	if _, err := s.DB.Pool.Exec(ctx, `CREATE FUNCTION analytics.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'store down'; END $$;
		CREATE TRIGGER refuse BEFORE INSERT OR UPDATE ON analytics.basic_goods FOR EACH ROW EXECUTE FUNCTION analytics.refuse()`); err != nil {
		t.Fatal(err)
	}
	d.post(t, "/api/v1/basic/goods/update", fmt.Sprintf(`{"id":%d,"goods":{"name":"After"},"update_mask":"name"}`, g.ID), nil)
	if name, _, _, _, _, _ := warehouseGoods(t, s, d.Tenant, g.ID); name != "Before" {
		t.Fatalf("store down, yet it holds %q", name)
	}
	if n := countRows(t, s, "SELECT count(*) FROM basic.warehouse_outbox WHERE tenant_id = $1", d.Tenant); n != 1 {
		t.Fatalf("%d queued changes", n)
	}
	if _, err := s.DB.Pool.Exec(ctx, "DROP TRIGGER refuse ON analytics.basic_goods"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		name, _, _, _, _, _ := warehouseGoods(t, s, d.Tenant, g.ID)
		if name == "After" && countRows(t, s, "SELECT count(*) FROM basic.warehouse_outbox") == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the queued change did not reach the store: %q", name)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

//go:build platform

package basic

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/shopmind/shopmind/internal/testutil/stack"
)

type linkTemplate struct {
	ID          id     `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	ShopID      id     `json:"shop_id"`
	GoodsIDs    []id   `json:"goods_ids"`
	MetricIDs   []id   `json:"metric_ids"`
	SortOrder   int    `json:"sort_order"`
	CreatedAt   string `json:"created_at"`
	UpdatedAt   string `json:"updated_at"`
}

// Link-analysis templates: create, update, sort, list, their rules and tenant scope.
func TestLinkTemplates(t *testing.T) {
	s := stack.Start(t)
	d := demo(t, s)
	shop := d.addShop(t, "Main", "tmall", "m", "active")
	shop2 := d.addShop(t, "Second", "jd", "s", "active")
	var g []goods
	for i := range 4 {
		g = append(g, d.createGoods(t, fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"G%d"}}`, shop, i)))
	}
	g2 := d.createGoods(t, fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"Other shop goods"}}`, shop2))
	gone := d.createGoods(t, fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"Gone"}}`, shop))
	d.Expect(t, "POST", "/api/v1/basic/goods/delete", fmt.Sprintf(`{"ids":[%d]}`, gone.ID), 0, `"deleted":1`)
	var gmv, orders int64
	ctx := context.Background()
	for name, dst := range map[string]*int64{"gmv": &gmv, "orders": &orders} {
		if err := s.DB.Pool.QueryRow(ctx, `INSERT INTO analysis.metrics (tenant_id, name, display_name, metric_group, type, config)
			VALUES ($1, $2, $2, 'Sales', 'derived', '{}') RETURNING id`, d.Tenant, name).Scan(dst); err != nil {
			t.Fatal(err)
		}
	}
	acme := addTenant(t, s, "acme")
	acmeShop := acme.addShop(t, "Acme", "tmall", "a", "active")
	acmeGoods := acme.createGoods(t, fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"Acme goods"}}`, acmeShop))
	var acmeMetric int64
	if err := s.DB.Pool.QueryRow(ctx, `INSERT INTO analysis.metrics (tenant_id, name, display_name, metric_group, type, config)
		VALUES ($1, 'gmv', 'gmv', 'Sales', 'derived', '{}') RETURNING id`, acme.Tenant).Scan(&acmeMetric); err != nil {
		t.Fatal(err)
	}

	create := func(tn *tenant, body string) linkTemplate {
		t.Helper()
		var out struct {
			LinkTemplate linkTemplate `json:"link_template"`
		}
		tn.post(t, "/api/v1/basic/goods/link-template/create", body, &out)
		return out.LinkTemplate
	}
	hero := create(d, fmt.Sprintf(`{"link_template":{"name":"Hero products","description":"11.11","shop_id":%d,"goods_ids":[%d,%d,%d],"metric_ids":[%d,%d],"sort_order":5}}`,
		shop, g[2].ID, g[0].ID, g[1].ID, orders, gmv))
	if hero.ID == 0 || hero.Name != "Hero products" || hero.ShopID != id(shop) || fmt.Sprint(hero.GoodsIDs) != fmt.Sprint([]id{g[2].ID, g[0].ID, g[1].ID}) ||
		fmt.Sprint(hero.MetricIDs) != fmt.Sprint([]id{id(orders), id(gmv)}) || hero.SortOrder != 5 || hero.CreatedAt == "" {
		t.Fatalf("created: %+v", hero)
	}
	multi := create(d, fmt.Sprintf(`{"link_template":{"name":"Across shops","goods_ids":[%d,%d]}}`, g[3].ID, g2.ID))
	if multi.ShopID != 0 || len(multi.MetricIDs) != 0 || multi.SortOrder != 0 {
		t.Fatalf("multi-shop template: %+v", multi)
	}
	third := create(d, fmt.Sprintf(`{"link_template":{"name":"Third","goods_ids":[%d],"sort_order":5}}`, g[0].ID))

	many := ids(seq(1, 101)...)
	for _, c := range []struct {
		body     string
		code     int
		contains string
	}{
		{`{}`, 400, "link_template"},
		{fmt.Sprintf(`{"link_template":{"goods_ids":[%d]}}`, g[0].ID), 400, "name and link_template.goods_ids are required"},
		{`{"link_template":{"name":"x"}}`, 400, "required"},
		{fmt.Sprintf(`{"link_template":{"name":"x","goods_ids":%s}}`, many), 400, "goods_ids"},
		{fmt.Sprintf(`{"link_template":{"name":"x","goods_ids":[%d,%d]}}`, g[0].ID, g[0].ID), 400, "goods_ids"},
		{`{"link_template":{"name":"x","goods_ids":[0]}}`, 400, "goods_ids"},
		{fmt.Sprintf(`{"link_template":{"name":"x","goods_ids":[%d],"metric_ids":%s}}`, g[0].ID, ids(seq(1, 21)...)), 400, "metric_ids"},
		{fmt.Sprintf(`{"link_template":{"name":"%s","goods_ids":[%d]}}`, strings.Repeat("n", 129), g[0].ID), 400, "name"},
		{fmt.Sprintf(`{"link_template":{"name":"x","goods_ids":[%d],"sort_order":-1}}`, g[0].ID), 400, "sort_order"},
		{fmt.Sprintf(`{"link_template":{"name":"x","shop_id":%d,"goods_ids":[%d]}}`, shop, g2.ID), 400, "not to the template's shop"},
		{fmt.Sprintf(`{"link_template":{"name":"x","goods_ids":[%d]}}`, gone.ID), 400, "deleted"},
		// Another tenant's goods, shop, metric.
		{fmt.Sprintf(`{"link_template":{"name":"x","goods_ids":[%d]}}`, acmeGoods.ID), 400, "no goods"},
		{fmt.Sprintf(`{"link_template":{"name":"x","shop_id":%d,"goods_ids":[%d]}}`, acmeShop, g[0].ID), 400, "no shop"},
		{fmt.Sprintf(`{"link_template":{"name":"x","goods_ids":[%d],"metric_ids":[%d]}}`, g[0].ID, acmeMetric), 400, "no metric"},
		{fmt.Sprintf(`{"link_template":{"name":"Hero products","goods_ids":[%d]}}`, g[0].ID), 409, "already exists"},
	} {
		d.Expect(t, "POST", "/api/v1/basic/goods/link-template/create", c.body, c.code, c.contains)
	}
	// Another tenant may use the same name.
	create(acme, fmt.Sprintf(`{"link_template":{"name":"Hero products","goods_ids":[%d]}}`, acmeGoods.ID))

	// update: only the masked fields; lists replaced whole.
	var upd struct {
		LinkTemplate linkTemplate `json:"link_template"`
	}
	d.post(t, "/api/v1/basic/goods/link-template/update", fmt.Sprintf(`{"id":%d,"link_template":{"name":"Heroes","description":"ignored","goods_ids":[%d,%d]},"update_mask":"name,goodsIds"}`,
		hero.ID, g[3].ID, g[2].ID), &upd)
	if u := upd.LinkTemplate; u.Name != "Heroes" || u.Description != "11.11" || fmt.Sprint(u.GoodsIDs) != fmt.Sprint([]id{g[3].ID, g[2].ID}) ||
		len(u.MetricIDs) != 2 || u.ShopID != id(shop) {
		t.Fatalf("updated: %+v", u)
	}
	d.post(t, "/api/v1/basic/goods/link-template/update", fmt.Sprintf(`{"id":%d,"link_template":{"shop_id":0,"metric_ids":[],"description":"","sort_order":1},"update_mask":"shopId,metricIds,description,sortOrder"}`, hero.ID), &upd)
	if u := upd.LinkTemplate; u.ShopID != 0 || len(u.MetricIDs) != 0 || u.Description != "" || u.SortOrder != 1 {
		t.Fatalf("updated: %+v", u)
	}
	for _, c := range []struct {
		body     string
		code     int
		contains string
	}{
		{fmt.Sprintf(`{"id":%d,"link_template":{"name":""},"update_mask":"name"}`, hero.ID), 400, "cannot be set to empty"},
		{fmt.Sprintf(`{"id":%d,"link_template":{},"update_mask":"goodsIds"}`, hero.ID), 400, "cannot be set to empty"},
		{fmt.Sprintf(`{"id":%d,"link_template":{"name":"x"}}`, hero.ID), 400, "update_mask"},
		{fmt.Sprintf(`{"id":%d,"link_template":{"name":"x"},"update_mask":"createdAt"}`, hero.ID), 400, "update_mask"},
		{fmt.Sprintf(`{"id":%d,"link_template":{"shop_id":%d},"update_mask":"shopId"}`, multi.ID, shop), 400, "not to the template's shop"},
		{fmt.Sprintf(`{"id":%d,"link_template":{"goods_ids":[%d]},"update_mask":"goodsIds"}`, hero.ID, acmeGoods.ID), 400, "no goods"},
		{fmt.Sprintf(`{"id":%d,"link_template":{"name":"Third"},"update_mask":"name"}`, hero.ID), 409, "already exists"},
		{`{"id":987654,"link_template":{"name":"x"},"update_mask":"name"}`, 404, "not found"},
		{`{"id":0,"link_template":{"name":"x"},"update_mask":"name"}`, 400, "id"},
	} {
		d.Expect(t, "POST", "/api/v1/basic/goods/link-template/update", c.body, c.code, c.contains)
	}
	acme.Expect(t, "POST", "/api/v1/basic/goods/link-template/update", fmt.Sprintf(`{"id":%d,"link_template":{"name":"hijack"},"update_mask":"name"}`, hero.ID), 404, "not found")

	// sort: sets positions; unknown ids and other tenants' templates are not counted.
	d.Expect(t, "POST", "/api/v1/basic/goods/link-template/sort", fmt.Sprintf(`{"items":[{"id":%d,"sort_order":3},{"id":%d,"sort_order":0},{"id":%d,"sort_order":3},{"id":987654,"sort_order":1}]}`,
		hero.ID, third.ID, multi.ID), 0, `"updated":3`)
	for _, c := range []struct{ body, contains string }{
		{`{"items":[]}`, "items"},
		{fmt.Sprintf(`{"items":[{"id":%d,"sort_order":1},{"id":%d,"sort_order":2}]}`, hero.ID, hero.ID), "only once"},
		{`{"items":[{"id":0,"sort_order":1}]}`, "items[0].id"},
		{fmt.Sprintf(`{"items":[{"id":%d,"sort_order":1000001}]}`, hero.ID), "sort_order"},
	} {
		d.Expect(t, "POST", "/api/v1/basic/goods/link-template/sort", c.body, 400, c.contains)
	}
	items := make([]string, 101)
	for i := range items {
		items[i] = fmt.Sprintf(`{"id":%d,"sort_order":1}`, i+1)
	}
	d.Expect(t, "POST", "/api/v1/basic/goods/link-template/sort", `{"items":[`+strings.Join(items, ",")+`]}`, 400, "items")

	// list: by sort_order then id; shop and name filters; paging.
	list := func(tn *tenant, body string) pageOf[linkTemplate] {
		t.Helper()
		var out pageOf[linkTemplate]
		tn.post(t, "/api/v1/basic/goods/link-template/list", body, &out)
		return out
	}
	names := func(p pageOf[linkTemplate]) string {
		var out []string
		for _, x := range p.Items {
			out = append(out, x.Name)
		}
		return strings.Join(out, ",")
	}
	if got := list(d, `{}`); names(got) != "Third,Heroes,Across shops" || got.Total != 3 || got.PageSize != 10 {
		t.Fatalf("list: %s %+v", names(got), got)
	}
	if got := list(d, `{"page_size":1,"page_num":2}`); names(got) != "Heroes" || got.Total != 3 {
		t.Fatalf("page 2: %s", names(got))
	}
	if got := list(d, `{"shop_id":0}`); got.Total != 3 {
		t.Fatalf("multi-shop only: %s", names(got))
	}
	d.post(t, "/api/v1/basic/goods/link-template/update", fmt.Sprintf(`{"id":%d,"link_template":{"shop_id":%d},"update_mask":"shopId"}`, third.ID, shop), nil)
	if got := list(d, fmt.Sprintf(`{"shop_id":%d}`, shop)); names(got) != "Third" {
		t.Fatalf("shop filter: %s", names(got))
	}
	if got := list(d, `{"name":"HERO"}`); names(got) != "Heroes" {
		t.Fatalf("name filter: %s", names(got))
	}
	if got := list(acme, `{}`); names(got) != "Hero products" {
		t.Fatalf("acme sees: %s", names(got))
	}
	d.Expect(t, "POST", "/api/v1/basic/goods/link-template/list", `{"page_size":101}`, 400, "page_size")
	d.Expect(t, "POST", "/api/v1/basic/goods/link-template/list", `{"shop_id":-1}`, 400, "shop_id")
}

//go:build platform

package basic

import (
	"fmt"
	"net/url"
	"testing"

	"github.com/shopmind/shopmind/internal/testutil/stack"
)

// The GET listings (goods, categories, shops) and the POST goods list: filters, sort
// whitelists, paging bounds, tenant scope.
func TestListings(t *testing.T) {
	s := stack.Start(t)
	d := demo(t, s)
	tm := d.addShop(t, "Alpha Flagship", "tmall", "a", "active")
	jd := d.addShop(t, "Beta Outlet", "jd", "b", "disabled")
	d.addShop(t, "Gamma Expired", "jd", "c", "expired")
	root := d.addCategory(t, 0, "Apparel", 1, 2)
	leaf := d.addCategory(t, root, "Dresses", 2, 1)
	d.addCategory(t, root, "Shirts", 2, 0)
	d.addCategory(t, 0, "Home", 1, 1)
	staff := d.addUser(t, "zhang", "Zhang San")
	acme := addTenant(t, s, "acme")
	acmeShop := acme.addShop(t, "Acme Alpha", "tmall", "x", "active")
	acme.addCategory(t, 0, "Apparel secret", 1, 0)
	acme.createGoods(t, fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"Red Dress secret","status":"on_sale"}}`, acmeShop))

	type spec struct {
		shop        int64
		name        string
		cat, staff  int64
		virtual     bool
		status      string
		price, cost float64
	}
	specs := []spec{
		{tm, "Red Dress", leaf, staff, false, "on_sale", 99, 40},
		{tm, "Blue dress", leaf, 0, false, "on_sale", 149, 60},
		{tm, "Gift card 100%", 0, staff, true, "on_sale", 100, 98},
		{tm, "Shirt_Slim", root, 0, false, "off_sale", 59, 20},
		{jd, "Green Dress", leaf, staff, false, "on_sale", 199, 80},
		{jd, "Lamp", 0, 0, false, "off_sale", 89, 30},
	}
	var created []goods
	for _, sp := range specs {
		created = append(created, d.createGoods(t, fmt.Sprintf(`{"goods":{"shop_id":%d,"name":%q,"category_id":%d,"staff_id":%d,"is_virtual":%v,"status":%q,"price":%v,"cost":%v}}`,
			sp.shop, sp.name, sp.cat, sp.staff, sp.virtual, sp.status, sp.price, sp.cost)))
	}
	d.Expect(t, "POST", "/api/v1/basic/goods/delete", fmt.Sprintf(`{"ids":[%d]}`, created[5].ID), 0, `"deleted":1`)

	names := func(items []goods) []string {
		out := make([]string, len(items))
		for i, g := range items {
			out[i] = g.Name
		}
		return out
	}
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"", []string{"Green Dress", "Shirt_Slim", "Gift card 100%", "Blue dress", "Red Dress"}}, // created_at,desc
		{"sort=price,asc", []string{"Shirt_Slim", "Red Dress", "Gift card 100%", "Blue dress", "Green Dress"}},
		{"sort=cost,desc&page_size=2", []string{"Gift card 100%", "Green Dress"}},
		{"sort=cost,desc&page_size=2&page_num=3", []string{"Shirt_Slim"}},
		{"name=dress&sort=id,asc", []string{"Red Dress", "Blue dress", "Green Dress"}},
		{"name=100%25", []string{"Gift card 100%"}}, // % is a literal
		{"name=t_s", []string{"Shirt_Slim"}},        // _ is a literal
		{fmt.Sprintf("shop_id=%d&sort=name,asc", tm), []string{"Blue dress", "Gift card 100%", "Red Dress", "Shirt_Slim"}},
		{fmt.Sprintf("category_id=%d&sort=id,asc", leaf), []string{"Red Dress", "Blue dress", "Green Dress"}},
		{"category_id=0", []string{"Gift card 100%"}},
		{fmt.Sprintf("staff_id=%d&sort=id,asc", staff), []string{"Red Dress", "Gift card 100%", "Green Dress"}},
		{"staff_id=0&sort=id,asc", []string{"Blue dress", "Shirt_Slim"}},
		{"is_virtual=true", []string{"Gift card 100%"}},
		{"is_virtual=false&status=off_sale", []string{"Shirt_Slim"}},
		{"status=deleted", []string{"Lamp"}},
		{"platform=jd", []string{"Green Dress"}},
		{"platform=pdd", []string{}},
		{"sort=display_order,asc&page_size=1", []string{"Red Dress"}},
		{"sort=updated_at,desc&page_size=1", []string{"Green Dress"}},
	} {
		var got pageOf[goods]
		d.get(t, "/basic/api/v1/basic/goods?"+c.query, &got)
		if fmt.Sprint(names(got.Items)) != fmt.Sprint(c.want) {
			t.Fatalf("goods?%s: got %v want %v", c.query, names(got.Items), c.want)
		}
		if got.PageNum == 0 || got.PageSize == 0 {
			t.Fatalf("goods?%s: page fields missing: %+v", c.query, got)
		}
	}
	var page pageOf[goods]
	d.get(t, "/basic/api/v1/basic/goods?page_size=2&page_num=2", &page)
	if page.Total != 5 || page.PageNum != 2 || page.PageSize != 2 || len(page.Items) != 2 {
		t.Fatalf("paging: %+v", page)
	}
	if g := page.Items[0]; g.ShopName == "" || g.Platform == "" || g.CreatedAt == "" {
		t.Fatalf("listing item lacks names: %+v", g)
	}
	d.get(t, "/basic/api/v1/basic/goods", &page)
	if page.PageNum != 1 || page.PageSize != 10 {
		t.Fatalf("defaults: %+v", page)
	}
	// The POST list: same filters with sort_by/sort_order, plus item_no.
	d.Expect(t, "POST", "/api/v1/basic/goods/update", fmt.Sprintf(`{"id":%d,"goods":{"item_no":"RD-1"},"update_mask":"itemNo"}`, created[0].ID), 0, "RD-1")
	for _, c := range []struct {
		body string
		want []string
	}{
		{`{}`, []string{"Green Dress", "Shirt_Slim", "Gift card 100%", "Blue dress", "Red Dress"}},
		{`{"sort_by":"price","sort_order":"asc","page_size":2}`, []string{"Shirt_Slim", "Red Dress"}},
		{`{"sort_by":"name"}`, []string{"Shirt_Slim", "Red Dress", "Green Dress", "Gift card 100%", "Blue dress"}},
		{`{"item_no":"RD-1"}`, []string{"Red Dress"}},
		{fmt.Sprintf(`{"name":"DRESS","shop_id":%d,"staff_id":%d,"is_virtual":false,"status":"on_sale","platform":"tmall","category_id":%d}`, tm, staff, leaf), []string{"Red Dress"}},
	} {
		var got pageOf[goods]
		d.post(t, "/api/v1/basic/goods/list", c.body, &got)
		if fmt.Sprint(names(got.Items)) != fmt.Sprint(c.want) {
			t.Fatalf("list %s: got %v want %v", c.body, names(got.Items), c.want)
		}
	}
	for _, c := range []struct{ method, path, body, contains string }{
		{"GET", "/basic/api/v1/basic/goods?sort=secret,asc", "", `unknown sort field "secret"`},
		{"GET", "/basic/api/v1/basic/goods?sort=tenant_id,asc", "", "tenant_id"},
		{"GET", "/basic/api/v1/basic/goods?sort=price", "", "sort"},
		{"GET", "/basic/api/v1/basic/goods?sort=price,up", "", "sort"},
		{"GET", "/basic/api/v1/basic/goods?sort=" + url.QueryEscape("Price,asc"), "", "sort"},
		{"GET", "/basic/api/v1/basic/goods?page_size=101", "", "page_size"},
		{"GET", "/basic/api/v1/basic/goods?page_size=0", "", "page_size"},
		{"GET", "/basic/api/v1/basic/goods?page_num=0", "", "page_num"},
		{"GET", "/basic/api/v1/basic/goods?shop_id=0", "", "shop_id"},
		{"GET", "/basic/api/v1/basic/goods?category_id=-1", "", "category_id"},
		{"GET", "/basic/api/v1/basic/goods?status=gone", "", "status"},
		{"GET", "/basic/api/v1/basic/goods?platform=TMALL", "", "platform"},
		{"POST", "/api/v1/basic/goods/list", `{"sort_by":"secret"}`, "sort_by"},
		{"POST", "/api/v1/basic/goods/list", `{"sort_order":"up"}`, "sort_order"},
		{"POST", "/api/v1/basic/goods/list", `{"page_size":101}`, "page_size"},
		{"GET", "/basic/api/v1/basic/good-category?sort=price,asc", "", `unknown sort field "price"`},
		{"GET", "/basic/api/v1/basic/good-category?page_size=101", "", "page_size"},
		{"GET", "/basic/api/v1/basic/good-category?parent_id=-1", "", "parent_id"},
		{"GET", "/basic/api/v1/basic/shops?sort=status,asc", "", `unknown sort field "status"`},
		{"GET", "/basic/api/v1/basic/shops?page_size=101", "", "page_size"},
		{"GET", "/basic/api/v1/basic/shops?status=open", "", "status"},
	} {
		d.Expect(t, c.method, c.path, c.body, 400, c.contains)
	}

	// Categories: sort_order,asc by default; parent and name filters.
	type category struct {
		ID        id     `json:"id"`
		ParentID  id     `json:"parent_id"`
		Name      string `json:"name"`
		Level     int    `json:"level"`
		SortOrder int    `json:"sort_order"`
	}
	catNames := func(items []category) []string {
		out := make([]string, len(items))
		for i, c := range items {
			out[i] = c.Name
		}
		return out
	}
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"", []string{"Shirts", "Dresses", "Home", "Apparel"}},
		{"parent_id=0", []string{"Home", "Apparel"}},
		{fmt.Sprintf("parent_id=%d&sort=name,desc", root), []string{"Shirts", "Dresses"}},
		{"name=APP", []string{"Apparel"}},
		{"sort=level,desc&page_size=1", []string{"Shirts"}}, // ties by id, same direction
		{"sort=id,asc&page_num=2&page_size=3", []string{"Home"}},
	} {
		var got pageOf[category]
		d.get(t, "/basic/api/v1/basic/good-category?"+c.query, &got)
		if fmt.Sprint(catNames(got.Items)) != fmt.Sprint(c.want) {
			t.Fatalf("good-category?%s: got %v want %v", c.query, catNames(got.Items), c.want)
		}
	}
	var cats pageOf[category]
	d.get(t, fmt.Sprintf("/basic/api/v1/basic/good-category?parent_id=%d", root), &cats)
	if cats.Total != 2 || cats.Items[0].Level != 2 || cats.Items[0].ParentID != id(root) {
		t.Fatalf("categories: %+v", cats)
	}

	// Shops: id,asc by default; platform, status and name filters.
	type shop struct {
		ID             id     `json:"id"`
		Name           string `json:"name"`
		Platform       string `json:"platform"`
		PlatformShopID string `json:"platform_shop_id"`
		Status         string `json:"status"`
		CreatedAt      string `json:"created_at"`
	}
	shopNames := func(items []shop) []string {
		out := make([]string, len(items))
		for i, c := range items {
			out[i] = c.Name
		}
		return out
	}
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"", []string{"Alpha Flagship", "Beta Outlet", "Gamma Expired"}},
		{"platform=jd&sort=name,desc", []string{"Gamma Expired", "Beta Outlet"}},
		{"status=disabled", []string{"Beta Outlet"}},
		{"name=alpha", []string{"Alpha Flagship"}},
		{"sort=created_at,desc&page_size=1", []string{"Gamma Expired"}},
		{"sort=platform,asc&page_size=1&page_num=3", []string{"Alpha Flagship"}},
	} {
		var got pageOf[shop]
		d.get(t, "/basic/api/v1/basic/shops?"+c.query, &got)
		if fmt.Sprint(shopNames(got.Items)) != fmt.Sprint(c.want) {
			t.Fatalf("shops?%s: got %v want %v", c.query, shopNames(got.Items), c.want)
		}
	}
	var shops pageOf[shop]
	d.get(t, "/basic/api/v1/basic/shops", &shops)
	if shops.Total != 3 || shops.Items[0].PlatformShopID != "a" || shops.Items[0].Status != "active" || shops.Items[0].CreatedAt == "" {
		t.Fatalf("shops: %+v", shops)
	}

	// The second tenant sees only its own rows.
	var acmeGoods pageOf[goods]
	acme.get(t, "/basic/api/v1/basic/goods?name=dress", &acmeGoods)
	if acmeGoods.Total != 1 || acmeGoods.Items[0].Name != "Red Dress secret" {
		t.Fatalf("acme goods: %+v", acmeGoods)
	}
	var acmeShops pageOf[shop]
	acme.get(t, "/basic/api/v1/basic/shops", &acmeShops)
	var acmeCats pageOf[category]
	acme.get(t, "/basic/api/v1/basic/good-category", &acmeCats)
	if acmeShops.Total != 1 || acmeCats.Total != 1 || acmeCats.Items[0].Name != "Apparel secret" {
		t.Fatalf("acme shops/categories: %+v %+v", acmeShops, acmeCats)
	}
	var demoGoods pageOf[goods]
	d.get(t, "/basic/api/v1/basic/goods?name=secret", &demoGoods)
	if demoGoods.Total != 0 {
		t.Fatalf("demo sees acme goods: %+v", demoGoods)
	}
}

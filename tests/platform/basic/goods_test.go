//go:build platform

package basic

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/shopmind/shopmind/internal/testutil/stack"
)

// Create, get, detail, update: success paths, write-through to the analytical store, and
// every bad input of the issue.
func TestGoodsCreateGetUpdate(t *testing.T) {
	s := stack.Start(t)
	d := demo(t, s)
	shop := d.addShop(t, "Trend Store", "tmall", "tm-1", "active")
	otherShop := d.addShop(t, "Second Store", "jd", "jd-1", "active")
	cat := d.addCategory(t, 0, "Apparel", 1, 1)
	staff := d.addUser(t, "li.lei", "Li Lei")
	acme := addTenant(t, s, "acme")
	acmeShop := acme.addShop(t, "Acme Shop", "tmall", "acme-1", "active")
	acmeCat := acme.addCategory(t, 0, "Acme cat", 1, 0)
	acmeStaff := acme.addUser(t, "wile", "Wile E.")

	g := d.createGoods(t, fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"Linen Dress","item_no":"LD-1","category_id":%d,"staff_id":%d,
		"status":"on_sale","price":199.9,"cost":80.123,"image_url":"https://img.example.com/ld.jpg","display_order":3,
		"id":999,"shop_name":"ignored","platform_goods_id":"ignored","skus":[{"id":1}]}}`, shop, cat, staff))
	if g.ShopName != "Trend Store" || g.Platform != "tmall" || g.CategoryName != "Apparel" || g.StaffName != "Li Lei" ||
		g.Status != "on_sale" || g.Price != 199.9 || g.Cost != 80.12 || g.PlatformGoodsID != "" || g.ID == 999 || g.DisplayOrder != 3 {
		t.Fatalf("created goods: %+v", g)
	}
	// Defaults: off_sale, uncategorized, nobody.
	g2 := d.createGoods(t, fmt.Sprintf(`{"goods":{"shop_id":"%d","name":"Gift Card"}}`, shop))
	if g2.Status != "off_sale" || g2.CategoryID != 0 || g2.StaffID != 0 || g2.IsVirtual {
		t.Fatalf("defaults: %+v", g2)
	}
	// The analytical store has them at once.
	if name, c, st, status, cost, ok := warehouseGoods(t, s, d.Tenant, g.ID); !ok || name != "Linen Dress" || c != cat || st != staff || status != "on_sale" || cost != 80.12 {
		t.Fatalf("warehouse row: %v %v %v %v %v %v", name, c, st, status, cost, ok)
	}

	// Bad inputs of create.
	for _, c := range []struct{ body, contains string }{
		{`{}`, "goods"},
		{`{"goods":{"name":"x"}}`, "shop_id and goods.name are required"},
		{fmt.Sprintf(`{"goods":{"shop_id":%d}}`, shop), "required"},
		{fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"x","price":-1}}`, shop), "goods.price"},
		{fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"x","cost":-0.01}}`, shop), "goods.cost"},
		{fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"x","price":1e300}}`, shop), "goods.price"},
		{fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"x","status":"deleted"}}`, shop), "on_sale or off_sale"},
		{fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"x","status":"gone"}}`, shop), "goods.status"},
		{fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"x","image_url":"ftp://x/y.jpg"}}`, shop), "goods.image_url"},
		{fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"%s"}}`, shop, strings.Repeat("n", 129)), "goods.name"},
		{fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"x","display_order":1000001}}`, shop), "goods.display_order"},
		{fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"x"},"extra":1}`, shop), "extra"},
		// Ids of another tenant.
		{fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"x"}}`, acmeShop), "no shop"},
		{fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"x","category_id":%d}}`, shop, acmeCat), "no category"},
		{fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"x","staff_id":%d}}`, shop, acmeStaff), "no user"},
	} {
		d.Expect(t, "POST", "/api/v1/basic/goods", c.body, 400, c.contains)
	}
	// An item number is unique among the live goods of a shop.
	d.Expect(t, "POST", "/api/v1/basic/goods", fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"x","item_no":"LD-1"}}`, shop), 409, "already used by goods")
	d.createGoods(t, fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"x","item_no":"LD-1"}}`, otherShop))

	// get and detail; unknown and another tenant's: 404.
	got := d.getGoods(t, g.ID)
	if got.Name != "Linen Dress" || got.Skus == nil {
		t.Fatalf("detail: %+v", got)
	}
	d.Expect(t, "POST", "/api/v1/basic/goods/get", fmt.Sprintf(`{"id":%d}`, g.ID), 0, `"Linen Dress"`)
	d.Expect(t, "POST", "/api/v1/basic/goods/get", `{"id":0}`, 400, "id")
	d.Expect(t, "POST", "/api/v1/basic/goods/get", `{}`, 400, "id")
	d.Expect(t, "POST", "/api/v1/basic/goods/detail", `{"id":-3}`, 400, "id")
	d.Expect(t, "POST", "/api/v1/basic/goods/get", `{"id":987654}`, 404, "not found")
	acme.Expect(t, "POST", "/api/v1/basic/goods/get", fmt.Sprintf(`{"id":%d}`, g.ID), 404, "not found")
	acme.Expect(t, "POST", "/api/v1/basic/goods/detail", fmt.Sprintf(`{"id":%d}`, g.ID), 404, "not found")

	// update changes only the masked fields.
	var upd struct {
		Goods goods `json:"goods"`
	}
	d.post(t, "/api/v1/basic/goods/update", fmt.Sprintf(`{"id":%d,"goods":{"name":"Linen Dress 2","price":1,"cost":55.5},"update_mask":"name,cost"}`, g.ID), &upd)
	if upd.Goods.Name != "Linen Dress 2" || upd.Goods.Cost != 55.5 || upd.Goods.Price != 199.9 {
		t.Fatalf("update: %+v", upd.Goods)
	}
	if name, _, _, _, cost, _ := warehouseGoods(t, s, d.Tenant, g.ID); name != "Linen Dress 2" || cost != 55.5 {
		t.Fatalf("warehouse after update: %s %v", name, cost)
	}
	d.post(t, "/api/v1/basic/goods/update", fmt.Sprintf(`{"id":%d,"goods":{"category_id":0,"staff_id":0,"status":"off_sale","item_no":"LD-9","image_url":"","display_order":7,"is_virtual":true,"price":0},
		"update_mask":"categoryId,staffId,status,itemNo,imageUrl,displayOrder,isVirtual,price"}`, g.ID), &upd)
	if upd.Goods.CategoryID != 0 || upd.Goods.CategoryName != "" || upd.Goods.StaffID != 0 || upd.Goods.Status != "off_sale" ||
		upd.Goods.ItemNo != "LD-9" || upd.Goods.ImageURL != "" || upd.Goods.DisplayOrder != 7 || !upd.Goods.IsVirtual || upd.Goods.Price != 0 {
		t.Fatalf("update all: %+v", upd.Goods)
	}
	for _, c := range []struct {
		body     string
		code     int
		contains string
	}{
		{fmt.Sprintf(`{"id":%d,"goods":{"name":"x"}}`, g.ID), 400, "update_mask"},
		{fmt.Sprintf(`{"id":%d,"goods":{"name":"x"},"update_mask":""}`, g.ID), 400, "update_mask"},
		{fmt.Sprintf(`{"id":%d,"goods":{"shop_id":%d},"update_mask":"shopId"}`, g.ID, otherShop), 400, "update_mask"},
		{fmt.Sprintf(`{"id":%d,"goods":{"name":""},"update_mask":"name"}`, g.ID), 400, "goods.name cannot be empty"},
		{fmt.Sprintf(`{"id":%d,"goods":{"status":"deleted"},"update_mask":"status"}`, g.ID), 400, "on_sale or off_sale"},
		{fmt.Sprintf(`{"id":%d,"goods":{"price":-5},"update_mask":"price"}`, g.ID), 400, "goods.price"},
		{fmt.Sprintf(`{"id":%d,"goods":{"category_id":%d},"update_mask":"categoryId"}`, g.ID, acmeCat), 400, "no category"},
		{fmt.Sprintf(`{"id":%d,"goods":{"staff_id":%d},"update_mask":"staffId"}`, g.ID, acmeStaff), 400, "no user"},
		{fmt.Sprintf(`{"id":%d,"goods":{"item_no":"LD-9"},"update_mask":"itemNo"}`, g2.ID), 409, "already used by goods"},
		{`{"id":0,"goods":{"name":"x"},"update_mask":"name"}`, 400, "id"},
		{`{"id":987654,"goods":{"name":"x"},"update_mask":"name"}`, 404, "not found"},
	} {
		d.Expect(t, "POST", "/api/v1/basic/goods/update", c.body, c.code, c.contains)
	}
	acme.Expect(t, "POST", "/api/v1/basic/goods/update", fmt.Sprintf(`{"id":%d,"goods":{"name":"hijack"},"update_mask":"name"}`, g.ID), 404, "not found")
	if d.getGoods(t, g.ID).Name != "Linen Dress 2" {
		t.Fatal("another tenant changed the goods")
	}
	// A deleted goods cannot be updated (422), but can still be read.
	d.Expect(t, "POST", "/api/v1/basic/goods/delete", fmt.Sprintf(`{"ids":[%d]}`, g2.ID), 0, `"deleted":1`)
	d.Expect(t, "POST", "/api/v1/basic/goods/update", fmt.Sprintf(`{"id":%d,"goods":{"name":"x"},"update_mask":"name"}`, g2.ID), 422, "deleted")
	if d.getGoods(t, g2.ID).Status != "deleted" {
		t.Fatal("deleted goods not readable with status deleted")
	}
	if _, _, _, status, _, _ := warehouseGoods(t, s, d.Tenant, g2.ID); status != "deleted" {
		t.Fatalf("warehouse status after delete: %s", status)
	}
}

// delete, batch, set_virtual, batch-by-shop, display, import.
func TestGoodsBatchEndpoints(t *testing.T) {
	s := stack.Start(t)
	d := demo(t, s)
	shop := d.addShop(t, "Main", "tmall", "m-1", "active")
	shop2 := d.addShop(t, "Outlet", "pdd", "o-1", "active")
	cat := d.addCategory(t, 0, "Home", 1, 0)
	staff := d.addUser(t, "han.mei", "")
	acme := addTenant(t, s, "acme")
	acmeShop := acme.addShop(t, "Acme", "jd", "a-1", "active")
	acmeGoods := acme.createGoods(t, fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"Acme thing","item_no":"A-1"}}`, acmeShop))
	acmeCat := acme.addCategory(t, 0, "Acme cat", 1, 0)

	var gs []goods
	for i := range 5 {
		gs = append(gs, d.createGoods(t, fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"Item %d","status":"on_sale","display_order":%d,"price":%d}}`,
			shop, i, 10-i%3, 10+i)))
	}
	other := d.createGoods(t, fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"Outlet item","status":"on_sale"}}`, shop2))

	// batch: the masked fields of up to 100 goods; another tenant's ids are not touched.
	d.Expect(t, "POST", "/api/v1/basic/goods/batch", fmt.Sprintf(`{"ids":[%d,%d,%d],"goods":{"category_id":%d,"staff_id":%d,"cost":12.5,"name":"ignored"},"update_mask":"categoryId,staffId,cost"}`,
		gs[0].ID, gs[1].ID, acmeGoods.ID, cat, staff), 0, `"updated":2`)
	g0 := d.getGoods(t, gs[0].ID)
	if g0.CategoryID != id(cat) || g0.StaffID != id(staff) || g0.StaffName != "han.mei" || g0.Cost != 12.5 || g0.Name != "Item 0" {
		t.Fatalf("batch: %+v", g0)
	}
	if _, c, st, _, cost, _ := warehouseGoods(t, s, d.Tenant, gs[1].ID); c != cat || st != staff || cost != 12.5 {
		t.Fatalf("batch not in the warehouse: %d %d %v", c, st, cost)
	}
	if acme.getGoods(t, acmeGoods.ID).CategoryID != 0 {
		t.Fatal("batch changed another tenant's goods")
	}
	for _, c := range []struct{ body, contains string }{
		{fmt.Sprintf(`{"ids":%s,"goods":{"cost":1},"update_mask":"cost"}`, ids(seq(1, 101)...)), "ids"},
		{`{"ids":[],"goods":{"cost":1},"update_mask":"cost"}`, "ids"},
		{`{"ids":[1,0],"goods":{"cost":1},"update_mask":"cost"}`, "ids"},
		{fmt.Sprintf(`{"ids":[%d],"goods":{"cost":-1},"update_mask":"cost"}`, gs[0].ID), "goods.cost"},
		{fmt.Sprintf(`{"ids":[%d],"goods":{"name":"x"},"update_mask":"name"}`, gs[0].ID), "update_mask"},
		{fmt.Sprintf(`{"ids":[%d],"goods":{"cost":1}}`, gs[0].ID), "update_mask"},
		{fmt.Sprintf(`{"ids":[%d],"update_mask":"cost"}`, gs[0].ID), "goods"},
		{fmt.Sprintf(`{"ids":[%d],"goods":{"status":"deleted"},"update_mask":"status"}`, gs[0].ID), "on_sale or off_sale"},
		{fmt.Sprintf(`{"ids":[%d],"goods":{"category_id":%d},"update_mask":"categoryId"}`, gs[0].ID, acmeCat), "no category"},
	} {
		d.Expect(t, "POST", "/api/v1/basic/goods/batch", c.body, 400, c.contains)
	}

	// set_virtual.
	d.Expect(t, "POST", "/api/v1/basic/goods/set_virtual", fmt.Sprintf(`{"ids":[%d,%d,%d,987654],"is_virtual":true}`, gs[2].ID, gs[3].ID, acmeGoods.ID), 0, `"updated":2`)
	if !d.getGoods(t, gs[2].ID).IsVirtual || acme.getGoods(t, acmeGoods.ID).IsVirtual {
		t.Fatal("set_virtual")
	}
	d.Expect(t, "POST", "/api/v1/basic/goods/set_virtual", fmt.Sprintf(`{"ids":[%d],"is_virtual":false}`, gs[2].ID), 0, `"updated":1`)
	d.Expect(t, "POST", "/api/v1/basic/goods/set_virtual", fmt.Sprintf(`{"ids":%s,"is_virtual":true}`, ids(seq(1, 101)...)), 400, "ids")
	d.Expect(t, "POST", "/api/v1/basic/goods/set_virtual", `{"is_virtual":true}`, 400, "ids")

	// display: the shop's on-sale goods by display_order then id.
	var disp pageOf[goods]
	d.post(t, "/api/v1/basic/goods/display", fmt.Sprintf(`{"shop_id":%d,"page_size":3}`, shop), &disp)
	if disp.Total != 5 || len(disp.Items) != 3 || disp.PageSize != 3 || disp.PageNum != 1 {
		t.Fatalf("display: %+v", disp)
	}
	var all pageOf[goods]
	d.post(t, "/api/v1/basic/goods/display", fmt.Sprintf(`{"shop_id":%d}`, shop), &all)
	for i := 1; i < len(all.Items); i++ {
		a, b := all.Items[i-1], all.Items[i]
		if a.DisplayOrder > b.DisplayOrder || a.DisplayOrder == b.DisplayOrder && a.ID > b.ID {
			t.Fatalf("display order: %+v", all.Items)
		}
	}
	d.Expect(t, "POST", "/api/v1/basic/goods/display", `{"shop_id":0}`, 400, "shop_id")
	d.Expect(t, "POST", "/api/v1/basic/goods/display", fmt.Sprintf(`{"shop_id":%d,"page_size":101}`, shop), 400, "page_size")
	d.Expect(t, "POST", "/api/v1/basic/goods/display", fmt.Sprintf(`{"shop_id":%d}`, acmeShop), 404, "not found")

	// batch-by-shop: staff and/or category of every live goods of the shop.
	d.Expect(t, "POST", "/api/v1/basic/goods/batch-by-shop", fmt.Sprintf(`{"shop_id":%d,"staff_id":%d}`, shop, staff), 0, `"updated":5`)
	d.Expect(t, "POST", "/api/v1/basic/goods/batch-by-shop", fmt.Sprintf(`{"shop_id":%d,"category_id":%d,"staff_id":0}`, shop2, cat), 0, `"updated":1`)
	if o := d.getGoods(t, other.ID); o.CategoryID != id(cat) || o.StaffID != 0 {
		t.Fatalf("batch-by-shop: %+v", o)
	}
	if _, _, st, _, _, _ := warehouseGoods(t, s, d.Tenant, gs[4].ID); st != staff {
		t.Fatalf("batch-by-shop not in the warehouse: %d", st)
	}
	d.Expect(t, "POST", "/api/v1/basic/goods/batch-by-shop", fmt.Sprintf(`{"shop_id":%d}`, shop), 400, "staff_id or category_id is required")
	d.Expect(t, "POST", "/api/v1/basic/goods/batch-by-shop", `{"staff_id":1}`, 400, "shop_id")
	d.Expect(t, "POST", "/api/v1/basic/goods/batch-by-shop", fmt.Sprintf(`{"shop_id":%d,"staff_id":-1}`, shop), 400, "staff_id")
	d.Expect(t, "POST", "/api/v1/basic/goods/batch-by-shop", fmt.Sprintf(`{"shop_id":%d,"staff_id":1}`, acmeShop), 404, "not found")
	d.Expect(t, "POST", "/api/v1/basic/goods/batch-by-shop", fmt.Sprintf(`{"shop_id":%d,"category_id":%d}`, shop, acmeCat), 400, "no category")

	// import: validated first; any faulty row is reported and nothing is stored.
	before1 := d.getGoods(t, gs[1].ID).ItemNo
	var imp struct {
		Imported int `json:"imported"`
		Errors   []struct {
			Row     int    `json:"row"`
			Field   string `json:"field"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	d.post(t, "/api/v1/basic/goods/import", fmt.Sprintf(`{"rows":[
		{"goods_id":%d,"item_no":"IMP-0"},
		{"goods_id":%d,"item_no":"IMP-1"},
		{"goods_id":%d,"item_no":"IMP-0"},
		{"goods_id":%d,"item_no":"IMP-9"},
		{"goods_id":%d,"item_no":"IMP-X"},
		{"goods_id":987654,"item_no":"IMP-Y"},
		{"goods_id":%d,"item_no":"IMP-0"}]}`, gs[0].ID, gs[1].ID, gs[2].ID, gs[0].ID, acmeGoods.ID, other.ID), &imp)
	if imp.Imported != 0 || len(imp.Errors) != 4 || imp.Errors[0].Row != 3 || imp.Errors[0].Field != "item_no" ||
		!strings.Contains(imp.Errors[0].Message, "already used by goods") || imp.Errors[1].Row != 4 || imp.Errors[1].Field != "goods_id" ||
		!strings.Contains(imp.Errors[1].Message, "repeated") || imp.Errors[2].Row != 5 || !strings.Contains(imp.Errors[2].Message, "not found") ||
		imp.Errors[3].Row != 6 {
		t.Fatalf("import: %+v", imp)
	}
	if d.getGoods(t, gs[1].ID).ItemNo != before1 || acme.getGoods(t, acmeGoods.ID).ItemNo != "A-1" {
		t.Fatal("an import with faulty rows stored some")
	}
	imp.Errors = nil
	d.post(t, "/api/v1/basic/goods/import", fmt.Sprintf(`{"rows":[
		{"goods_id":%d,"item_no":"IMP-0"},
		{"goods_id":%d,"item_no":"IMP-1"},
		{"goods_id":%d,"item_no":"IMP-0"}]}`, gs[0].ID, gs[1].ID, other.ID), &imp)
	if imp.Imported != 3 || len(imp.Errors) != 0 {
		t.Fatalf("clean import: %+v", imp)
	}
	if d.getGoods(t, gs[1].ID).ItemNo != "IMP-1" || d.getGoods(t, other.ID).ItemNo != "IMP-0" {
		t.Fatal("clean import not stored")
	}
	// A malformed row rejects the whole request, nothing stored.
	d.Expect(t, "POST", "/api/v1/basic/goods/import", fmt.Sprintf(`{"rows":[{"goods_id":%d,"item_no":"NEW"},{"goods_id":%d,"item_no":""}]}`, gs[3].ID, gs[4].ID), 400, "rows[1].item_no")
	d.Expect(t, "POST", "/api/v1/basic/goods/import", `{"rows":[{"goods_id":0,"item_no":"x"}]}`, 400, "rows[0].goods_id")
	d.Expect(t, "POST", "/api/v1/basic/goods/import", fmt.Sprintf(`{"rows":[{"goods_id":%d,"item_no":"%s"}]}`, gs[3].ID, strings.Repeat("x", 65)), 400, "item_no")
	d.Expect(t, "POST", "/api/v1/basic/goods/import", `{"rows":[]}`, 400, "rows")
	if d.getGoods(t, gs[3].ID).ItemNo != "" {
		t.Fatal("a rejected import stored rows")
	}
	rows := make([]string, 1001)
	for i := range rows {
		rows[i] = fmt.Sprintf(`{"goods_id":%d,"item_no":"R%d"}`, i+1, i)
	}
	d.Expect(t, "POST", "/api/v1/basic/goods/import", `{"rows":[`+strings.Join(rows, ",")+`]}`, 400, "rows")
	var big struct {
		Imported int               `json:"imported"`
		Errors   []json.RawMessage `json:"errors"`
	}
	d.post(t, "/api/v1/basic/goods/import", `{"rows":[`+strings.Join(rows[:1000], ",")+`]}`, &big)
	if len(big.Errors) > 0 && big.Imported != 0 || len(big.Errors) == 0 && big.Imported != 1000 {
		t.Fatalf("1000 rows: %d imported, %d errors", big.Imported, len(big.Errors))
	}

	// delete: soft, counts only live goods of the tenant.
	d.Expect(t, "POST", "/api/v1/basic/goods/delete", fmt.Sprintf(`{"ids":[%d,%d,%d,987654]}`, gs[0].ID, gs[1].ID, acmeGoods.ID), 0, `"deleted":2`)
	d.Expect(t, "POST", "/api/v1/basic/goods/delete", fmt.Sprintf(`{"ids":[%d]}`, gs[0].ID), 0, `"deleted":0`)
	acme.Expect(t, "POST", "/api/v1/basic/goods/get", fmt.Sprintf(`{"id":%d}`, acmeGoods.ID), 0, `"status":"off_sale"`)
	d.Expect(t, "POST", "/api/v1/basic/goods/delete", `{"ids":[]}`, 400, "ids")
	d.Expect(t, "POST", "/api/v1/basic/goods/delete", fmt.Sprintf(`{"ids":%s}`, ids(seq(1, 101)...)), 400, "ids")
	d.Expect(t, "POST", "/api/v1/basic/goods/delete", `{}`, 400, "ids")
	// Deleted goods leave the default listing and the display list; batch skips them.
	var list pageOf[goods]
	d.post(t, "/api/v1/basic/goods/list", fmt.Sprintf(`{"shop_id":%d}`, shop), &list)
	if list.Total != 3 {
		t.Fatalf("listing after delete: %d", list.Total)
	}
	d.post(t, "/api/v1/basic/goods/list", fmt.Sprintf(`{"shop_id":%d,"status":"deleted"}`, shop), &list)
	if list.Total != 2 {
		t.Fatalf("deleted listing: %d", list.Total)
	}
	d.Expect(t, "POST", "/api/v1/basic/goods/batch", fmt.Sprintf(`{"ids":[%d],"goods":{"cost":3},"update_mask":"cost"}`, gs[0].ID), 0, `"updated":0`)
}

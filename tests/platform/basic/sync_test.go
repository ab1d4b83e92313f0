//go:build platform

package basic

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/testutil/stack"
	"github.com/shopmind/shopmind/services/basic"
	"github.com/shopmind/shopmind/services/basic/partners"
	"github.com/shopmind/shopmind/services/basic/partners/partnerstest"
)

// switchable is an HTTP endpoint that forwards to whichever fake is current, so one
// configured URL can be pointed at fakes with different faults.
type switchable struct {
	srv    *httptest.Server
	target atomic.Pointer[url.URL]
}

func newSwitchable(t *testing.T) *switchable {
	sw := &switchable{}
	sw.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httputil.NewSingleHostReverseProxy(sw.target.Load()).ServeHTTP(w, r)
	}))
	t.Cleanup(sw.srv.Close)
	return sw
}

func (sw *switchable) to(srv *httptest.Server) {
	u, _ := url.Parse(srv.URL)
	sw.target.Store(u)
}

type syncResult struct {
	Created   int `json:"created"`
	Updated   int `json:"updated"`
	Unchanged int `json:"unchanged"`
}

func (tn *tenant) syncShop(t *testing.T, shop int64) syncResult {
	t.Helper()
	var r syncResult
	tn.post(t, "/api/v1/basic/goods/sync-from-platform", fmt.Sprintf(`{"shop_id":%d}`, shop), &r)
	return r
}

func countRows(t *testing.T, s *stack.Stack, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := s.DB.Pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Platform sync: 5,000 goods with 4 SKUs each in one call, a second run changes nothing,
// upstream changes are applied, two syncs of a shop at once make no duplicates, a platform
// failing half way leaves complete goods only; partner A SKU sync; the rules.
func TestSync(t *testing.T) {
	big := partnerstest.GenerateGoods(5000, 4, 1)
	small := partnerstest.GenerateGoods(600, 3, 2)
	catalog := map[string][]partners.PlatformGoods{"tm-big": big, "jd-small": small, "jd-half": partnerstest.GenerateGoods(1000, 4, 3)}
	good := partnerstest.NewPlatformServer(t, catalog, partnerstest.Faults{})
	halfway := partnerstest.NewPlatformServer(t, catalog, partnerstest.Faults{FailAfterPages: 2, FailStatus: http.StatusBadGateway})
	platform := newSwitchable(t)
	platform.to(good)
	skus := partnerstest.SKUsOf(big[:3])
	partnerA := newSwitchable(t)
	partnerA.to(partnerstest.NewPartnerAServer(t, skus, partnerstest.Faults{}))

	s := stack.Start(t, func(c *app.Config) {
		bc := app.ServiceConfig[basic.Config](c, "basic")
		bc.PlatformURL, bc.PlatformKey = platform.srv.URL, partnerstest.Key
		bc.PartnerAURL, bc.PartnerAKey = partnerA.srv.URL, partnerstest.Key
		bc.UpstreamRetries = 1
	})
	d := demo(t, s)
	shop := d.addShop(t, "Big shop", "tmall", "tm-big", "active")

	start := time.Now()
	first := d.syncShop(t, shop)
	elapsed := time.Since(start)
	t.Logf("sync-from-platform: 5,000 goods with 4 SKUs each (25 pages) in %s through the gateway", elapsed.Round(time.Millisecond))
	if first != (syncResult{Created: 5000}) {
		t.Fatalf("first sync: %+v", first)
	}
	if n := countRows(t, s, "SELECT count(*) FROM basic.goods WHERE tenant_id = $1 AND shop_id = $2", d.Tenant, shop); n != 5000 {
		t.Fatalf("%d goods stored", n)
	}
	if n := countRows(t, s, "SELECT count(*) FROM basic.skus WHERE tenant_id = $1", d.Tenant); n != 20000 {
		t.Fatalf("%d SKUs stored", n)
	}
	if n := countRows(t, s, "SELECT count(*) FROM analytics.basic_goods WHERE i_tenant_id = $1 AND shop_id = $2", d.Tenant, shop); n != 5000 {
		t.Fatalf("%d goods in the analytical store", n)
	}
	// Category paths became a tree.
	var cats pageOf[struct {
		Name  string `json:"name"`
		Level int    `json:"level"`
	}]
	d.get(t, "/basic/api/v1/basic/good-category?parent_id=0&page_size=100", &cats)
	if cats.Total == 0 || cats.Total > 8 {
		t.Fatalf("top-level categories: %+v", cats)
	}
	g := d.getGoods(t, 0+id(countRows(t, s, "SELECT min(id) FROM basic.goods WHERE tenant_id = $1 AND platform_goods_id = 'g000001'", d.Tenant)))
	if g.PlatformGoodsID != "g000001" || g.Name != big[0].Name || g.ItemNo != big[0].ItemNo || g.Price != big[0].Price ||
		g.CategoryName == "" || len(g.Skus) != 4 || g.Skus[0].PlatformSkuID != "g000001-s01" || g.ImageURL != big[0].ImageURL {
		t.Fatalf("synced goods: %+v", g)
	}
	lastChange := countRows(t, s, "SELECT extract(epoch FROM max(updated_at))::int FROM basic.goods WHERE tenant_id = $1", d.Tenant)

	// A second run changes nothing.
	start = time.Now()
	second := d.syncShop(t, shop)
	t.Logf("second run (nothing changed): %s", time.Since(start).Round(time.Millisecond))
	if second != (syncResult{Unchanged: 5000}) {
		t.Fatalf("second sync: %+v", second)
	}
	if n := countRows(t, s, "SELECT extract(epoch FROM max(updated_at))::int FROM basic.goods WHERE tenant_id = $1", d.Tenant); n != lastChange {
		t.Fatal("the second run changed goods")
	}

	// Upstream changes: a new price, a SKU gone, a SKU added, a new goods; merchant-owned
	// fields survive.
	d.post(t, "/api/v1/basic/goods/update", fmt.Sprintf(`{"id":%d,"goods":{"cost":1.5,"display_order":9},"update_mask":"cost,displayOrder"}`, g.ID), nil)
	big[0].Price = 7.77
	big[0].SKUs = append(big[0].SKUs[1:], partners.PlatformSKU{PlatformSkuID: "g000001-new", Spec: "Gold/M", Price: 8, Stock: 3})
	catalog["tm-big"] = append(big, partners.PlatformGoods{PlatformGoodsID: "g-new", Name: "Brand new", Status: partners.StatusOnSale,
		Price: 1, UpdatedAt: time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC), SKUs: []partners.PlatformSKU{}})
	third := d.syncShop(t, shop)
	if third != (syncResult{Created: 1, Updated: 1, Unchanged: 4999}) {
		t.Fatalf("third sync: %+v", third)
	}
	g = d.getGoods(t, g.ID)
	if g.Price != 7.77 || g.Cost != 1.5 || g.DisplayOrder != 9 || len(g.Skus) != 4 || g.Skus[3].PlatformSkuID != "g000001-new" {
		t.Fatalf("after upstream changes: %+v", g)
	}
	// A goods deleted in ShopMind stays deleted.
	d.Expect(t, "POST", "/api/v1/basic/goods/delete", fmt.Sprintf(`{"ids":[%d]}`, g.ID), 0, `"deleted":1`)
	if r := d.syncShop(t, shop); r != (syncResult{Unchanged: 5001}) || d.getGoods(t, g.ID).Status != "deleted" {
		t.Fatalf("sync after delete: %+v", r)
	}

	// Two syncs of one shop at once: no duplicates, every goods created once.
	smallShop := d.addShop(t, "Small shop", "jd", "jd-small", "active")
	var wg sync.WaitGroup
	results := make([]syncResult, 2)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = d.syncShop(t, smallShop)
		}()
	}
	wg.Wait()
	if results[0].Created+results[1].Created != 600 || results[0].Created+results[0].Updated+results[0].Unchanged != 600 ||
		results[1].Created+results[1].Updated+results[1].Unchanged != 600 {
		t.Fatalf("concurrent syncs: %+v", results)
	}
	if n := countRows(t, s, "SELECT count(*) FROM basic.goods WHERE tenant_id = $1 AND shop_id = $2", d.Tenant, smallShop); n != 600 {
		t.Fatalf("%d goods after concurrent syncs", n)
	}
	if n := countRows(t, s, "SELECT count(*) FROM basic.skus k JOIN basic.goods g ON g.tenant_id = k.tenant_id AND g.id = k.goods_id WHERE g.shop_id = $1", smallShop); n != 1800 {
		t.Fatalf("%d SKUs after concurrent syncs", n)
	}

	// The platform failing after two pages: 502, the two pages are complete goods (with
	// every SKU), nothing of the failed page.
	halfShop := d.addShop(t, "Half shop", "jd", "jd-half", "active")
	platform.to(halfway)
	d.Expect(t, "POST", "/api/v1/basic/goods/sync-from-platform", fmt.Sprintf(`{"shop_id":%d}`, halfShop), 502, "platform")
	if n := countRows(t, s, "SELECT count(*) FROM basic.goods WHERE tenant_id = $1 AND shop_id = $2", d.Tenant, halfShop); n != 2*partners.PlatformPageSize {
		t.Fatalf("%d goods after a failure half way", n)
	}
	if n := countRows(t, s, `SELECT count(*) FROM basic.goods g WHERE g.shop_id = $1
		AND (SELECT count(*) FROM basic.skus k WHERE k.tenant_id = g.tenant_id AND k.goods_id = g.id) <> 4`, halfShop); n != 0 {
		t.Fatalf("%d half-written goods", n)
	}
	platform.to(good)
	if r := d.syncShop(t, halfShop); r != (syncResult{Created: 600, Unchanged: 400}) {
		t.Fatalf("resumed sync: %+v", r)
	}

	// Rules.
	expired := d.addShop(t, "Expired", "tmall", "tm-exp", "expired")
	disabled := d.addShop(t, "Disabled", "tmall", "tm-dis", "disabled")
	acme := addTenant(t, s, "acme")
	acmeShop := acme.addShop(t, "Acme", "tmall", "tm-big", "active")
	d.Expect(t, "POST", "/api/v1/basic/goods/sync-from-platform", fmt.Sprintf(`{"shop_id":%d}`, expired), 422, "authorization expired")
	d.Expect(t, "POST", "/api/v1/basic/goods/sync-from-platform", fmt.Sprintf(`{"shop_id":%d}`, disabled), 422, "disabled")
	d.Expect(t, "POST", "/api/v1/basic/goods/sync-from-platform", fmt.Sprintf(`{"shop_id":%d}`, acmeShop), 404, "not found")
	d.Expect(t, "POST", "/api/v1/basic/goods/sync-from-platform", `{"shop_id":0}`, 400, "shop_id")
	d.Expect(t, "POST", "/api/v1/basic/goods/sync-from-platform", `{}`, 400, "shop_id")
	unknownShop := d.addShop(t, "Not on the platform", "tmall", "tm-missing", "active")
	d.Expect(t, "POST", "/api/v1/basic/goods/sync-from-platform", fmt.Sprintf(`{"shop_id":%d}`, unknownShop), 502, "platform")

	// Partner A: the SKUs of chosen goods; a second run changes nothing.
	var gids []id
	for _, pid := range []string{"g000002", "g000003"} {
		gids = append(gids, id(countRows(t, s, "SELECT id FROM basic.goods WHERE tenant_id = $1 AND platform_goods_id = $2 AND shop_id = $3", d.Tenant, pid, shop)))
	}
	for i := range skus {
		skus[i].Stock += 10 // partner A knows newer stock
	}
	skus = append(skus, partners.PartnerSKU{PlatformGoodsID: "g000002", PlatformSkuID: "g000002-pa", Spec: "Partner only", Price: 3, Stock: 1})
	partnerA.to(partnerstest.NewPartnerAServer(t, skus, partnerstest.Faults{}))
	var pr syncResult
	d.post(t, "/api/v1/basic/goods/sync-sku-from-partner_a", fmt.Sprintf(`{"goods_ids":%s}`, ids(gids...)), &pr)
	if pr != (syncResult{Created: 1, Updated: 8}) {
		t.Fatalf("partner A sync: %+v", pr)
	}
	d.post(t, "/api/v1/basic/goods/sync-sku-from-partner_a", fmt.Sprintf(`{"goods_ids":%s}`, ids(gids...)), &pr)
	if pr != (syncResult{Unchanged: 9}) {
		t.Fatalf("partner A second run: %+v", pr)
	}
	if dg := d.getGoods(t, gids[0]); len(dg.Skus) != 5 || dg.Skus[4].Spec != "Partner only" {
		t.Fatalf("partner A SKUs: %+v", dg.Skus)
	}
	// Failing partner: 502 and nothing written.
	skus[4].Stock += 100 // g000002-s01
	partnerA.to(partnerstest.NewPartnerAServer(t, skus, partnerstest.Faults{FailFirst: 100}))
	d.Expect(t, "POST", "/api/v1/basic/goods/sync-sku-from-partner_a", fmt.Sprintf(`{"goods_ids":%s}`, ids(gids...)), 502, "partner A")
	partnerA.to(partnerstest.NewPartnerAServer(t, skus, partnerstest.Faults{WrongKey: true}))
	d.Expect(t, "POST", "/api/v1/basic/goods/sync-sku-from-partner_a", fmt.Sprintf(`{"goods_ids":%s}`, ids(gids...)), 502, "API key")
	if n := countRows(t, s, "SELECT stock FROM basic.skus WHERE tenant_id = $1 AND platform_sku_id = $2", d.Tenant, skus[4].PlatformSkuID); n != int(skus[4].Stock-100) {
		t.Fatalf("a failed partner sync wrote stock %d", n)
	}
	own := d.createGoods(t, fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"Not on any platform"}}`, shop))
	acmeGoods := acme.createGoods(t, fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"Acme goods"}}`, acmeShop))
	for _, c := range []struct {
		body     string
		code     int
		contains string
	}{
		{`{"goods_ids":[]}`, 400, "goods_ids"},
		{`{}`, 400, "goods_ids"},
		{fmt.Sprintf(`{"goods_ids":%s}`, ids(seq(1, 101)...)), 400, "goods_ids"},
		{fmt.Sprintf(`{"goods_ids":[%d,%d]}`, gids[0], acmeGoods.ID), 400, "goods_ids[1]"},
		{fmt.Sprintf(`{"goods_ids":[%d]}`, own.ID), 422, "no platform goods id"},
		{fmt.Sprintf(`{"goods_ids":[%d]}`, g.ID), 422, "deleted"},
	} {
		d.Expect(t, "POST", "/api/v1/basic/goods/sync-sku-from-partner_a", c.body, c.code, c.contains)
	}
}

// Without SHOPMIND_PLATFORM_URL and SHOPMIND_PARTNER_A_URL the sync endpoints say so.
func TestSyncNotConfigured(t *testing.T) {
	s := stack.Start(t)
	d := demo(t, s)
	shop := d.addShop(t, "Shop", "tmall", "tm", "active")
	d.Expect(t, "POST", "/api/v1/basic/goods/sync-from-platform", fmt.Sprintf(`{"shop_id":%d}`, shop), 503, "SHOPMIND_PLATFORM_URL")
	d.Expect(t, "POST", "/api/v1/basic/goods/sync-sku-from-partner_a", `{"goods_ids":[1]}`, 503, "SHOPMIND_PARTNER_A_URL")
}

//go:build platform

// Package notify tests the notifications through the gateway: produced by the basic
// service's sync and import and by partner failures, listed with filters, sort and
// pagination, marked read, and scoped to the tenant and user.
package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/testutil/stack"
	"github.com/shopmind/shopmind/services/basic"
	"github.com/shopmind/shopmind/services/basic/partners"
	"github.com/shopmind/shopmind/services/basic/partners/partnerstest"
)

type user struct{ *stack.User }

type listed struct {
	Items []struct {
		ID     string `json:"id"`
		Type   string `json:"type"`
		Level  string `json:"level"`
		Title  string `json:"title"`
		Source string `json:"source"`
		ShopID string `json:"shop_id"`
		Read   bool   `json:"read"`
	} `json:"items"`
	Total  string `json:"total"`
	Unread string `json:"unread"`
}

func (u *user) list(t *testing.T, body string) listed {
	t.Helper()
	env := u.Expect(t, "POST", "/notify/api/v1/notify/collect/list", body, 0, "")
	var l listed
	if err := json.Unmarshal(env.Data, &l); err != nil {
		t.Fatal(err)
	}
	return l
}

func TestProducedByBasicListedAndRead(t *testing.T) {
	goods := partnerstest.GenerateGoods(30, 2, 1)
	platform := partnerstest.NewPlatformServer(t, map[string][]partners.PlatformGoods{"tm-1": goods}, partnerstest.Faults{})
	partnerA := partnerstest.NewPartnerAServer(t, partnerstest.SKUsOf(goods[:2]), partnerstest.Faults{FailFirst: 100})
	s := stack.Start(t, func(c *app.Config) {
		bc := app.ServiceConfig[basic.Config](c, "basic")
		bc.PlatformURL, bc.PlatformKey = platform.URL, partnerstest.Key
		bc.PartnerAURL, bc.PartnerAKey = partnerA.URL, partnerstest.Key
		bc.UpstreamRetries = 0
	})
	ctx := context.Background()
	d := &user{s.DemoAdmin(t)}
	shop := stack.AddShop(t, s.DB, d.Tenant, "Flagship", "tmall", "tm-1")

	// Producers: a sync, a partner A failure, an import with a refused row.
	d.Expect(t, "POST", "/api/v1/basic/goods/sync-from-platform", fmt.Sprintf(`{"shop_id":%d}`, shop), 0, `"created":30`)
	var g1, g2 int64
	if err := s.DB.Pool.QueryRow(ctx, `SELECT min(id), max(id) FROM basic.goods WHERE shop_id = $1`, shop).Scan(&g1, &g2); err != nil {
		t.Fatal(err)
	}
	d.Expect(t, "POST", "/api/v1/basic/goods/sync-sku-from-partner_a", fmt.Sprintf(`{"goods_ids":[%d]}`, g1), 502, "partner A")
	d.Expect(t, "POST", "/api/v1/basic/goods/import", fmt.Sprintf(`{"rows":[{"goods_id":%d,"item_no":"N-1"},{"goods_id":987654,"item_no":"N-2"}]}`, g2), 0, `"errors"`)

	all := d.list(t, `{}`)
	if all.Total != "3" || all.Unread != "3" {
		t.Fatalf("notifications: %+v", all)
	}
	types := map[string]string{}
	for _, it := range all.Items {
		types[it.Type] = it.Level
	}
	if types["sync_result"] != "info" || types["partner_failure"] != "error" || types["import_result"] != "warning" {
		t.Fatalf("types and levels: %v", types)
	}
	if l := d.list(t, fmt.Sprintf(`{"shop_id":%d}`, shop)); l.Total != "1" || l.Items[0].Type != "sync_result" || l.Items[0].Source != "basic.sync" {
		t.Fatalf("by shop: %+v", l)
	}
	if l := d.list(t, `{"sort":"level,desc","page_size":1}`); len(l.Items) != 1 || l.Items[0].Level != "error" || l.Total != "3" {
		t.Fatalf("sorted by level: %+v", l)
	}
	if l := d.list(t, `{"keyword":"partner a"}`); l.Total != "1" {
		t.Fatalf("keyword: %+v", l)
	}
	if l := d.list(t, `{"start_time":"2000-01-01T00:00:00Z","end_time":"2000-01-02T00:00:00Z"}`); l.Total != "0" {
		t.Fatalf("time range: %+v", l)
	}

	// Another tenant sees none of it and cannot mark it.
	other := &user{s.NewTenant(t, "rival")}
	if l := other.list(t, `{}`); l.Total != "0" {
		t.Fatalf("other tenant sees %+v", l)
	}
	other.Expect(t, "POST", "/notify/api/v1/notify/collect/read", `{"ids":[`+all.Items[0].ID+`]}`, 404, "not found")

	// Mark read, filter by read state, mark all.
	d.Expect(t, "POST", "/notify/api/v1/notify/collect/read", `{"ids":[`+all.Items[0].ID+`]}`, 0, `"changed":"1"`)
	if l := d.list(t, `{"read":true}`); l.Total != "1" || !l.Items[0].Read || l.Unread != "2" {
		t.Fatalf("read: %+v", l)
	}
	d.Expect(t, "POST", "/notify/api/v1/notify/collect/read-all", `{}`, 0, `"changed":"2"`)
	if l := d.list(t, `{"read":false}`); l.Total != "0" {
		t.Fatalf("unread after read-all: %+v", l)
	}
	d.Expect(t, "POST", "/notify/api/v1/notify/collect/list", `{"read":"yes"}`, 400, "read")
	d.Expect(t, "POST", "/notify/api/v1/notify/collect/list", `{"sort":"title,asc"}`, 400, "sort")
	d.Expect(t, "POST", "/notify/api/v1/notify/collect/list", `{"shop_id":0}`, 400, "shop_id")
}

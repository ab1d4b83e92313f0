//go:build platform

package crx

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shopmind/shopmind/internal/analytics/warehouse"
	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/testutil/stack"
	"github.com/shopmind/shopmind/services/crx"
)

// TestBadInputStoresNothing: each refused upload answers a clear envelope naming the field
// (or the limit), and stores nothing.
func TestBadInputStoresNothing(t *testing.T) {
	s, db := stack.StartAnalytics(t, warehouse.DialectPostgres)
	d := &tenant{s.DemoAdmin(t)}
	shop := d.addShop(t, "tb-1")
	at := time.Now().UTC().Add(-time.Hour)
	good := item("gmv", shop, 1, at, "search")
	const id = "33333333-3333-4333-8333-333333333333"

	many := make([]string, 501)
	for i := range many {
		many[i] = item("gmv", shop, float64(i), at.Add(-time.Duration(i)*time.Second), "search")
	}
	// 500 items of the largest allowed page URL: over the 1 MiB batch limit.
	long := "https://sycm.taobao.com/" + strings.Repeat("a", 2000)
	huge := make([]string, 500)
	for i := range huge {
		huge[i] = strings.Replace(item("gmv", shop, float64(i), at.Add(-time.Duration(i)*time.Second), strings.Repeat("c", 250)),
			"https://sycm.taobao.com/portal/home.htm", long, 1)
	}
	for _, c := range []struct {
		name, body string
		code       int
		contains   string
	}{
		{"missing batch id", `{"items":[` + good + `]}`, 400, "client_batch_id"},
		{"no items", `{"client_batch_id":"` + id + `","items":[]}`, 400, "items"},
		{"501 items", batch(id, many...), 400, "items"},
		{"oversized batch", batch(id, huge...), 413, "too large"}, // the edge's body limit comes first
		{"value of the wrong type", batch(id, strings.Replace(good, `"value":1`, `"value":"lots"`, 1)), 400, "value"},
		{"shop id of the wrong type", batch(id, strings.Replace(good, fmt.Sprintf(`"shop_id":%d`, shop), `"shop_id":"x"`, 1)), 400, "shop_id"},
		{"missing collected_at", fmt.Sprintf(`{"client_batch_id":%q,"items":[{"metric_key":"gmv","shop_id":%d,"value":1}]}`, id, shop), 400, "collected_at"},
		{"no shop", fmt.Sprintf(`{"client_batch_id":%q,"items":[{"metric_key":"gmv","value":1,"collected_at":%q}]}`, id, at.Format(time.RFC3339)), 400, "shop"},
		{"bad metric key", batch(id, strings.Replace(good, `"metric_key":"gmv"`, `"metric_key":"GMV!"`, 1)), 400, "metric_key"},
		{"too many dims", batch(id, strings.Replace(good, `"dims":{"channel":"search"}`, `"dims":{`+dims(17)+`}`, 1)), 400, "dims"},
		{"old extension", strings.Replace(batch(id, good), `"1.0.0"`, `"0.0.1"`, 1), 422, "update"},
		{"unknown field", `{"client_batch_id":"` + id + `","itemz":[]}`, 400, "itemz"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d.Expect(t, "POST", "/api/v1/data/crx/sync", c.body, c.code, c.contains)
		})
	}
	if n := storedValues(t, db, d.Tenant); n != "0" {
		t.Fatalf("refused uploads stored %s values", n)
	}
	// The batch id of a refused batch is free: the good batch under it is stored.
	var a syncAnswer
	d.data(t, "POST", "/api/v1/data/crx/sync", batch(id, good), &a)
	if a.Accepted != 1 {
		t.Fatalf("good batch after refusals: %+v", a)
	}

	// Ad-hoc and error log refusals.
	d.Expect(t, "POST", "/api/v1/data/crx/adhoc", `{"client_id":"`+id+`","collected_at":"2026-01-01T00:00:00Z","data":{}}`, 400, "page_url")
	d.Expect(t, "POST", "/api/v1/data/crx/adhoc", `{"client_id":"`+id+`","page_url":"https://x.example/","collected_at":"2026-01-01T00:00:00Z","data":[1]}`, 400, "data")
	d.Expect(t, "POST", "/api/v1/log/error", `{"level":"error"}`, 400, "message")
	d.Expect(t, "POST", "/api/v1/log/error", `{"level":"error","message":"`+strings.Repeat("m", 4097)+`"}`, 400, "message")
	d.Expect(t, "POST", "/api/v1/log/error", `{"level":"error","message":"x","context":{"blob":"`+strings.Repeat("b", 70<<10)+`"}}`, 413, "65536")
	d.Expect(t, "GET", "/api/v1/data/crx/ver?current_version=latest", "", 400, "current_version")
	// Notification ids: the shared IDs rule.
	ids := make([]string, 101)
	for i := range ids {
		ids[i] = fmt.Sprint(i + 1)
	}
	d.Expect(t, "POST", "/notify/api/v1/notify/collect/read", `{"ids":[`+strings.Join(ids, ",")+`]}`, 400, "ids")
	d.Expect(t, "POST", "/notify/api/v1/notify/collect/read", `{"ids":["x"]}`, 400, "ids")
	d.Expect(t, "POST", "/notify/api/v1/notify/collect/list", `{"page_size":101}`, 400, "page_size")
	d.Expect(t, "POST", "/notify/api/v1/notify/collect/list", `{"start_time":"2026-02-01T00:00:00Z","end_time":"2026-01-01T00:00:00Z"}`, 400, "start_time")
}

func dims(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(`"d%d":"v"`, i)
	}
	return strings.Join(parts, ",")
}

// TestExtensionJourney: the extension's calls as a user makes them, access rules and tenant
// isolation of ad-hoc data, error logs and notifications.
func TestExtensionJourney(t *testing.T) {
	s := stack.Start(t, func(c *app.Config) {
		cfg := app.ServiceConfig[crx.Config](c, "crx")
		cfg.LatestVersion, cfg.MinVersion, cfg.DownloadURL, cfg.ErrorsPerMinute = "1.5.0", "1.2.0", "https://example.com/shopmind.crx", 3
		cfg.SyncMaxBytes = 4096
	})
	d := &tenant{s.DemoAdmin(t)}
	other := &tenant{s.NewTenant(t, "rival")}
	plain := d.addPlainUser(t, "clerk")

	// Version check: public.
	r := s.Do(t, "GET", "/api/v1/data/crx/ver?current_version=1.1.9", "")
	if r.Status != 200 || !strings.Contains(string(r.Body), `"update_required":true`) || !strings.Contains(string(r.Body), `"download_url":"https://example.com/shopmind.crx"`) {
		t.Fatalf("version check: %d %s", r.Status, r.Body)
	}
	d.Expect(t, "GET", "/api/v1/data/crx/ver?current_version=1.5.0", "", 0, `"latest_version":"1.5.0"`)

	// Configuration: defaults, then the administrator's.
	d.Expect(t, "GET", "/api/v1/auth/config", "", 0, `"login_expiry_days":30`)
	d.Expect(t, "PUT", "/api/v1/crx/config-m", `{"metrics":[{"key":"gmv","name":"GMV","platform":"jd","url_pattern":"^https://sz\\.jd\\.com/",
		"source":"api","api_url_pattern":"/api/core","json_path":"$.data.gmv","interval_seconds":600}],
		"upload":{"batch_size":50,"interval_seconds":120,"max_concurrent_tabs":2,"random_delay_ms_min":100,"random_delay_ms_max":900}}`, 0, `"config_version":"1"`)
	d.Expect(t, "GET", "/api/v1/auth/config", "", 0, `"batch_size":50`)
	other.Expect(t, "GET", "/api/v1/auth/config", "", 0, `"batch_size":100`) // the other tenant keeps the defaults
	d.Expect(t, "PUT", "/api/v1/crx/config-m", `{"metrics":[{"key":"gmv","name":"GMV","platform":"jd","url_pattern":"^x","source":"xpath","interval_seconds":600}],
		"upload":{"batch_size":50,"interval_seconds":120,"max_concurrent_tabs":2}}`, 400, "metrics[0].source")
	// Administrator paths refuse a plain user; a user without the crx permissions cannot upload.
	plain.Expect(t, "GET", "/api/v1/crx/config-m", "", 403, "")
	plain.Expect(t, "GET", "/api/v1/log/error-m", "", 403, "")
	plain.Expect(t, "POST", "/api/v1/data/crx/sync", batch("44444444-4444-4444-8444-444444444444", item("gmv", 1, 1, time.Now().Add(-time.Hour), "x")), 403, "crx:data:sync")
	if r := s.Do(t, "GET", "/api/v1/auth/config", ""); r.Status != 401 {
		t.Fatalf("config without a token: %d", r.Status)
	}

	// Ad-hoc data: stored per tenant and user, listable and searchable.
	const cid = "55555555-5555-4555-8555-555555555555"
	adhoc := `{"client_id":"` + cid + `","page_url":"https://item.jd.com/100.html","page_title":"Wool Coat","platform":"jd",
		"collected_at":"2026-11-20T10:00:00Z","data":{"price":499,"reviews":[{"stars":5,"text":"warm and soft"}]}}`
	first := d.Expect(t, "POST", "/api/v1/data/crx/adhoc", adhoc, 0, `"id"`)
	d.Expect(t, "POST", "/api/v1/data/crx/adhoc", adhoc, 0, `"duplicate":true`)
	if !strings.Contains(string(first.Data), `"id"`) || strings.Contains(string(first.Data), `"duplicate":true`) {
		t.Fatalf("first ad-hoc upload: %s", first.Data)
	}
	other.Expect(t, "POST", "/api/v1/data/crx/adhoc", adhoc, 0, `"id"`) // the same client id in another tenant is its own record
	d.Expect(t, "GET", "/api/v1/data/crx/adhoc?keyword=soft", "", 0, `"total":"1"`)
	d.Expect(t, "GET", "/api/v1/data/crx/adhoc?keyword=velvet", "", 0, `"total":"0"`)
	other.Expect(t, "GET", "/api/v1/data/crx/adhoc", "", 0, `"total":"1"`)

	// Error log: stored, listed to administrators of the tenant only, rate-limited per user.
	for i := range 3 {
		d.Expect(t, "POST", "/api/v1/log/error", fmt.Sprintf(`{"level":"error","message":"upload failed %d","stack":"at sync (bg.js:1)",
			"extension_version":"1.5.0","url":"chrome-extension://abc/popup.html","user_agent":"Chrome/131"}`, i), 0, `"id"`)
	}
	d.Expect(t, "POST", "/api/v1/log/error", `{"level":"error","message":"one too many"}`, 429, "per minute")
	d.Expect(t, "GET", "/api/v1/log/error-m?level=error", "", 0, `"total":"3"`)
	other.Expect(t, "GET", "/api/v1/log/error-m", "", 0, `"total":"0"`)

	// Notifications of the uploads: the uploader's, not the other tenant's.
	shop := d.addShop(t, "jd-1")
	recent := time.Now().UTC().Add(-time.Hour)
	current := func(b string) string {
		return strings.Replace(b, `"extension_version":"1.0.0"`, `"extension_version":"1.5.0"`, 1)
	}
	d.Expect(t, "POST", "/api/v1/data/crx/sync", current(batch("66666666-6666-4666-8666-666666666666",
		item("gmv", shop, 10, recent, "search"), item("nope", shop, 1, recent, "search"))), 0, `"accepted":1`)
	// The service's own batch size limit (SHOPMIND_CRX_SYNC_MAX_BYTES, 4 KiB here).
	long := make([]string, 20)
	for i := range long {
		long[i] = item("gmv", shop, float64(i), recent.Add(-time.Duration(i)*time.Second), strings.Repeat("x", 250))
	}
	d.Expect(t, "POST", "/api/v1/data/crx/sync", current(batch("77777777-7777-4777-8777-777777777777", long...)), 413, "limit of 4096 bytes")
	d.Expect(t, "POST", "/notify/api/v1/notify/collect/list", `{"type":"crx_upload","level":"warning"}`, 0, `"total":"1"`)
	other.Expect(t, "POST", "/notify/api/v1/notify/collect/list", `{}`, 0, `"total":"0"`)
}

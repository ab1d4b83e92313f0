//go:build platform

// Package crx tests the browser extension's backend through the gateway, as the extension
// and a new user would use it: login, configuration, uploads, ad-hoc data, error log,
// version check, and the uploaded values in a derived metric's preview.
package crx

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shopmind/shopmind/internal/analytics/warehouse"
	"github.com/shopmind/shopmind/internal/analytics/warehouse/warehousetest"
	"github.com/shopmind/shopmind/internal/testutil/stack"
)

// tenant is a signed-in user of a running stack (DemoAdmin, NewTenant) with the helpers of
// these tests.
type tenant struct{ *stack.User }

// addPlainUser adds a user without roles or administrator flag to tn's tenant and signs in.
func (tn *tenant) addPlainUser(t testing.TB, username string) *tenant {
	t.Helper()
	var code string
	if _, err := tn.DB.Pool.Exec(context.Background(), `INSERT INTO tenant.users (tenant_id, username, password_hash)
		SELECT $1, $2, password_hash FROM tenant.users WHERE username = 'admin' AND tenant_id = $1`, tn.Tenant, username); err != nil {
		t.Fatal(err)
	}
	if err := tn.DB.Pool.QueryRow(context.Background(), `SELECT code FROM tenant.tenants WHERE id = $1`, tn.Tenant).Scan(&code); err != nil {
		t.Fatal(err)
	}
	return &tenant{&stack.User{Stack: tn.Stack, Tenant: tn.Tenant, Token: tn.Login(t, code, username, stack.AdminPassword).Access}}
}

func (tn *tenant) addShop(t testing.TB, platformShopID string) int64 {
	t.Helper()
	return stack.AddShop(t, tn.DB, tn.Tenant, "Shop "+platformShopID, "taobao", platformShopID)
}

func (tn *tenant) data(t testing.TB, method, path, body string, out any) {
	t.Helper()
	env := tn.Expect(t, method, path, body, 0, "")
	if err := json.Unmarshal(env.Data, out); err != nil {
		t.Fatalf("%s: %v in %s", path, err, env.Data)
	}
}

func clip(s string) string {
	if len(s) > 400 {
		return s[:400] + "..."
	}
	return s
}

func storedValues(t testing.TB, db *warehousetest.DB, tenantID int64) string {
	t.Helper()
	res, err := db.Store.Query(context.Background(), "SELECT count(*) FROM diy_crx_metrics WHERE i_tenant_id = "+db.P(1), []any{tenantID}, warehouse.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(res.Rows[0][0])
}

type syncAnswer struct {
	Accepted   int `json:"accepted"`
	Duplicates int `json:"duplicates"`
	Rejected   int `json:"rejected"`
	Errors     []struct {
		Index int    `json:"index"`
		Code  string `json:"code"`
	} `json:"errors"`
}

func item(metric string, shop int64, value float64, at time.Time, channel string) string {
	return fmt.Sprintf(`{"metric_key":%q,"shop_id":%d,"value":%v,"collected_at":%q,"stat_time":%q,"dims":{"channel":%q},"page_url":"https://sycm.taobao.com/portal/home.htm"}`,
		metric, shop, value, at.Format(time.RFC3339), at.Truncate(24*time.Hour).Format(time.RFC3339), channel)
}

func batch(id string, items ...string) string {
	return fmt.Sprintf(`{"client_batch_id":%q,"extension_version":"1.0.0","items":[%s]}`, id, strings.Join(items, ","))
}

// TestSyncAppearsInPreview: uploaded values are stored once, in the caller's tenant only,
// and a derived metric over diy_crx_metrics.value previews them, on both stores.
func TestSyncAppearsInPreview(t *testing.T) {
	for _, store := range []string{"postgres", "clickhouse"} {
		t.Run(store, func(t *testing.T) {
			s, db := stack.StartAnalytics(t, store)
			d := &tenant{s.DemoAdmin(t)}
			other := &tenant{s.NewTenant(t, "rival")}
			mine := d.addShop(t, "tb-100")
			theirs := other.addShop(t, "tb-200")
			yesterday := time.Now().UTC().Add(-24 * time.Hour)

			b1 := batch("11111111-1111-4111-8111-111111111111",
				item("gmv", mine, 1200.5, yesterday, "search"),
				item("gmv", mine, 300, yesterday, "ads"),
				item("visitors", mine, 80, yesterday, "search"),
				item("gmv", theirs, 999, yesterday, "search"))
			var a syncAnswer
			d.data(t, "POST", "/api/v1/data/crx/sync", b1, &a)
			if a.Accepted != 3 || a.Rejected != 1 || a.Errors[0].Index != 3 || a.Errors[0].Code != "unknown_shop" {
				t.Fatalf("first upload: %+v", a)
			}
			// The retry of a batch whose answer was lost: the same answer, nothing stored twice.
			var again syncAnswer
			d.data(t, "POST", "/api/v1/data/crx/sync", b1, &again)
			if again.Accepted != 3 || again.Rejected != 1 || storedValues(t, db, d.Tenant) != "3" {
				t.Fatalf("retried batch: %+v, stored %s", again, storedValues(t, db, d.Tenant))
			}
			// The same value in a new batch: a duplicate.
			var dup syncAnswer
			d.data(t, "POST", "/api/v1/data/crx/sync", batch("22222222-2222-4222-8222-222222222222", item("gmv", mine, 1200.5, yesterday, "search")), &dup)
			if dup.Accepted != 0 || dup.Duplicates != 1 || storedValues(t, db, d.Tenant) != "3" {
				t.Fatalf("duplicate value: %+v", dup)
			}
			if storedValues(t, db, other.Tenant) != "0" {
				t.Fatal("a value was stored under another tenant")
			}

			// The catalog lists the table; a derived metric over it previews the values.
			d.Expect(t, "GET", "/api/v1/anls/catalog?table=diy_crx_metrics", "", 0, `"value"`)
			d.Expect(t, "POST", "/analysis/api/v1/analytics/metrics", `{"name":"crx_value","display_name":"Collected value","group":"Extension",
				"type":"derived","config":{"derived":{"source_field":"diy_crx_metrics.value","aggregation":"sum"}}}`, 0, `"metric"`)
			start, end := yesterday.Add(-48*time.Hour).Format(time.RFC3339), time.Now().UTC().Add(48*time.Hour).Format(time.RFC3339)
			preview := fmt.Sprintf(`{"metric_names":["crx_value"],"dimensions":["diy_crx_metrics.metric_key"],"start_time":%q,"end_time":%q,
				"filters":[{"field":"diy_crx_metrics.shop_id","operator":"eq","value":%d}]}`, start, end, mine)
			var p struct {
				Columns []struct{ Name string } `json:"columns"`
				Rows    [][]any                 `json:"rows"`
			}
			d.data(t, "POST", "/api/v1/anls/query/preview", preview, &p)
			got := map[string]float64{}
			for _, r := range p.Rows {
				v, _ := r[1].(float64)
				got[fmt.Sprint(r[0])] = v
			}
			if len(got) != 2 || got["gmv"] != 1500.5 || got["visitors"] != 80 {
				t.Fatalf("preview: %+v (columns %+v)", got, p.Columns)
			}
			// The other tenant's preview of the same metric sees none of it.
			other.Expect(t, "POST", "/analysis/api/v1/analytics/metrics", `{"name":"crx_value","display_name":"Collected value","group":"Extension",
				"type":"derived","config":{"derived":{"source_field":"diy_crx_metrics.value","aggregation":"sum"}}}`, 0, `"metric"`)
			var op struct {
				Rows [][]any `json:"rows"`
			}
			other.data(t, "POST", "/api/v1/anls/query/preview", fmt.Sprintf(`{"metric_names":["crx_value"],"start_time":%q,"end_time":%q}`, start, end), &op)
			if len(op.Rows) > 1 || (len(op.Rows) == 1 && op.Rows[0][0] != nil && op.Rows[0][0] != float64(0)) {
				t.Fatalf("other tenant's preview sees values: %v", op.Rows)
			}
		})
	}
}

//go:build platform

package reliability

import (
	"fmt"
	"testing"
	"time"

	"github.com/shopmind/shopmind/internal/analytics/warehouse/warehousetest"
	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/testutil/stack"
)

// expectAll checks that every answer of a burst succeeded within maxLatency.
func expectAll(t *testing.T, name string, as []answer) {
	t.Helper()
	for i, a := range as {
		if !a.ok() {
			t.Errorf("%s %d: %s", name, i, a)
		} else if a.Took > maxLatency {
			t.Errorf("%s %d: answered in %s (bound %s)", name, i, a.Took.Round(time.Millisecond), maxLatency)
		}
	}
	pending := 0
	for _, a := range as {
		if a.Header.Get("X-Shopmind-Sync") == "pending" {
			pending++
		}
	}
	t.Logf("%s: %d requests, p50 %s, p99 %s, max %s, %d answered sync pending", name, len(as), pct(as, 50), pct(as, 99), pct(as, 100), pending)
}

// 64 concurrent goods creates on the default configuration: all succeed within 2 s each,
// 64 rows, 64 analytical rows within 5 s.
func TestSixtyFourGoodsCreates(t *testing.T) {
	deadline(t, 60*time.Second)
	st := stack.Start(t)
	c := newClient(st.BaseURL)
	tok, _ := login(t, c, "admin", stack.AdminPassword)
	tenant := stack.DemoTenant(t, st.DB)
	shop := addShop(t, st, tenant, "Sixty-four", "sixty-four")
	as := burst(64, func(i int) answer {
		return c.do("POST", "/basic/api/v1/basic/goods", fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"Burst %d","item_no":"B-%d"}}`, shop, i, i), tok)
	})
	expectAll(t, "64 goods creates", as)
	if n := count(t, st, "SELECT count(*) FROM basic.goods WHERE tenant_id = $1 AND shop_id = $2", tenant, shop); n != 64 {
		t.Errorf("basic.goods holds %d rows for 64 creates", n)
	}
	took := catchUp(t, st.DB.Pool, pgAnalytics{st.DB.Pool}, tenant, 5*time.Second)
	t.Logf("64 goods creates: the analytical store caught up %s after the last answer", took.Round(time.Millisecond))
}

// Concurrent identical favorites: four replacements of one user's list at once all
// succeed (SetFavorites replaces the list: repeating it is no conflict), and the list is
// stored once.
func TestConcurrentIdenticalFavorites(t *testing.T) {
	deadline(t, 60*time.Second)
	st := stack.Start(t, smallPool)
	c := newClient(st.BaseURL)
	tok, _ := login(t, c, "admin", stack.AdminPassword)
	body := `{"favorites":[{"type":"menu","target_key":"goods","title":"Goods","path":"/goods"},{"type":"metric","target_key":"gmv","title":"GMV"}]}`
	var all []answer
	for range 10 {
		as := burst(4, func(int) answer { return c.do("POST", "/tenant/api/v1/tenant/auth/favorite", body, tok) })
		raceCheck(t, "SetFavorites ×4", as, 0)
		all = append(all, as...)
	}
	t.Logf("identical favorites: %d requests, codes %v, p50 %s, max %s", len(all), codes(all), pct(all, 50), pct(all, 100))
	if n := count(t, st, "SELECT count(*) FROM tenant.favorites f JOIN tenant.users u ON u.id = f.user_id WHERE u.username = 'admin'"); n != 2 {
		t.Errorf("%d favorites stored for a list of 2", n)
	}
}

// Six goods creates at once, then eight concurrent updates (two per goods for four of
// them), on both analytical stores: every answer 0 within 2 s, one row per goods in
// PostgreSQL, and the analytical store holding the same goods with their last names within
// 5 s (an older state never overwrites a newer one).
func TestGoodsBurstBothStores(t *testing.T) {
	deadline(t, 90*time.Second)
	for _, store := range []string{"postgres", "clickhouse"} {
		t.Run(store, func(t *testing.T) {
			var opts []stack.Option
			var read func(st *stack.Stack) analytical
			if store == "clickhouse" {
				db := warehousetest.ClickHouse(t) // skips, saying so, without a ClickHouse
				opts = append(opts, func(c *app.Config) { c.Analytics.URL = db.URL })
				ch := openClickHouse(t, db)
				read = func(*stack.Stack) analytical { return ch }
			} else {
				read = func(st *stack.Stack) analytical { return pgAnalytics{st.DB.Pool} }
			}
			st := stack.Start(t, append(opts, smallPool)...)
			c := newClient(st.BaseURL)
			tok, _ := login(t, c, "admin", stack.AdminPassword)
			tenant := stack.DemoTenant(t, st.DB)
			shop := addShop(t, st, tenant, "Burst "+store, "burst-"+store)

			created := burst(6, func(i int) answer {
				return c.do("POST", "/basic/api/v1/basic/goods", fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"Six %d","item_no":"S-%d","status":"on_sale"}}`, shop, i, i), tok)
			})
			expectAll(t, store+": six goods creates", created)
			if t.Failed() {
				return
			}
			updated := burst(8, func(i int) answer {
				id := created[i%4].get("goods.id").Int()
				return c.do("POST", "/basic/api/v1/basic/goods/update", fmt.Sprintf(`{"id":%d,"goods":{"name":"Eight %d","cost":%d},"update_mask":"name,cost"}`, id, i, i), tok)
			})
			expectAll(t, store+": eight goods updates", updated)
			if n := count(t, st, "SELECT count(*) FROM basic.goods WHERE tenant_id = $1 AND shop_id = $2", tenant, shop); n != 6 {
				t.Errorf("basic.goods holds %d rows for 6 creates", n)
			}
			took := catchUp(t, st.DB.Pool, read(st), tenant, 5*time.Second)
			t.Logf("%s: the analytical store caught up %s after the last answer", store, took.Round(time.Millisecond))
		})
	}
}

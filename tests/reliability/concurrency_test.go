//go:build platform

package reliability

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/testutil/stack"
	"github.com/shopmind/shopmind/services/basic"
	"github.com/shopmind/shopmind/services/basic/partners"
	"github.com/shopmind/shopmind/services/basic/partners/partnerstest"
	"github.com/shopmind/shopmind/services/tenant"
)

// clients is the number of concurrent clients.
const clients = 16

// suite is a platform on the smallest pool with a fake platform and partner A, the demo
// tenant and one administrator and shop per worker.
type suite struct {
	st     *stack.Stack
	c      *client
	tenant int64
	admin  string
	ws     []*worker
	rec    *recorder
	op     string // a platform operator's access token (tenant ops, made as the command makes it)
	ds     string // the NL2SQL datasource of the built-in provider
}

func newSuite(t *testing.T, opts ...stack.Option) *suite {
	t.Helper()
	catalogs := map[string][]partners.PlatformGoods{}
	var skus []partners.PartnerSKU
	for n := range clients + 2 { // two spare shops for the races
		cat := catalogOf(n)
		catalogs[fmt.Sprintf("rel-shop-%02d", n)] = cat
		skus = append(skus, partnerstest.SKUsOf(cat)...)
	}
	platform := partnerstest.NewPlatformServer(t, catalogs, partnerstest.Faults{})
	partnerA := partnerstest.NewPartnerAServer(t, skus, partnerstest.Faults{})
	opts = append([]stack.Option{smallPool, func(c *app.Config) {
		bc := app.ServiceConfig[basic.Config](c, "basic")
		bc.PlatformURL, bc.PlatformKey = platform.URL, partnerstest.Key
		bc.PartnerAURL, bc.PartnerAKey = partnerA.URL, partnerstest.Key
	}}, opts...)
	st := stack.Start(t, opts...)
	s := &suite{st: st, c: newClient(st.BaseURL), tenant: stack.DemoTenant(t, st.DB), rec: newRecorder()}
	s.admin, _ = login(t, s.c, "admin", stack.AdminPassword)
	if _, err := tenant.CreateTenant(context.Background(), st.DB.Pool, tenant.NewTenant{Code: "ops", Name: "Platform operations",
		AdminUsername: "root", AdminPassword: opsPassword, Operator: true}, 4); err != nil {
		t.Fatal(err)
	}
	s.op = loginAs(t, s.c, "ops", "root", opsPassword)
	setup := s.c.do("POST", "/api/v1/nl2sql/setup-datasource", `{}`, s.op)
	if s.ds = setup.get("datasource_id").String(); !setup.ok() || s.ds == "" {
		t.Fatalf("NL2SQL setup: %s", setup)
	}
	for n := range clients {
		user := fmt.Sprintf("rel%02d", n)
		addAdmins(t, st, user, user+"p")
		var uid int64
		if err := st.DB.Pool.QueryRow(context.Background(), "SELECT id FROM tenant.users WHERE tenant_id = $1 AND username = $2", s.tenant, user).Scan(&uid); err != nil {
			t.Fatal(err)
		}
		shop := addShop(t, st, s.tenant, fmt.Sprintf("Rel shop %02d", n), fmt.Sprintf("rel-shop-%02d", n))
		w := newWorker(n, newClient(st.BaseURL), s.rec, user, uid, shop)
		w.tenant, w.pool, w.op, w.datasource = s.tenant, st.DB.Pool, s.op, s.ds
		s.ws = append(s.ws, w)
	}
	return s
}

// The concurrency suite: 16 clients run every write operation of the landed
// services (and their POST reads) for a few seconds on a pool of 4 connections, each on its
// own data: every answer 0 within 2 s, then every store holds exactly what the answers said.
// Then identical requests race on every write operation: one wins and the others get the
// answer they deserve (409, 404, 401), or all succeed where the operation is idempotent.
func TestWriteEndpointsUnderConcurrency(t *testing.T) {
	deadline(t, 100*time.Second)
	s := newSuite(t)
	ops := contractWrites(t)

	// The operations answering 501 are the ones excluded; anything else must be covered.
	for id, path := range notImplemented {
		if _, ok := ops[id]; !ok {
			t.Errorf("%s is no longer in the contract: update notImplemented", id)
		}
		if a := s.c.do("POST", path, `{"task_description":"analyse"}`, s.admin); a.Status != 501 || a.Code != 501 {
			t.Errorf("%s answered %s: it has landed, cover it in the suite", id, a)
		}
		delete(ops, id)
	}
	for id, why := range excluded {
		if _, ok := ops[id]; !ok {
			t.Errorf("%s is no longer in the contract: update excluded", id)
		}
		t.Logf("not exercised: %s: %s", id, why)
		delete(ops, id)
	}

	// First contact: 16 distinct creates at once on a platform that has just started (cold
	// caches), per service.
	t.Run("first contact", func(t *testing.T) {
		// A metric stored straight in the database: previews need one, and creating it
		// through the API would warm the caches.
		if _, err := s.st.DB.Pool.Exec(context.Background(), `INSERT INTO analysis.metrics (tenant_id, name, display_name, metric_group, type, config)
			VALUES ($1, 'first_sql', 'First', 'First', 'order', '{"order":{"orderField":"paid_amount","timeBasis":"ordered_at"}}')`, s.tenant); err != nil {
			t.Fatal(err)
		}
		shop := addShop(t, s.st, s.tenant, "First contact", "first-contact")
		rng := fmt.Sprintf(`"start_time":"%s","end_time":"%s"`, time.Now().AddDate(0, 0, -7).UTC().Format(time.RFC3339), time.Now().UTC().Format(time.RFC3339))
		for _, f := range []struct{ name, path, body string }{
			{"CreateMetric", "/analysis/api/v1/analytics/metrics", `{"name":"first_%d","display_name":"First","group":"First","type":"order","config":{"order":{"order_field":"paid_amount","time_basis":"ordered_at"}}}`},
			{"PreviewQuery", "/api/v1/anls/query/preview", `{"metric_names":["first_sql"],"dimensions":["shop"],"limit":1%d,` + rng + `}`},
			{"CreateRole", "/tenant/api/v1/tenant/roles", `{"code":"first_%d","name":"First"}`},
			{"CreateGoods", "/basic/api/v1/basic/goods", `{"goods":{"shop_id":` + fmt.Sprint(shop) + `,"name":"First %d","item_no":"F-%[1]d"}}`},
			{"CreateSession", "/api/v1/sessions", `{"current_user":{"dept_id":%d}}`},
		} {
			raceCheck(t, f.name+" ×16, distinct", burst(clients, func(i int) answer { return s.c.do("POST", f.path, fmt.Sprintf(f.body, i), s.admin) }), 0)
		}
		// The later services, each request on records of its own.
		for _, f := range []struct {
			name, path, token string
			body              func(i int) string
		}{
			{"CreateOrg", "/api/v1/tenant-m/orgs", s.admin, func(i int) string { return fmt.Sprintf(`{"name":"First %d","code":"first-%d"}`, i, i) }},
			{"CreateTenant", "/api/v1/system-m/tenants", s.op, func(i int) string {
				return fmt.Sprintf(`{"code":"first-%d","name":"First","admin_username":"boss","admin_password":%q}`, i, relBossPassword)
			}},
			{"SyncMetrics", "/api/v1/data/crx/sync", s.admin, func(i int) string { return crxBatch(uuidOf(8, 0, i), shop, fmt.Sprint(i)) }},
			{"UploadAdhoc", "/api/v1/data/crx/adhoc", s.admin, func(i int) string {
				return fmt.Sprintf(`{"client_id":%q,"page_url":"https://sycm.taobao.com/first.htm","collected_at":%q,"data":{"i":%d}}`, uuidOf(8, 1, i), time.Now().UTC().Format(time.RFC3339), i)
			}},
			{"CreateToken", "/api/v1/nl2sql/token", s.admin, func(i int) string { return fmt.Sprintf(`{"shop_ids":[%d],"ttl_seconds":%d}`, shop, 600+i) }},
		} {
			raceCheck(t, f.name+" ×16, distinct", burst(clients, func(i int) answer { return s.c.do("POST", f.path, f.body(i), f.token) }), 0)
		}
	})

	start := time.Now()
	cycles := runWorkers(s.ws, 4*time.Second)
	elapsed := time.Since(start)
	s.rec.figures(t, fmt.Sprintf("load: %d clients, pool of 4, %d cycles in %s", clients, cycles, elapsed.Round(time.Millisecond)))
	for _, w := range s.ws {
		for _, e := range w.errs {
			t.Error(e)
		}
	}
	for _, id := range sortedIDs(ops) {
		if !slices.ContainsFunc(s.rec.ops[id], answer.ok) {
			t.Errorf("write operation %s (%s %s) was not covered by a successful request", id, ops[id].Method, ops[id].Path)
		}
	}
	statuses := map[int]int{}
	for _, a := range s.rec.all() {
		statuses[a.Status]++
	}
	t.Logf("load: HTTP statuses %v", statuses)

	t.Run("stores hold what the answers said", func(t *testing.T) {
		s.checkStores(t)
		s.checkServiceStores(t)
	})
	caught := catchUp(t, s.st.DB.Pool, pgAnalytics{s.st.DB.Pool}, s.tenant, 5*time.Second)
	t.Logf("load: the analytical store matched schema basic %s after the last answer", caught.Round(time.Millisecond))

	t.Run("identical requests race", func(t *testing.T) {
		s.races(t)
		s.serviceRaces(t)
	})
	caught = catchUp(t, s.st.DB.Pool, pgAnalytics{s.st.DB.Pool}, s.tenant, 5*time.Second)
	t.Logf("races: the analytical store matched schema basic %s after the last answer", caught.Round(time.Millisecond))
}

// checkStores compares PostgreSQL with what each worker was told.
func (s *suite) checkStores(t *testing.T) {
	ctx := context.Background()
	pool := s.st.DB.Pool
	for _, w := range s.ws {
		// Goods the worker created: each stored once, with its last name, item number,
		// virtual flag and status; nothing else in its shop but the platform's catalog.
		rows, err := pool.Query(ctx, `SELECT id, name, item_no, is_virtual, status, staff_id FROM basic.goods
			WHERE tenant_id = $1 AND shop_id = $2 AND platform_goods_id = ''`, s.tenant, w.shop)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int64]bool{}
		for rows.Next() {
			var id, staff int64
			var name, item, status string
			var virtual bool
			if err := rows.Scan(&id, &name, &item, &virtual, &status, &staff); err != nil {
				t.Fatal(err)
			}
			seen[id] = true
			g, ok := w.goods[id]
			switch {
			case !ok:
				t.Errorf("worker %d: goods %d (%s) stored but never answered as created", w.n, id, name)
			case g.name != name || g.itemNo != item || g.virtual != virtual || g.deleted != (status == "deleted"):
				t.Errorf("worker %d: goods %d stored as %q %q virtual=%v %s, answers said %+v", w.n, id, name, item, virtual, status, *g)
			}
		}
		rows.Close()
		for id := range w.goods {
			if !seen[id] {
				t.Errorf("worker %d: goods %d answered as created is not stored", w.n, id)
			}
		}
		if w.syncCreated != catalogSize {
			t.Errorf("worker %d: platform syncs answered %d goods created, the catalog has %d", w.n, w.syncCreated, catalogSize)
		}
		if n := count(t, s.st, `SELECT count(*) FROM basic.goods WHERE tenant_id = $1 AND shop_id = $2 AND platform_goods_id <> ''`, s.tenant, w.shop); n != catalogSize {
			t.Errorf("worker %d: %d synced goods stored, catalog %d", w.n, n, catalogSize)
		}
		if n := count(t, s.st, `SELECT count(*) FROM basic.skus k JOIN basic.goods g ON g.tenant_id = k.tenant_id AND g.id = k.goods_id
			WHERE g.tenant_id = $1 AND g.shop_id = $2`, s.tenant, w.shop); n != 2*catalogSize {
			t.Errorf("worker %d: %d SKUs stored, catalog %d", w.n, n, 2*catalogSize)
		}
		if n := count(t, s.st, `SELECT count(*) FROM basic.goods WHERE tenant_id = $1 AND shop_id = $2 AND status <> 'deleted' AND staff_id <> $3`, s.tenant, w.shop, w.userID); n != 0 {
			t.Errorf("worker %d: %d live goods of its shop missed batch-by-shop's staff", w.n, n)
		}

		// Roles, metrics, templates: exactly the live ones, under their last names.
		prefix := fmt.Sprintf("rel_w%02dc", w.n)
		var roles []string
		if err := pool.QueryRow(ctx, `SELECT coalesce(array_agg(code ORDER BY code), '{}') FROM tenant.roles WHERE tenant_id = $1 AND code LIKE $2 || '%'`, s.tenant, prefix).Scan(&roles); err != nil {
			t.Fatal(err)
		}
		if want := sortedKeys(w.liveRoles); !slices.Equal(roles, want) {
			t.Errorf("worker %d: roles stored %v, answers said %v", w.n, roles, want)
		}
		if n := count(t, s.st, `SELECT count(*) FROM tenant.roles WHERE tenant_id = $1 AND code LIKE $2 || '%' AND name NOT LIKE '% v2'`, s.tenant, prefix); n != 0 {
			t.Errorf("worker %d: %d roles kept their first name after a successful rename", w.n, n)
		}
		var metrics []string
		if err := pool.QueryRow(ctx, `SELECT coalesce(array_agg(name ORDER BY name), '{}') FROM analysis.metrics WHERE tenant_id = $1 AND name LIKE $2 || '%' AND deleted_at IS NULL`, s.tenant, prefix).Scan(&metrics); err != nil {
			t.Fatal(err)
		}
		if want := sortedKeys(w.liveMetrics); !slices.Equal(metrics, want) {
			t.Errorf("worker %d: live metrics %v, answers said %v", w.n, metrics, want)
		}
		if n := count(t, s.st, `SELECT count(*) FROM analysis.metrics WHERE tenant_id = $1 AND name LIKE $2 || '%'`, s.tenant, prefix); n != len(w.liveMetrics)+len(w.goneMetrics) {
			t.Errorf("worker %d: %d metric rows for %d created", w.n, n, len(w.liveMetrics)+len(w.goneMetrics))
		}
		var templates []string
		if err := pool.QueryRow(ctx, `SELECT coalesce(array_agg(name ORDER BY name), '{}') FROM basic.link_templates WHERE tenant_id = $1 AND shop_id = $2`, s.tenant, w.shop).Scan(&templates); err != nil {
			t.Fatal(err)
		}
		var wantT []string
		for _, n := range w.templates {
			wantT = append(wantT, n)
		}
		slices.Sort(wantT)
		if !slices.Equal(templates, wantT) {
			t.Errorf("worker %d: templates %v, answers said %v", w.n, templates, wantT)
		}
		// Nothing half-written: every template with its goods, every role with its permission.
		if n := count(t, s.st, `SELECT count(*) FROM basic.link_templates lt WHERE lt.tenant_id = $1 AND lt.shop_id = $2
			AND (SELECT count(*) FROM basic.link_template_goods g WHERE g.tenant_id = lt.tenant_id AND g.template_id = lt.id) <> 1`, s.tenant, w.shop); n != 0 {
			t.Errorf("worker %d: %d templates stored without their goods", w.n, n)
		}
		if n := count(t, s.st, `SELECT count(*) FROM tenant.roles r WHERE r.tenant_id = $1 AND r.code LIKE $2 || '%'
			AND (SELECT count(*) FROM tenant.role_permissions p WHERE p.role_id = r.id) <> 1`, s.tenant, prefix); n != 0 {
			t.Errorf("worker %d: %d roles stored without their permission", w.n, n)
		}

		// Favorites: the last list set, in order.
		var favs []string
		if err := pool.QueryRow(ctx, `SELECT coalesce(array_agg(target_key ORDER BY sort_order, position), '{}') FROM tenant.favorites WHERE user_id = $1`, w.userID).Scan(&favs); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(favs, w.favorites) {
			t.Errorf("worker %d: favorites %v, last set %v", w.n, favs, w.favorites)
		}

		// Sessions and their messages.
		if n := count(t, s.st, `SELECT count(*) FROM chat.sessions WHERE user_id = $1`, w.userID); n != len(w.sessions) {
			t.Errorf("worker %d: %d sessions stored, answers said %d", w.n, n, len(w.sessions))
		}
		for conv, msgs := range w.sessions {
			if n := count(t, s.st, `SELECT count(*) FROM chat.messages WHERE session_id = $1`, conv); n != msgs {
				t.Errorf("worker %d: session %s holds %d messages, answers said %d", w.n, conv, n, msgs)
			}
		}

		// Logged-out tokens: durably revoked, and refused.
		for i, tok := range w.loggedOut {
			if n := count(t, s.st, `SELECT count(*) FROM authn.revocations WHERE kind = 'token' AND id = $1`, jti(tok)); n != 1 {
				t.Errorf("worker %d: logged-out token %s has %d revocation rows", w.n, jti(tok), n)
			}
			if i%5 == 0 {
				if a := s.c.do("GET", "/tenant/api/v1/tenant/auth/info", "", tok); a.Status != 401 {
					t.Errorf("worker %d: a logged-out token still works: %s", w.n, a)
				}
			}
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// raceCheck checks a burst: every answer's code in allowed (and none above 499), each within
// maxLatency; it returns the answers' codes counted.
func raceCheck(t *testing.T, name string, as []answer, allowed ...int) map[int]int {
	t.Helper()
	cs := codes(as)
	for _, a := range as {
		switch {
		case a.Err != nil || !slices.Contains(allowed, a.Code) || (a.Code == 0 && a.Status != 200) || (a.Code != 0 && a.Status != a.Code):
			t.Errorf("%s: %s (allowed codes %v)", name, a, allowed)
		case a.Took > maxLatency:
			t.Errorf("%s: answered in %s (bound %s)", name, a.Took.Round(time.Millisecond), maxLatency)
		}
	}
	t.Logf("race %-44s codes %v, p50 %s, max %s", name, cs, pct(as, 50), pct(as, 100))
	return cs
}

// one checks that exactly one of the burst won and the others got code lose.
func one(t *testing.T, name string, as []answer, lose int) int {
	t.Helper()
	cs := raceCheck(t, name, as, 0, lose)
	if cs[0] != 1 || cs[lose] != len(as)-1 {
		t.Errorf("%s: %d won and %d got %d; want exactly one winner", name, cs[0], cs[lose], lose)
	}
	for i, a := range as {
		if a.ok() {
			return i
		}
	}
	return -1
}

// twoToOne checks a burst where even requests give records[0] a unique value and odd ones
// give it to records[1]: one record gets it (its requests all succeed, repeating it is no
// conflict), the other record's requests are all 409.
func twoToOne(t *testing.T, name string, as []answer) {
	t.Helper()
	raceCheck(t, name, as, 0, 409)
	var won [2]int
	for i, a := range as {
		if a.ok() {
			won[i%2]++
		}
	}
	if (won[0] == 0) == (won[1] == 0) {
		t.Errorf("%s: %d and %d requests of the two records succeeded; want one record only", name, won[0], won[1])
	}
}

// races sends identical requests at once to every write operation.
func (s *suite) races(t *testing.T) {
	tok, c := s.admin, s.c
	post := func(path, body string) func(int) answer {
		return func(int) answer { return c.do("POST", path, body, tok) }
	}
	createGoods := func(name, item string) int64 {
		a := c.do("POST", "/basic/api/v1/basic/goods", fmt.Sprintf(`{"goods":{"shop_id":%d,"name":%q,"item_no":%q}}`, s.ws[0].shop, name, item), tok)
		if !a.ok() {
			t.Fatalf("create %s: %s", name, a)
		}
		return a.get("goods.id").Int()
	}
	shop := s.ws[0].shop
	n := clients

	// Goods.
	one(t, "CreateGoods, one item number", burst(n, post("/basic/api/v1/basic/goods",
		fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"Dup","item_no":"DUP-1"}}`, shop))), 409)
	if k := count(t, s.st, `SELECT count(*) FROM basic.goods WHERE tenant_id = $1 AND item_no = 'DUP-1'`, s.tenant); k != 1 {
		t.Errorf("CreateGoods race stored %d goods", k)
	}
	g1, g2 := createGoods("Race A", "RA-1"), createGoods("Race B", "RB-1")
	as := burst(n, func(i int) answer {
		return c.do("POST", "/api/v1/basic/goods/update", fmt.Sprintf(`{"id":%d,"goods":{"item_no":"DUP-2"},"update_mask":"itemNo"}`, []int64{g1, g2}[i%2]), tok)
	})
	twoToOne(t, "UpdateGoods, two goods to one item number", as)
	if k := count(t, s.st, `SELECT count(*) FROM basic.goods WHERE tenant_id = $1 AND item_no = 'DUP-2' AND status <> 'deleted'`, s.tenant); k != 1 {
		t.Errorf("UpdateGoods race: %d live goods hold item number DUP-2", k)
	}
	raceCheck(t, "UpdateGoods, identical", burst(n, post("/api/v1/basic/goods/update", fmt.Sprintf(`{"id":%d,"goods":{"name":"Race A2"},"update_mask":"name"}`, g1))), 0)
	// Batch changes of the same goods at once, a few rounds (lock-order races are not
	// certain to show in one).
	var batch []int64
	for i := range 20 {
		batch = append(batch, createGoods(fmt.Sprintf("Batch %d", i), fmt.Sprintf("BA-%d", i)))
	}
	for round, failed := 0, false; round < 6 && !failed; round++ { // one failed round shows it
		for _, v := range []struct{ name, path, body string }{
			{"BatchUpdateGoods, identical", "/api/v1/basic/goods/batch", fmt.Sprintf(`{"ids":%s,"goods":{"cost":%d},"update_mask":"cost"}`, jsonIDs(batch), round+1)},
			{"SetGoodsVirtual, identical", "/api/v1/basic/goods/set_virtual", fmt.Sprintf(`{"ids":%s,"is_virtual":%v}`, jsonIDs(batch), round%2 == 0)},
		} {
			as := burst(n, post(v.path, v.body))
			if cs := raceCheck(t, fmt.Sprintf("%s (round %d)", v.name, round), as, 0); cs[0] != len(as) {
				failed = true
			}
			for _, a := range as {
				if a.ok() && a.get("updated").Int() != int64(len(batch)) {
					t.Errorf("%s: %s", v.name, a)
				}
			}
		}
	}
	im := burst(n, post("/api/v1/basic/goods/import", fmt.Sprintf(`{"rows":[{"goods_id":%d,"item_no":"DUP-3"}]}`, g1)))
	raceCheck(t, "ImportItemNumbers, identical", im, 0)
	for _, a := range im {
		if a.ok() && (a.get("imported").Int() != 1 || len(a.get("errors").Array()) != 0) {
			t.Errorf("ImportItemNumbers identical race: %s", a)
		}
	}
	g3, g4 := createGoods("Race C", "RC-1"), createGoods("Race D", "RD-1")
	im = burst(n, func(i int) answer {
		return c.do("POST", "/api/v1/basic/goods/import", fmt.Sprintf(`{"rows":[{"goods_id":%d,"item_no":"DUP-4"}]}`, []int64{g3, g4}[i%2]), tok)
	})
	raceCheck(t, "ImportItemNumbers, two goods to one number", im, 0)
	var imported [2]int
	for i, a := range im {
		imported[i%2] += int(a.get("imported").Int())
	}
	if (imported[0] == 0) == (imported[1] == 0) {
		t.Errorf("ImportItemNumbers race: %d and %d imports of the two goods succeeded; want one goods only", imported[0], imported[1])
	}
	if k := count(t, s.st, `SELECT count(*) FROM basic.goods WHERE tenant_id = $1 AND item_no = 'DUP-4' AND status <> 'deleted'`, s.tenant); k != 1 {
		t.Errorf("ImportItemNumbers race: %d live goods hold item number DUP-4", k)
	}
	raceCheck(t, "BatchUpdateGoodsByShop, identical", burst(n, post("/api/v1/basic/goods/batch-by-shop", fmt.Sprintf(`{"shop_id":%d,"category_id":0}`, shop))), 0)
	del := burst(n, post("/api/v1/basic/goods/delete", fmt.Sprintf(`{"ids":[%d]}`, g4)))
	raceCheck(t, "DeleteGoods, identical", del, 0)
	deleted := 0
	for _, a := range del {
		deleted += int(a.get("deleted").Int())
	}
	if deleted != 1 {
		t.Errorf("DeleteGoods race: the answers counted %d deletions of one goods", deleted)
	}

	// Syncs of one shop at once: every goods created once.
	spare := addShop(t, s.st, s.tenant, "Race shop", fmt.Sprintf("rel-shop-%02d", clients))
	sy := burst(8, post("/api/v1/basic/goods/sync-from-platform", fmt.Sprintf(`{"shop_id":%d}`, spare)))
	raceCheck(t, "SyncFromPlatform, one shop", sy, 0)
	created := 0
	for _, a := range sy {
		created += int(a.get("created").Int())
	}
	if k := count(t, s.st, `SELECT count(*) FROM basic.goods WHERE tenant_id = $1 AND shop_id = $2`, s.tenant, spare); created != catalogSize || k != catalogSize {
		t.Errorf("SyncFromPlatform race: answers created %d, %d stored, catalog %d", created, k, catalogSize)
	}
	var synced []int64
	if err := s.st.DB.Pool.QueryRow(context.Background(), `SELECT array_agg(id ORDER BY id) FROM basic.goods WHERE tenant_id = $1 AND shop_id = $2`, s.tenant, spare).Scan(&synced); err != nil {
		t.Fatal(err)
	}
	raceCheck(t, "SyncSkuFromPartnerA, same goods", burst(8, post("/api/v1/basic/goods/sync-sku-from-partner_a", `{"goods_ids":`+jsonIDs(synced)+`}`)), 0)
	if k := count(t, s.st, `SELECT count(*) FROM basic.skus k JOIN basic.goods g ON g.tenant_id = k.tenant_id AND g.id = k.goods_id WHERE g.shop_id = $1`, spare); k != 2*catalogSize {
		t.Errorf("SyncSkuFromPartnerA race: %d SKUs stored, partner A has %d", k, 2*catalogSize)
	}

	// Link templates.
	one(t, "CreateLinkTemplate, one name", burst(n, post("/api/v1/basic/goods/link-template/create",
		fmt.Sprintf(`{"link_template":{"name":"Dup template","goods_ids":[%d]}}`, g1))), 409)
	t1 := c.do("POST", "/api/v1/basic/goods/link-template/create", fmt.Sprintf(`{"link_template":{"name":"Race T1","goods_ids":[%d]}}`, g1), tok).get("link_template.id").Int()
	t2 := c.do("POST", "/api/v1/basic/goods/link-template/create", fmt.Sprintf(`{"link_template":{"name":"Race T2","goods_ids":[%d]}}`, g1), tok).get("link_template.id").Int()
	as = burst(n, func(i int) answer {
		return c.do("POST", "/api/v1/basic/goods/link-template/update", fmt.Sprintf(`{"id":%d,"link_template":{"name":"Dup T"},"update_mask":"name"}`, []int64{t1, t2}[i%2]), tok)
	})
	twoToOne(t, "UpdateLinkTemplate, two to one name", as)
	if k := count(t, s.st, `SELECT count(*) FROM basic.link_templates WHERE tenant_id = $1 AND name = 'Dup T'`, s.tenant); k != 1 {
		t.Errorf("UpdateLinkTemplate race: %d templates named Dup T", k)
	}
	raceCheck(t, "SortLinkTemplates, identical", burst(n, post("/api/v1/basic/goods/link-template/sort", fmt.Sprintf(`{"items":[{"id":%d,"sort_order":7},{"id":%d,"sort_order":8}]}`, t1, t2))), 0)

	// Roles.
	w := one(t, "CreateRole, one code", burst(n, post("/api/v1/tenant/roles", `{"code":"race_role","name":"Race"}`)), 409)
	if k := count(t, s.st, `SELECT count(*) FROM tenant.roles WHERE tenant_id = $1 AND code = 'race_role'`, s.tenant); k != 1 || w < 0 {
		t.Fatalf("CreateRole race stored %d roles", k)
	}
	for round := range 4 {
		role := c.do("POST", "/api/v1/tenant/roles", fmt.Sprintf(`{"code":"race_role_%d","name":"Race"}`, round), tok).get("role.id").Int()
		raceCheck(t, fmt.Sprintf("UpdateRole, identical (round %d)", round), burst(n, func(int) answer {
			return c.do("PUT", fmt.Sprintf("/api/v1/tenant/roles/%d", role), `{"name":"Race 2b","update_mask":"name"}`, tok)
		}), 0)
		one(t, fmt.Sprintf("DeleteRole, one role (round %d)", round), burst(n, func(int) answer {
			return c.do("DELETE", fmt.Sprintf("/api/v1/tenant/roles/%d", role), "", tok)
		}), 404)
	}

	// Metrics.
	metric := func(name string) string {
		return fmt.Sprintf(`{"name":%q,"display_name":"Race","group":"Race","type":"order","config":{"order":{"order_field":"paid_amount","time_basis":"ordered_at"}}}`, name)
	}
	one(t, "CreateMetric, one name", burst(n, post("/api/v1/analytics/metrics", metric("race_metric"))), 409)
	if k := count(t, s.st, `SELECT count(*) FROM analysis.metrics WHERE tenant_id = $1 AND name = 'race_metric' AND deleted_at IS NULL`, s.tenant); k != 1 {
		t.Errorf("CreateMetric race stored %d live metrics", k)
	}
	m1 := c.do("POST", "/api/v1/analytics/metrics", metric("race_m1"), tok).get("metric.id").Int()
	m2 := c.do("POST", "/api/v1/analytics/metrics", metric("race_m2"), tok).get("metric.id").Int()
	as = burst(n, func(i int) answer {
		return c.do("PUT", fmt.Sprintf("/api/v1/analytics/metrics/%d", []int64{m1, m2}[i%2]), `{"metric":{"name":"race_dup"},"update_mask":"name"}`, tok)
	})
	twoToOne(t, "UpdateMetric, two to one name", as)
	if k := count(t, s.st, `SELECT count(*) FROM analysis.metrics WHERE tenant_id = $1 AND name = 'race_dup' AND deleted_at IS NULL`, s.tenant); k != 1 {
		t.Errorf("UpdateMetric race: %d live metrics named race_dup", k)
	}
	// The contract says deleting an already deleted metric succeeds; the service answers
	// 404 (tests/platform/analysis/analysis_test.go expects it). Either is accepted here.
	dm := burst(n, func(int) answer { return c.do("DELETE", fmt.Sprintf("/api/v1/analytics/metrics/%d", m1), "", tok) })
	if cs := raceCheck(t, "DeleteMetric, one metric", dm, 0, 404); cs[0] < 1 {
		t.Errorf("DeleteMetric race: nobody deleted the metric")
	}

	// Favorites: identical replacements all succeed (the list is replaced whole).
	favs := `{"favorites":[{"type":"menu","target_key":"goods","title":"Goods","path":"/goods"},{"type":"metric","target_key":"gmv","title":"GMV"}]}`
	raceCheck(t, "SetFavorites, identical", burst(n, post("/api/v1/tenant/auth/favorite", favs)), 0)

	// Tokens: logins all succeed; a refresh token is spent once; logouts revoke.
	creds := fmt.Sprintf(`{"tenant_code":"demo","username":"rel00","password":%q}`, stack.AdminPassword)
	ls := burst(n, func(i int) answer {
		return c.do("POST", []string{"/api/v1/tenant/auth/login", "/api/v1/auth/login"}[i%2], creds, "")
	})
	raceCheck(t, "Login, identical", ls, 0)
	refresh := ls[0].get("refresh_token").String()
	one(t, "Refresh, one refresh token", burst(n, func(i int) answer {
		return c.do("POST", []string{"/api/v1/tenant/auth/refresh", "/api/v1/auth/refresh"}[i%2], fmt.Sprintf(`{"refresh_token":%q}`, refresh), "")
	}), 401)
	access := ls[1].get("access_token").String()
	lo := burst(n, func(i int) answer {
		return c.do("POST", []string{"/api/v1/tenant/auth/logout", "/api/v1/auth/logout"}[i%2], "{}", access)
	})
	if cs := raceCheck(t, "Logout, one token", lo, 0, 401); cs[0] < 1 {
		t.Errorf("Logout race: no logout succeeded")
	}
	if a := c.do("GET", "/tenant/api/v1/tenant/auth/info", "", access); a.Status != 401 {
		t.Errorf("a logged-out token still works: %s", a)
	}

	// Sessions: creates are distinct; an identical delete succeeds once, then warns.
	cs := burst(n, post("/api/v1/sessions", `{}`))
	raceCheck(t, "CreateSession", cs, 0)
	ids := map[string]bool{}
	for _, a := range cs {
		ids[a.get("conversation_id").String()] = true
	}
	if len(ids) != n {
		t.Errorf("CreateSession race: %d distinct sessions for %d creates", len(ids), n)
	}
	conv := cs[0].get("conversation_id").String()
	raceCheck(t, "UpdateSession, identical", burst(n, func(int) answer {
		return c.do("PUT", "/api/v1/sessions/"+conv, `{"title":"Race","favorite":true}`, tok)
	}), 0)
	ds := burst(n, func(int) answer { return c.do("DELETE", "/api/v1/sessions/"+conv, "", tok) })
	raceCheck(t, "DeleteSession, one session", ds, 0)
	success := 0
	for _, a := range ds {
		if a.get("status").String() == "success" {
			success++
		}
	}
	if success != 1 {
		t.Errorf("DeleteSession race: %d deletes answered success, want 1 (the others warning)", success)
	}

	// Messages of one conversation at once: all answered, none lost, never interleaved.
	for i, v := range []struct{ name, path, body string }{
		{"SendMessage (v2), one conversation", "/api/v2/chat/message", `{"message":"GMV by shop?","conversation_id":%q,"stream":false}`},
		{"SendMessages (v1), one conversation", "/api/v1/chat/messages", `{"message":"Orders by shop?","conversation_id":%q}`},
	} {
		conv := cs[1+i].get("conversation_id").String()
		raceCheck(t, v.name, burst(6, post(v.path, fmt.Sprintf(v.body, conv))), 0)
		var roles []string
		if err := s.st.DB.Pool.QueryRow(context.Background(), `SELECT array_agg(role ORDER BY created_at, id) FROM chat.messages
			WHERE session_id = $1 AND role IN ('user', 'assistant')`, conv).Scan(&roles); err != nil {
			t.Fatal(err)
		}
		if want := strings.Repeat("user assistant ", 6); strings.Join(roles, " ")+" " != want {
			t.Errorf("%s: stored %v", v.name, roles)
		}
	}

	// Identical cancels of one workflow: all answer its final state, with one final event.
	wf := s.c.do("POST", "/api/v1/chat/workflows", `{"task_description":"GMV by shop last 7 days"}`, s.admin)
	wfID := wf.get("workflow_id").String()
	raceCheck(t, "CancelWorkflow, one workflow", burst(6, post("/api/v1/chat/workflows/"+wfID+"/cancel", `{}`)), 0)
	if n := count(t, s.st, `SELECT count(*) FROM chat.workflow_events WHERE workflow_id = $1 AND payload->>'status' IN ('completed', 'cancelled', 'failed')`, wfID); n != 1 {
		t.Errorf("CancelWorkflow race: %d final events", n)
	}
}

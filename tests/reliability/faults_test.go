//go:build platform

package reliability

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/shopmind/shopmind/internal/analytics/warehouse/warehousetest"
	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/testutil/pgtest"
	"github.com/shopmind/shopmind/internal/testutil/stack"
	"github.com/shopmind/shopmind/services/basic"
)

// retryFast makes the outbox's background retry quick, so catching up after an outage
// is measured in seconds, not in the default interval.
func retryFast(c *app.Config) {
	app.ServiceConfig[basic.Config](c, "basic").WarehouseRetryInterval = time.Second
}

// withHost points a URL at another host:port.
func withHost(t *testing.T, raw, hostport string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = hostport
	return u.String()
}

// pgOutage is a PostgreSQL the test can stop and start: a private cluster (the real thing)
// or, where none can run, a proxy in front of the shared server that drops every connection
// and refuses new ones.
type pgOutage struct {
	kind        string
	db          *pgtest.Database // the platform's database, and the test's pool on it
	server      string           // host:port of the server, for further proxies
	stop, start func() error
}

func newPGOutage(t *testing.T) *pgOutage {
	t.Helper()
	c, why := privateCluster(t)
	if c != nil {
		c.createDatabase(t, "shopmind")
		pool, err := pgxpool.New(context.Background(), c.url("shopmind"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		return &pgOutage{kind: fmt.Sprintf("private PostgreSQL cluster on port %d, stopped with pg_ctl -m fast and started again", c.port),
			db: &pgtest.Database{URL: c.url("shopmind"), Pool: pool}, server: fmt.Sprintf("127.0.0.1:%d", c.port), stop: c.stop, start: c.start}
	}
	t.Logf("no private PostgreSQL cluster (%s): a proxy in front of the shared server plays the restart", why)
	db := stack.NewDatabase(t)
	u, _ := url.Parse(db.URL)
	p := newProxy(t, u.Host)
	return &pgOutage{kind: "proxy in front of the shared PostgreSQL cut and restored",
		db: &pgtest.Database{URL: withHost(t, db.URL, p.addr), Pool: db.Pool}, server: u.Host,
		stop: func() error { p.cut(); return nil }, start: func() error { p.restore(t); return nil }}
}

// exchange is one request of the fault load.
type exchange struct {
	replica, op, item string
	answer
}

// faultLoad keeps clients reading and writing through a fault.
type faultLoad struct {
	mu   sync.Mutex
	log  []exchange
	stop chan struct{}
	wg   sync.WaitGroup
}

// run starts n clients per replica: goods creates (unique item numbers), the signed-in
// user's info and goods listings, in turn.
func (l *faultLoad) run(replica string, c *client, tok string, shop int64, n int) {
	for g := range n {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := 0; ; i++ {
				select {
				case <-l.stop:
					return
				default:
				}
				var e exchange
				switch i % 3 {
				case 0:
					e.op, e.item = "create goods", fmt.Sprintf("%s-%d-%d", replica, g, i)
					e.answer = c.do("POST", "/basic/api/v1/basic/goods", fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"Fault %s","item_no":%q}}`, shop, e.item, e.item), tok)
				case 1:
					e.op, e.answer = "user info", c.do("GET", "/tenant/api/v1/tenant/auth/info", "", tok)
				case 2:
					e.op, e.answer = "goods list", c.do("POST", "/api/v1/basic/goods/list", fmt.Sprintf(`{"shop_id":%d,"page_size":5}`, shop), tok)
				}
				e.replica = replica
				l.mu.Lock()
				l.log = append(l.log, e)
				l.mu.Unlock()
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
}

// retryWhile repeats send while it answers 503, at most for d.
func retryWhile503(d time.Duration, send func() answer) answer {
	end := time.Now().Add(d)
	for {
		a := send()
		if a.Err == nil && a.Status != 503 || time.Now().After(end) {
			return a
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// PostgreSQL restarted while clients read and write on two replicas: requests during the
// gap answer 503 promptly (never 500, never past their deadline), each replica recovers by
// itself, the revocation listener reconnects and reloads (a logout recorded while a replica
// was cut off is known to it afterwards), a logout attempted during the gap is not lost, and
// the stores hold exactly the writes answered 0.
func TestPostgresRestart(t *testing.T) {
	deadline(t, 110*time.Second)
	out := newPGOutage(t)
	t.Logf("outage: %s", out.kind)
	stA := stack.StartOn(t, out.db, smallPool, retryFast)
	// Replica B reaches the server through a proxy of its own, so it can stay cut off after
	// the restart while a logout happens on A: only a reload can teach it that logout.
	pB := newProxy(t, out.server)
	stB := stack.StartOn(t, &pgtest.Database{URL: withHost(t, out.db.URL, pB.addr), Pool: out.db.Pool}, smallPool, retryFast)
	cA, cB := newClient(stA.BaseURL), newClient(stB.BaseURL)
	tenant := stack.DemoTenant(t, stA.DB)
	shop := addShop(t, stA, tenant, "Restart", "restart")
	tokA, _ := login(t, cA, "admin", stack.AdminPassword)
	tokB, _ := login(t, cB, "admin", stack.AdminPassword)
	during, _ := login(t, cA, "admin", stack.AdminPassword) // logged out during the gap
	after, _ := login(t, cA, "admin", stack.AdminPassword)  // logged out while B is cut off
	for _, tok := range []string{during, after} {
		if a := cB.do("GET", "/tenant/api/v1/tenant/auth/info", "", tok); !a.ok() {
			t.Fatalf("replica B refuses a fresh token: %s", a)
		}
	}

	load := &faultLoad{stop: make(chan struct{})}
	load.run("A", cA, tokA, shop, 3)
	load.run("B", cB, tokB, shop, 3)
	stopLoad := sync.OnceFunc(func() { close(load.stop); load.wg.Wait() })
	defer stopLoad()
	time.Sleep(time.Second)

	pB.cut()
	tStop := time.Now()
	if err := out.stop(); err != nil {
		t.Fatal(err)
	}
	tStopped := time.Now()
	gapLogout := cA.do("POST", "/api/v1/tenant/auth/logout", "{}", during)
	time.Sleep(time.Until(tStop.Add(2 * time.Second)))
	tStart := time.Now()
	if err := out.start(); err != nil {
		t.Fatal(err)
	}
	tStarted := time.Now()
	t.Logf("PostgreSQL: stopping took %s, down for %s, starting took %s; gap %s",
		tStopped.Sub(tStop).Round(time.Millisecond), tStart.Sub(tStopped).Round(time.Millisecond),
		tStarted.Sub(tStart).Round(time.Millisecond), tStarted.Sub(tStop).Round(time.Millisecond))
	if gapLogout.Status != 503 || gapLogout.Code != 503 {
		t.Errorf("a logout during the gap: want 503, got %s", gapLogout)
	}

	// Replica A recovers by itself.
	recA, ok := eventually(15*time.Second, func() bool { return cA.do("GET", "/tenant/api/v1/tenant/auth/info", "", tokA).ok() })
	if !ok {
		t.Fatalf("replica A has not recovered %s after PostgreSQL came back", recA)
	}
	tRecA := time.Now()
	t.Logf("replica A answered again %s after PostgreSQL was up", tRecA.Sub(tStarted).Round(time.Millisecond))
	if a := retryWhile503(5*time.Second, func() answer { return cA.do("POST", "/api/v1/tenant/auth/logout", "{}", after) }); !a.ok() {
		t.Errorf("logout after the restart: %s", a)
	}
	// The client retries the logout that answered 503: either it succeeds now, or the token
	// must already be revoked everywhere, durably.
	retried := retryWhile503(5*time.Second, func() answer { return cA.do("POST", "/api/v1/tenant/auth/logout", "{}", during) })
	t.Logf("the logout that answered 503 during the gap, retried: %s", retried)

	// Replica B: back on the network, its listener reconnects and reloads the list.
	pB.restore(t)
	tRestore := time.Now()
	recB, ok := eventually(15*time.Second, func() bool { return cB.do("GET", "/tenant/api/v1/tenant/auth/info", "", tokB).ok() })
	if !ok {
		t.Errorf("replica B has not recovered %s after its database came back", recB)
	}
	tRecB := time.Now()
	reload, ok := eventually(10*time.Second, func() bool { return cB.do("GET", "/tenant/api/v1/tenant/auth/info", "", after).Status == 401 })
	if !ok {
		t.Errorf("replica B still accepts a token logged out while it was cut off, %s after it came back: the revocation list was not reloaded", reload)
	}
	t.Logf("replica B answered again %s after its database came back; refused the token logged out meanwhile after %s",
		recB.Round(time.Millisecond), reload.Round(time.Millisecond))
	for _, c := range []struct {
		name string
		c    *client
	}{{"A", cA}, {"B", cB}} {
		if a := c.c.do("GET", "/tenant/api/v1/tenant/auth/info", "", during); a.Status != 401 {
			t.Errorf("replica %s accepts the token whose logout answered 503 during the gap and was retried (%s): %s", c.name, retried, a)
		}
		if a := c.c.do("GET", "/tenant/api/v1/tenant/auth/info", "", after); a.Status != 401 {
			t.Errorf("replica %s accepts a logged-out token: %s", c.name, a)
		}
	}
	if n := count(t, stA, "SELECT count(*) FROM authn.revocations WHERE kind = 'token' AND id = $1", jti(during)); n != 1 {
		t.Errorf("the logout that answered 503 and was retried left %d durable revocations (a restarted replica would accept the token)", n)
	}
	time.Sleep(1500 * time.Millisecond)
	stopLoad()

	// What the clients saw.
	var gap, bad []exchange
	var created, created503 []string
	maxGap := time.Duration(0)
	for _, e := range load.log {
		end := e.Start.Add(e.Took)
		if e.Err != nil || (e.Status != 200 && e.Status != 503) || (e.Status == 200 && e.Code != 0) {
			bad = append(bad, e)
		}
		// Entirely within the outage of the replica: the server stopped (A), or cut off (B).
		down := e.replica == "A" && e.Start.After(tStopped) && end.Before(tStart) ||
			e.replica == "B" && e.Start.After(tStopped) && end.Before(tRestore)
		if down {
			gap = append(gap, e)
			maxGap = max(maxGap, e.Took)
			if e.ok() {
				t.Errorf("replica %s answered %s with success while the database was down", e.replica, e.op)
			}
		}
		recovered := e.replica == "A" && e.Start.After(tRecA) || e.replica == "B" && e.Start.After(tRecB)
		if recovered && !e.ok() {
			t.Errorf("replica %s after recovering: %s: %s", e.replica, e.op, e.answer)
		}
		if e.op == "create goods" && e.Err == nil {
			if e.ok() {
				created = append(created, e.item)
			} else if e.Status == 503 {
				created503 = append(created503, e.item)
			}
		}
	}
	for i, e := range bad {
		if i == 10 {
			t.Errorf("... %d such answers in all", len(bad))
			break
		}
		t.Errorf("replica %s, %s at %s: want 200 or 503 and an answer within %s, got %s", e.replica, e.op,
			e.Start.Sub(tStop).Round(time.Millisecond), requestTimeout, e.answer)
	}
	gap503 := 0
	for _, e := range gap {
		if e.Status == 503 {
			gap503++
		}
	}
	t.Logf("load: %d requests; during the outage %d requests, %d answered 503, the slowest in %s", len(load.log), len(gap), gap503, maxGap.Round(time.Millisecond))
	var stored []string
	if err := out.db.Pool.QueryRow(context.Background(), `SELECT coalesce(array_agg(item_no), '{}') FROM basic.goods WHERE tenant_id = $1 AND shop_id = $2`, tenant, shop).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	have := map[string]int{}
	for _, s := range stored {
		have[s]++
	}
	for _, item := range created {
		if have[item] != 1 {
			t.Errorf("goods %s answered as created is stored %d times", item, have[item])
		}
		delete(have, item)
	}
	committed503 := 0
	for _, item := range created503 {
		if have[item] > 0 {
			committed503++
			delete(have, item)
		}
	}
	if len(have) > 0 {
		t.Errorf("goods stored that no answer reported: %v", sortedKeys(have))
	}
	t.Logf("goods creates: %d answered 0 (all stored once), %d answered 503 (%d of them committed nonetheless)", len(created), len(created503), committed503)
	took := catchUp(t, out.db.Pool, pgAnalytics{out.db.Pool}, tenant, 5*time.Second)
	t.Logf("the analytical store caught up %s after the load ended", took.Round(time.Millisecond))
}

// The analytical store (ClickHouse) cut off and back: basic writes keep succeeding within
// 2 s (answering X-Shopmind-Sync: pending), reads of the store answer 503 or 504 (never
// 500), and the outbox catches up by itself once the store is back.
func TestClickHouseOutage(t *testing.T) {
	deadline(t, 90*time.Second)
	db := warehousetest.ClickHouse(t) // skips, saying so, without a reachable ClickHouse
	u, _ := url.Parse(db.URL)
	p := newProxy(t, u.Host)
	st := stack.Start(t, smallPool, retryFast, func(c *app.Config) { c.Analytics.URL = withHost(t, db.URL, p.addr) })
	ch := openClickHouse(t, db)
	c := newClient(st.BaseURL)
	tok, _ := login(t, c, "admin", stack.AdminPassword)
	tenant := stack.DemoTenant(t, st.DB)
	shop := addShop(t, st, tenant, "Outage", "outage")
	gmv := c.do("POST", "/api/v1/analytics/metrics", `{"name":"gmv","display_name":"GMV","group":"Sales","type":"order","config":{"order":{"order_field":"paid_amount","time_basis":"ordered_at"}}}`, tok)
	if !gmv.ok() {
		t.Fatalf("create metric: %s", gmv)
	}
	create := func(i int) answer {
		return c.do("POST", "/basic/api/v1/basic/goods", fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"CH %d","item_no":"CH-%d"}}`, shop, i, i), tok)
	}
	expectAll(t, "before the outage: 4 goods creates", burst(4, create))
	catchUp(t, st.DB.Pool, ch, tenant, 5*time.Second)

	p.cut()
	tCut := time.Now()
	writes := burst(8, func(i int) answer { return create(10 + i) })
	writes = append(writes, burst(8, func(i int) answer {
		return c.do("POST", "/api/v1/basic/goods/update", fmt.Sprintf(`{"id":%d,"goods":{"name":"CH renamed %d"},"update_mask":"name"}`, writes[i].get("goods.id").Int(), i), tok)
	})...)
	expectAll(t, "ClickHouse cut off: 8 goods creates and 8 updates", writes)
	pending := 0
	for _, a := range writes {
		if a.Header.Get("X-Shopmind-Sync") == "pending" {
			pending++
		}
	}
	if pending != len(writes) {
		t.Errorf("%d of %d writes while the store was cut off said X-Shopmind-Sync: pending", pending, len(writes))
	}
	rng := fmt.Sprintf(`"start_time":"%s","end_time":"%s"`, time.Now().AddDate(0, -1, 0).UTC().Format(time.RFC3339), time.Now().UTC().Format(time.RFC3339))
	for _, r := range []struct{ name, method, path, body string }{
		{"analysis preview", "POST", "/api/v1/anls/query/preview", `{"metric_names":["gmv"],` + rng + `}`},
		{"orders listing", "GET", "/basic/api/v1/basic/orders", ""},
	} {
		a := c.do(r.method, r.path, r.body, tok)
		if a.Err != nil || (a.Status != 503 && a.Status != 504) || a.Took > maxLatency {
			t.Errorf("%s while ClickHouse is cut off: want 503 (or 504) within %s, got %s", r.name, maxLatency, a)
		}
	}
	time.Sleep(time.Until(tCut.Add(3 * time.Second)))
	p.restore(t)
	t.Logf("ClickHouse cut off for %s", time.Since(tCut).Round(time.Millisecond))
	took := catchUp(t, st.DB.Pool, ch, tenant, 10*time.Second)
	t.Logf("the outbox caught up %s after ClickHouse came back (retry interval 1s)", took.Round(time.Millisecond))
	if a := c.do("POST", "/api/v1/anls/query/preview", `{"metric_names":["gmv"],`+rng+`}`, tok); !a.ok() {
		t.Errorf("analysis preview after ClickHouse came back: %s", a)
	}
}

// A slow store: queries past SHOPMIND_QUERY_TIMEOUT answer 504 with a clear message and
// give their connection back (the server side too), so other requests answer promptly
// while the store is still stuck; and basic writes do not wait for a stuck push.
func TestSlowStore(t *testing.T) {
	deadline(t, 90*time.Second)
	const queryTimeout = 300 * time.Millisecond
	st := stack.Start(t, smallPool, func(c *app.Config) { c.Analytics.QueryTimeout = queryTimeout })
	c := newClient(st.BaseURL)
	tok, _ := login(t, c, "admin", stack.AdminPassword)
	tenant := stack.DemoTenant(t, st.DB)
	shop := addShop(t, st, tenant, "Slow", "slow")
	if a := c.do("POST", "/api/v1/analytics/metrics", `{"name":"gmv","display_name":"GMV","group":"Sales","type":"order","config":{"order":{"order_field":"paid_amount","time_basis":"ordered_at"}}}`, tok); !a.ok() {
		t.Fatalf("create metric: %s", a)
	}
	rng := fmt.Sprintf(`"start_time":"%s","end_time":"%s"`, time.Now().AddDate(0, -1, 0).UTC().Format(time.RFC3339), time.Now().UTC().Format(time.RFC3339))
	preview := `{"metric_names":["gmv"],"dimensions":["shop"],` + rng + `}`
	if a := c.do("POST", "/api/v1/anls/query/preview", preview, tok); !a.ok() {
		t.Fatalf("preview: %s", a)
	}
	ctx := context.Background()

	// Another session holds the orders table: every query of it waits for the lock.
	lock := func(table string) func() {
		conn, err := st.DB.Pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "LOCK TABLE "+table+" IN ACCESS EXCLUSIVE MODE"); err != nil {
			t.Fatal(err)
		}
		return sync.OnceFunc(func() { _ = tx.Rollback(ctx); conn.Release() })
	}
	unlock := lock("analytics.basic_orders")
	defer unlock()
	slow := burst(8, func(i int) answer {
		if i%2 == 1 {
			return c.do("GET", "/basic/api/v1/basic/orders?page_size=5", "", tok)
		}
		return c.do("POST", "/api/v1/anls/query/preview", preview, tok)
	})
	for _, a := range slow {
		if a.Err != nil || a.Status != 504 || a.Code != 504 || !strings.Contains(a.Message, "time limit of "+queryTimeout.String()) {
			t.Errorf("a query of a locked table: want 504 naming the time limit, got %s", a)
		}
	}
	t.Logf("8 queries of a locked table (preview, orders) with SHOPMIND_QUERY_TIMEOUT=%s on a pool of 4: codes %v, p50 %s, max %s", queryTimeout, codes(slow), pct(slow, 50), pct(slow, 100))
	waiting := 0
	if _, ok := eventually(time.Second, func() bool {
		waiting = count(t, st, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")
		return waiting == 0
	}); !ok {
		t.Errorf("%d server sessions still wait for the lock after their requests answered 504", waiting)
	}
	// The table is still locked; everything else answers at once.
	others := burst(16, func(i int) answer {
		switch i % 4 {
		case 0:
			return c.do("GET", "/tenant/api/v1/tenant/auth/info", "", tok)
		case 1:
			return c.do("POST", "/api/v1/basic/goods/list", fmt.Sprintf(`{"shop_id":%d}`, shop), tok)
		case 2:
			return c.do("GET", "/analysis/api/v1/analytics/metrics", "", tok)
		default:
			return c.do("POST", "/basic/api/v1/basic/goods", fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"Slow %d"}}`, shop, i), tok)
		}
	})
	expectAll(t, "16 other requests while the table stays locked", others)
	unlock()
	if a := c.do("POST", "/api/v1/anls/query/preview", preview, tok); !a.ok() || a.Took > maxLatency {
		t.Errorf("preview once the lock is gone: %s", a)
	}

	// The goods table of the analytical store locked: pushes wait, writes do not.
	unlockGoods := lock("analytics.basic_goods")
	defer unlockGoods()
	writes := burst(16, func(i int) answer {
		return c.do("POST", "/basic/api/v1/basic/goods", fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"Stuck push %d"}}`, shop, i), tok)
	})
	expectAll(t, "16 goods creates while analytics.basic_goods is locked", writes)
	reads := burst(8, func(int) answer { return c.do("GET", "/tenant/api/v1/tenant/auth/info", "", tok) })
	expectAll(t, "8 reads while pushes are stuck", reads)
	time.Sleep(time.Second)
	unlockGoods()
	took := catchUp(t, st.DB.Pool, pgAnalytics{st.DB.Pool}, tenant, 5*time.Second)
	t.Logf("the analytical store caught up %s after the lock was released", took.Round(time.Millisecond))
}

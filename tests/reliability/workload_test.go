//go:build platform

package reliability

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/shopmind/shopmind/internal/testutil/stack"
	"github.com/shopmind/shopmind/services/basic/partners"
	"github.com/shopmind/shopmind/services/basic/partners/partnerstest"
)

// catalogSize is the number of platform goods of each worker's shop (two SKUs each).
const catalogSize = 10

// catalogOf is worker n's platform catalog: platform ids of its own, so shops never share.
func catalogOf(n int) []partners.PlatformGoods {
	goods := partnerstest.GenerateGoods(catalogSize, 2, int64(100+n))
	for i := range goods {
		prefix := fmt.Sprintf("w%02d-", n)
		goods[i].PlatformGoodsID = prefix + goods[i].PlatformGoodsID
		for j := range goods[i].SKUs {
			goods[i].SKUs[j].PlatformSkuID = prefix + goods[i].SKUs[j].PlatformSkuID
		}
	}
	return goods
}

// goodsState is what one worker believes about a goods it created.
type goodsState struct {
	name, itemNo string
	deleted      bool
	virtual      bool
}

// worker is one client of the load phase: its own user and shop, so every write it makes
// is distinct from the other workers' and its expected outcome is known exactly.
type worker struct {
	n      int
	c      *client
	rec    *recorder
	user   string
	userID int64
	shop   int64

	errs []string  // what went wrong, capped
	stop time.Time // past it, calls are skipped: a hung platform ends the load

	goods       map[int64]*goodsState
	liveRoles   map[string]int64 // code → id
	liveMetrics map[string]int64 // name → id
	goneMetrics []string
	templates   map[int64]string // id → name
	sessions    map[string]int   // conversation id → messages stored
	favorites   []string         // target keys of the last list set, in order
	loggedOut   []string         // access tokens logged out
	syncCreated int              // goods created by platform syncs
	synced      []int64          // ids of synced goods (for partner A)
	password    string           // the password of the worker's second user (user + "p")

	// The later services (services_workload_test.go).
	tenant      int64         // tenant demo
	pool        *pgxpool.Pool // the test's own connection to the database
	op          string        // a platform operator's access token
	datasource  string        // the NL2SQL datasource set up at the start
	orgs        map[int64]*orgState
	users       map[int64]*userState
	tenants     map[string]*tenantState // code → state
	crxAccepted int                     // extension values stored, as answered
	crxBatches  int                     // sync batches answered
	adhoc       map[string]int64        // ad-hoc client id → record id
	errorLogs   int
	marked      map[int64]bool // notifications marked read
	plans       map[int64]string
	execs       map[int64]*execState
	chats       []string          // NL2SQL chat ids
	role        string            // the worker's NL2SQL provider role
	policies    map[string]string // NL2SQL policy id → role id
}

func newWorker(n int, c *client, rec *recorder, user string, userID, shop int64) *worker {
	return &worker{n: n, c: c, rec: rec, user: user, userID: userID, shop: shop,
		goods: map[int64]*goodsState{}, liveRoles: map[string]int64{}, liveMetrics: map[string]int64{},
		templates: map[int64]string{}, sessions: map[string]int{}, password: stack.AdminPassword,
		orgs: map[int64]*orgState{}, users: map[int64]*userState{}, tenants: map[string]*tenantState{}, adhoc: map[string]int64{},
		marked: map[int64]bool{}, plans: map[int64]string{}, execs: map[int64]*execState{}, policies: map[string]string{}}
}

func (w *worker) failf(format string, args ...any) {
	if len(w.errs) < 20 {
		w.errs = append(w.errs, fmt.Sprintf("worker %d: ", w.n)+fmt.Sprintf(format, args...))
	}
}

// errStopped is the answer of a call skipped after the load's hard stop.
var errStopped = errors.New("skipped: the load's time is over")

// call sends one request of operation op; it must succeed within maxLatency.
func (w *worker) call(op, method, path, body, token string) answer {
	if !w.stop.IsZero() && time.Now().After(w.stop) {
		return answer{Err: errStopped}
	}
	a := w.c.do(method, path, body, token)
	w.rec.add(op, a)
	if !a.ok() {
		w.failf("%s %s %s: %s", op, method, path, a)
	} else if a.Took > maxLatency {
		w.failf("%s %s %s took %s (bound %s)", op, method, path, a.Took.Round(time.Millisecond), maxLatency)
	}
	return a
}

// expect checks one field of a successful answer.
func (w *worker) expect(op string, a answer, path string, want any) {
	if !a.ok() {
		return
	}
	if got := a.get(path).String(); got != fmt.Sprint(want) {
		w.failf("%s: %s is %q, want %v (%s)", op, path, got, want, a)
	}
}

func (w *worker) liveGoods() []int64 {
	var ids []int64
	for id, g := range w.goods {
		if !g.deleted {
			ids = append(ids, id)
		}
	}
	return ids
}

func jsonIDs(ids []int64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return "[" + strings.Join(s, ",") + "]"
}

// cycle runs every write operation of the contract once (and the POST reads), each on
// this worker's own data.
func (w *worker) cycle(i int) {
	u := fmt.Sprintf("w%02dc%03d", w.n, i)
	creds := fmt.Sprintf(`{"tenant_code":"demo","username":%q,"password":%q}`, w.user, stack.AdminPassword)

	// Tenant authentication: both login paths, both refresh paths (rotation), logouts last.
	l1 := w.call("TenantAuthService_Login", "POST", "/tenant/api/v1/tenant/auth/login", creds, "")
	l2 := w.call("TenantAuthService_Login2", "POST", "/api/v1/auth/login", creds, "")
	if !l1.ok() || !l2.ok() {
		return
	}
	r1 := w.call("TenantAuthService_Refresh", "POST", "/api/v1/tenant/auth/refresh", fmt.Sprintf(`{"refresh_token":%q}`, l1.get("refresh_token").String()), "")
	r2 := w.call("TenantAuthService_Refresh2", "POST", "/api/v1/auth/refresh", fmt.Sprintf(`{"refresh_token":%q}`, l2.get("refresh_token").String()), "")
	if !r1.ok() || !r2.ok() {
		return
	}
	tok := r1.get("access_token").String()
	defer func() {
		if a := w.call("TenantAuthService_Logout", "POST", "/api/v1/tenant/auth/logout", "{}", tok); a.ok() {
			w.loggedOut = append(w.loggedOut, tok)
		}
	}()
	if a := w.call("TenantAuthService_Logout2", "POST", "/api/v1/auth/logout", "{}", r2.get("access_token").String()); a.ok() {
		w.loggedOut = append(w.loggedOut, r2.get("access_token").String())
	}
	// Each worker starts its cycles at another service, so the services are written at
	// once and a defect of one does not hide the others.
	sections := []func(i int, u, tok string){w.roles, w.metrics, w.goodsAndTemplates, w.favoritesList, w.chat, w.changePassword,
		w.tenantAdmin, w.platform, w.extension, w.notifications, w.promotions, w.nl2sql}
	for k := range sections {
		sections[(k+w.n)%len(sections)](i, u, tok)
	}
}

// changePassword: the worker's second user (its sessions ending with each change must not
// touch the worker's own) signs in, changes its password to the other of two, and signs in
// with the new one.
func (w *worker) changePassword(_ int, _, _ string) {
	creds := func(p string) string {
		return fmt.Sprintf(`{"tenant_code":"demo","username":%q,"password":%q}`, w.user+"p", p)
	}
	next := "Rel-Pass-A1x9"
	if w.password == next {
		next = "Rel-Pass-B2y8"
	}
	l := w.call("TenantAuthService_Login", "POST", "/tenant/api/v1/tenant/auth/login", creds(w.password), "")
	if !l.ok() {
		return
	}
	a := w.call("TenantAuthService_ChangePassword", "POST", "/api/v1/tenant/auth/password",
		fmt.Sprintf(`{"current_password":%q,"new_password":%q}`, w.password, next), l.get("access_token").String())
	if !a.ok() {
		return
	}
	w.password = next
	if again := w.call("TenantAuthService_Login", "POST", "/tenant/api/v1/tenant/auth/login", creds(next), ""); again.Err == nil && !again.ok() {
		w.failf("sign-in with the new password after a successful change: %s", again)
	}
}

// roles: create, rename, delete every other one.
func (w *worker) roles(i int, u, tok string) {
	code := "rel_" + u
	if a := w.call("TenantService_CreateRole", "POST", "/tenant/api/v1/tenant/roles",
		fmt.Sprintf(`{"code":%q,"name":"Role %s","permission_codes":["basic:goods:list"]}`, code, u), tok); a.ok() {
		id := a.get("role.id").Int()
		w.liveRoles[code] = id
		up := w.call("TenantService_UpdateRole", "PUT", fmt.Sprintf("/api/v1/tenant/roles/%d", id), fmt.Sprintf(`{"name":"Role %s v2","update_mask":"name"}`, u), tok)
		w.expect("TenantService_UpdateRole", up, "role.name", "Role "+u+" v2")
		if i%2 == 0 {
			del := w.call("TenantService_DeleteRole", "DELETE", fmt.Sprintf("/api/v1/tenant/roles/%d", id), "", tok)
			w.expect("TenantService_DeleteRole", del, "deleted", true)
			if del.ok() {
				delete(w.liveRoles, code)
			}
		}
	}
}

// metrics: create, preview, SQL (generated and run in the sandbox), rename, delete every
// other one.
func (w *worker) metrics(i int, u, tok string) {
	name := "rel_" + u
	if a := w.call("MetricService_CreateMetric", "POST", "/analysis/api/v1/analytics/metrics",
		fmt.Sprintf(`{"name":%q,"display_name":"Metric %s","group":"Reliability","type":"order","config":{"order":{"order_field":"paid_amount","time_basis":"ordered_at"}}}`, name, u), tok); a.ok() {
		id := a.get("metric.id").Int()
		w.liveMetrics[name] = id
		rng := fmt.Sprintf(`"start_time":"%s","end_time":"%s"`, time.Now().AddDate(0, 0, -30).UTC().Format(time.RFC3339), time.Now().UTC().Format(time.RFC3339))
		w.call("QueryService_PreviewQuery", "POST", "/api/v1/anls/query/preview", fmt.Sprintf(`{"metric_ids":[%d],"dimensions":["shop"],%s}`, id, rng), tok)
		w.call("QueryService_GenerateSql", "POST", "/api/v1/anls/query/sql", fmt.Sprintf(`{"metric_names":[%q],%s}`, name, rng), tok)
		w.call("QueryService_CheckAnomalies", "POST", "/api/v1/anls/anomalies/check", fmt.Sprintf(`{"metric_names":[%q],"baseline_days":7}`, name), tok)
		sql := w.call("QueryService_ExecuteSql", "POST", "/api/v1/anls/query/execute", `{"sql":"SELECT count(*) AS n FROM basic_orders","max_rows":1}`, tok)
		w.expect("QueryService_ExecuteSql", sql, "columns.0.name", "n")
		up := w.call("MetricService_UpdateMetric", "PUT", fmt.Sprintf("/api/v1/analytics/metrics/%d", id), fmt.Sprintf(`{"metric":{"display_name":"Metric %s v2"},"update_mask":"displayName"}`, u), tok)
		w.expect("MetricService_UpdateMetric", up, "metric.display_name", "Metric "+u+" v2")
		if i%2 == 0 {
			del := w.call("MetricService_DeleteMetric", "DELETE", fmt.Sprintf("/api/v1/analytics/metrics/%d", id), "", tok)
			w.expect("MetricService_DeleteMetric", del, "success", true)
			if del.ok() {
				delete(w.liveMetrics, name)
				w.goneMetrics = append(w.goneMetrics, name)
			}
		}
	}
}

// goodsAndTemplates: create, update, the batch operations, the reads, the platform and
// partner syncs, link templates; delete every third goods.
func (w *worker) goodsAndTemplates(i int, u, tok string) {
	item := "RI-" + u
	a := w.call("GoodsService_CreateGoods", "POST", "/basic/api/v1/basic/goods",
		fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"Rel %s","item_no":%q,"status":"on_sale","price":12.5}}`, w.shop, u, item), tok)
	gid := a.get("goods.id").Int()
	if a.ok() {
		w.goods[gid] = &goodsState{name: "Rel " + u, itemNo: item}
		up := w.call("GoodsService_UpdateGoods", "POST", "/api/v1/basic/goods/update", fmt.Sprintf(`{"id":%d,"goods":{"name":"Rel %s v2"},"update_mask":"name"}`, gid, u), tok)
		w.expect("GoodsService_UpdateGoods", up, "goods.name", "Rel "+u+" v2")
		if up.ok() {
			w.goods[gid].name = "Rel " + u + " v2"
		}
		live := w.liveGoods()
		if len(live) > 100 {
			live = live[:100]
		}
		b := w.call("GoodsService_BatchUpdateGoods", "POST", "/api/v1/basic/goods/batch", fmt.Sprintf(`{"ids":%s,"goods":{"cost":1.5},"update_mask":"cost"}`, jsonIDs(live)), tok)
		w.expect("GoodsService_BatchUpdateGoods", b, "updated", len(live))
		v := w.call("GoodsService_SetGoodsVirtual", "POST", "/api/v1/basic/goods/set_virtual", fmt.Sprintf(`{"ids":[%d],"is_virtual":true}`, gid), tok)
		w.expect("GoodsService_SetGoodsVirtual", v, "updated", 1)
		if v.ok() {
			w.goods[gid].virtual = true
		}
		im := w.call("GoodsService_ImportItemNumbers", "POST", "/api/v1/basic/goods/import", fmt.Sprintf(`{"rows":[{"goods_id":%d,"item_no":"RX-%s"}]}`, gid, u), tok)
		w.expect("GoodsService_ImportItemNumbers", im, "imported", 1)
		if im.ok() {
			w.goods[gid].itemNo = "RX-" + u
		}
		w.call("GoodsService_GetGoods", "POST", "/api/v1/basic/goods/get", fmt.Sprintf(`{"id":%d}`, gid), tok)
		w.call("GoodsService_GetGoodsDetail", "POST", "/api/v1/basic/goods/detail", fmt.Sprintf(`{"id":%d}`, gid), tok)
	}
	w.call("GoodsService_QueryGoods", "POST", "/api/v1/basic/goods/list", fmt.Sprintf(`{"shop_id":%d,"page_size":5}`, w.shop), tok)
	w.call("GoodsService_ListDisplayGoods", "POST", "/api/v1/basic/goods/display", fmt.Sprintf(`{"shop_id":%d,"page_size":5}`, w.shop), tok)

	// Platform sync of the worker's shop (created once, unchanged after), partner A SKUs.
	s := w.call("GoodsService_SyncFromPlatform", "POST", "/api/v1/basic/goods/sync-from-platform", fmt.Sprintf(`{"shop_id":%d}`, w.shop), tok)
	if s.ok() {
		w.syncCreated += int(s.get("created").Int())
		if n := s.get("created").Int() + s.get("updated").Int() + s.get("unchanged").Int(); n != catalogSize {
			w.failf("sync-from-platform accounted for %d goods of %d: %s", n, catalogSize, s)
		}
		if w.synced == nil {
			l := w.call("GoodsService_QueryGoods", "POST", "/api/v1/basic/goods/list", fmt.Sprintf(`{"shop_id":%d,"page_size":100}`, w.shop), tok)
			for _, g := range l.get("items").Array() {
				if g.Get("platform_goods_id").String() != "" && len(w.synced) < 2 {
					w.synced = append(w.synced, g.Get("id").Int())
				}
			}
		}
	}
	if len(w.synced) > 0 {
		p := w.call("GoodsService_SyncSkuFromPartnerA", "POST", "/api/v1/basic/goods/sync-sku-from-partner_a", fmt.Sprintf(`{"goods_ids":%s}`, jsonIDs(w.synced)), tok)
		if n := p.get("created").Int() + p.get("updated").Int() + p.get("unchanged").Int(); p.ok() && n != int64(2*len(w.synced)) {
			w.failf("partner A sync accounted for %d SKUs of %d: %s", n, 2*len(w.synced), p)
		}
	}
	live := 0
	for _, g := range w.goods {
		if !g.deleted {
			live++
		}
	}
	bs := w.call("GoodsService_BatchUpdateGoodsByShop", "POST", "/api/v1/basic/goods/batch-by-shop", fmt.Sprintf(`{"shop_id":%d,"staff_id":%d}`, w.shop, w.userID), tok)
	w.expect("GoodsService_BatchUpdateGoodsByShop", bs, "updated", live+w.syncCreated)

	// Link templates: create (with the new goods), describe, sort, list.
	if gid != 0 && a.ok() {
		lt := w.call("GoodsService_CreateLinkTemplate", "POST", "/api/v1/basic/goods/link-template/create",
			fmt.Sprintf(`{"link_template":{"name":"Rel %s","shop_id":%d,"goods_ids":[%d],"sort_order":1}}`, u, w.shop, gid), tok)
		if lt.ok() {
			tid := lt.get("link_template.id").Int()
			w.templates[tid] = "Rel " + u
			up := w.call("GoodsService_UpdateLinkTemplate", "POST", "/api/v1/basic/goods/link-template/update",
				fmt.Sprintf(`{"id":%d,"link_template":{"description":"described %s"},"update_mask":"description"}`, tid, u), tok)
			w.expect("GoodsService_UpdateLinkTemplate", up, "link_template.description", "described "+u)
			so := w.call("GoodsService_SortLinkTemplates", "POST", "/api/v1/basic/goods/link-template/sort", fmt.Sprintf(`{"items":[{"id":%d,"sort_order":%d}]}`, tid, i+2), tok)
			w.expect("GoodsService_SortLinkTemplates", so, "updated", 1)
		}
		if i%3 == 0 {
			d := w.call("GoodsService_DeleteGoods", "POST", "/api/v1/basic/goods/delete", fmt.Sprintf(`{"ids":[%d]}`, gid), tok)
			w.expect("GoodsService_DeleteGoods", d, "deleted", 1)
			if d.ok() {
				w.goods[gid].deleted = true
			}
		}
	}
	w.call("GoodsService_ListLinkTemplates", "POST", "/api/v1/basic/goods/link-template/list", `{"page_size":5}`, tok)
}

// favoritesList: the whole list replaced.
func (w *worker) favoritesList(_ int, u, tok string) {
	favs := []string{"g" + u, "m" + u}
	f := w.call("TenantAuthService_SetFavorites", "POST", "/api/v1/tenant/auth/favorite",
		fmt.Sprintf(`{"favorites":[{"type":"goods","target_key":%q,"title":"G %s"},{"type":"menu","target_key":%q,"title":"M %s","sort_order":1}]}`, favs[0], u, favs[1], u), tok)
	if f.ok() {
		w.favorites = favs
		if n := len(f.get("favorites").Array()); n != 2 {
			w.failf("SetFavorites answered %d favorites: %s", n, f)
		}
	}
}

// chat: a session, renamed, a message on each API version, deleted every other time.
func (w *worker) chat(i int, u, tok string) {
	cs := w.call("SessionService_CreateSession", "POST", "/api/v1/sessions", `{}`, tok)
	if !cs.ok() {
		return
	}
	conv := cs.get("conversation_id").String()
	w.sessions[conv] = 0
	us := w.call("SessionService_UpdateSession", "PUT", "/api/v1/sessions/"+conv, fmt.Sprintf(`{"title":"Session %s","favorite":true}`, u), tok)
	w.expect("SessionService_UpdateSession", us, "session.title", "Session "+u)
	if m := w.call("ChatService_SendMessage", "POST", "/api/v2/chat/message", fmt.Sprintf(`{"message":"GMV by shop last 7 days? (%s)","conversation_id":%q,"stream":false}`, u, conv), tok); m.ok() {
		w.sessions[conv] += 2
	}
	if m := w.call("ChatService_SendMessages", "POST", "/api/v1/chat/messages", fmt.Sprintf(`{"message":"How many orders? (%s)","conversation_id":%q}`, u, conv), tok); m.ok() {
		w.sessions[conv] += 2
	}
	// A workflow (outside the conversation, whose messages are counted), cancelled at once
	// or found finished: either way the answer is its final state.
	if wf := w.call("ChatService_StartWorkflow", "POST", "/api/v1/chat/workflows", fmt.Sprintf(`{"task_description":"GMV by shop last 7 days (%s)"}`, u), tok); wf.ok() {
		w.expect("ChatService_StartWorkflow", wf, "status", "pending")
		c := w.call("ChatService_CancelWorkflow", "POST", "/api/v1/chat/workflows/"+wf.get("workflow_id").String()+"/cancel", `{}`, tok)
		if st := c.get("workflow.status").String(); c.ok() && st != "cancelled" && st != "completed" {
			w.failf("CancelWorkflow answered status %q: %s", st, c)
		}
	}
	if i%2 == 0 {
		d := w.call("SessionService_DeleteSession", "DELETE", "/api/v1/sessions/"+conv, "", tok)
		w.expect("SessionService_DeleteSession", d, "status", "success")
		if d.ok() {
			delete(w.sessions, conv)
		}
	}
}

// runWorkers runs the workers' cycles concurrently until d has passed (each finishes its
// cycle, or gives up 10 s later) and returns how many cycles ran.
func runWorkers(ws []*worker, d time.Duration) int {
	var wg sync.WaitGroup
	var mu sync.Mutex
	cycles := 0
	end := time.Now().Add(d)
	for _, w := range ws {
		w.stop = end.Add(10 * time.Second)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(end); i++ {
				w.cycle(i)
				mu.Lock()
				cycles++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return cycles
}

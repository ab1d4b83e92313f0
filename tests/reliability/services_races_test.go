//go:build platform

package reliability

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/shopmind/shopmind/internal/testutil/stack"
	"github.com/shopmind/shopmind/services/chat/promotion"
)

// checkServiceStores compares PostgreSQL with what each worker was told by the later
// services: organisations, users, tenants with their configuration, extension values and
// batches, ad-hoc records, error reports, read marks, promotion plans, NL2SQL records.
func (s *suite) checkServiceStores(t *testing.T) {
	ctx := context.Background()
	pool := s.st.DB.Pool
	for _, w := range s.ws {
		prefix := fmt.Sprintf("w%02dc", w.n)

		// Organisations and users: exactly the live ones, as last answered.
		rows, err := pool.Query(ctx, `SELECT id, name, coalesce(parent_id, 0) FROM tenant.orgs WHERE tenant_id = $1 AND code LIKE 'rel-' || $2 || '%'`, s.tenant, prefix)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int64]bool{}
		for rows.Next() {
			var id, parent int64
			var name string
			if err := rows.Scan(&id, &name, &parent); err != nil {
				t.Fatal(err)
			}
			seen[id] = true
			if o, ok := w.orgs[id]; !ok || o.name != name || o.parent != parent {
				t.Errorf("worker %d: organisation %d stored as %q under %d, answers said %+v", w.n, id, name, parent, o)
			}
		}
		rows.Close()
		for id := range w.orgs {
			if !seen[id] {
				t.Errorf("worker %d: organisation %d answered as created is not stored", w.n, id)
			}
		}
		rows, err = pool.Query(ctx, `SELECT id, username, nickname, coalesce(org_id, 0) FROM tenant.users WHERE tenant_id = $1 AND username LIKE 'rel.' || $2 || '%'`, s.tenant, prefix)
		if err != nil {
			t.Fatal(err)
		}
		seen = map[int64]bool{}
		for rows.Next() {
			var id, org int64
			var name, nick string
			if err := rows.Scan(&id, &name, &nick, &org); err != nil {
				t.Fatal(err)
			}
			seen[id] = true
			if u, ok := w.users[id]; !ok || *u != (userState{username: name, nickname: nick, org: org}) {
				t.Errorf("worker %d: user %d stored as %s %q in org %d, answers said %+v", w.n, id, name, nick, org, u)
			}
		}
		rows.Close()
		checked := false
		for id, u := range w.users {
			if !seen[id] {
				t.Errorf("worker %d: user %d (%s) answered as created is not stored", w.n, id, u.username)
			} else if !checked { // the reset password is the one that works (one login each: bcrypt)
				checked = true
				if a := s.c.do("POST", "/api/v1/auth/login", fmt.Sprintf(`{"tenant_code":"demo","username":%q,"password":%q}`, u.username, relResetPassword), ""); !a.ok() {
					t.Errorf("worker %d: user %s cannot sign in with the password reset: %s", w.n, u.username, a)
				}
			}
		}

		// Tenants: each once, with its status, its administrator and headquarters (created
		// whole), and the extension configuration its administrator was told was stored.
		var tenants []string
		if err := pool.QueryRow(ctx, `SELECT coalesce(array_agg(code || ':' || status ORDER BY code), '{}') FROM tenant.tenants WHERE code LIKE 'rt-' || $1 || '%'`, prefix).Scan(&tenants); err != nil {
			t.Fatal(err)
		}
		var want []string
		for code, ts := range w.tenants {
			want = append(want, code+":"+ts.status)
			if n := count(t, s.st, `SELECT count(*) FROM tenant.users WHERE tenant_id = $1`, ts.id); n != 1 {
				t.Errorf("worker %d: tenant %s has %d users, want its administrator", w.n, code, n)
			}
			var key string
			var version int64
			err := pool.QueryRow(ctx, `SELECT metrics->0->>'key', version FROM crx.tenant_configs WHERE tenant_id = $1`, ts.id).Scan(&key, &version)
			switch {
			case ts.configKey == "" && err == nil:
				t.Errorf("worker %d: tenant %s has a configuration never answered as stored", w.n, code)
			case ts.configKey != "" && (err != nil || key != ts.configKey || version != 1):
				t.Errorf("worker %d: tenant %s configuration %q version %d (%v), answered %q version 1", w.n, code, key, version, err, ts.configKey)
			}
		}
		slices.Sort(want)
		if !slices.Equal(tenants, want) {
			t.Errorf("worker %d: tenants stored %v, answers said %v", w.n, tenants, want)
		}

		// Extension: every value once (retries stored nothing), every batch remembered once.
		if n := count(t, s.st, `SELECT count(*) FROM analytics.diy_crx_metrics WHERE i_tenant_id = $1 AND shop_id = $2`, s.tenant, w.shop); n != w.crxAccepted {
			t.Errorf("worker %d: %d extension values stored, answers accepted %d", w.n, n, w.crxAccepted)
		}
		if n := count(t, s.st, `SELECT count(*) FROM crx.sync_batches WHERE tenant_id = $1 AND user_id = $2`, s.tenant, w.userID); n != w.crxBatches {
			t.Errorf("worker %d: %d sync batches remembered, %d answered", w.n, n, w.crxBatches)
		}
		var adhoc []int64
		if err := pool.QueryRow(ctx, `SELECT coalesce(array_agg(id ORDER BY id), '{}') FROM crx.adhoc WHERE tenant_id = $1 AND user_id = $2`, s.tenant, w.userID).Scan(&adhoc); err != nil {
			t.Fatal(err)
		}
		var wantAdhoc []int64
		for _, id := range w.adhoc {
			wantAdhoc = append(wantAdhoc, id)
		}
		slices.Sort(wantAdhoc)
		if !slices.Equal(adhoc, wantAdhoc) {
			t.Errorf("worker %d: ad-hoc records %v, answers said %v", w.n, adhoc, wantAdhoc)
		}
		if n := count(t, s.st, `SELECT count(*) FROM crx.error_logs WHERE tenant_id = $1 AND user_id = $2`, s.tenant, w.userID); n != w.errorLogs {
			t.Errorf("worker %d: %d error reports stored, %d answered", w.n, n, w.errorLogs)
		}

		// Notifications marked read: marked for this user, and each one this user's to see.
		for id := range w.marked {
			if n := count(t, s.st, `SELECT count(*) FROM notify.reads r JOIN notify.notifications n ON n.id = r.notification_id
				WHERE r.user_id = $1 AND r.notification_id = $2 AND n.tenant_id = $3 AND n.user_id IN (0, $1)`, w.userID, id, s.tenant); n != 1 {
				t.Errorf("worker %d: notification %d answered as marked read: %d read marks of its own", w.n, id, n)
			}
		}

		// Promotion plans and executions: the live ones with the statuses answered.
		var plans []string
		if err := pool.QueryRow(ctx, `SELECT coalesce(array_agg(id || ':' || status ORDER BY id), '{}') FROM chat.promotion_plans
			WHERE tenant_id = $1 AND title LIKE 'Rel ' || $2 || '%'`, s.tenant, prefix).Scan(&plans); err != nil {
			t.Fatal(err)
		}
		var wantPlans []string
		for id, st := range w.plans {
			wantPlans = append(wantPlans, fmt.Sprintf("%d:%s", id, st))
		}
		slices.Sort(wantPlans)
		slices.Sort(plans)
		if !slices.Equal(plans, wantPlans) {
			t.Errorf("worker %d: promotion plans %v, answers said %v", w.n, plans, wantPlans)
		}
		var execs []string
		if err := pool.QueryRow(ctx, `SELECT coalesce(array_agg(id || ':' || template_id || ':' || status), '{}') FROM chat.promotion_executions
			WHERE tenant_id = $1 AND name LIKE 'Rel ' || $2 || '%'`, s.tenant, prefix).Scan(&execs); err != nil {
			t.Fatal(err)
		}
		var wantExecs []string
		for id, x := range w.execs {
			wantExecs = append(wantExecs, fmt.Sprintf("%d:%d:%s", id, x.plan, x.status))
		}
		slices.Sort(wantExecs)
		slices.Sort(execs)
		if !slices.Equal(execs, wantExecs) {
			t.Errorf("worker %d: promotion executions %v, answers said %v", w.n, execs, wantExecs)
		}

		// NL2SQL: every chat and policy answered is recorded for the worker's tenant.
		for _, chat := range w.chats {
			if n := count(t, s.st, `SELECT count(*) FROM nl2sql.chats WHERE chat_id = $1 AND tenant_id = $2 AND user_id = $3 AND shop_ids = ARRAY[$4::bigint]`, chat, s.tenant, w.userID, w.shop); n != 1 {
				t.Errorf("worker %d: NL2SQL chat %s answered, %d records of it", w.n, chat, n)
			}
		}
		if w.role != "" {
			if k := providerRolePolicies(t, s, w.role); k != len(w.policies) {
				t.Errorf("worker %d: its role %s holds %d policies at the provider, %d answered", w.n, w.role, k, len(w.policies))
			}
		}
		for pol, role := range w.policies {
			if n := count(t, s.st, `SELECT count(*) FROM nl2sql.policies p JOIN nl2sql.roles r ON r.role_id = p.role_id AND r.tenant_id = p.tenant_id
				WHERE p.policy_id = $1 AND p.role_id = $2 AND p.tenant_id = $3`, pol, role, s.tenant); n != 1 {
				t.Errorf("worker %d: NL2SQL policy %s on role %s answered, %d records of it", w.n, pol, role, n)
			}
		}
	}
}

// twoToOneCode is twoToOne with the losers' code given.
func twoToOneCode(t *testing.T, name string, as []answer, lose int) {
	t.Helper()
	raceCheck(t, name, as, 0, lose)
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

// serviceRaces sends identical requests at once to the later services' write operations.
func (s *suite) serviceRaces(t *testing.T) {
	ctx := context.Background()
	tok, op, c, n := s.admin, s.op, s.c, clients
	send := func(method, path, body, token string) func(int) answer {
		return func(int) answer { return c.do(method, path, body, token) }
	}
	must := func(a answer, what string) answer {
		t.Helper()
		if !a.ok() {
			t.Fatalf("%s: %s", what, a)
		}
		return a
	}

	// Organisations: one code, one winner; two opposite moves never build a cycle; an
	// identical rename all succeed; one delete wins, the others find nothing.
	w := one(t, "CreateOrg, one code", burst(n, send("POST", "/api/v1/tenant-m/orgs", `{"name":"Race org","code":"race-org"}`, tok)), 409)
	if k := count(t, s.st, `SELECT count(*) FROM tenant.orgs WHERE tenant_id = $1 AND code = 'race-org'`, s.tenant); k != 1 || w < 0 {
		t.Fatalf("CreateOrg race stored %d organisations", k)
	}
	ox := must(c.do("POST", "/api/v1/tenant-m/orgs", `{"name":"Race X","code":"race-x"}`, tok), "create org").get("org.id").Int()
	oy := must(c.do("POST", "/api/v1/tenant-m/orgs", `{"name":"Race Y","code":"race-y"}`, tok), "create org").get("org.id").Int()
	twoToOneCode(t, "UpdateOrg, two opposite moves", burst(n, func(i int) answer {
		a, b := []int64{ox, oy}[i%2], []int64{oy, ox}[i%2]
		return c.do("PUT", fmt.Sprintf("/api/v1/tenant-m/orgs/%d", a), fmt.Sprintf(`{"parent_id":%d,"update_mask":"parentId"}`, b), tok)
	}), 422)
	if k := count(t, s.st, `SELECT count(*) FROM tenant.orgs WHERE id IN ($1, $2) AND parent_id IN ($1, $2)`, ox, oy); k != 1 {
		t.Errorf("UpdateOrg race: %d of the two organisations are under the other, want exactly 1", k)
	}
	raceCheck(t, "UpdateOrg, identical rename", burst(n, send("PUT", fmt.Sprintf("/api/v1/tenant-m/orgs/%d", ox), `{"name":"Race X2","update_mask":"name"}`, tok)), 0)

	// Users: one username; identical updates and resets all succeed; one delete wins.
	body := fmt.Sprintf(`{"username":"race.user","password":%q,"nickname":"Race","org_id":%d}`, relUserPassword, ox)
	w = one(t, "CreateUser, one username", burst(n, send("POST", "/api/v1/tenant-m/users", body, tok)), 409)
	if k := count(t, s.st, `SELECT count(*) FROM tenant.users WHERE tenant_id = $1 AND username = 'race.user'`, s.tenant); k != 1 || w < 0 {
		t.Fatalf("CreateUser race stored %d users", k)
	}
	var uid int64
	if err := s.st.DB.Pool.QueryRow(ctx, `SELECT id FROM tenant.users WHERE tenant_id = $1 AND username = 'race.user'`, s.tenant).Scan(&uid); err != nil {
		t.Fatal(err)
	}
	raceCheck(t, "UpdateUser, identical", burst(n, send("PUT", fmt.Sprintf("/api/v1/tenant-m/users/%d", uid), `{"nickname":"Race 2","update_mask":"nickname"}`, tok)), 0)
	raceCheck(t, "ResetUserPassword, identical", burst(n, send("POST", fmt.Sprintf("/api/v1/tenant-m/users/%d/password", uid), fmt.Sprintf(`{"password":%q}`, relResetPassword), tok)), 0)
	loginAs(t, c, "demo", "race.user", relResetPassword)
	one(t, "DeleteUsers, one user", burst(n, send("POST", "/api/v1/tenant-m/users/delete", fmt.Sprintf(`{"ids":[%d]}`, uid), tok)), 404)
	one(t, "DeleteOrg, one organisation", burst(n, send("DELETE", fmt.Sprintf("/api/v1/tenant-m/orgs/%d", s.orgWithoutChildren(t, ox, oy)), "", tok)), 404)

	// Tenants: one code, created whole once; identical disables and enables all succeed.
	w = one(t, "CreateTenant, one code", burst(n, send("POST", "/api/v1/system-m/tenants",
		fmt.Sprintf(`{"code":"race-t","name":"Race","admin_username":"boss","admin_password":%q}`, relBossPassword), op)), 409)
	var rt int64
	if err := s.st.DB.Pool.QueryRow(ctx, `SELECT id FROM tenant.tenants WHERE code = 'race-t'`).Scan(&rt); err != nil || w < 0 {
		t.Fatalf("CreateTenant race: %v", err)
	}
	if u, o := count(t, s.st, `SELECT count(*) FROM tenant.users WHERE tenant_id = $1`, rt), count(t, s.st, `SELECT count(*) FROM tenant.orgs WHERE tenant_id = $1`, rt); u != 1 || o != 1 {
		t.Errorf("CreateTenant race: the tenant has %d users and %d organisations, want 1 and 1", u, o)
	}
	// Identical configuration updates all succeed, each a new version: none lost.
	boss := loginAs(t, c, "race-t", "boss", relBossPassword)
	cu := burst(n, send("PUT", "/api/v1/crx/config-m", crxConfig("race_metric"), boss))
	raceCheck(t, "UpdateTenantConfig, identical", cu, 0)
	versions := map[int64]bool{}
	for _, a := range cu {
		versions[a.get("config.config_version").Int()] = true
	}
	if k := count(t, s.st, `SELECT version FROM crx.tenant_configs WHERE tenant_id = $1`, rt); len(versions) != n || k != n {
		t.Errorf("UpdateTenantConfig race: %d distinct versions answered, version %d stored, for %d updates", len(versions), k, n)
	}
	for _, v := range []string{"disable", "enable"} {
		raceCheck(t, "PlatformService "+v+", identical", burst(n, send("POST", fmt.Sprintf("/api/v1/system-m/tenants/%d/%s", rt, v), `{}`, op)), 0)
	}
	if k := count(t, s.st, `SELECT count(*) FROM tenant.tenants WHERE id = $1 AND status = 'enabled'`, rt); k != 1 {
		t.Errorf("EnableTenant race: the tenant is not enabled")
	}
	raceCheck(t, "SetupDatasource, identical", burst(4, send("POST", "/api/v1/nl2sql/setup-datasource", `{}`, op)), 0)

	// Extension: a batch sent n times at once is stored once and answered alike; the same
	// values under n batch ids are accepted once in all.
	shop := addShop(t, s.st, s.tenant, "Race crx", "race-crx")
	batch := crxBatch(uuidOf(9, 0, 1), shop, "race")
	sy := burst(n, send("POST", "/api/v1/data/crx/sync", batch, tok))
	raceCheck(t, "SyncMetrics, one batch", sy, 0)
	for _, a := range sy {
		if a.ok() && (a.get("accepted").Int() != 2 || a.get("duplicates").Int() != 0) {
			t.Errorf("SyncMetrics race: a retry answered otherwise than the batch: %s", a)
		}
	}
	sy = burst(n, func(i int) answer {
		return c.do("POST", "/api/v1/data/crx/sync", crxBatch(uuidOf(9, 1, i), shop, "race2"), tok)
	})
	raceCheck(t, "SyncMetrics, one value set, distinct batches", sy, 0)
	accepted := 0
	for _, a := range sy {
		accepted += int(a.get("accepted").Int())
	}
	if k := count(t, s.st, `SELECT count(*) FROM analytics.diy_crx_metrics WHERE i_tenant_id = $1 AND shop_id = $2`, s.tenant, shop); k != 4 || accepted != 2 {
		t.Errorf("SyncMetrics races: %d values stored, the distinct batches accepted %d; want 4 and 2", k, accepted)
	}
	adhoc := fmt.Sprintf(`{"client_id":%q,"page_url":"https://sycm.taobao.com/race.htm","collected_at":%q,"data":{"race":true}}`, uuidOf(9, 2, 1), time.Now().UTC().Format(time.RFC3339))
	ad := burst(n, send("POST", "/api/v1/data/crx/adhoc", adhoc, tok))
	raceCheck(t, "UploadAdhoc, one client id", ad, 0)
	ids, fresh := map[int64]bool{}, 0
	for _, a := range ad {
		ids[a.get("id").Int()] = true
		if a.ok() && !a.get("duplicate").Bool() {
			fresh++
		}
	}
	if len(ids) != 1 || fresh != 1 {
		t.Errorf("UploadAdhoc race: %d ids answered, %d answered as new; want 1 and 1", len(ids), fresh)
	}
	// Error reports of one user at once: the rate limit (30 a minute) holds exactly.
	addAdmins(t, s.st, "relerr")
	errTok := loginAs(t, c, "demo", "relerr", stack.AdminPassword)
	le := burst(40, send("POST", "/api/v1/log/error", `{"level":"error","message":"race"}`, errTok))
	if cs := raceCheck(t, "LogError, one user past the limit", le, 0, 429); cs[0] != 30 || cs[429] != 10 {
		t.Errorf("LogError race: %d stored and %d refused, want 30 and 10", cs[0], cs[429])
	}
	if k := count(t, s.st, `SELECT count(*) FROM crx.error_logs e JOIN tenant.users u ON u.id = e.user_id WHERE u.username = 'relerr'`); k != 30 {
		t.Errorf("LogError race: %d reports stored, want 30", k)
	}

	// Notifications: identical marks change each notification once.
	reads := func() int {
		return count(t, s.st, `SELECT count(*) FROM notify.reads r JOIN tenant.users u ON u.id = r.user_id WHERE u.tenant_id = $1 AND u.username = 'admin'`, s.tenant)
	}
	l := must(c.do("POST", "/api/v1/notify/collect/list", `{"read":false,"page_size":5}`, tok), "list notifications")
	var nids []int64
	for _, it := range l.get("items").Array() {
		nids = append(nids, it.Get("id").Int())
	}
	if len(nids) == 0 {
		t.Fatalf("the administrator has no unread notifications (the goods races publish some): %s", l)
	}
	before := reads()
	mr := burst(n, send("POST", "/api/v1/notify/collect/read", fmt.Sprintf(`{"ids":%s}`, jsonIDs(nids)), tok))
	raceCheck(t, "MarkRead, identical", mr, 0)
	changed := 0
	for _, a := range mr {
		changed += int(a.get("changed").Int())
	}
	if after := reads(); changed != len(nids) || after-before != len(nids) {
		t.Errorf("MarkRead race: answers changed %d, %d read marks added, for %d notifications", changed, after-before, len(nids))
	}
	before = reads()
	ma := burst(n, send("POST", "/api/v1/notify/collect/read-all", `{}`, tok))
	raceCheck(t, "MarkAllRead, identical", ma, 0)
	changed = 0
	for _, a := range ma {
		changed += int(a.get("changed").Int())
	}
	if after := reads(); after-before != changed {
		t.Errorf("MarkAllRead race: answers changed %d, %d read marks added", changed, after-before)
	}

	// Promotion plans: one move wins (the second is no longer allowed), one delete wins.
	st := promotion.NewStore(s.st.DB.Pool)
	day := time.Now().UTC().Truncate(24 * time.Hour)
	p, err := st.CreatePlan(ctx, &promotion.Plan{TenantID: s.tenant, Title: "Race plan", ProductIDs: []int64{1}, ProductNames: []string{"Race"},
		Metrics: []string{"gmv"}, StartDate: day, EndDate: day, CreatedBy: 1})
	if err != nil {
		t.Fatal(err)
	}
	e, err := st.CreateExecution(ctx, &promotion.Execution{TenantID: s.tenant, TemplateID: p.ID, Name: "Race", StartDate: day, EndDate: day, Strategy: map[string]any{}, CreatedBy: 1})
	if err != nil {
		t.Fatal(err)
	}
	one(t, "UpdatePromotionPlanStatus, one move", burst(n, send("PUT", fmt.Sprintf("/api/v1/chat/promotion-plans/%d/status", p.ID), `{"status":"approved"}`, tok)), 422)
	one(t, "UpdatePromotionExecutionStatus, one move", burst(n, send("PUT", fmt.Sprintf("/api/v1/chat/promotion-executions/%d/status", e.ID), `{"status":"running"}`, tok)), 422)
	one(t, "DeletePromotionExecution, one", burst(n, send("DELETE", fmt.Sprintf("/api/v1/chat/promotion-executions/%d", e.ID), "", tok)), 404)
	one(t, "DeletePromotionPlan, one", burst(n, send("DELETE", fmt.Sprintf("/api/v1/chat/promotion-plans/%d", p.ID), "", tok)), 404)

	// NL2SQL: identical token requests for a new shop all succeed, each token answered is
	// recorded; identical chats on one token are distinct chats; identical policies on one
	// role are all recorded on it.
	nshop := addShop(t, s.st, s.tenant, "Race nl2sql", "race-nl2sql")
	tk := burst(n, send("POST", "/api/v1/nl2sql/token", fmt.Sprintf(`{"shop_ids":[%d]}`, nshop), tok))
	raceCheck(t, "CreateToken, identical", tk, 0)
	tokens := map[string]bool{}
	for _, a := range tk {
		tokens[a.get("token").String()] = true
	}
	if k := count(t, s.st, `SELECT count(*) FROM nl2sql.tokens WHERE tenant_id = $1 AND shop_ids = ARRAY[$2::bigint]`, s.tenant, nshop); k != len(tokens) {
		t.Errorf("CreateToken race: %d distinct tokens answered, %d recorded", len(tokens), k)
	}
	ch := burst(n, send("POST", "/api/v1/nl2sql/chat", fmt.Sprintf(`{"token":%q}`, tk[0].get("token").String()), tok))
	raceCheck(t, "CreateChat, one token", ch, 0)
	chats := map[string]bool{}
	for _, a := range ch {
		chats[a.get("chat_id").String()] = true
	}
	if k := count(t, s.st, `SELECT count(*) FROM nl2sql.chats WHERE tenant_id = $1 AND shop_ids = ARRAY[$2::bigint]`, s.tenant, nshop); len(chats) != n || k != n {
		t.Errorf("CreateChat race: %d distinct chats answered, %d recorded, for %d requests", len(chats), k, n)
	}
	policy := fmt.Sprintf(`{"datasource_id":%q,"shop_ids":[%d]}`, s.ds, nshop)
	role := must(c.do("POST", "/api/v1/nl2sql/policy", policy, tok), "create policy").get("role_id").String()
	pr := burst(8, send("POST", "/api/v1/nl2sql/policy", fmt.Sprintf(`{"datasource_id":%q,"shop_ids":[%d],"role_id":%q}`, s.ds, nshop, role), tok))
	raceCheck(t, "CreatePolicy, one role", pr, 0)
	if k := count(t, s.st, `SELECT count(*) FROM nl2sql.policies WHERE tenant_id = $1 AND role_id = $2`, s.tenant, role); k != 9 {
		t.Errorf("CreatePolicy race: %d policies recorded on the role, want 9", k)
	}
	if k := providerRolePolicies(t, s, role); k != 9 {
		t.Errorf("CreatePolicy race: the role holds %d policies at the provider, want 9", k)
	}
}

// orgWithoutChildren is whichever of two organisations has no sub-organisation.
func (s *suite) orgWithoutChildren(t *testing.T, a, b int64) int64 {
	t.Helper()
	if count(t, s.st, `SELECT count(*) FROM tenant.orgs WHERE parent_id = $1`, a) == 0 {
		return a
	}
	return b
}

// providerRolePolicies counts the policies a role holds at the built-in provider.
func providerRolePolicies(t *testing.T, s *suite, role string) int {
	t.Helper()
	return count(t, s.st, `SELECT jsonb_array_length(body->'policy_ids') FROM nl2sql_provider.objects WHERE kind = 'role' AND id = $1`, role)
}

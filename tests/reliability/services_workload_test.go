//go:build platform

package reliability

import (
	"context"
	"fmt"
	"time"

	"github.com/shopmind/shopmind/services/chat/promotion"
)

// The worker sections of the services that landed after the first suite: tenant
// administration, platform operators, the browser extension's backend, notifications,
// promotion plans and the NL2SQL bridge. Each works on the worker's own records (its
// organisations, users, tenants, batches, plans), so what the store must hold is known.

// orgState, userState, tenantState, execState are what a worker believes it stored.
type orgState struct {
	name   string
	parent int64
}

type userState struct {
	username, nickname string
	org                int64
}

type tenantState struct {
	id        int64
	status    string
	configKey string // the metric key of its extension configuration ("": none set)
}

type execState struct {
	plan   int64
	status string
}

// The passwords this workload sets; each follows the password rules.
const (
	relUserPassword  = "Rel-User-Pass-1"
	relResetPassword = "Rel-Reset-Pass-2"
	relBossPassword  = "Rel-Boss-Pass-1"
)

// uuidOf is a UUID unique to (worker, cycle, kind).
func uuidOf(kind, n, i int) string {
	return fmt.Sprintf("%08x-%04x-4000-8000-%012x", n, kind, i)
}

// tenantAdmin: two organisations (the second moved under the first and renamed in one
// change), a user in it (moved, renamed, password reset); every other cycle all deleted
// again, in the order the rules need (users, then sub-organisations, then parents).
func (w *worker) tenantAdmin(i int, u, tok string) {
	org := func(name, code string) int64 {
		a := w.call("TenantAdminService_CreateOrg", "POST", "/api/v1/tenant-m/orgs", fmt.Sprintf(`{"name":%q,"code":%q}`, name, code), tok)
		w.expect("TenantAdminService_CreateOrg", a, "org.code", code)
		if !a.ok() {
			return 0
		}
		id := a.get("org.id").Int()
		w.orgs[id] = &orgState{name: name}
		return id
	}
	parent := org("Org "+u, "rel-"+u)
	team := org("Team "+u, "rel-"+u+"-t")
	if parent == 0 || team == 0 {
		return
	}
	m := w.call("TenantAdminService_UpdateOrg", "PUT", fmt.Sprintf("/api/v1/tenant-m/orgs/%d", team),
		fmt.Sprintf(`{"parent_id":%d,"name":"Team %s v2","update_mask":"parentId,name"}`, parent, u), tok)
	w.expect("TenantAdminService_UpdateOrg", m, "org.parent_id", parent)
	if !m.ok() {
		return
	}
	w.orgs[team] = &orgState{name: "Team " + u + " v2", parent: parent}

	username := "rel." + u
	cu := w.call("TenantAdminService_CreateUser", "POST", "/api/v1/tenant-m/users",
		fmt.Sprintf(`{"username":%q,"password":%q,"nickname":"User %s","org_id":%d}`, username, relUserPassword, u, team), tok)
	w.expect("TenantAdminService_CreateUser", cu, "user.username", username)
	if !cu.ok() {
		return
	}
	uid := cu.get("user.id").Int()
	w.users[uid] = &userState{username: username, nickname: "User " + u, org: team}
	uu := w.call("TenantAdminService_UpdateUser", "PUT", fmt.Sprintf("/api/v1/tenant-m/users/%d", uid),
		fmt.Sprintf(`{"nickname":"User %s v2","org_id":%d,"update_mask":"nickname,orgId"}`, u, parent), tok)
	w.expect("TenantAdminService_UpdateUser", uu, "user.nickname", "User "+u+" v2")
	if !uu.ok() {
		return
	}
	w.users[uid] = &userState{username: username, nickname: "User " + u + " v2", org: parent}
	if rp := w.call("TenantAdminService_ResetUserPassword", "POST", fmt.Sprintf("/api/v1/tenant-m/users/%d/password", uid),
		fmt.Sprintf(`{"password":%q}`, relResetPassword), tok); !rp.ok() {
		return
	}
	if (i+w.n)%2 != 0 {
		return
	}
	du := w.call("TenantAdminService_DeleteUsers", "POST", "/api/v1/tenant-m/users/delete", fmt.Sprintf(`{"ids":[%d]}`, uid), tok)
	w.expect("TenantAdminService_DeleteUsers", du, "deleted", 1)
	if !du.ok() {
		return
	}
	delete(w.users, uid)
	for _, id := range []int64{team, parent} {
		d := w.call("TenantAdminService_DeleteOrg", "DELETE", fmt.Sprintf("/api/v1/tenant-m/orgs/%d", id), "", tok)
		w.expect("TenantAdminService_DeleteOrg", d, "deleted", true)
		if !d.ok() {
			return
		}
		delete(w.orgs, id)
	}
}

// platform: the operator creates a tenant of the worker's, whose administrator sets its
// extension configuration; the tenant is disabled, and enabled again every other cycle.
// The first cycle also re-runs the NL2SQL setup (operators only, serialised per process).
func (w *worker) platform(i int, u, _ string) {
	if i == 0 {
		ds := w.call("Nl2SqlService_SetupDatasource", "POST", "/api/v1/nl2sql/setup-datasource", `{}`, w.op)
		w.expect("Nl2SqlService_SetupDatasource", ds, "datasource_id", w.datasource)
	}
	code := "rt-" + u
	a := w.call("PlatformService_CreateTenant", "POST", "/api/v1/system-m/tenants",
		fmt.Sprintf(`{"code":%q,"name":"Tenant %s","admin_username":"boss","admin_password":%q}`, code, u, relBossPassword), w.op)
	w.expect("PlatformService_CreateTenant", a, "tenant.code", code)
	if !a.ok() {
		return
	}
	ts := &tenantState{id: a.get("tenant.id").Int(), status: "enabled"}
	w.tenants[code] = ts
	l := w.call("TenantAuthService_Login", "POST", "/api/v1/tenant/auth/login",
		fmt.Sprintf(`{"tenant_code":%q,"username":"boss","password":%q}`, code, relBossPassword), "")
	if l.ok() {
		key := "rel_" + u
		c := w.call("ExtensionService_UpdateTenantConfig", "PUT", "/api/v1/crx/config-m", crxConfig(key), l.get("access_token").String())
		w.expect("ExtensionService_UpdateTenantConfig", c, "config.config_version", 1)
		if c.ok() {
			ts.configKey = key
		}
	}
	d := w.call("PlatformService_DisableTenant", "POST", fmt.Sprintf("/api/v1/system-m/tenants/%d/disable", ts.id), `{}`, w.op)
	w.expect("PlatformService_DisableTenant", d, "tenant.status", "disabled")
	if !d.ok() {
		return
	}
	ts.status = "disabled"
	if (i+w.n)%2 == 1 {
		e := w.call("PlatformService_EnableTenant", "POST", fmt.Sprintf("/api/v1/system-m/tenants/%d/enable", ts.id), `{}`, w.op)
		w.expect("PlatformService_EnableTenant", e, "tenant.status", "enabled")
		if e.ok() {
			ts.status = "enabled"
		}
	}
}

// crxConfig is an extension configuration of one metric.
func crxConfig(key string) string {
	return fmt.Sprintf(`{"metrics":[{"key":%q,"name":"Rel","platform":"jd","url_pattern":"^https://sz\\.jd\\.com/","source":"api",
		"api_url_pattern":"/api/core","json_path":"$.data.gmv","interval_seconds":600}],
		"upload":{"batch_size":50,"interval_seconds":120,"max_concurrent_tabs":2,"random_delay_ms_min":100,"random_delay_ms_max":900}}`, key)
}

// crxBatch is a sync batch of two values of a shop (the default configuration's metrics),
// keyed by dims so that every batch's values are new.
func crxBatch(id string, shop int64, dim string) string {
	now := time.Now().UTC()
	at, stat := now.Format(time.RFC3339), now.Truncate(24*time.Hour).Format(time.RFC3339)
	return fmt.Sprintf(`{"client_batch_id":%q,"extension_version":"1.0.0","items":[
		{"metric_key":"gmv","shop_id":%d,"value":12.5,"collected_at":%q,"stat_time":%q,"dims":{"cycle":%q}},
		{"metric_key":"visitors","shop_id":%d,"value":3,"collected_at":%q,"stat_time":%q,"dims":{"cycle":%q}}]}`,
		id, shop, at, stat, dim, shop, at, stat, dim)
}

// extension: a sync batch (retried every other cycle, as an extension does when the answer
// was lost), ad-hoc page data (uploaded twice with one client id), an error report.
func (w *worker) extension(i int, u, tok string) {
	batch := crxBatch(uuidOf(1, w.n, i), w.shop, u)
	s := w.call("ExtensionService_SyncMetrics", "POST", "/api/v1/data/crx/sync", batch, tok)
	w.expect("ExtensionService_SyncMetrics", s, "accepted", 2)
	if s.ok() {
		w.crxAccepted += int(s.get("accepted").Int())
		w.crxBatches++
		if i%2 == 0 {
			r := w.call("ExtensionService_SyncMetrics", "POST", "/api/v1/data/crx/sync", batch, tok)
			w.expect("ExtensionService_SyncMetrics", r, "accepted", 2) // the first answer again
		}
	}
	client := uuidOf(2, w.n, i)
	adhoc := fmt.Sprintf(`{"client_id":%q,"page_url":"https://sycm.taobao.com/portal/%s.htm","page_title":"Page %s","platform":"taobao",
		"collected_at":%q,"data":{"gmv":12.5,"cycle":%q}}`, client, u, u, time.Now().UTC().Format(time.RFC3339), u)
	a := w.call("ExtensionService_UploadAdhoc", "POST", "/api/v1/data/crx/adhoc", adhoc, tok)
	if a.ok() {
		if a.get("duplicate").Bool() {
			w.failf("UploadAdhoc of a new client id answered duplicate: %s", a)
		}
		w.adhoc[client] = a.get("id").Int()
		again := w.call("ExtensionService_UploadAdhoc", "POST", "/api/v1/data/crx/adhoc", adhoc, tok)
		if again.ok() && (!again.get("duplicate").Bool() || again.get("id").Int() != a.get("id").Int()) {
			w.failf("UploadAdhoc again with client id %s: %s, first %s", client, again, a)
		}
	}
	le := w.call("ExtensionService_LogError", "POST", "/api/v1/log/error",
		fmt.Sprintf(`{"level":"error","message":"Rel error %s","extension_version":"1.0.0","url":"https://sycm.taobao.com/","user_agent":"Rel"}`, u), tok)
	if le.ok() {
		w.errorLogs++
	}
}

// notifications: the worker's unread notifications (its syncs' and uploads' results)
// marked read, twice (the second changes nothing); every other cycle all of them.
func (w *worker) notifications(i int, _, tok string) {
	l := w.call("NotifyService_ListCollected", "POST", "/api/v1/notify/collect/list", `{"read":false,"page_size":20}`, tok)
	var ids []int64
	for _, it := range l.get("items").Array() {
		ids = append(ids, it.Get("id").Int())
	}
	if len(ids) > 0 {
		m := w.call("NotifyService_MarkRead", "POST", "/api/v1/notify/collect/read", fmt.Sprintf(`{"ids":%s}`, jsonIDs(ids)), tok)
		w.expect("NotifyService_MarkRead", m, "changed", len(ids))
		if m.ok() {
			for _, id := range ids {
				w.marked[id] = true
			}
			again := w.call("NotifyService_MarkRead", "POST", "/api/v1/notify/collect/read", fmt.Sprintf(`{"ids":%s}`, jsonIDs(ids)), tok)
			if again.ok() && again.get("changed").Int() != 0 {
				w.failf("MarkRead of notifications already read changed %d: %s", again.get("changed").Int(), again)
			}
		}
	}
	if (i+w.n)%2 == 1 {
		w.call("NotifyService_MarkAllRead", "POST", "/api/v1/notify/collect/read-all", `{}`, tok)
	}
}

// promotions: a template and an execution plan of the worker's (agents create them with
// their tools, which have no REST binding: stored here as the tools store them), moved on
// (approved, running); the execution deleted every other cycle, the template every third.
func (w *worker) promotions(i int, u, tok string) {
	ctx := context.Background()
	st := promotion.NewStore(w.pool)
	day := time.Now().UTC().Truncate(24 * time.Hour)
	p, err := st.CreatePlan(ctx, &promotion.Plan{TenantID: w.tenant, Title: "Rel " + u, ProductIDs: []int64{w.shop}, ProductNames: []string{"Rel"},
		DiscountRate: 0.1, Mechanics: "10% off", StartDate: day, EndDate: day.AddDate(0, 0, 7), Metrics: []string{"gmv"}, CreatedBy: w.userID})
	if err != nil {
		w.failf("store a promotion plan: %v", err)
		return
	}
	w.plans[p.ID] = promotion.PlanDraft
	e, err := st.CreateExecution(ctx, &promotion.Execution{TenantID: w.tenant, TemplateID: p.ID, Name: "Rel " + u, Channel: "taobao",
		StartDate: p.StartDate, EndDate: p.EndDate, Strategy: map[string]any{"actions": []any{"banner"}}, CreatedBy: w.userID})
	if err != nil {
		w.failf("store a promotion execution: %v", err)
		return
	}
	w.execs[e.ID] = &execState{plan: p.ID, status: promotion.ExecPlanned}
	a := w.call("PromotionService_UpdatePromotionPlanStatus", "PUT", fmt.Sprintf("/api/v1/chat/promotion-plans/%d/status", p.ID), `{"status":"approved"}`, tok)
	w.expect("PromotionService_UpdatePromotionPlanStatus", a, "plan.status", "approved")
	if a.ok() {
		w.plans[p.ID] = promotion.PlanApproved
	}
	x := w.call("PromotionService_UpdatePromotionExecutionStatus", "PUT", fmt.Sprintf("/api/v1/chat/promotion-executions/%d/status", e.ID), `{"status":"running"}`, tok)
	w.expect("PromotionService_UpdatePromotionExecutionStatus", x, "execution.status", "running")
	if x.ok() {
		w.execs[e.ID].status = promotion.ExecRunning
	}
	if (i+w.n)%2 == 0 {
		if d := w.call("PromotionService_DeletePromotionExecution", "DELETE", fmt.Sprintf("/api/v1/chat/promotion-executions/%d", e.ID), "", tok); d.ok() {
			delete(w.execs, e.ID)
		}
	}
	if (i+w.n)%3 == 0 {
		left := 0
		for _, x := range w.execs {
			if x.plan == p.ID {
				left++
			}
		}
		d := w.call("PromotionService_DeletePromotionPlan", "DELETE", fmt.Sprintf("/api/v1/chat/promotion-plans/%d", p.ID), "", tok)
		w.expect("PromotionService_DeletePromotionPlan", d, "executions_deleted", left)
		if d.ok() {
			delete(w.plans, p.ID)
			for id, x := range w.execs {
				if x.plan == p.ID {
					delete(w.execs, id)
				}
			}
		}
	}
}

// nl2sql: a provider token for the worker's shop, a chat on it, an embed URL; every other
// cycle a policy on the worker's own provider role (the first one creates it).
func (w *worker) nl2sql(i int, _, tok string) {
	t := w.call("Nl2SqlService_CreateToken", "POST", "/api/v1/nl2sql/token", fmt.Sprintf(`{"shop_ids":[%d],"ttl_seconds":3600}`, w.shop), tok)
	if t.ok() {
		c := w.call("Nl2SqlService_CreateChat", "POST", "/api/v1/nl2sql/chat", fmt.Sprintf(`{"token":%q}`, t.get("token").String()), tok)
		if c.ok() {
			w.chats = append(w.chats, c.get("chat_id").String())
		}
	}
	if e := w.call("Nl2SqlService_CreateEmbedUrl", "POST", "/api/v1/nl2sql/embed-url", fmt.Sprintf(`{"shop_ids":[%d]}`, w.shop), tok); e.ok() {
		w.chats = append(w.chats, e.get("chat_id").String())
	}
	if i%2 != 0 {
		return
	}
	role := ""
	if w.role != "" {
		role = fmt.Sprintf(`,"role_id":%q`, w.role)
	}
	p := w.call("Nl2SqlService_CreatePolicy", "POST", "/api/v1/nl2sql/policy",
		fmt.Sprintf(`{"datasource_id":%q,"shop_ids":[%d],"table_pattern":"^basic_orders$"%s}`, w.datasource, w.shop, role), tok)
	if p.ok() {
		if w.role != "" && p.get("role_id").String() != w.role {
			w.failf("CreatePolicy on role %s answered role %s", w.role, p.get("role_id").String())
		}
		w.role = p.get("role_id").String()
		w.policies[p.get("policy_id").String()] = w.role
	}
}

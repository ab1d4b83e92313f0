package main

import (
	"net/http"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"
)

// The lean peer is the handler a new user would write without looking at ShopMind's
// stores: the same server, token check and JSON as the mirrored peer (peer.go), but the
// plainest SQL. auth/info asks two questions (the user with tenant, organisation and role
// ids; the role summaries with their permission codes), the goods list two (the count, then
// the page, one after the other), the metric list one. `make bench-stack` prints ShopMind
// against both.

func (p *peer) leanHandler() http.Handler {
	mux := p.routes(p.leanInfo, p.leanGoods, p.metrics)
	return mux
}

// leanInfo: the user (tenant, organisation, role ids), then the roles.
func (p *peer) leanInfo(w http.ResponseWriter, r *http.Request, c *peerClaims) {
	ctx := r.Context()
	var (
		id                               int64
		username, nickname, tcode, tname string
		orgID                            *int64
		orgName, status                  string
		isAdmin                          bool
		roleIDs                          []int64
	)
	err := p.pool.QueryRow(ctx, `SELECT u.id, u.username, u.nickname, t.code, t.name, u.org_id, coalesce(o.name, ''), u.status, u.is_admin,
		coalesce((SELECT array_agg(ur.role_id ORDER BY ur.role_id) FROM tenant.user_roles ur WHERE ur.user_id = u.id), '{}')
		FROM tenant.users u JOIN tenant.tenants t ON t.id = u.tenant_id LEFT JOIN tenant.orgs o ON o.id = u.org_id
		WHERE u.tenant_id = $1 AND u.id = $2`, c.TenantID, c.UserID).Scan(&id, &username, &nickname, &tcode, &tname,
		&orgID, &orgName, &status, &isAdmin, &roleIDs)
	if err == pgx.ErrNoRows || (err == nil && status != "enabled") {
		writeEnvelope(w, http.StatusUnauthorized, 16, "user no longer exists", nil)
		return
	} else if err != nil {
		p.fail(w, err)
		return
	}
	rows, _ := p.pool.Query(ctx, `SELECT r.id, r.code, r.name, r.status = 'enabled', coalesce(array_agg(rp.code) FILTER (WHERE rp.code IS NOT NULL), '{}')
		FROM tenant.roles r LEFT JOIN tenant.role_permissions rp ON rp.role_id = r.id
		WHERE r.tenant_id = $1 AND r.id = ANY($2) GROUP BY r.id ORDER BY r.id`, c.TenantID, roleIDs)
	roles := []role{}
	codes := []string{}
	for rows.Next() {
		var rr role
		var enabled bool
		var rc []string
		if err := rows.Scan(&rr.ID, &rr.Code, &rr.Name, &enabled, &rc); err != nil {
			rows.Close()
			p.fail(w, err)
			return
		}
		roles = append(roles, rr)
		if enabled {
			codes = append(codes, rc...)
		}
	}
	if err := rows.Err(); err != nil {
		p.fail(w, err)
		return
	}
	slices.Sort(codes)
	codes = slices.Compact(codes)
	if isAdmin {
		codes = p.adminCodes
	}
	user := map[string]any{"id": strconv.FormatInt(id, 10), "username": username, "nickname": nickname,
		"tenant": map[string]any{"id": strconv.FormatInt(c.TenantID, 10), "code": tcode, "name": tname},
		"roles":  roles, "permissions": codes, "is_admin": isAdmin}
	if orgID != nil {
		user["org"] = idName{ID: *orgID, Name: orgName}
	}
	writeEnvelope(w, http.StatusOK, 0, "success", map[string]any{"user": user})
}

// leanGoods: the count, then the page with its joins.
func (p *peer) leanGoods(w http.ResponseWriter, r *http.Request, c *peerClaims) {
	size, ok := pageSize(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	var total int64
	if err := p.pool.QueryRow(ctx, `SELECT count(*) FROM basic.goods WHERE tenant_id = $1 AND status <> 'deleted'`, c.TenantID).Scan(&total); err != nil {
		p.fail(w, err)
		return
	}
	rows, err := p.pool.Query(ctx, `SELECT g.id, g.shop_id, s.name, s.platform, g.platform_goods_id, g.name, g.item_no, g.category_id,
		coalesce(c.name, ''), g.staff_id, coalesce(nullif(u.nickname, ''), u.username, ''), g.is_virtual, g.status,
		g.price::float8, g.cost::float8, g.image_url, g.display_order, g.created_at, g.updated_at
		FROM basic.goods g JOIN basic.shops s ON s.tenant_id = g.tenant_id AND s.id = g.shop_id
		LEFT JOIN basic.categories c ON c.tenant_id = g.tenant_id AND c.id = g.category_id
		LEFT JOIN tenant.users u ON u.tenant_id = g.tenant_id AND u.id = g.staff_id
		WHERE g.tenant_id = $1 AND g.status <> 'deleted' ORDER BY g.created_at DESC, g.id DESC LIMIT $2`, c.TenantID, size)
	if err != nil {
		p.fail(w, err)
		return
	}
	items, err := pgx.CollectRows(rows, scanGoodsItem)
	if err != nil {
		p.fail(w, err)
		return
	}
	writeEnvelope(w, http.StatusOK, 0, "success", map[string]any{"items": items, "total": strconv.FormatInt(total, 10),
		"total_is_lower_bound": false, "page_num": 1, "page_size": size})
}

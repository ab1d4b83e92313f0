package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The peer is what a competent engineer would write by hand for the same three answers:
// net/http, golang-jwt and pgx, one handler per endpoint, the same SQL ShopMind's stores run
// and the same JSON (checked by the harness before it measures). It checks the token's
// signature, expiry, issuer, audience and type, and nothing else: no revocation, no WAF, no
// rate limit, no access rule, no validation beyond the page size; that gap is what the
// benchmark prices.

// peer serves the three endpoints from one pool.
type peer struct {
	pool     *pgxpool.Pool
	secret   []byte
	audience string
	// adminCodes is every permission code of the contract, the permissions an administrator
	// holds: a static list, the access rules of the contract.
	adminCodes []string
}

type peerClaims struct {
	UserID   int64  `json:"uid"`
	TenantID int64  `json:"tid"`
	Type     string `json:"typ"`
	jwt.RegisteredClaims
}

func (p *peer) handler() http.Handler { return p.routes(p.info, p.goods, p.metrics) }

// routes serves the three endpoints with the given handlers behind the token check.
func (p *peer) routes(info, goods, metrics func(http.ResponseWriter, *http.Request, *peerClaims)) http.Handler {
	parser := jwt.NewParser(jwt.WithValidMethods([]string{"HS256"}), jwt.WithExpirationRequired(),
		jwt.WithIssuer("shopmind"), jwt.WithAudience(p.audience))
	auth := func(next func(http.ResponseWriter, *http.Request, *peerClaims)) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			c := &peerClaims{}
			if !ok {
				writeEnvelope(w, http.StatusUnauthorized, 16, "missing token", nil)
				return
			}
			if _, err := parser.ParseWithClaims(raw, c, func(*jwt.Token) (any, error) { return p.secret, nil }); err != nil || c.Type != "access" {
				writeEnvelope(w, http.StatusUnauthorized, 16, "invalid or expired token", nil)
				return
			}
			next(w, r, c)
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { writeEnvelope(w, 200, 0, "ok", nil) })
	mux.HandleFunc("GET /tenant/api/v1/tenant/auth/info", auth(info))
	mux.HandleFunc("GET /basic/api/v1/basic/goods", auth(goods))
	mux.HandleFunc("GET /analysis/api/v1/analytics/metrics", auth(metrics))
	return mux
}

func writeEnvelope(w http.ResponseWriter, status, code int, message string, data any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    any    `json:"data"`
	}{code, message, data})
}

func (p *peer) fail(w http.ResponseWriter, err error) {
	writeEnvelope(w, http.StatusInternalServerError, 13, err.Error(), nil)
}

// protoTime formats like protojson: UTC, and 0, 3, 6 or 9 fractional digits.
func protoTime(t time.Time) string {
	t = t.UTC()
	switch ns := t.Nanosecond(); {
	case ns == 0:
		return t.Format("2006-01-02T15:04:05Z")
	case ns%1e6 == 0:
		return t.Format("2006-01-02T15:04:05.000Z")
	case ns%1e3 == 0:
		return t.Format("2006-01-02T15:04:05.000000Z")
	default:
		return t.Format("2006-01-02T15:04:05.000000000Z")
	}
}

type idName struct {
	ID   int64  `json:"id,string"`
	Name string `json:"name"`
}

type role struct {
	ID   int64  `json:"id,string"`
	Code string `json:"code"`
	Name string `json:"name"`
}

// info: the user with tenant, org, role ids and permission codes in one query, the role
// summaries in a second.
func (p *peer) info(w http.ResponseWriter, r *http.Request, c *peerClaims) {
	ctx := r.Context()
	var (
		id                               int64
		username, nickname, tcode, tname string
		orgID                            *int64
		orgName, status                  string
		isAdmin                          bool
		roleIDs                          []int64
		codes                            []string
	)
	err := p.pool.QueryRow(ctx, `SELECT u.id, u.username, u.nickname, t.code, t.name, u.org_id, coalesce(o.name, ''), u.status, u.is_admin,
		coalesce((SELECT array_agg(ur.role_id ORDER BY ur.role_id) FROM tenant.user_roles ur WHERE ur.user_id = u.id), '{}'),
		coalesce((SELECT array_agg(DISTINCT rp.code ORDER BY rp.code) FROM tenant.user_roles ur
			JOIN tenant.roles r ON r.id = ur.role_id AND r.status = 'enabled'
			JOIN tenant.role_permissions rp ON rp.role_id = r.id WHERE ur.user_id = u.id), '{}')
		FROM tenant.users u JOIN tenant.tenants t ON t.id = u.tenant_id LEFT JOIN tenant.orgs o ON o.id = u.org_id
		WHERE u.tenant_id = $1 AND u.id = $2`, c.TenantID, c.UserID).Scan(&id, &username, &nickname, &tcode, &tname,
		&orgID, &orgName, &status, &isAdmin, &roleIDs, &codes)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && status != "enabled") {
		writeEnvelope(w, http.StatusUnauthorized, 16, "user no longer exists", nil)
		return
	} else if err != nil {
		p.fail(w, err)
		return
	}
	rows, _ := p.pool.Query(ctx, `SELECT id, code, name FROM tenant.roles WHERE tenant_id = $1 AND id = ANY($2) ORDER BY id`, c.TenantID, roleIDs)
	roles, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (role, error) {
		var rr role
		return rr, row.Scan(&rr.ID, &rr.Code, &rr.Name)
	})
	if err != nil {
		p.fail(w, err)
		return
	}
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

type goodsItem struct {
	ID              int64    `json:"id,string"`
	ShopID          int64    `json:"shop_id,string"`
	ShopName        string   `json:"shop_name"`
	Platform        string   `json:"platform"`
	PlatformGoodsID string   `json:"platform_goods_id"`
	Name            string   `json:"name"`
	ItemNo          string   `json:"item_no"`
	CategoryID      int64    `json:"category_id,string"`
	CategoryName    string   `json:"category_name"`
	StaffID         int64    `json:"staff_id,string"`
	StaffName       string   `json:"staff_name"`
	IsVirtual       bool     `json:"is_virtual"`
	Status          string   `json:"status"`
	Price           float64  `json:"price"`
	Cost            float64  `json:"cost"`
	ImageURL        string   `json:"image_url"`
	DisplayOrder    int32    `json:"display_order"`
	Skus            []string `json:"skus"`
	CreatedAt       string   `json:"created_at"`
	UpdatedAt       string   `json:"updated_at"`
}

// pageSize reads page_size (default 20), answering 400 itself when it is not 1 to 100.
func pageSize(w http.ResponseWriter, r *http.Request) (int, bool) {
	size := 20
	if v := r.URL.Query().Get("page_size"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			writeEnvelope(w, http.StatusBadRequest, 3, "page_size: must be 1 to 100", nil)
			return 0, false
		}
		size = n
	}
	return size, true
}

// goods: the count and one page, newest first, in one round trip (a pipelined batch).
func (p *peer) goods(w http.ResponseWriter, r *http.Request, c *peerClaims) {
	size, ok := pageSize(w, r)
	if !ok {
		return
	}
	batch := &pgx.Batch{}
	batch.Queue(`SELECT count(*) FROM basic.goods g WHERE g.tenant_id = $1 AND g.status <> 'deleted'`, c.TenantID)
	batch.Queue(fmt.Sprintf(`SELECT g.id, g.shop_id, s.name, s.platform, g.platform_goods_id, g.name, g.item_no, g.category_id,
		coalesce(c.name, ''), g.staff_id, coalesce(nullif(u.nickname, ''), u.username, ''), g.is_virtual, g.status,
		g.price::float8, g.cost::float8, g.image_url, g.display_order, g.created_at, g.updated_at
		FROM (SELECT g.id FROM basic.goods g WHERE g.tenant_id = $1 AND g.status <> 'deleted' ORDER BY g.created_at DESC, g.id DESC LIMIT %d) pg
		JOIN basic.goods g ON g.tenant_id = $1 AND g.id = pg.id
		JOIN basic.shops s ON s.tenant_id = g.tenant_id AND s.id = g.shop_id
		LEFT JOIN basic.categories c ON g.category_id <> 0 AND c.tenant_id = g.tenant_id AND c.id = g.category_id
		LEFT JOIN tenant.users u ON g.staff_id <> 0 AND u.tenant_id = g.tenant_id AND u.id = g.staff_id
		ORDER BY g.created_at DESC, g.id DESC`, size), c.TenantID)
	br := p.pool.SendBatch(r.Context(), batch)
	defer br.Close()
	var total int64
	if err := br.QueryRow().Scan(&total); err != nil {
		p.fail(w, err)
		return
	}
	rows, err := br.Query()
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

// scanGoodsItem reads one row of the goods page query both peers run (the same columns in
// the same order).
func scanGoodsItem(row pgx.CollectableRow) (goodsItem, error) {
	var g goodsItem
	var created, updated time.Time
	err := row.Scan(&g.ID, &g.ShopID, &g.ShopName, &g.Platform, &g.PlatformGoodsID, &g.Name, &g.ItemNo, &g.CategoryID,
		&g.CategoryName, &g.StaffID, &g.StaffName, &g.IsVirtual, &g.Status, &g.Price, &g.Cost, &g.ImageURL,
		&g.DisplayOrder, &created, &updated)
	g.Skus, g.CreatedAt, g.UpdatedAt = []string{}, protoTime(created), protoTime(updated)
	return g, err
}

// metricConfig is the stored configuration (protojson's camelCase names) re-emitted with the
// API's names and every field present.
type metricConfig struct {
	Derived *struct {
		SourceField    string `json:"sourceField"`
		Aggregation    string `json:"aggregation"`
		TimeRangeField string `json:"timeRangeField"`
	} `json:"derived"`
	Order *struct {
		OrderField     string `json:"orderField"`
		TimeBasis      string `json:"timeBasis"`
		QueryCondition []struct {
			Field    string   `json:"field"`
			Operator string   `json:"operator"`
			Value    []string `json:"value"`
		} `json:"queryCondition"`
	} `json:"order"`
	Formula *struct {
		Expression    string   `json:"expression"`
		DependencyIDs []string `json:"dependencyIds"`
	} `json:"formula"`
}

func (m *metricConfig) api() map[string]any {
	switch {
	case m.Derived != nil:
		return map[string]any{"derived": map[string]any{"source_field": m.Derived.SourceField, "aggregation": m.Derived.Aggregation,
			"time_range_field": m.Derived.TimeRangeField}}
	case m.Order != nil:
		conds := make([]map[string]any, 0, len(m.Order.QueryCondition))
		for _, c := range m.Order.QueryCondition {
			v := c.Value
			if v == nil {
				v = []string{}
			}
			conds = append(conds, map[string]any{"field": c.Field, "operator": c.Operator, "value": v})
		}
		return map[string]any{"order": map[string]any{"order_field": m.Order.OrderField, "time_basis": m.Order.TimeBasis,
			"query_condition": conds}}
	case m.Formula != nil:
		deps := m.Formula.DependencyIDs
		if deps == nil {
			deps = []string{}
		}
		return map[string]any{"formula": map[string]any{"expression": m.Formula.Expression, "dependency_ids": deps}}
	}
	return map[string]any{}
}

// metrics: the live metrics in one query, grouped by group, each group by name.
func (p *peer) metrics(w http.ResponseWriter, r *http.Request, c *peerClaims) {
	type metric = map[string]any
	var groups []map[string]any
	var current []metric
	var group string
	flush := func() {
		if current != nil {
			groups = append(groups, map[string]any{"group": group, "metrics": current})
		}
	}
	rows, err := p.pool.Query(r.Context(), `SELECT id, name, display_name, description, metric_group, type, config, synonyms, created_at, updated_at
		FROM analysis.metrics WHERE tenant_id = $1 AND deleted_at IS NULL ORDER BY metric_group COLLATE "C", name COLLATE "C"`, c.TenantID)
	if err != nil {
		p.fail(w, err)
		return
	}
	for rows.Next() {
		var (
			id                          int64
			name, display, desc, g, typ string
			cfg                         metricConfig
			synonyms                    []string
			created, updated            time.Time
		)
		if err := rows.Scan(&id, &name, &display, &desc, &g, &typ, &cfg, &synonyms, &created, &updated); err != nil {
			rows.Close()
			p.fail(w, err)
			return
		}
		if g != group || current == nil {
			flush()
			group, current = g, []metric{}
		}
		current = append(current, metric{"id": strconv.FormatInt(id, 10), "name": name, "display_name": display,
			"description": desc, "group": g, "type": typ, "config": cfg.api(), "synonyms": synonyms,
			"created_at": protoTime(created), "updated_at": protoTime(updated)})
	}
	if err := rows.Err(); err != nil {
		p.fail(w, err)
		return
	}
	flush()
	if groups == nil {
		groups = []map[string]any{}
	}
	writeEnvelope(w, http.StatusOK, 0, "success", map[string]any{"groups": groups})
}

// servePeer runs the peer until ctx ends.
func servePeer(ctx context.Context, addr, databaseURL string, secret []byte, audience string, adminCodes []string, lean bool) error {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	slices.Sort(adminCodes)
	p := &peer{pool: pool, secret: secret, audience: audience, adminCodes: adminCodes}
	handler := p.handler()
	if lean {
		handler = p.leanHandler()
	}
	srv := &http.Server{Addr: addr, Handler: handler, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

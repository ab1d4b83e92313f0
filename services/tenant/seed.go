package tenant

import (
	"context"
	"log/slog"
	"os"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
	"golang.org/x/crypto/bcrypt"

	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/config"
)

// DemoTenant is the tenant created on first start.
const DemoTenant = "demo"

// demoMenu is one node of the demo menu tree.
type demoMenu struct {
	name, title, path, icon, typ, permission string
	children                                 []demoMenu
}

var demoMenus = []demoMenu{
	{name: "dashboard", title: "Dashboard", path: "/dashboard", icon: "dashboard", typ: "menu"},
	{name: "analysis", title: "Analysis", path: "/analysis", icon: "chart", typ: "menu", children: []demoMenu{
		{name: "metrics", title: "Metrics", path: "/analysis/metrics", typ: "menu", permission: "analysis:metric:list", children: []demoMenu{
			{name: "metric-create", title: "New metric", typ: "button", permission: "analysis:metric:create"},
			{name: "metric-delete", title: "Delete metric", typ: "button", permission: "analysis:metric:delete"},
		}},
		{name: "query", title: "Query", path: "/analysis/query", typ: "menu", permission: "analysis:query:preview"},
	}},
	{name: "goods", title: "Goods", path: "/goods", icon: "shop", typ: "menu", children: []demoMenu{
		{name: "goods-list", title: "Goods", path: "/goods/list", typ: "menu", permission: "basic:goods:list"},
		{name: "categories", title: "Categories", path: "/goods/categories", typ: "menu", permission: "basic:category:list"},
		{name: "orders", title: "Orders", path: "/goods/orders", typ: "menu", permission: "basic:order:list"},
	}},
	{name: "chat", title: "Assistant", path: "/chat", icon: "message", typ: "menu", permission: "chat:message:send"},
	{name: "system", title: "System", path: "/system", icon: "setting", typ: "menu", children: []demoMenu{
		{name: "users", title: "Users", path: "/system/users", typ: "menu", permission: "tenant:user:list"},
		{name: "orgs", title: "Organisations", path: "/system/orgs", typ: "menu", permission: "tenant:org:list"},
		{name: "roles", title: "Roles", path: "/system/roles", typ: "menu", permission: "tenant:role:create", children: []demoMenu{
			{name: "role-create", title: "New role", typ: "button", permission: "tenant:role:create"},
			{name: "role-update", title: "Edit role", typ: "button", permission: "tenant:role:update"},
			{name: "role-delete", title: "Delete role", typ: "button", permission: "tenant:role:delete"},
			{name: "role-api", title: "Role API", path: "/api/v1/tenant/roles", typ: "api", permission: "tenant:role:create"},
		}},
	}},
}

// readOnlyActions are the permission actions the demo analyst role is granted.
var readOnlyActions = map[string]bool{"list": true, "get": true, "query": true, "preview": true, "sql": true, "read": true, "send": true, "create": false}

// DemoAnalystPassword is the demo non-administrator's password unless SHOPMIND_DEMO_ANALYST_PASSWORD is set.
const DemoAnalystPassword = "analyst123"

// bootstrap creates the demo tenant on first start: organisations, roles, menus, user admin
// (administrator, password SHOPMIND_ADMIN_PASSWORD) and user analyst (read-only role). It
// does nothing when the tenant exists, so passwords changed later are kept; concurrent
// replicas are serialised by the unique tenant code.
func bootstrap(ctx context.Context, st *store, cfg *config.Config, log *slog.Logger) error {
	analystPassword := os.Getenv("SHOPMIND_DEMO_ANALYST_PASSWORD")
	if analystPassword == "" {
		analystPassword = DemoAnalystPassword
	}
	adminHash, err := bcrypt.GenerateFromPassword([]byte(cfg.AdminPassword), cfg.Auth.BcryptCost)
	if err != nil {
		return err
	}
	analystHash, err := bcrypt.GenerateFromPassword([]byte(analystPassword), cfg.Auth.BcryptCost)
	if err != nil {
		return err
	}
	created := false
	err = pgx.BeginFunc(ctx, st.pool, func(tx pgx.Tx) error {
		var tenantID int64
		err := tx.QueryRow(ctx, `INSERT INTO tenant.tenants (code, name) VALUES ($1, 'Demo shop group')
			ON CONFLICT (code) DO NOTHING RETURNING id`, DemoTenant).Scan(&tenantID)
		if err == pgx.ErrNoRows {
			return nil // already there
		}
		if err != nil {
			return err
		}
		created = true
		var hq, ops int64
		if err := tx.QueryRow(ctx, `INSERT INTO tenant.orgs (tenant_id, code, name, sort_order) VALUES ($1, 'hq', 'Headquarters', 0) RETURNING id`, tenantID).Scan(&hq); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `INSERT INTO tenant.orgs (tenant_id, parent_id, code, name, sort_order) VALUES ($1, $2, 'ops', 'Operations', 1) RETURNING id`, tenantID, hq).Scan(&ops); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO tenant.orgs (tenant_id, parent_id, code, name, sort_order) VALUES ($1, $2, 'bi', 'Analytics', 2)`, tenantID, hq); err != nil {
			return err
		}
		var menuIDs []int64
		var insert func(parent *int64, ms []demoMenu) error
		insert = func(parent *int64, ms []demoMenu) error {
			for i, m := range ms {
				var id int64
				if err := tx.QueryRow(ctx, `INSERT INTO tenant.menus (tenant_id, parent_id, name, title, path, icon, type, permission, sort_order)
					VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id`, tenantID, parent, m.name, m.title, m.path, m.icon, m.typ, m.permission, i).Scan(&id); err != nil {
					return err
				}
				if m.permission == "" || readOnlyActions[action(m.permission)] {
					menuIDs = append(menuIDs, id)
				}
				if err := insert(&id, m.children); err != nil {
					return err
				}
			}
			return nil
		}
		if err := insert(nil, demoMenus); err != nil {
			return err
		}
		all := make([]string, 0)
		for c := range authn.Permissions() {
			all = append(all, c)
		}
		sort.Strings(all)
		var readOnly []string
		for _, c := range all {
			if readOnlyActions[action(c)] {
				readOnly = append(readOnly, c)
			}
		}
		var adminRole, analystRole int64
		if err := tx.QueryRow(ctx, `INSERT INTO tenant.roles (tenant_id, code, name, description) VALUES ($1, 'admin', 'Administrator', 'Every permission') RETURNING id`, tenantID).Scan(&adminRole); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `INSERT INTO tenant.roles (tenant_id, code, name, description) VALUES ($1, 'analyst', 'Analyst', 'Reads data and asks the assistant') RETURNING id`, tenantID).Scan(&analystRole); err != nil {
			return err
		}
		if err := setRoleGrants(ctx, tx, tenantID, adminRole, all, nil, true, false); err != nil {
			return err
		}
		if err := setRoleGrants(ctx, tx, tenantID, analystRole, readOnly, menuIDs, true, true); err != nil {
			return err
		}
		var adminID, analystID int64
		if err := tx.QueryRow(ctx, `INSERT INTO tenant.users (tenant_id, username, nickname, email, password_hash, org_id, is_admin)
			VALUES ($1, 'admin', 'Administrator', 'admin@demo.shopmind.local', $2, $3, true) RETURNING id`, tenantID, string(adminHash), hq).Scan(&adminID); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `INSERT INTO tenant.users (tenant_id, username, nickname, email, password_hash, org_id)
			VALUES ($1, 'analyst', 'Demo analyst', 'analyst@demo.shopmind.local', $2, $3) RETURNING id`, tenantID, string(analystHash), ops).Scan(&analystID); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO tenant.user_roles (user_id, role_id) VALUES ($1, $2), ($3, $4)`, adminID, adminRole, analystID, analystRole)
		return err
	})
	if err == nil && created {
		log.Info("demo tenant created", "tenant", DemoTenant, "users", "admin (administrator), analyst (read-only)")
	}
	return err
}

// action is the last segment of a permission code (basic:goods:list -> list).
func action(code string) string { return code[strings.LastIndex(code, ":")+1:] }

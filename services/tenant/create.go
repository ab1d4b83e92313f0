package tenant

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"golang.org/x/crypto/bcrypt"

	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/config"
)

// NewTenant is a tenant to create with its first administrator.
type NewTenant struct {
	// Code is what users type at login: 1 to 64 letters, digits, '_' or '-', starting
	// with a letter or digit (the login request's rule).
	Code string
	// Name is the display name, 1 to 128 characters.
	Name string
	// AdminUsername and AdminPassword are the first administrator's credentials; the
	// password must pass config.CheckPassword.
	AdminUsername string
	AdminPassword string
	// Operator makes it an operator tenant: its enabled administrators are platform
	// operators. Only the server command sets it (`shopmind tenant create --operator`).
	Operator bool
}

// CreatedTenant is what CreateTenant made.
type CreatedTenant struct {
	ID      int64
	Code    string
	AdminID int64
}

// TxBeginner is a database that starts transactions (*pgxpool.Pool, *pgx.Conn).
type TxBeginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// tenantCodeRE is the login request's tenant_code rule.
var tenantCodeRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// CreateTenant creates a tenant with what every tenant starts with (organisation hq, the
// menu tree, roles admin and analyst) and its first administrator, in one transaction.
// Used by `shopmind tenant create` and PlatformService.CreateTenant (Platform.Create). Invalid input
// is a KindInvalid error naming the field, a taken code a KindConflict error.
func CreateTenant(ctx context.Context, db TxBeginner, in NewTenant, bcryptCost int) (*CreatedTenant, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(in.AdminPassword), bcryptCost)
	if err != nil {
		return nil, err
	}
	var out *CreatedTenant
	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		sk, err := createSkeleton(ctx, tx, in.Code, strings.TrimSpace(in.Name))
		if err != nil {
			return err
		}
		if sk == nil {
			return apperr.New(apperr.KindConflict, "tenant code %q is already taken", in.Code)
		}
		if in.Operator {
			if _, err := tx.Exec(ctx, "UPDATE tenant.tenants SET is_operator = true WHERE id = $1", sk.tenantID); err != nil {
				return err
			}
		}
		adminID, err := addUser(ctx, tx, sk.tenantID, sk.hq, sk.adminRole, in.AdminUsername, "Administrator", "", hash, true)
		out = &CreatedTenant{ID: sk.tenantID, Code: in.Code, AdminID: adminID}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Validate checks the input against the rules CreateTenant applies, without the database.
func (in NewTenant) Validate() error {
	var v []apperr.FieldViolation
	bad := func(field, rule, msg string) {
		v = append(v, apperr.FieldViolation{Field: field, Rule: rule, Message: msg})
	}
	if !tenantCodeRE.MatchString(in.Code) {
		bad("code", "tenant.code", "1 to 64 letters, digits, '_' or '-', starting with a letter or digit")
	}
	if n := utf8.RuneCountInString(strings.TrimSpace(in.Name)); n < 1 || n > 128 {
		bad("name", "tenant.name", "1 to 128 characters")
	}
	if n := utf8.RuneCountInString(in.AdminUsername); n < 1 || n > 64 || strings.TrimSpace(in.AdminUsername) != in.AdminUsername ||
		strings.IndexFunc(in.AdminUsername, unicode.IsControl) >= 0 {
		bad("admin_username", "tenant.admin_username", "1 to 64 characters, no surrounding white space or control characters")
	}
	if err := config.CheckPassword(in.AdminPassword, in.AdminUsername, in.Code); err != nil {
		bad("admin_password", "password.policy", err.Error())
	}
	if len(v) > 0 {
		return apperr.InvalidFields(v)
	}
	return nil
}

// menuSpec is one node of the menu tree every tenant starts with.
type menuSpec struct {
	name, title, path, icon, typ, permission string
	children                                 []menuSpec
}

var tenantMenus = []menuSpec{
	{name: "dashboard", title: "Dashboard", path: "/dashboard", icon: "dashboard", typ: "menu"},
	{name: "analysis", title: "Analysis", path: "/analysis", icon: "chart", typ: "menu", children: []menuSpec{
		{name: "metrics", title: "Metrics", path: "/analysis/metrics", typ: "menu", permission: "analysis:metric:list", children: []menuSpec{
			{name: "metric-create", title: "New metric", typ: "button", permission: "analysis:metric:create"},
			{name: "metric-delete", title: "Delete metric", typ: "button", permission: "analysis:metric:delete"},
		}},
		{name: "query", title: "Query", path: "/analysis/query", typ: "menu", permission: "analysis:query:preview"},
	}},
	{name: "goods", title: "Goods", path: "/goods", icon: "shop", typ: "menu", children: []menuSpec{
		{name: "goods-list", title: "Goods", path: "/goods/list", typ: "menu", permission: "basic:goods:list"},
		{name: "categories", title: "Categories", path: "/goods/categories", typ: "menu", permission: "basic:category:list"},
		{name: "orders", title: "Orders", path: "/goods/orders", typ: "menu", permission: "basic:order:list"},
	}},
	{name: "chat", title: "Assistant", path: "/chat", icon: "message", typ: "menu", permission: "chat:message:send"},
	{name: "system", title: "System", path: "/system", icon: "setting", typ: "menu", children: []menuSpec{
		{name: "users", title: "Users", path: "/system/users", typ: "menu", permission: "tenant:user:list"},
		{name: "orgs", title: "Organisations", path: "/system/orgs", typ: "menu", permission: "tenant:org:list"},
		{name: "roles", title: "Roles", path: "/system/roles", typ: "menu", permission: "tenant:role:create", children: []menuSpec{
			{name: "role-create", title: "New role", typ: "button", permission: "tenant:role:create"},
			{name: "role-update", title: "Edit role", typ: "button", permission: "tenant:role:update"},
			{name: "role-delete", title: "Delete role", typ: "button", permission: "tenant:role:delete"},
			{name: "role-api", title: "Role API", path: "/api/v1/tenant/roles", typ: "api", permission: "tenant:role:create"},
		}},
	}},
}

// readOnlyActions are the permission actions the analyst role is granted.
var readOnlyActions = map[string]bool{"list": true, "get": true, "query": true, "preview": true, "sql": true, "read": true, "send": true, "create": false}

// skeleton is what createSkeleton made.
type skeleton struct {
	tenantID, hq, adminRole, analystRole int64
}

// createSkeleton inserts a tenant with organisation hq, the menu tree and roles admin
// (every permission) and analyst (read-only). It returns nil when the code is taken; the
// unique code also serialises concurrent creators.
func createSkeleton(ctx context.Context, tx pgx.Tx, code, name string) (*skeleton, error) {
	sk := &skeleton{}
	err := tx.QueryRow(ctx, `INSERT INTO tenant.tenants (code, name) VALUES ($1, $2)
		ON CONFLICT (code) DO NOTHING RETURNING id`, code, name).Scan(&sk.tenantID)
	if err == pgx.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if err := tx.QueryRow(ctx, `INSERT INTO tenant.orgs (tenant_id, code, name, sort_order) VALUES ($1, 'hq', 'Headquarters', 0) RETURNING id`, sk.tenantID).Scan(&sk.hq); err != nil {
		return nil, err
	}
	var menuIDs []int64 // the analyst's
	var insert func(parent *int64, ms []menuSpec) error
	insert = func(parent *int64, ms []menuSpec) error {
		for i, m := range ms {
			var id int64
			if err := tx.QueryRow(ctx, `INSERT INTO tenant.menus (tenant_id, parent_id, name, title, path, icon, type, permission, sort_order)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id`, sk.tenantID, parent, m.name, m.title, m.path, m.icon, m.typ, m.permission, i).Scan(&id); err != nil {
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
	if err := insert(nil, tenantMenus); err != nil {
		return nil, err
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
	if err := tx.QueryRow(ctx, `INSERT INTO tenant.roles (tenant_id, code, name, description) VALUES ($1, 'admin', 'Administrator', 'Every permission') RETURNING id`, sk.tenantID).Scan(&sk.adminRole); err != nil {
		return nil, err
	}
	if err := tx.QueryRow(ctx, `INSERT INTO tenant.roles (tenant_id, code, name, description) VALUES ($1, 'analyst', 'Analyst', 'Reads data and asks the assistant') RETURNING id`, sk.tenantID).Scan(&sk.analystRole); err != nil {
		return nil, err
	}
	if err := setRoleGrants(ctx, tx, sk.tenantID, sk.adminRole, all, nil, true, false); err != nil {
		return nil, err
	}
	if err := setRoleGrants(ctx, tx, sk.tenantID, sk.analystRole, readOnly, menuIDs, true, true); err != nil {
		return nil, err
	}
	return sk, nil
}

// addUser inserts a user of a tenant with one role.
func addUser(ctx context.Context, tx pgx.Tx, tenantID, orgID, roleID int64, username, nickname, email string, hash []byte, isAdmin bool) (int64, error) {
	var id int64
	if err := tx.QueryRow(ctx, `INSERT INTO tenant.users (tenant_id, username, nickname, email, password_hash, org_id, is_admin)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`, tenantID, username, nickname, email, string(hash), orgID, isAdmin).Scan(&id); err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO tenant.user_roles (user_id, role_id) VALUES ($1, $2)`, id, roleID); err != nil {
		return 0, fmt.Errorf("grant role: %w", err)
	}
	return id, nil
}

// action is the last segment of a permission code (basic:goods:list -> list).
func action(code string) string { return code[strings.LastIndex(code, ":")+1:] }

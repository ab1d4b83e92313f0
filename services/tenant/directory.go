package tenant

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/authn"
)

// directory is the logic over users, organisations, roles, menus and favorites. Everything
// is scoped to the caller's tenant.
type directory struct {
	store    *store
	perms    *authn.CachedPermissions
	sessions sessions
	// bcryptCost hashes passwords set by administrators and users.
	bcryptCost int
}

// IsOperator implements authn.OperatorSource from this service's own tables.
func (d *directory) IsOperator(ctx context.Context, id *authn.Identity) (bool, error) {
	return isOperator(ctx, d.store.pool, id.TenantID, id.UserID)
}

// Permissions implements authn.PermissionSource from this service's own tables.
func (d *directory) Permissions(ctx context.Context, id *authn.Identity) (map[string]bool, error) {
	perms, _, err := d.grants(ctx, id)
	return perms, err
}

// grants reads, in one query, the permission codes a user holds (administrators hold every
// code) and the administrator flag; a disabled user holds nothing.
func (d *directory) grants(ctx context.Context, id *authn.Identity) (map[string]bool, bool, error) {
	g, err := d.store.permissionsOf(ctx, id.TenantID, id.UserID)
	if err != nil {
		return nil, false, err
	}
	if g.Status != "enabled" {
		return nil, false, apperr.New(apperr.KindForbidden, "user is disabled")
	}
	out := make(map[string]bool, len(g.Codes))
	for _, c := range g.Codes {
		out[c] = true
	}
	if g.IsAdmin {
		for c := range authn.Permissions() {
			out[c] = true
		}
	}
	return out, g.IsAdmin, nil
}

// currentUser loads the caller with roles and permission codes.
type currentUser struct {
	User        *userRecord
	Roles       []roleRecord
	Permissions []string
}

func (d *directory) current(ctx context.Context, id *authn.Identity) (*currentUser, error) {
	u, roles, codes, err := d.store.currentUser(ctx, id.TenantID, id.UserID)
	if err != nil {
		return nil, err
	}
	if u == nil {
		return nil, apperr.New(apperr.KindUnauthenticated, "user no longer exists")
	}
	if u.Status != "enabled" {
		return nil, apperr.New(apperr.KindForbidden, "user is disabled")
	}
	if u.IsAdmin {
		codes = adminCodes() // the whole catalog; the query did not aggregate the roles' codes
	}
	return &currentUser{User: u, Roles: roles, Permissions: codes}, nil
}

// menuTree returns the menus the caller may see, as a forest ordered by sort order.
func (d *directory) menuTree(ctx context.Context, id *authn.Identity) ([]*menuNode, error) {
	u, err := d.store.user(ctx, id.TenantID, id.UserID)
	if err != nil {
		return nil, err
	}
	if u == nil {
		return nil, apperr.New(apperr.KindUnauthenticated, "user no longer exists")
	}
	flat, err := d.store.menus(ctx, id.TenantID, id.UserID, u.IsAdmin)
	if err != nil {
		return nil, err
	}
	return buildTree(flat, func(m menuRecord) (int64, int64) { return m.ID, m.ParentID },
		func(m menuRecord) *menuNode { return &menuNode{menuRecord: m} },
		func(p, c *menuNode) { p.Children = append(p.Children, c) }), nil
}

type menuNode struct {
	menuRecord
	Children []*menuNode
}

type orgNode struct {
	orgRecord
	Children []*orgNode
}

// buildTree links flat records (already ordered) into a forest; records whose parent is
// absent become roots, so a filtered list still shows every match.
func buildTree[R any, N any](flat []R, ids func(R) (id, parent int64), node func(R) N, adopt func(parent, child N)) []N {
	nodes := make(map[int64]N, len(flat))
	for _, r := range flat {
		id, _ := ids(r)
		nodes[id] = node(r)
	}
	var roots []N
	for _, r := range flat {
		id, parent := ids(r)
		if p, ok := nodes[parent]; ok && parent != id {
			adopt(p, nodes[id])
		} else {
			roots = append(roots, nodes[id])
		}
	}
	return roots
}

// orgTree returns the tenant's organisations as a tree; the filters keep matching orgs and
// their ancestors.
func (d *directory) orgTree(ctx context.Context, tenantID int64, status, name string) ([]*orgNode, error) {
	all, err := d.store.orgs(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	byID := map[int64]orgRecord{}
	for _, o := range all {
		byID[o.ID] = o
	}
	keep := map[int64]bool{}
	for _, o := range all {
		if (status == "" || o.Status == status) && (name == "" || strings.Contains(strings.ToLower(o.Name), strings.ToLower(name))) {
			for cur, ok := o, true; ok && !keep[cur.ID]; cur, ok = byID[cur.ParentID] {
				keep[cur.ID] = true
			}
		}
	}
	var kept []orgRecord
	for _, o := range all {
		if keep[o.ID] {
			kept = append(kept, o)
		}
	}
	return buildTree(kept, func(o orgRecord) (int64, int64) { return o.ID, o.ParentID },
		func(o orgRecord) *orgNode { return &orgNode{orgRecord: o} },
		func(p, c *orgNode) { p.Children = append(p.Children, c) }), nil
}

// roleInput is a role create or update.
type roleInput struct {
	Code, Name, Description, Status string
	Permissions                     []string
	MenuIDs                         []int64
	// Fields to change on update (nil on create: all).
	Mask []string
}

func (in roleInput) has(field string) bool { return in.Mask == nil || slices.Contains(in.Mask, field) }

// checkPermissionCodes refuses codes the contract does not declare.
func checkPermissionCodes(codes []string) error {
	known := authn.Permissions()
	for i, c := range codes {
		if !known[c] {
			return apperr.Invalid("permission_codes", "permission_codes.known",
				fmt.Sprintf("unknown permission code %q at index %d", c, i))
		}
	}
	return nil
}

func (d *directory) createRole(ctx context.Context, tenantID int64, in roleInput) (*roleRecord, error) {
	if err := checkPermissionCodes(in.Permissions); err != nil {
		return nil, err
	}
	if in.Status == "" {
		in.Status = "enabled"
	}
	var roleID int64
	var out *roleRecord
	err := pgx.BeginFunc(ctx, d.store.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `INSERT INTO tenant.roles (tenant_id, code, name, description, status) VALUES ($1, $2, $3, $4, $5) RETURNING id`,
			tenantID, in.Code, in.Name, in.Description, in.Status).Scan(&roleID)
		if isUniqueViolation(err) {
			return apperr.New(apperr.KindConflict, "role code %s already exists in this tenant", in.Code)
		}
		if err != nil {
			return err
		}
		if err := setRoleGrants(ctx, tx, tenantID, roleID, in.Permissions, in.MenuIDs, true, true); err != nil {
			return err
		}
		out, err = d.store.role(ctx, tx, tenantID, roleID) // in the transaction: a committed change always gets its answer
		return err
	})
	if err != nil {
		return nil, err
	}
	d.perms.Invalidate()
	return out, nil
}

func (d *directory) updateRole(ctx context.Context, tenantID, id int64, in roleInput) (*roleRecord, error) {
	if in.has("permission_codes") {
		if err := checkPermissionCodes(in.Permissions); err != nil {
			return nil, err
		}
	}
	var out *roleRecord
	err := pgx.BeginFunc(ctx, d.store.pool, func(tx pgx.Tx) error {
		// The role row locked first: a concurrent delete either waits for this update or has
		// already removed the role (404), never removes it between the read and the grants.
		if _, err := tx.Exec(ctx, "SELECT id FROM tenant.roles WHERE tenant_id = $1 AND id = $2 FOR NO KEY UPDATE", tenantID, id); err != nil {
			return err
		}
		cur, err := d.store.role(ctx, tx, tenantID, id)
		if err != nil {
			return err
		}
		if cur == nil {
			return apperr.NotFound("role", id)
		}
		if in.has("name") {
			cur.Name = in.Name
		}
		if in.has("description") {
			cur.Desc = in.Description
		}
		if in.has("status") {
			cur.Status = in.Status
		}
		if _, err := tx.Exec(ctx, `UPDATE tenant.roles SET name = $3, description = $4, status = $5, updated_at = now()
			WHERE tenant_id = $1 AND id = $2`, tenantID, id, cur.Name, cur.Desc, cur.Status); err != nil {
			return err
		}
		if err := setRoleGrants(ctx, tx, tenantID, id, in.Permissions, in.MenuIDs, in.has("permission_codes"), in.has("menu_ids")); err != nil {
			return err
		}
		out, err = d.store.role(ctx, tx, tenantID, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	d.perms.Invalidate()
	return out, nil
}

// deleteRole removes a role; a role still assigned to users is refused (422) unless forced.
func (d *directory) deleteRole(ctx context.Context, tenantID, id int64, force bool) error {
	err := pgx.BeginFunc(ctx, d.store.pool, func(tx pgx.Tx) error {
		// The role row locked first: of concurrent deletes one wins, the others see it gone.
		var locked int64
		err := tx.QueryRow(ctx, "SELECT id FROM tenant.roles WHERE tenant_id = $1 AND id = $2 FOR UPDATE", tenantID, id).Scan(&locked)
		if errors.Is(err, pgx.ErrNoRows) {
			return apperr.NotFound("role", id)
		}
		if err != nil {
			return err
		}
		var assigned int
		err = tx.QueryRow(ctx, `SELECT count(ur.user_id) FROM tenant.roles r LEFT JOIN tenant.user_roles ur ON ur.role_id = r.id
			WHERE r.tenant_id = $1 AND r.id = $2 GROUP BY r.id`, tenantID, id).Scan(&assigned)
		if err == pgx.ErrNoRows {
			return apperr.NotFound("role", id)
		}
		if err != nil {
			return err
		}
		if assigned > 0 && !force {
			return apperr.New(apperr.KindRule, "role %d is assigned to %d user(s): unassign it first or delete with force=true", id, assigned)
		}
		tag, err := tx.Exec(ctx, "DELETE FROM tenant.roles WHERE tenant_id = $1 AND id = $2", tenantID, id)
		if err == nil && tag.RowsAffected() == 0 {
			return apperr.NotFound("role", id)
		}
		return err
	})
	if err == nil {
		d.perms.Invalidate()
	}
	return err
}

package tenant

import (
	"context"
	"errors"
	"slices"

	"github.com/jackc/pgx/v5"
	"golang.org/x/crypto/bcrypt"

	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/authn"
)

// The tenant administrators' management of users and organisations. Everything is scoped
// to the caller's tenant: an id of another tenant's record is unknown (404) or, for a
// reference inside a request (org_id, role_ids, parent_id), a 400 naming the field.

// userInput is a user create or update.
type userInput struct {
	Username, Password, Nickname, Email, Phone, Status string
	OrgID                                              int64
	RoleIDs                                            []int64
	IsAdmin                                            bool
	// Fields to change on update (nil on create: all).
	Mask []string
}

func (in userInput) has(field string) bool { return in.Mask == nil || slices.Contains(in.Mask, field) }

// tenantCode is the code of a tenant (the password rules refuse it as a password).
func tenantCode(ctx context.Context, q querier, tenantID int64) (string, error) {
	var code string
	err := q.QueryRow(ctx, "SELECT code FROM tenant.tenants WHERE id = $1", tenantID).Scan(&code)
	return code, err
}

// checkRefs refuses an organisation or roles that are not the tenant's. The rows found are
// locked (KEY SHARE) until the transaction ends, so a concurrent delete of one waits instead
// of breaking the insert that refers to it.
func checkRefs(ctx context.Context, tx pgx.Tx, tenantID int64, in userInput) error {
	if in.has("org_id") && in.OrgID != 0 {
		var n int
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM (SELECT id FROM tenant.orgs WHERE tenant_id = $1 AND id = $2 FOR KEY SHARE) o", tenantID, in.OrgID).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return apperr.Invalid("org_id", "org_id.exist", "must be an organization of your tenant")
		}
	}
	if in.has("role_ids") && len(in.RoleIDs) > 0 {
		var n int
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM (SELECT id FROM tenant.roles WHERE tenant_id = $1 AND id = ANY($2) FOR KEY SHARE) r", tenantID, in.RoleIDs).Scan(&n); err != nil {
			return err
		}
		if n != len(in.RoleIDs) {
			return apperr.Invalid("role_ids", "role_ids.exist", "every role id must be a role of your tenant")
		}
	}
	return nil
}

func setUserRoles(ctx context.Context, tx pgx.Tx, userID int64, roleIDs []int64) error {
	if _, err := tx.Exec(ctx, "DELETE FROM tenant.user_roles WHERE user_id = $1", userID); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, "INSERT INTO tenant.user_roles (user_id, role_id) SELECT $1, unnest($2::bigint[])", userID, roleIDs)
	return err
}

func nullableID(id int64) *int64 {
	if id == 0 {
		return nil
	}
	return &id
}

func userInTx(ctx context.Context, tx pgx.Tx, tenantID, id int64, lock bool) (*userRecord, error) {
	q := "SELECT " + userColumns + userFrom + " WHERE u.tenant_id = $1 AND u.id = $2"
	if lock {
		q += " FOR NO KEY UPDATE OF u"
	}
	return scanUser(tx.QueryRow(ctx, q, tenantID, id))
}

func (d *directory) createUser(ctx context.Context, tenantID int64, in userInput) (*userRecord, error) {
	code, err := tenantCode(ctx, d.store.pool, tenantID)
	if err != nil {
		return nil, err
	}
	if err := checkPassword("password", in.Password, in.Username, code); err != nil {
		return nil, err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(in.Password), d.bcryptCost)
	if err != nil {
		return nil, err
	}
	if in.Status == "" {
		in.Status = "enabled"
	}
	var out *userRecord
	err = pgx.BeginFunc(ctx, d.store.pool, func(tx pgx.Tx) error {
		if err := checkRefs(ctx, tx, tenantID, in); err != nil {
			return err
		}
		var id int64
		err := tx.QueryRow(ctx, `INSERT INTO tenant.users (tenant_id, username, nickname, email, phone, password_hash, org_id, status, is_admin)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id`, tenantID, in.Username, in.Nickname, in.Email, in.Phone,
			string(hash), nullableID(in.OrgID), in.Status, in.IsAdmin).Scan(&id)
		if isUniqueViolation(err) {
			return apperr.New(apperr.KindConflict, "username %s already exists in this tenant", in.Username)
		}
		if err != nil {
			return err
		}
		if err := setUserRoles(ctx, tx, id, in.RoleIDs); err != nil {
			return err
		}
		out, err = userInTx(ctx, tx, tenantID, id, false)
		return err
	})
	return out, err
}

// updateUser changes the named fields. Disabling a user or changing the administrator flag
// ends the user's sessions (the flag is in their tokens).
func (d *directory) updateUser(ctx context.Context, caller *authn.Identity, id int64, in userInput) (*userRecord, error) {
	if id == caller.UserID && (in.has("status") && in.Status == "disabled" || in.has("is_admin") && !in.IsAdmin) {
		return nil, apperr.New(apperr.KindRule, "administrators cannot disable themselves or remove their own administrator flag: another administrator must")
	}
	var out *userRecord
	apply := func() {}
	err := pgx.BeginFunc(ctx, d.store.pool, func(tx pgx.Tx) error {
		cur, err := userInTx(ctx, tx, caller.TenantID, id, true)
		if err != nil {
			return err
		}
		if cur == nil {
			return apperr.NotFound("user", id)
		}
		if err := checkRefs(ctx, tx, caller.TenantID, in); err != nil {
			return err
		}
		endSessions := in.has("status") && in.Status == "disabled" && cur.Status != "disabled" ||
			in.has("is_admin") && in.IsAdmin != cur.IsAdmin
		if in.has("nickname") {
			cur.Nickname = in.Nickname
		}
		if in.has("email") {
			cur.Email = in.Email
		}
		if in.has("phone") {
			cur.Phone = in.Phone
		}
		if in.has("org_id") {
			cur.OrgID = nullableID(in.OrgID)
		}
		if in.has("status") {
			cur.Status = in.Status
		}
		if in.has("is_admin") {
			cur.IsAdmin = in.IsAdmin
		}
		if _, err := tx.Exec(ctx, `UPDATE tenant.users SET nickname = $3, email = $4, phone = $5, org_id = $6, status = $7,
			is_admin = $8, updated_at = now() WHERE tenant_id = $1 AND id = $2`, caller.TenantID, id,
			cur.Nickname, cur.Email, cur.Phone, cur.OrgID, cur.Status, cur.IsAdmin); err != nil {
			return err
		}
		if in.has("role_ids") {
			if err := setUserRoles(ctx, tx, id, in.RoleIDs); err != nil {
				return err
			}
		}
		if endSessions {
			if _, apply, err = d.sessions.endTx(ctx, tx, ofUsers, []int64{id}); err != nil {
				return err
			}
		}
		out, err = userInTx(ctx, tx, caller.TenantID, id, false)
		return err
	})
	if err != nil {
		return nil, err
	}
	apply()
	d.perms.Invalidate()
	return out, nil
}

// deleteUsers deletes the users, all or none, and ends their sessions.
func (d *directory) deleteUsers(ctx context.Context, caller *authn.Identity, ids []int64) (int, error) {
	if slices.Contains(ids, caller.UserID) {
		return 0, apperr.New(apperr.KindRule, "administrators cannot delete themselves: another administrator must")
	}
	apply := func() {}
	err := pgx.BeginFunc(ctx, d.store.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, "SELECT id FROM tenant.users WHERE tenant_id = $1 AND id = ANY($2) ORDER BY id FOR UPDATE", caller.TenantID, ids)
		if err != nil {
			return err
		}
		found, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		for _, id := range ids {
			if !slices.Contains(found, id) {
				return apperr.New(apperr.KindNotFound, "user %d not found: nothing was deleted", id)
			}
		}
		// Sessions first: the refresh-token rows go with the users.
		if _, apply, err = d.sessions.endTx(ctx, tx, ofUsers, ids); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "DELETE FROM tenant.users WHERE tenant_id = $1 AND id = ANY($2)", caller.TenantID, ids)
		return err
	})
	if err != nil {
		return 0, err
	}
	apply()
	d.perms.Invalidate()
	return len(ids), nil
}

// setPassword stores a new password for a user of the tenant, ends every session of the
// user and clears their failed-login count and lock, in one transaction. issue, when not
// nil, runs in the same transaction after the sessions have ended (ChangePassword's new
// pair). It returns the number of sessions ended.
func (d *directory) setPassword(ctx context.Context, tenantID, id int64, password, field string,
	issue func(tx pgx.Tx, u *userRecord) error) (int, error) {
	u, err := d.store.user(ctx, tenantID, id)
	if err != nil {
		return 0, err
	}
	if u == nil {
		return 0, apperr.NotFound("user", id)
	}
	if err := checkPassword(field, password, u.Username, u.TenantCode); err != nil {
		return 0, err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), d.bcryptCost)
	if err != nil {
		return 0, err
	}
	ended := 0
	apply := func() {}
	err = pgx.BeginFunc(ctx, d.store.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "UPDATE tenant.users SET password_hash = $3, updated_at = now() WHERE tenant_id = $1 AND id = $2", tenantID, id, string(hash))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return apperr.NotFound("user", id)
		}
		if _, err := tx.Exec(ctx, `WITH f AS (DELETE FROM tenant.login_failures WHERE tenant_code = $1 AND username = $2)
			DELETE FROM tenant.login_locks WHERE tenant_code = $1 AND username = $2`, u.TenantCode, u.Username); err != nil {
			return err
		}
		if ended, apply, err = d.sessions.endTx(ctx, tx, ofUsers, []int64{id}); err != nil {
			return err
		}
		if issue != nil {
			return issue(tx, u)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	apply()
	return ended, nil
}

// orgInput is an organisation create or update.
type orgInput struct {
	Name, Code, Status string
	SortOrder          int32
	ParentID           int64
	Mask               []string
}

func (in orgInput) has(field string) bool { return in.Mask == nil || slices.Contains(in.Mask, field) }

// orgInTx reads an organisation of the tenant with the row lock named (lock: "" for none,
// "FOR UPDATE", "FOR KEY SHARE").
func orgInTx(ctx context.Context, tx pgx.Tx, tenantID, id int64, lock string) (*orgRecord, error) {
	q := `SELECT id, coalesce(parent_id, 0), code, name, status, sort_order FROM tenant.orgs WHERE tenant_id = $1 AND id = $2 ` + lock
	o := &orgRecord{}
	err := tx.QueryRow(ctx, q, tenantID, id).Scan(&o.ID, &o.ParentID, &o.Code, &o.Name, &o.Status, &o.SortOrder)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return o, err
}

// checkParent refuses a parent that is not an organisation of the tenant.
func checkParent(ctx context.Context, tx pgx.Tx, tenantID, parentID int64) error {
	if parentID == 0 {
		return nil
	}
	p, err := orgInTx(ctx, tx, tenantID, parentID, "FOR KEY SHARE") // kept until the child refers to it
	if err != nil {
		return err
	}
	if p == nil {
		return apperr.Invalid("parent_id", "parent_id.exist", "must be an organization of your tenant")
	}
	return nil
}

func orgConflict(err error, code string) error {
	if isUniqueViolation(err) {
		return apperr.New(apperr.KindConflict, "organization code %s already exists in this tenant", code)
	}
	return err
}

func (d *directory) createOrg(ctx context.Context, tenantID int64, in orgInput) (*orgRecord, error) {
	if in.Status == "" {
		in.Status = "enabled"
	}
	var out *orgRecord
	err := pgx.BeginFunc(ctx, d.store.pool, func(tx pgx.Tx) error {
		if err := checkParent(ctx, tx, tenantID, in.ParentID); err != nil {
			return err
		}
		var id int64
		// An empty code becomes org-<id>, the id drawn first so both come from one insert.
		err := tx.QueryRow(ctx, `WITH n AS (SELECT nextval(pg_get_serial_sequence('tenant.orgs', 'id')) AS id)
			INSERT INTO tenant.orgs (id, tenant_id, parent_id, code, name, status, sort_order)
			SELECT n.id, $1, $2, CASE WHEN $3 = '' THEN 'org-' || n.id ELSE $3 END, $4, $5, $6 FROM n RETURNING id`,
			tenantID, nullableID(in.ParentID), in.Code, in.Name, in.Status, in.SortOrder).Scan(&id)
		if err != nil {
			return orgConflict(err, in.Code)
		}
		out, err = orgInTx(ctx, tx, tenantID, id, "")
		return err
	})
	return out, err
}

// updateOrg changes the named fields; a move (parent_id) under the organisation itself or
// one of its descendants is refused.
func (d *directory) updateOrg(ctx context.Context, tenantID, id int64, in orgInput) (*orgRecord, error) {
	var out *orgRecord
	err := pgx.BeginFunc(ctx, d.store.pool, func(tx pgx.Tx) error {
		if in.has("parent_id") {
			// Moves of one tenant run one at a time: two concurrent moves (a under b, b under
			// a) would each see no cycle and make one together.
			if _, err := tx.Exec(ctx, "SELECT id FROM tenant.tenants WHERE id = $1 FOR NO KEY UPDATE", tenantID); err != nil {
				return err
			}
		}
		cur, err := orgInTx(ctx, tx, tenantID, id, "FOR UPDATE")
		if err != nil {
			return err
		}
		if cur == nil {
			return apperr.NotFound("organization", id)
		}
		if in.has("parent_id") && in.ParentID != cur.ParentID {
			if err := checkParent(ctx, tx, tenantID, in.ParentID); err != nil {
				return err
			}
			var cycle bool
			if err := tx.QueryRow(ctx, `WITH RECURSIVE sub AS (
				SELECT id FROM tenant.orgs WHERE tenant_id = $1 AND id = $2
				UNION SELECT o.id FROM tenant.orgs o JOIN sub ON o.parent_id = sub.id)
				SELECT $3 IN (SELECT id FROM sub)`, tenantID, id, in.ParentID).Scan(&cycle); err != nil {
				return err
			}
			if cycle {
				return apperr.New(apperr.KindRule, "organization %d cannot move under itself or one of its own sub-organizations (%d)", id, in.ParentID)
			}
			cur.ParentID = in.ParentID
		}
		if in.has("name") {
			cur.Name = in.Name
		}
		if in.has("code") {
			cur.Code = in.Code
		}
		if in.has("status") {
			cur.Status = in.Status
		}
		if in.has("sort_order") {
			cur.SortOrder = in.SortOrder
		}
		if _, err := tx.Exec(ctx, `UPDATE tenant.orgs SET parent_id = $3, code = $4, name = $5, status = $6, sort_order = $7,
			updated_at = now() WHERE tenant_id = $1 AND id = $2`, tenantID, id, nullableID(cur.ParentID), cur.Code, cur.Name,
			cur.Status, cur.SortOrder); err != nil {
			return orgConflict(err, cur.Code)
		}
		out, err = orgInTx(ctx, tx, tenantID, id, "")
		return err
	})
	return out, err
}

// deleteOrg deletes an organisation without sub-organisations or users.
func (d *directory) deleteOrg(ctx context.Context, tenantID, id int64) error {
	return pgx.BeginFunc(ctx, d.store.pool, func(tx pgx.Tx) error {
		// Locked: a user or sub-organisation added meanwhile (their foreign keys lock this
		// row too) waits for this delete, then fails on the missing organisation.
		cur, err := orgInTx(ctx, tx, tenantID, id, "FOR UPDATE")
		if err != nil {
			return err
		}
		if cur == nil {
			return apperr.NotFound("organization", id)
		}
		var children, users int
		if err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM tenant.orgs WHERE parent_id = $1),
			(SELECT count(*) FROM tenant.users WHERE org_id = $1)`, id).Scan(&children, &users); err != nil {
			return err
		}
		if children > 0 || users > 0 {
			return apperr.New(apperr.KindRule, "organization %d still has %d sub-organization(s) and %d user(s): move or delete them first", id, children, users)
		}
		_, err = tx.Exec(ctx, "DELETE FROM tenant.orgs WHERE tenant_id = $1 AND id = $2", tenantID, id)
		return err
	})
}

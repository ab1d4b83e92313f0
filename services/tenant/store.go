package tenant

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/authn"
)

// store is the tenant service's access to its schema. Every query that reads or changes a
// tenant's records is scoped by tenant id.
type store struct {
	pool *pgxpool.Pool
}

// userRecord is a user with what login and token issuing need.
type userRecord struct {
	ID           int64
	TenantID     int64
	TenantCode   string
	TenantName   string
	TenantStatus string
	Username     string
	Nickname     string
	Email        string
	Phone        string
	PasswordHash string
	OrgID        *int64
	OrgName      string
	Status       string
	IsAdmin      bool
	LastLoginAt  *time.Time
	CreatedAt    time.Time
	UpdatedAt    time.Time
	RoleIDs      []int64
}

const userColumns = `u.id, u.tenant_id, t.code, t.name, t.status, u.username, u.nickname, u.email, u.phone,
	u.password_hash, u.org_id, coalesce(o.name, ''), u.status, u.is_admin, u.last_login_at, u.created_at, u.updated_at,
	coalesce((SELECT array_agg(ur.role_id ORDER BY ur.role_id) FROM tenant.user_roles ur WHERE ur.user_id = u.id), '{}')`

const userFrom = ` FROM tenant.users u JOIN tenant.tenants t ON t.id = u.tenant_id LEFT JOIN tenant.orgs o ON o.id = u.org_id`

func scanUser(row pgx.Row) (*userRecord, error) {
	u := &userRecord{}
	err := row.Scan(&u.ID, &u.TenantID, &u.TenantCode, &u.TenantName, &u.TenantStatus, &u.Username, &u.Nickname,
		&u.Email, &u.Phone, &u.PasswordHash, &u.OrgID, &u.OrgName, &u.Status, &u.IsAdmin, &u.LastLoginAt,
		&u.CreatedAt, &u.UpdatedAt, &u.RoleIDs)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return u, err
}

// userByLogin finds a user by tenant code and username; nil when either is unknown.
func (s *store) userByLogin(ctx context.Context, tenantCode, username string) (*userRecord, error) {
	return scanUser(s.pool.QueryRow(ctx, "SELECT "+userColumns+userFrom+" WHERE t.code = $1 AND u.username = $2", tenantCode, username))
}

// user finds a user of a tenant by id; nil when not found in that tenant.
func (s *store) user(ctx context.Context, tenantID, userID int64) (*userRecord, error) {
	return scanUser(s.pool.QueryRow(ctx, "SELECT "+userColumns+userFrom+" WHERE u.tenant_id = $1 AND u.id = $2", tenantID, userID))
}

// loginState is what the brute-force protection knows about a login name.
type loginState struct {
	RecentFailures int
	LockedUntil    time.Time
}

func (s *store) loginState(ctx context.Context, tenantCode, username string, window time.Duration) (loginState, error) {
	var st loginState
	var locked *time.Time
	err := s.pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM tenant.login_failures WHERE tenant_code = $1 AND username = $2 AND failed_at > now() - $3::interval),
		(SELECT locked_until FROM tenant.login_locks WHERE tenant_code = $1 AND username = $2 AND locked_until > now())`,
		tenantCode, username, window.String()).Scan(&st.RecentFailures, &locked)
	if locked != nil {
		st.LockedUntil = *locked
	}
	return st, err
}

// recordFailure counts a failed login and locks the name once the threshold is reached.
// It returns the failures within the window, this one included.
func (s *store) recordFailure(ctx context.Context, tenantCode, username string, window time.Duration, lockAfter int, lockFor time.Duration) (int, time.Time, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, time.Time{}, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	if _, err := tx.Exec(ctx, "INSERT INTO tenant.login_failures (tenant_code, username) VALUES ($1, $2)", tenantCode, username); err != nil {
		return 0, time.Time{}, err
	}
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM tenant.login_failures WHERE tenant_code = $1 AND username = $2 AND failed_at > now() - $3::interval`,
		tenantCode, username, window.String()).Scan(&n); err != nil {
		return 0, time.Time{}, err
	}
	var until time.Time
	if n >= lockAfter {
		until = time.Now().Add(lockFor)
		if _, err := tx.Exec(ctx, `INSERT INTO tenant.login_locks (tenant_code, username, locked_until) VALUES ($1, $2, $3)
			ON CONFLICT (tenant_code, username) DO UPDATE SET locked_until = excluded.locked_until`, tenantCode, username, until); err != nil {
			return 0, time.Time{}, err
		}
		// The lock replaces the count: after it ends, the user starts afresh.
		if _, err := tx.Exec(ctx, "DELETE FROM tenant.login_failures WHERE tenant_code = $1 AND username = $2", tenantCode, username); err != nil {
			return 0, time.Time{}, err
		}
	}
	return n, until, tx.Commit(ctx)
}

// loginSucceeded clears the failure count and stamps the login.
func (s *store) loginSucceeded(ctx context.Context, tenantCode, username string, userID int64) error {
	_, err := s.pool.Exec(ctx, `WITH cleared AS (DELETE FROM tenant.login_failures WHERE tenant_code = $1 AND username = $2)
		UPDATE tenant.users SET last_login_at = now() WHERE id = $3`, tenantCode, username, userID)
	return err
}

// saveCaptcha stores a captcha answer (hashed) until it expires.
func (s *store) saveCaptcha(ctx context.Context, id string, answerHash []byte, expires time.Time) error {
	_, err := s.pool.Exec(ctx, `WITH old AS (DELETE FROM tenant.captchas WHERE expires_at < now() - interval '1 hour')
		INSERT INTO tenant.captchas (id, answer_hash, expires_at) VALUES ($1, $2, $3)`, id, answerHash, expires)
	return err
}

// takeCaptcha removes a captcha and returns its answer hash (single use, right or wrong);
// found is false for an unknown or expired id.
func (s *store) takeCaptcha(ctx context.Context, id string) (hash []byte, found bool, err error) {
	var expires time.Time
	err = s.pool.QueryRow(ctx, "DELETE FROM tenant.captchas WHERE id = $1 RETURNING answer_hash, expires_at", id).Scan(&hash, &expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return hash, time.Now().Before(expires), nil
}

// refreshRecord is one issued refresh token.
type refreshRecord struct {
	ID, Family, Audience string
	UserID, TenantID     int64
	ExpiresAt            time.Time
	UsedAt, RevokedAt    *time.Time
}

func (s *store) insertRefresh(ctx context.Context, q querier, r refreshRecord) error {
	_, err := q.Exec(ctx, `INSERT INTO tenant.refresh_tokens (id, family, user_id, tenant_id, audience, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, r.ID, r.Family, r.UserID, r.TenantID, r.Audience, r.ExpiresAt)
	return err
}

// querier is a pool or a transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// lockRefresh reads a refresh token row for update inside tx.
func lockRefresh(ctx context.Context, tx pgx.Tx, id string) (*refreshRecord, error) {
	r := &refreshRecord{}
	err := tx.QueryRow(ctx, `SELECT id, family, audience, user_id, tenant_id, expires_at, used_at, revoked_at
		FROM tenant.refresh_tokens WHERE id = $1 FOR UPDATE`, id).
		Scan(&r.ID, &r.Family, &r.Audience, &r.UserID, &r.TenantID, &r.ExpiresAt, &r.UsedAt, &r.RevokedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return r, err
}

// revokeFamilyRows marks every refresh token of a family revoked; returns the latest expiry.
// The rows are locked in id order first: several requests revoking one family at once (a
// reused refresh token presented concurrently) would otherwise lock them in scan order and
// deadlock.
func revokeFamilyRows(ctx context.Context, pool *pgxpool.Pool, family string) (time.Time, error) {
	var latest *time.Time
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT id FROM tenant.refresh_tokens WHERE family = $1 ORDER BY id FOR UPDATE", family); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `WITH r AS (UPDATE tenant.refresh_tokens SET revoked_at = coalesce(revoked_at, now())
			WHERE family = $1 RETURNING expires_at) SELECT max(expires_at) FROM r`, family).Scan(&latest)
	})
	if err != nil || latest == nil {
		return time.Time{}, err
	}
	return *latest, nil
}

// permissionsOf returns the permission codes of the user's enabled roles and the admin and
// status flags, in one query.
func (s *store) permissionsOf(ctx context.Context, tenantID, userID int64) (grantRecord, error) {
	var g grantRecord
	// The operator flag comes in the same round trip (it was a second query).
	err := s.pool.QueryRow(ctx, `SELECT u.is_admin, u.status,
		coalesce((SELECT array_agg(DISTINCT rp.code ORDER BY rp.code) FROM tenant.user_roles ur
			JOIN tenant.roles r ON r.id = ur.role_id AND r.status = 'enabled'
			JOIN tenant.role_permissions rp ON rp.role_id = r.id WHERE ur.user_id = u.id), '{}'),
		coalesce((SELECT array_agg(ur.role_id ORDER BY ur.role_id) FROM tenant.user_roles ur WHERE ur.user_id = u.id), '{}'),
		u.is_admin AND u.status = 'enabled' AND t.is_operator AND t.status = 'enabled'
		FROM tenant.users u JOIN tenant.tenants t ON t.id = u.tenant_id WHERE u.tenant_id = $1 AND u.id = $2`, tenantID, userID).Scan(&g.IsAdmin, &g.Status, &g.Codes, &g.RoleIDs, &g.Operator)
	if errors.Is(err, pgx.ErrNoRows) {
		return g, apperr.NotFound("user", userID)
	}
	return g, err
}

// grantRecord is what permissionsOf reads of a user: the permission codes of the enabled
// roles, role ids, administrator flag, status, and whether the user
// is a platform operator (an enabled administrator of an enabled operator tenant).
type grantRecord struct {
	Codes    []string
	RoleIDs  []int64
	IsAdmin  bool
	Status   string
	Operator bool
}

// adminCodes is the catalog of permission codes, sorted: what an administrator holds.
var adminCodes = sync.OnceValue(func() []string {
	return slices.Sorted(maps.Keys(authn.Permissions()))
})

// currentUser reads, in one round trip, the user with tenant and organisation, the id, code
// and name of the tenant's roles the user has, and the permission codes of the enabled ones
// (what GetInfo and Login answer; a statement per part was three round trips). The user is
// nil when the tenant has none of that id.
func (s *store) currentUser(ctx context.Context, tenantID, userID int64) (*userRecord, []roleRecord, []string, error) {
	u := &userRecord{}
	var roleIDs []int64
	var roleCodes, roleNames, codes []string
	err := s.pool.QueryRow(ctx, "SELECT "+userColumns+`,
		CASE WHEN u.is_admin THEN '{}'::text[] ELSE coalesce((SELECT array_agg(DISTINCT rp.code ORDER BY rp.code) FROM tenant.user_roles ur
			JOIN tenant.roles r ON r.id = ur.role_id AND r.status = 'enabled'
			JOIN tenant.role_permissions rp ON rp.role_id = r.id WHERE ur.user_id = u.id), '{}') END,
		r.ids, r.codes, r.names`+userFrom+`
		CROSS JOIN LATERAL (SELECT coalesce(array_agg(r.id ORDER BY r.id), '{}') AS ids,
			coalesce(array_agg(r.code ORDER BY r.id), '{}') AS codes, coalesce(array_agg(r.name ORDER BY r.id), '{}') AS names
			FROM tenant.roles r WHERE r.tenant_id = u.tenant_id AND r.id IN (SELECT role_id FROM tenant.user_roles WHERE user_id = u.id)) r
		WHERE u.tenant_id = $1 AND u.id = $2`, tenantID, userID).Scan(&u.ID, &u.TenantID, &u.TenantCode, &u.TenantName,
		&u.TenantStatus, &u.Username, &u.Nickname, &u.Email, &u.Phone, &u.PasswordHash, &u.OrgID, &u.OrgName, &u.Status,
		&u.IsAdmin, &u.LastLoginAt, &u.CreatedAt, &u.UpdatedAt, &u.RoleIDs, &codes, &roleIDs, &roleCodes, &roleNames)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, nil, nil
	}
	if err != nil {
		return nil, nil, nil, err
	}
	roles := make([]roleRecord, len(roleIDs))
	for i := range roleIDs {
		roles[i] = roleRecord{ID: roleIDs[i], Code: roleCodes[i], Name: roleNames[i]}
	}
	return u, roles, codes, nil
}

// menuRecord is one menu node.
type menuRecord struct {
	ID, ParentID                       int64
	Name, Title, Path, Component, Icon string
	Type, Permission                   string
	SortOrder                          int32
	Hidden                             bool
}

// menus returns the tenant's menus the user may see: all for administrators, else those
// granted to the user's enabled roles (with their ancestors, so the tree stays connected).
func (s *store) menus(ctx context.Context, tenantID, userID int64, all bool) ([]menuRecord, error) {
	q := `SELECT id, coalesce(parent_id, 0), name, title, path, component, icon, type, permission, sort_order, hidden
		FROM tenant.menus WHERE tenant_id = $1 ORDER BY sort_order, id`
	args := []any{tenantID}
	if !all {
		q = `WITH RECURSIVE granted AS (
			SELECT m.* FROM tenant.menus m
			JOIN tenant.role_menus rm ON rm.menu_id = m.id
			JOIN tenant.user_roles ur ON ur.role_id = rm.role_id AND ur.user_id = $2
			JOIN tenant.roles r ON r.id = ur.role_id AND r.status = 'enabled'
			WHERE m.tenant_id = $1
			UNION
			SELECT p.* FROM tenant.menus p JOIN granted g ON g.parent_id = p.id)
			SELECT DISTINCT id, coalesce(parent_id, 0), name, title, path, component, icon, type, permission, sort_order, hidden
			FROM granted ORDER BY sort_order, id`
		args = append(args, userID)
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (menuRecord, error) {
		var m menuRecord
		return m, r.Scan(&m.ID, &m.ParentID, &m.Name, &m.Title, &m.Path, &m.Component, &m.Icon, &m.Type, &m.Permission, &m.SortOrder, &m.Hidden)
	})
}

// favoriteRecord is one favorite of a user.
type favoriteRecord struct {
	Type, TargetKey, Title, Path string
	SortOrder                    int32
}

func (s *store) favorites(ctx context.Context, userID int64) ([]favoriteRecord, error) {
	rows, err := s.pool.Query(ctx, `SELECT type, target_key, title, path, sort_order FROM tenant.favorites
		WHERE user_id = $1 ORDER BY sort_order, position`, userID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (favoriteRecord, error) {
		var f favoriteRecord
		return f, r.Scan(&f.Type, &f.TargetKey, &f.Title, &f.Path, &f.SortOrder)
	})
}

// replaceFavorites swaps the user's whole favorite list in one transaction. The user's row
// is locked first, so concurrent replacements run one after the other (the last one wins)
// instead of both inserting into an empty list.
func (s *store) replaceFavorites(ctx context.Context, userID int64, favs []favoriteRecord) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT 1 FROM tenant.users WHERE id = $1 FOR NO KEY UPDATE", userID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "DELETE FROM tenant.favorites WHERE user_id = $1", userID); err != nil {
			return err
		}
		for i, f := range favs {
			if _, err := tx.Exec(ctx, `INSERT INTO tenant.favorites (user_id, position, type, target_key, title, path, sort_order)
				VALUES ($1, $2, $3, $4, $5, $6, $7)`, userID, i, f.Type, f.TargetKey, f.Title, f.Path, f.SortOrder); err != nil {
				return err
			}
		}
		return nil
	})
}

// userFilter narrows the users listing.
type userFilter struct {
	Username string // substring, case-insensitive
	Status   string
	OrgID    int64
}

func (s *store) listUsers(ctx context.Context, tenantID int64, f userFilter, limit, offset int) ([]*userRecord, int64, error) {
	where := []string{"u.tenant_id = $1"}
	args := []any{tenantID}
	if f.Username != "" {
		args = append(args, "%"+escapeLike(f.Username)+"%")
		where = append(where, fmt.Sprintf("u.username ILIKE $%d", len(args)))
	}
	if f.Status != "" {
		args = append(args, f.Status)
		where = append(where, fmt.Sprintf("u.status = $%d", len(args)))
	}
	if f.OrgID != 0 {
		args = append(args, f.OrgID)
		where = append(where, fmt.Sprintf("u.org_id = $%d", len(args)))
	}
	cond := " WHERE " + strings.Join(where, " AND ")
	var total int64
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM tenant.users u"+cond, args...).Scan(&total); err != nil {
		return nil, 0, err
	}
	args = append(args, limit, offset)
	rows, err := s.pool.Query(ctx, "SELECT "+userColumns+userFrom+cond+
		fmt.Sprintf(" ORDER BY u.id LIMIT $%d OFFSET $%d", len(args)-1, len(args)), args...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var out []*userRecord
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, u)
	}
	return out, total, rows.Err()
}

func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// orgRecord is one organisation.
type orgRecord struct {
	ID, ParentID int64
	Code, Name   string
	Status       string
	SortOrder    int32
}

func (s *store) orgs(ctx context.Context, tenantID int64) ([]orgRecord, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, coalesce(parent_id, 0), code, name, status, sort_order
		FROM tenant.orgs WHERE tenant_id = $1 ORDER BY sort_order, id`, tenantID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (orgRecord, error) {
		var o orgRecord
		return o, r.Scan(&o.ID, &o.ParentID, &o.Code, &o.Name, &o.Status, &o.SortOrder)
	})
}

// roleRecord is a role with its grants.
type roleRecord struct {
	ID, TenantID         int64
	Code, Name, Desc     string
	Status               string
	Permissions          []string
	MenuIDs              []int64
	CreatedAt, UpdatedAt time.Time
}

func (s *store) role(ctx context.Context, q querier, tenantID, id int64) (*roleRecord, error) {
	r := &roleRecord{}
	err := q.QueryRow(ctx, `SELECT r.id, r.tenant_id, r.code, r.name, r.description, r.status, r.created_at, r.updated_at,
		coalesce((SELECT array_agg(code ORDER BY code) FROM tenant.role_permissions WHERE role_id = r.id), '{}'),
		coalesce((SELECT array_agg(menu_id ORDER BY menu_id) FROM tenant.role_menus WHERE role_id = r.id), '{}')
		FROM tenant.roles r WHERE r.tenant_id = $1 AND r.id = $2`, tenantID, id).
		Scan(&r.ID, &r.TenantID, &r.Code, &r.Name, &r.Desc, &r.Status, &r.CreatedAt, &r.UpdatedAt, &r.Permissions, &r.MenuIDs)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return r, err
}

// setRoleGrants replaces a role's permission codes and menus; menus must be the tenant's.
func setRoleGrants(ctx context.Context, tx pgx.Tx, tenantID, roleID int64, perms []string, menuIDs []int64, setPerms, setMenus bool) error {
	if setPerms {
		if _, err := tx.Exec(ctx, "DELETE FROM tenant.role_permissions WHERE role_id = $1", roleID); err != nil {
			return err
		}
		sorted := append([]string(nil), perms...)
		sort.Strings(sorted)
		if _, err := tx.Exec(ctx, "INSERT INTO tenant.role_permissions (role_id, code) SELECT $1, unnest($2::text[])", roleID, sorted); err != nil {
			return err
		}
	}
	if setMenus {
		var owned int
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM tenant.menus WHERE tenant_id = $1 AND id = ANY($2)", tenantID, menuIDs).Scan(&owned); err != nil {
			return err
		}
		if owned != len(menuIDs) {
			return apperr.Invalid("menu_ids", "menu_ids.exist", "every menu id must be a menu of your tenant")
		}
		if _, err := tx.Exec(ctx, "DELETE FROM tenant.role_menus WHERE role_id = $1", roleID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "INSERT INTO tenant.role_menus (role_id, menu_id) SELECT $1, unnest($2::bigint[])", roleID, menuIDs); err != nil {
			return err
		}
	}
	return nil
}

// isUniqueViolation reports a duplicate key.
func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

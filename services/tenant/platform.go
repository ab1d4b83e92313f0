package tenant

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/authn"
)

// Platform is the platform operators' management of tenants: create, list, disable and
// enable. PlatformService and the server command (`shopmind tenant ...`) both use it, so
// the command and the API behave alike.
type Platform struct {
	DB *pgxpool.Pool
	// Revocations receives the revocations of a disabled tenant's sessions (the command
	// passes a list it does not start: the revocations still reach every running process
	// through the database).
	Revocations *authn.Revocations
	// AccessTTL is the access-token lifetime (config AuthConfig.AccessTTL).
	AccessTTL time.Duration
	// BcryptCost hashes the first administrator's password.
	BcryptCost int
}

// TenantInfo is a tenant as operators see it.
type TenantInfo struct {
	ID                   int64
	Code, Name, Status   string
	IsOperator           bool
	UserCount            int64
	CreatedAt, UpdatedAt time.Time
}

const tenantInfoColumns = `t.id, t.code, t.name, t.status, t.is_operator,
	(SELECT count(*) FROM tenant.users u WHERE u.tenant_id = t.id), t.created_at, t.updated_at`

func scanTenant(row pgx.Row) (*TenantInfo, error) {
	t := &TenantInfo{}
	err := row.Scan(&t.ID, &t.Code, &t.Name, &t.Status, &t.IsOperator, &t.UserCount, &t.CreatedAt, &t.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return t, err
}

// Create creates a tenant with its first administrator (CreateTenant) and returns it.
func (p *Platform) Create(ctx context.Context, in NewTenant) (*TenantInfo, int64, error) {
	created, err := CreateTenant(ctx, p.DB, in, p.BcryptCost)
	if err != nil {
		return nil, 0, err
	}
	t, err := scanTenant(p.DB.QueryRow(ctx, "SELECT "+tenantInfoColumns+" FROM tenant.tenants t WHERE t.id = $1", created.ID))
	if err == nil && t == nil {
		err = fmt.Errorf("tenant %d vanished after its creation", created.ID)
	}
	return t, created.AdminID, err
}

// TenantFilter narrows List.
type TenantFilter struct {
	Status string // "enabled", "disabled" or "" for all
	Query  string // substring of the code or name, case-insensitive; "" for all
}

// List returns one page of tenants ordered by id, and the number matching the filter.
func (p *Platform) List(ctx context.Context, f TenantFilter, limit, offset int) ([]*TenantInfo, int64, error) {
	where := []string{"true"}
	args := []any{}
	if f.Status != "" {
		args = append(args, f.Status)
		where = append(where, fmt.Sprintf("t.status = $%d", len(args)))
	}
	if f.Query != "" {
		args = append(args, "%"+escapeLike(f.Query)+"%")
		where = append(where, fmt.Sprintf("(t.code ILIKE $%d OR t.name ILIKE $%d)", len(args), len(args)))
	}
	cond := " WHERE " + strings.Join(where, " AND ")
	var total int64
	if err := p.DB.QueryRow(ctx, "SELECT count(*) FROM tenant.tenants t"+cond, args...).Scan(&total); err != nil {
		return nil, 0, err
	}
	args = append(args, limit, offset)
	rows, err := p.DB.Query(ctx, "SELECT "+tenantInfoColumns+" FROM tenant.tenants t"+cond+
		fmt.Sprintf(" ORDER BY t.id LIMIT $%d OFFSET $%d", len(args)-1, len(args)), args...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	out := []*TenantInfo{}
	for rows.Next() {
		t, err := scanTenant(rows)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, t)
	}
	return out, total, rows.Err()
}

// IDByCode finds a tenant's id by its code (for the command, which names tenants by code).
func (p *Platform) IDByCode(ctx context.Context, code string) (int64, error) {
	var id int64
	err := p.DB.QueryRow(ctx, "SELECT id FROM tenant.tenants WHERE code = $1", code).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, apperr.New(apperr.KindNotFound, "tenant %q not found", code)
	}
	return id, err
}

// SetStatus enables or disables a tenant and returns it with the number of sessions ended.
// Disabling ends every session of its users in the same transaction. An operator tenant
// can be disabled only when allowOperator is true (the server command), so an operator
// cannot lock the operators out through the API. Setting the status it already has changes
// nothing.
func (p *Platform) SetStatus(ctx context.Context, id int64, status string, allowOperator bool) (*TenantInfo, int, error) {
	if status != "enabled" && status != "disabled" {
		return nil, 0, apperr.Invalid("status", "status.in", "must be enabled or disabled")
	}
	var out *TenantInfo
	ended := 0
	apply := func() {}
	err := pgx.BeginFunc(ctx, p.DB, func(tx pgx.Tx) error {
		var operator bool
		var current string
		err := tx.QueryRow(ctx, "SELECT is_operator, status FROM tenant.tenants WHERE id = $1 FOR UPDATE", id).Scan(&operator, &current)
		if errors.Is(err, pgx.ErrNoRows) {
			return apperr.NotFound("tenant", id)
		}
		if err != nil {
			return err
		}
		if status == "disabled" && operator && !allowOperator {
			return apperr.New(apperr.KindRule, "tenant %d is an operator tenant: it cannot be disabled through the API (use `shopmind tenant disable` on the server)", id)
		}
		if current != status {
			if _, err := tx.Exec(ctx, "UPDATE tenant.tenants SET status = $2, updated_at = now() WHERE id = $1", id, status); err != nil {
				return err
			}
		}
		if status == "disabled" {
			// Also when it was disabled already: a session that slipped through before is
			// ended now (refresh refuses a disabled tenant anyway).
			s := sessions{rev: p.Revocations, accessTTL: p.AccessTTL}
			if ended, apply, err = s.endTx(ctx, tx, ofTenant, id); err != nil {
				return err
			}
		}
		out, err = scanTenant(tx.QueryRow(ctx, "SELECT "+tenantInfoColumns+" FROM tenant.tenants t WHERE t.id = $1", id))
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	apply()
	return out, ended, nil
}

// isOperator reports whether the caller is a platform operator: an enabled administrator
// of an enabled operator tenant, read from the tables (not from the token).
func isOperator(ctx context.Context, q querier, tenantID, userID int64) (bool, error) {
	var ok bool
	err := q.QueryRow(ctx, `SELECT u.is_admin AND u.status = 'enabled' AND t.is_operator AND t.status = 'enabled'
		FROM tenant.users u JOIN tenant.tenants t ON t.id = u.tenant_id WHERE u.tenant_id = $1 AND u.id = $2`,
		tenantID, userID).Scan(&ok)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return ok, err
}

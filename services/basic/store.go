package basic

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/shopmind/shopmind/internal/apperr"
)

// store is the basic service's access to schema basic (and the read-only lookups in
// tenant.users and analysis.metrics). Every query names the caller's tenant.
type store struct {
	pool *pgxpool.Pool
}

// querier is a pool or a transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Advisory lock classes (the two-key form: class, tenant or shop id).
const (
	lockOutbox     = 0x62610001 // one push to the analytical store per tenant at a time
	lockItemNo     = 0x62610002 // item number changes of a tenant (uniqueness per shop)
	lockShopSync   = 0x62610003 // one page of a platform sync per shop at a time
	lockCategories = 0x62610004 // creation of a tenant's categories by sync
)

// xactLock takes a transaction-scoped advisory lock.
func xactLock(ctx context.Context, tx pgx.Tx, class int32, key int64) error {
	_, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1::int4, $2::int4)", class, int32(key))
	return err
}

// tryXactLock takes a transaction-scoped advisory lock if it is free.
func tryXactLock(ctx context.Context, tx pgx.Tx, class int32, key int64) (bool, error) {
	var ok bool
	err := tx.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock($1::int4, $2::int4)", class, int32(key)).Scan(&ok)
	return ok, err
}

// isUnique tells a unique violation, optionally of one constraint.
func isUnique(err error, constraint string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505" && (constraint == "" || pgErr.ConstraintName == constraint)
}

// Shops.

const shopColumns = "id, name, platform, platform_shop_id, status, created_at"

func scanShop(row pgx.Row) (*shopRecord, error) {
	sh := &shopRecord{}
	err := row.Scan(&sh.ID, &sh.Name, &sh.Platform, &sh.PlatformShopID, &sh.Status, &sh.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return sh, err
}

// shop is a shop of the tenant; nil when the tenant has none of that id.
func (s *store) shop(ctx context.Context, q querier, tenantID, id int64) (*shopRecord, error) {
	return scanShop(q.QueryRow(ctx, "SELECT "+shopColumns+" FROM basic.shops WHERE tenant_id = $1 AND id = $2", tenantID, id))
}

// shopRef checks that a referenced shop belongs to the tenant (400 naming field otherwise).
func (s *store) shopRef(ctx context.Context, q querier, tenantID, id int64, field string) (*shopRecord, error) {
	sh, err := s.shop(ctx, q, tenantID, id)
	if err != nil {
		return nil, err
	}
	if sh == nil {
		return nil, apperr.Invalid(field, "shop.exists", fmt.Sprintf("no shop %d in your tenant", id))
	}
	return sh, nil
}

// categoryRef checks that a referenced category belongs to the tenant; 0 (uncategorized)
// always does.
func (s *store) categoryRef(ctx context.Context, q querier, tenantID, id int64, field string) error {
	if id == 0 {
		return nil
	}
	var ok bool
	if err := q.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM basic.categories WHERE tenant_id = $1 AND id = $2)", tenantID, id).Scan(&ok); err != nil {
		return err
	}
	if !ok {
		return apperr.Invalid(field, "category.exists", fmt.Sprintf("no category %d in your tenant", id))
	}
	return nil
}

// staffRef checks that a staff id is a user of the tenant (read-only on tenant.users); 0
// (nobody) always is.
func (s *store) staffRef(ctx context.Context, q querier, tenantID, id int64, field string) error {
	if id == 0 {
		return nil
	}
	var ok bool
	if err := q.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM tenant.users WHERE tenant_id = $1 AND id = $2)", tenantID, id).Scan(&ok); err != nil {
		return err
	}
	if !ok {
		return apperr.Invalid(field, "staff.exists", fmt.Sprintf("no user %d in your tenant", id))
	}
	return nil
}

// tx runs f in a transaction.
func (s *store) tx(ctx context.Context, f func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, f)
}

// page runs a count and a page of a simple listing in one round trip.
func (s *store) page(ctx context.Context, table string, w *sqlWhere, order string, p page, columns string, scan func(pgx.Rows) error) (int64, error) {
	batch := &pgx.Batch{}
	batch.Queue("SELECT count(*) FROM "+table+w.sql(), w.args...)
	batch.Queue(fmt.Sprintf("SELECT %s FROM %s%s %s LIMIT %d OFFSET %d", columns, table, w.sql(), order, p.Size, p.offset()), w.args...)
	br := s.pool.SendBatch(ctx, batch)
	defer br.Close()
	var total int64
	if err := br.QueryRow().Scan(&total); err != nil {
		return 0, err
	}
	rows, err := br.Query()
	if err != nil {
		return 0, err
	}
	for rows.Next() {
		if err := scan(rows); err != nil {
			rows.Close()
			return 0, err
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	return total, br.Close()
}

// resolveShops reads the tenant's shops with the given ids or platform shop ids.
func (s *store) resolveShops(ctx context.Context, tenantID int64, ids []int64, platformIDs []string) ([]*shopRecord, error) {
	rows, err := s.pool.Query(ctx, "SELECT "+shopColumns+` FROM basic.shops
		WHERE tenant_id = $1 AND (id = ANY($2) OR platform_shop_id = ANY($3)) ORDER BY id`, tenantID, ids, platformIDs)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*shopRecord, error) { return scanShop(r) })
}

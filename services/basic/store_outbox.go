package basic

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/shopmind/shopmind/internal/analytics/warehouse"
)

// The outbox's queue (basic.warehouse_outbox) and the rows it pushes to the analytical
// store, read from schema basic.

// queuedKeys reads up to limit of the tenant's queued keys, oldest first.
func (o *outbox) queuedKeys(ctx context.Context, tx pgx.Tx, tenantID int64, limit int) ([]queued, error) {
	rows, err := tx.Query(ctx, "SELECT kind, id, seq FROM basic.warehouse_outbox WHERE tenant_id = $1 ORDER BY seq LIMIT $2", tenantID, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (queued, error) {
		var q queued
		err := r.Scan(&q.kind, &q.id, &q.seq)
		return q, err
	})
}

// unqueue removes the tenant's queued keys whose seq is still the one in items (a key
// changed meanwhile stays queued). Rows a write holds locked are skipped, never waited for
// (a write touching several keys in several statements could otherwise deadlock with this
// delete); the write gives them a new seq, so they stay queued for the next push.
func (o *outbox) unqueue(ctx context.Context, tx pgx.Tx, tenantID int64, items []queued) error {
	kinds := make([]string, len(items))
	keys := make([]int64, len(items))
	seqs := make([]int64, len(items))
	for i, q := range items {
		kinds[i], keys[i], seqs[i] = q.kind, q.id, q.seq
	}
	_, err := tx.Exec(ctx, `DELETE FROM basic.warehouse_outbox o WHERE (o.tenant_id, o.kind, o.id) IN (
		SELECT q.tenant_id, q.kind, q.id FROM basic.warehouse_outbox q
		JOIN unnest($2::text[], $3::bigint[], $4::bigint[]) AS d(kind, id, seq) ON q.kind = d.kind AND q.id = d.id AND q.seq = d.seq
		WHERE q.tenant_id = $1 FOR UPDATE OF q SKIP LOCKED)`, tenantID, kinds, keys, seqs)
	return err
}

// queuedTenants lists the tenants with queued keys.
func (o *outbox) queuedTenants(ctx context.Context) ([]int64, error) {
	rows, err := o.pool.Query(ctx, "SELECT DISTINCT tenant_id FROM basic.warehouse_outbox")
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

func (o *outbox) shops(ctx context.Context, tx pgx.Tx, tenantID int64, ids []int64) ([]warehouse.Shop, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, "SELECT id, name, platform, status, created_at FROM basic.shops WHERE tenant_id = $1 AND id = ANY($2) ORDER BY id", tenantID, ids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (warehouse.Shop, error) {
		s := warehouse.Shop{TenantID: tenantID}
		err := r.Scan(&s.ShopID, &s.ShopName, &s.Platform, &s.Status, &s.CreatedAt)
		s.CreatedAt = sec(s.CreatedAt)
		return s, err
	})
}

func (o *outbox) categories(ctx context.Context, tx pgx.Tx, tenantID int64, ids []int64) ([]warehouse.Category, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, "SELECT id, parent_id, name, level FROM basic.categories WHERE tenant_id = $1 AND id = ANY($2) ORDER BY id", tenantID, ids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (warehouse.Category, error) {
		c := warehouse.Category{TenantID: tenantID}
		var level int32
		err := r.Scan(&c.CategoryID, &c.ParentID, &c.CategoryName, &level)
		c.Level = int64(level)
		return c, err
	})
}

func (o *outbox) goods(ctx context.Context, tx pgx.Tx, tenantID int64, ids []int64) ([]warehouse.Goods, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, `SELECT g.id, g.shop_id, g.category_id, g.staff_id, g.name, g.item_no, s.platform, g.is_virtual, g.status,
		g.price::float8, g.cost::float8, g.created_at, g.updated_at
		FROM basic.goods g JOIN basic.shops s ON s.tenant_id = g.tenant_id AND s.id = g.shop_id
		WHERE g.tenant_id = $1 AND g.id = ANY($2) ORDER BY g.id`, tenantID, ids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (warehouse.Goods, error) {
		g := warehouse.Goods{TenantID: tenantID}
		err := r.Scan(&g.GoodsID, &g.ShopID, &g.CategoryID, &g.StaffID, &g.GoodsName, &g.ItemNo, &g.Platform, &g.IsVirtual,
			&g.Status, &g.Price, &g.Cost, &g.CreatedAt, &g.UpdatedAt)
		g.CreatedAt, g.UpdatedAt = sec(g.CreatedAt), sec(g.UpdatedAt)
		return g, err
	})
}

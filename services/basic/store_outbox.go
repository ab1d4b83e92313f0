package basic

import (
	"context"
	"time"

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

// orders reads imported orders (basic.orders) with their lines, as the analytical store
// keeps them: the platform is the shop's, a line's cost is its goods' cost times the
// quantity, lines carry the order's status and time.
func (o *outbox) orders(ctx context.Context, tx pgx.Tx, tenantID int64, ids []int64) ([]warehouse.Order, []warehouse.OrderItem, error) {
	if len(ids) == 0 {
		return nil, nil, nil
	}
	rows, err := tx.Query(ctx, `SELECT o.id, o.order_no, o.shop_id, s.platform, o.status, o.buyer_id, o.total_amount::float8,
		o.discount_amount::float8, o.paid_amount::float8, o.item_count, o.ordered_at, o.paid_at, o.shipped_at, o.completed_at
		FROM basic.orders o JOIN basic.shops s ON s.tenant_id = o.tenant_id AND s.id = o.shop_id
		WHERE o.tenant_id = $1 AND o.id = ANY($2) ORDER BY o.id`, tenantID, ids)
	if err != nil {
		return nil, nil, err
	}
	orders, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (warehouse.Order, error) {
		w := warehouse.Order{TenantID: tenantID}
		err := r.Scan(&w.OrderID, &w.OrderNo, &w.ShopID, &w.Platform, &w.Status, &w.BuyerID, &w.TotalAmount, &w.DiscountAmount,
			&w.PaidAmount, &w.ItemCount, &w.OrderedAt, &w.PaidAt, &w.ShippedAt, &w.CompletedAt)
		w.OrderedAt = sec(w.OrderedAt)
		for _, t := range []**time.Time{&w.PaidAt, &w.ShippedAt, &w.CompletedAt} {
			if *t != nil {
				v := sec(**t)
				*t = &v
			}
		}
		return w, err
	})
	if err != nil {
		return nil, nil, err
	}
	rows, err = tx.Query(ctx, `SELECT i.id, i.order_id, i.goods_id, i.sku_id, o.shop_id, o.status, i.quantity, i.unit_price::float8,
		i.amount::float8, coalesce(g.cost, 0)::float8 * i.quantity, o.ordered_at
		FROM basic.order_items i JOIN basic.orders o ON o.tenant_id = i.tenant_id AND o.id = i.order_id
		LEFT JOIN basic.goods g ON g.tenant_id = i.tenant_id AND g.id = i.goods_id
		WHERE i.tenant_id = $1 AND i.order_id = ANY($2) ORDER BY i.order_id, i.line_no`, tenantID, ids)
	if err != nil {
		return nil, nil, err
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (warehouse.OrderItem, error) {
		it := warehouse.OrderItem{TenantID: tenantID}
		err := r.Scan(&it.ItemID, &it.OrderID, &it.GoodsID, &it.SkuID, &it.ShopID, &it.Status, &it.Quantity, &it.UnitPrice,
			&it.Amount, &it.CostAmount, &it.OrderedAt)
		it.OrderedAt = sec(it.OrderedAt)
		return it, err
	})
	return orders, items, err
}

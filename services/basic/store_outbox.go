package basic

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/shopmind/shopmind/internal/analytics/warehouse"
)

// The rows the outbox pushes to the analytical store, read from schema basic.

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

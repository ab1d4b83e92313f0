package basic

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shopmind/shopmind/internal/analytics/warehouse"
)

// The reads and writes of the import of a tenant's basic data from the analytical store
// (seed.go).

// demoTenantID reads the id of the demo tenant; pgx.ErrNoRows when there is none.
func demoTenantID(ctx context.Context, q querier) (int64, error) {
	var tenantID int64
	err := q.QueryRow(ctx, "SELECT id FROM tenant.tenants WHERE code = 'demo'").Scan(&tenantID)
	return tenantID, err
}

// hasShops reports whether the tenant has a shop in basic.
func hasShops(ctx context.Context, q querier, tenantID int64) (bool, error) {
	var has bool
	err := q.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM basic.shops WHERE tenant_id = $1)", tenantID).Scan(&has)
	return has, err
}

// warehouseTenants lists the tenants that have shops in the analytical store.
func (c *handlerDeps) warehouseTenants(ctx context.Context) ([]int64, error) {
	d := c.wh.Dialect()
	res, err := c.wh.Query(ctx, "SELECT DISTINCT i_tenant_id FROM "+warehouse.TableName(d, warehouse.TableShops),
		nil, warehouse.QueryOptions{MaxRows: 1_000_000, Timeout: time.Minute})
	if err != nil {
		return nil, err
	}
	tenants := make([]int64, 0, len(res.Rows))
	for _, r := range res.Rows {
		tenants = append(tenants, asInt(r[0]))
	}
	return tenants, nil
}

// warehouseRows reads the tenant's rows of an analytical store table, by the first column.
func (c *handlerDeps) warehouseRows(ctx context.Context, tenantID int64, table, columns string) ([][]any, error) {
	d := c.wh.Dialect()
	sql := fmt.Sprintf("SELECT %s FROM %s WHERE i_tenant_id = %s ORDER BY 1", columns, warehouse.TableName(d, table), warehouse.Placeholder(d, 1))
	res, err := c.wh.Query(ctx, sql, []any{tenantID}, warehouse.QueryOptions{MaxRows: 10_000_000, Timeout: 5 * time.Minute})
	if err != nil {
		return nil, err
	}
	return res.Rows, nil
}

// warehouseShops reads the tenant's shops in the analytical store: shop_id, shop_name,
// platform, status, created_at.
func (c *handlerDeps) warehouseShops(ctx context.Context, tenantID int64) ([][]any, error) {
	return c.warehouseRows(ctx, tenantID, warehouse.TableShops, "shop_id, shop_name, platform, status, created_at")
}

// warehouseCategories reads the tenant's categories in the analytical store: category_id,
// parent_id, category_name, level.
func (c *handlerDeps) warehouseCategories(ctx context.Context, tenantID int64) ([][]any, error) {
	return c.warehouseRows(ctx, tenantID, warehouse.TableCategories, "category_id, parent_id, category_name, level")
}

// warehouseGoods reads the tenant's goods in the analytical store: goods_id, shop_id,
// category_id, staff_id, goods_name, item_no, is_virtual, status, price, cost, created_at,
// updated_at.
func (c *handlerDeps) warehouseGoods(ctx context.Context, tenantID int64) ([][]any, error) {
	return c.warehouseRows(ctx, tenantID, warehouse.TableGoods, "goods_id, shop_id, category_id, staff_id, goods_name, item_no, is_virtual, status, price, cost, created_at, updated_at")
}

// copyImportedShops inserts shops with their ids: tenant_id, id, name, platform,
// platform_shop_id, status, created_at.
func copyImportedShops(ctx context.Context, tx pgx.Tx, rows [][]any) error {
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"basic", "shops"}, []string{"tenant_id", "id", "name", "platform", "platform_shop_id", "status", "created_at"},
		pgx.CopyFromRows(rows))
	return err
}

// copyImportedCategories inserts categories with their ids: tenant_id, id, parent_id,
// name, level, sort_order.
func copyImportedCategories(ctx context.Context, tx pgx.Tx, rows [][]any) error {
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"basic", "categories"}, []string{"tenant_id", "id", "parent_id", "name", "level", "sort_order"},
		pgx.CopyFromRows(rows))
	return err
}

// copyImportedGoods inserts goods with their ids: tenant_id, id, shop_id, category_id,
// staff_id, name, item_no, is_virtual, status, price, cost, created_at, updated_at,
// deleted_at.
func copyImportedGoods(ctx context.Context, tx pgx.Tx, rows [][]any) error {
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"basic", "goods"}, []string{"tenant_id", "id", "shop_id", "category_id", "staff_id", "name", "item_no",
		"is_virtual", "status", "price", "cost", "created_at", "updated_at", "deleted_at"}, pgx.CopyFromRows(rows))
	return err
}

// advanceIDSequences moves the id sequences of shops, categories and goods past the ids
// in the tables, so new rows of any tenant get ids above imported ones.
func advanceIDSequences(ctx context.Context, tx pgx.Tx) error {
	for _, t := range []string{"shops", "categories", "goods"} {
		if _, err := tx.Exec(ctx, fmt.Sprintf(`SELECT setval(pg_get_serial_sequence('basic.%[1]s', 'id'),
				GREATEST((SELECT coalesce(max(id), 1) FROM basic.%[1]s), (SELECT last_value FROM basic.%[1]s_id_seq)))`, t)); err != nil {
			return err
		}
	}
	return nil
}

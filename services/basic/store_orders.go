package basic

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/shopmind/shopmind/internal/analytics/warehouse"
)

// The orders listing's SQL: the statements on the analytical store (orders.go says which)
// and the lookups in schema basic that complete its rows.

// orderColumns are the columns the page reads, in scan order.
const orderColumns = "order_id, order_no, shop_id, platform, status, buyer_id, total_amount, discount_amount, paid_amount, ordered_at, paid_at, shipped_at, completed_at"

// sqlArgs collects the arguments of a statement in a dialect.
type sqlArgs struct {
	dialect string
	args    []any
}

func (a *sqlArgs) p(v any) string {
	a.args = append(a.args, v)
	return warehouse.Placeholder(a.dialect, len(a.args))
}

// ordersSQL is the count and page statements of a listing; both take Args.
type ordersSQL struct {
	Count, Page string
	Args        []any
}

// buildOrdersSQL generates the listing's statements for a dialect.
func buildOrdersSQL(dialect string, tenantID int64, f orderFilter, sk sortKey, p page) ordersSQL {
	a := &sqlArgs{dialect: dialect}
	conds := []string{"i_tenant_id = " + a.p(tenantID)}
	if f.ShopID != nil {
		conds = append(conds, "shop_id = "+a.p(*f.ShopID))
	}
	if f.Status != "" {
		conds = append(conds, "status = "+a.p(f.Status))
	}
	if f.OrderNo != "" {
		conds = append(conds, "order_no = "+a.p(f.OrderNo))
	}
	if f.Start != nil {
		conds = append(conds, "ordered_at >= "+a.p(f.Start.UTC()))
	}
	if f.End != nil {
		conds = append(conds, "ordered_at < "+a.p(f.End.UTC()))
	}
	table := warehouse.TableName(dialect, warehouse.TableOrders)
	where := " WHERE " + strings.Join(conds, " AND ")
	col := orderSorts[sk.Field]
	order := fmt.Sprintf(" ORDER BY %s %s", col, sk.dir())
	if col == "paid_at" {
		order += " NULLS LAST" // both dialects put unpaid orders last either way
	}
	if col != "order_id" {
		order += ", order_id " + sk.dir()
	}
	limit := fmt.Sprintf(" LIMIT %d OFFSET %d", p.Size, p.offset())
	if dialect == warehouse.DialectClickHouse {
		limit = fmt.Sprintf(" LIMIT %d, %d", p.offset(), p.Size) // the form every ClickHouse release accepts
	}
	return ordersSQL{
		Count: "SELECT count(*) AS total FROM " + table + where,
		Page:  "SELECT " + orderColumns + " FROM " + table + where + order + limit,
		Args:  a.args,
	}
}

// buildLinesSQL reads the lines of the page's orders (bounded by their time range, which
// keeps ClickHouse on the partitions of the page).
func buildLinesSQL(dialect string, tenantID int64, orderIDs []int64, from, to time.Time) (string, []any) {
	a := &sqlArgs{dialect: dialect}
	ids := make([]string, len(orderIDs))
	tenant := a.p(tenantID)
	for i, id := range orderIDs {
		ids[i] = a.p(id)
	}
	sql := fmt.Sprintf("SELECT order_id, item_id, goods_id, sku_id, quantity, unit_price, amount FROM %s WHERE i_tenant_id = %s AND order_id IN (%s) AND ordered_at >= %s AND ordered_at <= %s ORDER BY order_id, item_id",
		warehouse.TableName(dialect, warehouse.TableOrderItems), tenant, strings.Join(ids, ", "), a.p(from.UTC()), a.p(to.UTC()))
	return sql, a.args
}

// shopNames reads the names of the given shops, by id.
func shopNames(ctx context.Context, q querier, tenantID int64, ids []int64) (map[int64]string, error) {
	names := map[int64]string{}
	rows, err := q.Query(ctx, "SELECT id, name FROM basic.shops WHERE tenant_id = $1 AND id = ANY($2)", tenantID, ids)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			rows.Close()
			return nil, err
		}
		names[id] = name
	}
	rows.Close()
	return names, rows.Err()
}

// lineGoodsInfo is what an order line shows of its goods.
type lineGoodsInfo struct{ name, platformID, itemNo string }

// lineGoods reads what order lines show of the given goods, by id.
func lineGoods(ctx context.Context, q querier, tenantID int64, ids []int64) (map[int64]lineGoodsInfo, error) {
	goods := map[int64]lineGoodsInfo{}
	rows, err := q.Query(ctx, "SELECT id, name, platform_goods_id, item_no FROM basic.goods WHERE tenant_id = $1 AND id = ANY($2)", tenantID, ids)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id int64
		var g lineGoodsInfo
		if err := rows.Scan(&id, &g.name, &g.platformID, &g.itemNo); err != nil {
			rows.Close()
			return nil, err
		}
		goods[id] = g
	}
	rows.Close()
	return goods, rows.Err()
}

// lineSKUInfo is what an order line shows of its SKU.
type lineSKUInfo struct {
	goodsID                  int64
	platformID, spec, itemNo string
}

// lineSKUs reads what order lines show of the given SKUs, by id (none: no query).
func lineSKUs(ctx context.Context, q querier, tenantID int64, ids []int64) (map[int64]lineSKUInfo, error) {
	skus := map[int64]lineSKUInfo{}
	if len(ids) == 0 {
		return skus, nil
	}
	rows, err := q.Query(ctx, "SELECT id, goods_id, platform_sku_id, spec, item_no FROM basic.skus WHERE tenant_id = $1 AND id = ANY($2)", tenantID, ids)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id int64
		var k lineSKUInfo
		if err := rows.Scan(&id, &k.goodsID, &k.platformID, &k.spec, &k.itemNo); err != nil {
			rows.Close()
			return nil, err
		}
		skus[id] = k
	}
	rows.Close()
	return skus, rows.Err()
}

package warehouse

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/shopmind/shopmind/internal/analytics/catalog"
)

// UpsertOrders (both dialects) replaces orders with their complete item lists: the orders'
// previous rows and items are removed and the given ones written. basic's outbox pushes the
// orders merchants import with it (an order whose status or lines changed is replaced
// whole). PostgreSQL: one transaction; ClickHouse: delete mutations, then inserts.

// orderKeys groups the orders' ids by tenant.
func orderKeys(orders []Order) (tenants []int64, ids map[int64][]int64) {
	ids = map[int64][]int64{}
	for _, o := range orders {
		if _, ok := ids[o.TenantID]; !ok {
			tenants = append(tenants, o.TenantID)
		}
		ids[o.TenantID] = append(ids[o.TenantID], o.OrderID)
	}
	return tenants, ids
}

func (w *pgWriter) UpsertOrders(ctx context.Context, orders []Order, items []OrderItem) error {
	if len(orders) == 0 {
		return nil
	}
	tenants, ids := orderKeys(orders)
	return pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		for _, t := range tenants {
			for _, table := range []string{TableOrderItems, TableOrders} {
				sql := fmt.Sprintf("DELETE FROM %s WHERE %s = $1 AND order_id = ANY($2)", pgIdent(PostgresSchema, table), pgIdent(catalog.TenantColumn))
				if _, err := tx.Exec(ctx, sql, t, ids[t]); err != nil {
					return fmt.Errorf("warehouse: replace %s: %w", table, err)
				}
			}
		}
		if err := w.copy(ctx, tx, TableOrders, len(orders), func(i int) []any { return orders[i].values() }); err != nil {
			return err
		}
		return w.copy(ctx, tx, TableOrderItems, len(items), func(i int) []any { return items[i].values() })
	})
}

func (w *chWriter) UpsertOrders(ctx context.Context, orders []Order, items []OrderItem) error {
	if len(orders) == 0 {
		return nil
	}
	tenants, ids := orderKeys(orders)
	for _, t := range tenants {
		list := make([]string, len(ids[t]))
		for i, id := range ids[t] {
			list[i] = strconv.FormatInt(id, 10)
		}
		where := fmt.Sprintf("%s = %d AND order_id IN (%s)", catalog.TenantColumn, t, strings.Join(list, ", "))
		for _, table := range []string{TableOrderItems, TableOrders} {
			if err := (*chStore)(w).mutate(ctx, table, "DELETE WHERE "+where); err != nil {
				return err
			}
		}
	}
	return w.Orders(ctx, orders, items)
}

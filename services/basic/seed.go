package basic

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shopmind/shopmind/internal/analytics/warehouse"
	"github.com/shopmind/shopmind/internal/service"
)

// seed makes schema basic agree with the demo data (SHOPMIND_DEMO_DATA): the analysis
// service, which seeds first, generates the demo tenant's shops, categories, goods and
// orders straight into the analytical store; when the demo tenant has no shop in basic
// yet, its shops, categories and goods are imported from the store's basic_* rows with
// their ids, so listings, order lines and metrics name the same things. Shop status
// "open" (the generator's) becomes active, and the imported rows are pushed back to the
// store through the outbox so both sides then hold the same values.
func (st *registration) seed(ctx context.Context, deps service.Deps) error {
	var tenantID int64
	err := deps.DB.QueryRow(ctx, "SELECT id FROM tenant.tenants WHERE code = 'demo'").Scan(&tenantID)
	if errors.Is(err, pgx.ErrNoRows) {
		deps.Logger.Warn("demo data: tenant demo not found (the tenant service creates it); skipped")
		return nil
	}
	if err != nil {
		return err
	}
	n, err := st.handlers.importFromWarehouse(ctx, tenantID)
	if err != nil {
		return fmt.Errorf("import demo data from the analytical store: %w", err)
	}
	if n.Shops > 0 {
		deps.Logger.Info("demo data imported into basic", "tenant", "demo", "shops", n.Shops, "categories", n.Categories, "goods", n.Goods)
	}
	return nil
}

// adoptAll imports every tenant that has shops in the analytical store but none in basic:
// data loaded straight into the store (the demo data seed, `shopmind demo-data`) becomes
// basic's, with its ids, before the service serves, so new rows never reuse those ids.
func (c *handlerDeps) adoptAll(ctx context.Context) error {
	d := c.wh.Dialect()
	res, err := c.wh.Query(ctx, "SELECT DISTINCT i_tenant_id FROM "+warehouse.TableName(d, warehouse.TableShops),
		nil, warehouse.QueryOptions{MaxRows: 1_000_000, Timeout: time.Minute})
	if err != nil {
		return err
	}
	for _, r := range res.Rows {
		tenantID := asInt(r[0])
		n, err := c.importFromWarehouse(ctx, tenantID)
		if err != nil {
			return fmt.Errorf("tenant %d: %w", tenantID, err)
		}
		if n.Shops > 0 {
			c.log.Info("basic data adopted from the analytical store", "tenant_id", tenantID, "shops", n.Shops, "categories", n.Categories, "goods", n.Goods)
		}
	}
	return nil
}

// importCounts say what an import brought in.
type importCounts struct{ Shops, Categories, Goods int }

// importFromWarehouse copies a tenant's shops, categories and goods from the analytical
// store into basic, unless the tenant already has shops in basic.
func (c *handlerDeps) importFromWarehouse(ctx context.Context, tenantID int64) (importCounts, error) {
	var counts importCounts
	var has bool
	if err := c.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM basic.shops WHERE tenant_id = $1)", tenantID).Scan(&has); err != nil || has {
		return counts, err
	}
	d := c.wh.Dialect()
	read := func(table, columns string) ([][]any, error) {
		sql := fmt.Sprintf("SELECT %s FROM %s WHERE i_tenant_id = %s ORDER BY 1", columns, warehouse.TableName(d, table), warehouse.Placeholder(d, 1))
		res, err := c.wh.Query(ctx, sql, []any{tenantID}, warehouse.QueryOptions{MaxRows: 10_000_000, Timeout: 5 * time.Minute})
		if err != nil {
			return nil, err
		}
		return res.Rows, nil
	}
	shops, err := read(warehouse.TableShops, "shop_id, shop_name, platform, status, created_at")
	if err != nil || len(shops) == 0 {
		return counts, err
	}
	cats, err := read(warehouse.TableCategories, "category_id, parent_id, category_name, level")
	if err != nil {
		return counts, err
	}
	goods, err := read(warehouse.TableGoods, "goods_id, shop_id, category_id, staff_id, goods_name, item_no, is_virtual, status, price, cost, created_at, updated_at")
	if err != nil {
		return counts, err
	}
	err = c.store.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1::int4, $2::int4)", lockOutbox, int32(tenantID)); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM basic.shops WHERE tenant_id = $1)", tenantID).Scan(&has); err != nil || has {
			return err // another replica imported meanwhile
		}
		var rows [][]any
		for _, r := range shops {
			rows = append(rows, []any{tenantID, asInt(r[0]), truncateRunes(nonEmpty(asString(r[1]), "shop "+strconv.FormatInt(asInt(r[0]), 10)), 128),
				platformCode(asString(r[2])), strconv.FormatInt(asInt(r[0]), 10), shopStatus(asString(r[3])), timeOr(r[4])})
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"basic", "shops"}, []string{"tenant_id", "id", "name", "platform", "platform_shop_id", "status", "created_at"},
			pgx.CopyFromRows(rows)); err != nil {
			return err
		}
		rows = rows[:0]
		for _, r := range cats {
			rows = append(rows, []any{tenantID, asInt(r[0]), asInt(r[1]), truncateRunes(nonEmpty(asString(r[2]), "category "+strconv.FormatInt(asInt(r[0]), 10)), 64),
				int32(max(asInt(r[3]), 1)), int32(asInt(r[0]))})
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"basic", "categories"}, []string{"tenant_id", "id", "parent_id", "name", "level", "sort_order"},
			pgx.CopyFromRows(rows)); err != nil {
			return err
		}
		rows = rows[:0]
		for _, r := range goods {
			status := asString(r[7])
			if status != statusOnSale && status != statusOffSale && status != statusDeleted {
				status = statusOffSale
			}
			var deletedAt any
			if status == statusDeleted {
				deletedAt = timeOr(r[11])
			}
			rows = append(rows, []any{tenantID, asInt(r[0]), asInt(r[1]), asInt(r[2]), asInt(r[3]),
				truncateRunes(nonEmpty(asString(r[4]), "goods "+strconv.FormatInt(asInt(r[0]), 10)), 128), truncateRunes(asString(r[5]), 64),
				asInt(r[6]) != 0 || r[6] == true, status, money(max(asFloat(r[8]), 0)), money(max(asFloat(r[9]), 0)), timeOr(r[10]), timeOr(r[11]), deletedAt})
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"basic", "goods"}, []string{"tenant_id", "id", "shop_id", "category_id", "staff_id", "name", "item_no",
			"is_virtual", "status", "price", "cost", "created_at", "updated_at", "deleted_at"}, pgx.CopyFromRows(rows)); err != nil {
			return err
		}
		// COPY fires the insert triggers: the imported keys are queued for the store.
		// New rows of any tenant get ids above the imported ones.
		for _, t := range []string{"shops", "categories", "goods"} {
			if _, err := tx.Exec(ctx, fmt.Sprintf(`SELECT setval(pg_get_serial_sequence('basic.%[1]s', 'id'),
				GREATEST((SELECT coalesce(max(id), 1) FROM basic.%[1]s), (SELECT last_value FROM basic.%[1]s_id_seq)))`, t)); err != nil {
				return err
			}
		}
		counts = importCounts{Shops: len(shops), Categories: len(cats), Goods: len(goods)}
		return nil
	})
	if err != nil {
		return importCounts{}, err
	}
	if err := c.outbox.flush(ctx, tenantID); err != nil {
		c.log.Warn("demo data: push to the analytical store failed; retried in the background", "error", err)
	}
	return counts, nil
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func timeOr(v any) time.Time {
	if t, ok := v.(time.Time); ok {
		return t
	}
	return time.Now().UTC()
}

// shopStatus maps a store's shop status to the contract's.
func shopStatus(s string) string {
	switch s {
	case shopActive, shopDisabled, shopExpired:
		return s
	case "closed", "inactive":
		return shopDisabled
	default: // open, ...
		return shopActive
	}
}

// platformCode keeps a platform code the schema accepts.
func platformCode(s string) string {
	if platformRE.MatchString(s) {
		return s
	}
	return "other"
}

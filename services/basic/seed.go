package basic

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

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
	tenantID, err := demoTenantID(ctx, deps.DB)
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
	tenants, err := c.warehouseTenants(ctx)
	if err != nil {
		return err
	}
	for _, tenantID := range tenants {
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
	if has, err := hasShops(ctx, c.pool, tenantID); err != nil || has {
		return counts, err
	}
	shops, err := c.warehouseShops(ctx, tenantID)
	if err != nil || len(shops) == 0 {
		return counts, err
	}
	cats, err := c.warehouseCategories(ctx, tenantID)
	if err != nil {
		return counts, err
	}
	goods, err := c.warehouseGoods(ctx, tenantID)
	if err != nil {
		return counts, err
	}
	err = c.store.tx(ctx, func(tx pgx.Tx) error {
		if err := xactLock(ctx, tx, lockOutbox, tenantID); err != nil {
			return err
		}
		if has, err := hasShops(ctx, tx, tenantID); err != nil || has {
			return err // another replica imported meanwhile
		}
		var rows [][]any
		for _, r := range shops {
			rows = append(rows, []any{tenantID, asInt(r[0]), truncateRunes(nonEmpty(asString(r[1]), "shop "+strconv.FormatInt(asInt(r[0]), 10)), 128),
				platformCode(asString(r[2])), strconv.FormatInt(asInt(r[0]), 10), shopStatus(asString(r[3])), timeOr(r[4])})
		}
		if err := copyImportedShops(ctx, tx, rows); err != nil {
			return err
		}
		rows = rows[:0]
		for _, r := range cats {
			rows = append(rows, []any{tenantID, asInt(r[0]), asInt(r[1]), truncateRunes(nonEmpty(asString(r[2]), "category "+strconv.FormatInt(asInt(r[0]), 10)), 64),
				int32(max(asInt(r[3]), 1)), int32(asInt(r[0]))})
		}
		if err := copyImportedCategories(ctx, tx, rows); err != nil {
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
		if err := copyImportedGoods(ctx, tx, rows); err != nil {
			return err
		}
		// COPY fires the insert triggers: the imported keys are queued for the store.
		// New rows of any tenant get ids above the imported ones.
		if err := advanceIDSequences(ctx, tx); err != nil {
			return err
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

package basic

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The SQL of the platform and partner-A syncs (sync.go): reading and locking the goods a
// page names, batched inserts and updates of goods and SKUs, categories by path.

// analyzeGoods refreshes the planner's statistics of goods and SKUs.
func analyzeGoods(ctx context.Context, pool *pgxpool.Pool) error {
	_, err := pool.Exec(ctx, "ANALYZE basic.goods, basic.skus")
	return err
}

// categoryChild returns the id of the category name under parent (0: a root), creating it
// at level when it does not exist.
func categoryChild(ctx context.Context, tx pgx.Tx, tenantID, parent int64, name string, level int) (int64, error) {
	var id int64
	err := tx.QueryRow(ctx, "SELECT id FROM basic.categories WHERE tenant_id = $1 AND parent_id = $2 AND name = $3", tenantID, parent, name).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		// New categories of a tenant are created one transaction at a time: two syncs creating
		// the same new paths in different orders would otherwise deadlock on the unique key.
		if err := xactLock(ctx, tx, lockCategories, tenantID); err != nil {
			return 0, err
		}
		err = tx.QueryRow(ctx, `INSERT INTO basic.categories (tenant_id, parent_id, name, level) VALUES ($1, $2, $3, $4)
			ON CONFLICT (tenant_id, parent_id, name) DO UPDATE SET name = EXCLUDED.name RETURNING id`, tenantID, parent, name, level).Scan(&id)
	}
	return id, err
}

// deleteSKUs deletes the SKUs with the given ids.
func deleteSKUs(ctx context.Context, tx pgx.Tx, tenantID int64, ids []int64) error {
	_, err := tx.Exec(ctx, "DELETE FROM basic.skus WHERE tenant_id = $1 AND id = ANY($2)", tenantID, ids)
	return err
}

// platformRef is what a partner-A sync needs to know of a goods it is asked to sync.
type platformRef struct {
	id      int64
	pid     string
	deleted bool
}

// platformRefs reads the platform goods id and deletion of the given goods, by id.
func platformRefs(ctx context.Context, q querier, tenantID int64, goodsIDs []int64) (map[int64]platformRef, error) {
	found := map[int64]platformRef{}
	rows, err := q.Query(ctx, "SELECT id, platform_goods_id, status = 'deleted' FROM basic.goods WHERE tenant_id = $1 AND id = ANY($2)", tenantID, goodsIDs)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var t platformRef
		if err := rows.Scan(&t.id, &t.pid, &t.deleted); err != nil {
			rows.Close()
			return nil, err
		}
		found[t.id] = t
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return found, nil
}

// lockGoods locks the given goods rows (ids sorted: in id order).
func lockGoods(ctx context.Context, tx pgx.Tx, tenantID int64, ids []int64) error {
	_, err := tx.Exec(ctx, "SELECT 1 FROM basic.goods WHERE tenant_id = $1 AND id = ANY($2) ORDER BY id FOR UPDATE", tenantID, ids)
	return err
}

// touchGoods marks the given goods as updated now.
func touchGoods(ctx context.Context, tx pgx.Tx, tenantID int64, ids []int64) error {
	_, err := tx.Exec(ctx, "UPDATE basic.goods SET updated_at = now() WHERE tenant_id = $1 AND id = ANY($2)", tenantID, ids)
	return err
}

// loadExisting reads (and locks, in id order) the shop's goods with the given platform
// ids, and their SKUs.
func (c *handlerDeps) loadExisting(ctx context.Context, tx pgx.Tx, tenantID, shopID int64, platformIDs []string) (map[string]*existingGoods, error) {
	rows, err := tx.Query(ctx, `SELECT id, platform_goods_id, name, item_no, status, image_url, price::float8, cost::float8, category_id
		FROM basic.goods WHERE tenant_id = $1 AND shop_id = $2 AND platform_goods_id <> '' AND platform_goods_id = ANY($3) ORDER BY id FOR UPDATE`, tenantID, shopID, platformIDs)
	if err != nil {
		return nil, err
	}
	out := map[string]*existingGoods{}
	byID := map[int64]*existingGoods{}
	var ids []int64
	for rows.Next() {
		e := &existingGoods{skus: map[string]skuRecord{}}
		var pid string
		if err := rows.Scan(&e.id, &pid, &e.name, &e.itemNo, &e.status, &e.imageURL, &e.price, &e.cost, &e.categoryID); err != nil {
			rows.Close()
			return nil, err
		}
		out[pid] = e
		byID[e.id] = e
		ids = append(ids, e.id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return out, nil
	}
	skus, err := loadSKUs(ctx, tx, tenantID, ids)
	if err != nil {
		return nil, err
	}
	for _, k := range skus {
		byID[k.GoodsID].skus[k.PlatformSkuID] = k
	}
	return out, nil
}

func loadSKUs(ctx context.Context, tx pgx.Tx, tenantID int64, goodsIDs []int64) ([]skuRecord, error) {
	return selectSKUs(ctx, tx, "tenant_id = $1 AND goods_id = ANY($2)", tenantID, goodsIDs)
}

// insertGoods collects new goods of a page for one INSERT.
type insertGoods struct {
	pids, names, itemNos, statuses, images []string
	prices, costs                          []float64
	cats                                   []int64
}

func (b *insertGoods) add(pid string, n normGoods, catID int64) {
	b.pids = append(b.pids, pid)
	b.names = append(b.names, n.name)
	b.itemNos = append(b.itemNos, n.itemNo)
	b.statuses = append(b.statuses, n.status)
	b.images = append(b.images, n.imageURL)
	b.prices = append(b.prices, n.price)
	b.costs = append(b.costs, n.cost)
	b.cats = append(b.cats, catID)
}

// exec inserts the goods; it returns their ids by platform goods id.
func (b *insertGoods) exec(ctx context.Context, tx pgx.Tx, tenantID, shopID int64) (map[string]int64, error) {
	ids := map[string]int64{}
	if len(b.pids) == 0 {
		return ids, nil
	}
	rows, err := tx.Query(ctx, `INSERT INTO basic.goods (tenant_id, shop_id, platform_goods_id, name, item_no, status, image_url, price, cost, category_id)
		SELECT $1, $2, u.pid, u.name, u.item_no, u.status, u.image, u.price, u.cost, u.cat
		FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::numeric[], $9::numeric[], $10::bigint[])
			AS u(pid, name, item_no, status, image, price, cost, cat)
		RETURNING id, platform_goods_id`, tenantID, shopID, b.pids, b.names, b.itemNos, b.statuses, b.images, b.prices, b.costs, b.cats)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id int64
		var pid string
		if err := rows.Scan(&id, &pid); err != nil {
			rows.Close()
			return nil, err
		}
		ids[pid] = id
	}
	rows.Close()
	return ids, rows.Err()
}

// updateGoods collects changed goods of a page for one UPDATE.
type updateGoods struct {
	ids, cats                        []int64
	names, itemNos, statuses, images []string
	prices, costs                    []float64
}

func (b *updateGoods) add(e existingGoods) {
	b.ids = append(b.ids, e.id)
	b.cats = append(b.cats, e.categoryID)
	b.names = append(b.names, e.name)
	b.itemNos = append(b.itemNos, e.itemNo)
	b.statuses = append(b.statuses, e.status)
	b.images = append(b.images, e.imageURL)
	b.prices = append(b.prices, e.price)
	b.costs = append(b.costs, e.cost)
}

func (b *updateGoods) exec(ctx context.Context, tx pgx.Tx, tenantID int64) error {
	if len(b.ids) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `UPDATE basic.goods g SET name = u.name, item_no = u.item_no, status = u.status, image_url = u.image,
			price = u.price, cost = u.cost, category_id = u.cat, updated_at = now()
		FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::numeric[], $8::numeric[], $9::bigint[])
			AS u(id, name, item_no, status, image, price, cost, cat)
		WHERE g.tenant_id = $1 AND g.id = u.id`, tenantID, b.ids, b.names, b.itemNos, b.statuses, b.images, b.prices, b.costs, b.cats)
	return err
}

// upsertSKUs inserts or updates SKUs by (goods, platform sku id); it returns how many were
// inserted and updated.
func upsertSKUs(ctx context.Context, tx pgx.Tx, tenantID int64, skus []skuRecord) (created, updated int32, err error) {
	if len(skus) == 0 {
		return 0, 0, nil
	}
	goods := make([]int64, len(skus))
	pids := make([]string, len(skus))
	specs := make([]string, len(skus))
	prices := make([]float64, len(skus))
	stocks := make([]int64, len(skus))
	itemNos := make([]string, len(skus))
	for i, k := range skus {
		goods[i], pids[i], specs[i], prices[i], stocks[i], itemNos[i] = k.GoodsID, k.PlatformSkuID, k.Spec, k.Price, k.Stock, k.ItemNo
	}
	rows, err := tx.Query(ctx, `INSERT INTO basic.skus AS s (tenant_id, goods_id, platform_sku_id, spec, price, stock, item_no)
		SELECT $1, u.goods, u.pid, u.spec, u.price, u.stock, u.item_no
		FROM unnest($2::bigint[], $3::text[], $4::text[], $5::numeric[], $6::bigint[], $7::text[]) AS u(goods, pid, spec, price, stock, item_no)
		ON CONFLICT (tenant_id, goods_id, platform_sku_id) DO UPDATE
			SET spec = EXCLUDED.spec, price = EXCLUDED.price, stock = EXCLUDED.stock, item_no = EXCLUDED.item_no, updated_at = now()
			WHERE (s.spec, s.price, s.stock, s.item_no) IS DISTINCT FROM (EXCLUDED.spec, EXCLUDED.price, EXCLUDED.stock, EXCLUDED.item_no)
		RETURNING xmax = 0`, tenantID, goods, pids, specs, prices, stocks, itemNos)
	if err != nil {
		return 0, 0, err
	}
	for rows.Next() {
		var inserted bool
		if err := rows.Scan(&inserted); err != nil {
			rows.Close()
			return 0, 0, err
		}
		if inserted {
			created++
		} else {
			updated++
		}
	}
	rows.Close()
	return created, updated, rows.Err()
}

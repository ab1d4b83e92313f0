package basic

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/shopmind/shopmind/internal/apperr"
)

// goodsColumns and goodsJoins read a goods with its shop, category and staff names; the
// goods table is aliased g.
const goodsColumns = `g.id, g.shop_id, s.name, s.platform, g.platform_goods_id, g.name, g.item_no, g.category_id,
	coalesce(c.name, ''), g.staff_id, coalesce(nullif(u.nickname, ''), u.username, ''), g.is_virtual, g.status,
	g.price::float8, g.cost::float8, g.image_url, g.display_order, g.created_at, g.updated_at`

const goodsJoins = ` JOIN basic.shops s ON s.tenant_id = g.tenant_id AND s.id = g.shop_id
	LEFT JOIN basic.categories c ON g.category_id <> 0 AND c.tenant_id = g.tenant_id AND c.id = g.category_id
	LEFT JOIN tenant.users u ON g.staff_id <> 0 AND u.tenant_id = g.tenant_id AND u.id = g.staff_id`

func scanGoods(row pgx.Row) (*goodsRecord, error) {
	g := &goodsRecord{}
	err := row.Scan(&g.ID, &g.ShopID, &g.ShopName, &g.Platform, &g.PlatformGoodsID, &g.Name, &g.ItemNo, &g.CategoryID,
		&g.CategoryName, &g.StaffID, &g.StaffName, &g.IsVirtual, &g.Status, &g.Price, &g.Cost, &g.ImageURL,
		&g.DisplayOrder, &g.CreatedAt, &g.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return g, err
}

func collectGoods(rows pgx.Rows) ([]*goodsRecord, error) {
	defer rows.Close()
	out := []*goodsRecord{}
	for rows.Next() {
		g, err := scanGoods(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, rows.Err()
}

// goods is one goods of the tenant (any status); nil when the tenant has none of that id.
func (s *store) goods(ctx context.Context, q querier, tenantID, id int64) (*goodsRecord, error) {
	return scanGoods(q.QueryRow(ctx, "SELECT "+goodsColumns+" FROM basic.goods g"+goodsJoins+" WHERE g.tenant_id = $1 AND g.id = $2", tenantID, id))
}

// skus are a goods' SKUs by id.
func (s *store) skus(ctx context.Context, q querier, tenantID, goodsID int64) ([]skuRecord, error) {
	return selectSKUs(ctx, q, "tenant_id = $1 AND goods_id = $2 ORDER BY id", tenantID, goodsID)
}

// selectSKUs reads the SKUs that match where (a condition on basic.skus, with its order).
// It is the one scan of an SKU row.
func selectSKUs(ctx context.Context, q querier, where string, args ...any) ([]skuRecord, error) {
	rows, err := q.Query(ctx, "SELECT id, goods_id, platform_sku_id, spec, price::float8, stock, item_no FROM basic.skus WHERE "+where, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (skuRecord, error) {
		var k skuRecord
		err := r.Scan(&k.ID, &k.GoodsID, &k.PlatformSkuID, &k.Spec, &k.Price, &k.Stock, &k.ItemNo)
		return k, err
	})
}

// goodsFilter are the filters of both goods listings.
type goodsFilter struct {
	Name       string
	ItemNo     string
	ShopID     *int64
	CategoryID *int64
	StaffID    *int64
	IsVirtual  *bool
	Status     string
	Platform   string
}

// goodsSorts is the goods listings' sort whitelist.
var goodsSorts = map[string]string{
	"id": "g.id", "name": "g.name", "price": "g.price", "cost": "g.cost", "display_order": "g.display_order",
	"created_at": "g.created_at", "updated_at": "g.updated_at",
}

var defaultGoodsSort = sortKey{Field: "created_at", Desc: true}

// goodsCount is the number of goods a listing matches.
type goodsCount struct {
	Total int64
	// LowerBound: more than Total goods match (keyword listings count at most
	// keywordCountCap goods, or up to the end of the page when it is further).
	LowerBound bool
}

const (
	// keywordCountCap is the number of matches a keyword listing counts at least before it
	// stops (the count is exact up to it): counting every match of a frequent keyword
	// visits one table row per match (the trigram index is lossy), which was the listing's
	// latency tail.
	keywordCountCap = 1000
	// keywordWalkFactor bounds the walk of a sort index for a frequent keyword: at most
	// this many index entries per row the page needs (the keyword matching 1% of them).
	keywordWalkFactor = 100
	keywordWalkMin    = 2000
)

// listGoods is one page of the tenant's goods and the number matching. The page is chosen
// on the goods table alone, then joined with the names.
func (s *store) listGoods(ctx context.Context, tenantID int64, f goodsFilter, sk sortKey, p page) ([]*goodsRecord, goodsCount, error) {
	w := &sqlWhere{}
	w.add("g.tenant_id = %s", tenantID)
	if f.Status == "" {
		w.add("g.status <> 'deleted'")
	} else {
		w.add("g.status = %s", f.Status)
	}
	if f.ShopID != nil {
		w.add("g.shop_id = %s", *f.ShopID)
	}
	if f.CategoryID != nil {
		w.add("g.category_id = %s", *f.CategoryID)
	}
	if f.StaffID != nil {
		w.add("g.staff_id = %s", *f.StaffID)
	}
	if f.IsVirtual != nil {
		w.add("g.is_virtual = %s", *f.IsVirtual)
	}
	if f.ItemNo != "" {
		w.add("g.item_no = %s", f.ItemNo)
	}
	if f.Platform != "" {
		w.add("g.shop_id IN (SELECT id FROM basic.shops WHERE tenant_id = %s AND platform = %s)", tenantID, f.Platform)
	}
	if f.Name != "" {
		return s.listGoodsByKeyword(ctx, w, f.Name, sk, p)
	}
	order := sk.orderBy(goodsSorts, "g.id")
	// The page's ids come from an index-only scan (see the migrations' listing indexes);
	// only its rows are read from the table.
	ids := fmt.Sprintf("SELECT g.id FROM basic.goods g%s %s LIMIT %d OFFSET %d", w.sql(), order, p.Size, p.offset())
	page := fmt.Sprintf("SELECT %s FROM (%s) p JOIN basic.goods g ON g.tenant_id = $1 AND g.id = p.id%s %s", goodsColumns, ids, goodsJoins, order)
	// The count (an index-only scan of a filter index) and the page go in one round trip.
	batch := &pgx.Batch{}
	batch.Queue("SELECT count(*) FROM basic.goods g"+w.sql(), w.args...)
	batch.Queue(page, w.args...)
	br := s.pool.SendBatch(ctx, batch)
	defer br.Close()
	var total int64
	if err := br.QueryRow().Scan(&total); err != nil {
		return nil, goodsCount{}, err
	}
	rows, err := br.Query()
	if err != nil {
		return nil, goodsCount{}, err
	}
	items, err := collectGoods(rows)
	if err != nil {
		return nil, goodsCount{}, err
	}
	return items, goodsCount{Total: total}, br.Close()
}

// keywordPlan is the statement of a keyword listing; its values are the sqlWhere's (the
// other filters', then the keyword keywordListing adds).
type keywordPlan struct {
	sql   string
	count string // the bounded count alone, for a page past the last match
	cap   int64
}

// keywordListing builds the statement of a keyword listing: count and page in one round
// trip, reading at most cap+1 matches' table rows however frequent the keyword (except in
// the clustered case below).
//
//   - m: the first cap+1 matches found through the trigram index (in table order), with
//     their sort key; their number n is the count: exact when n <= cap, else "more than cap".
//   - n <= cap: m holds every match, the page is sorted out of m.
//   - n > cap (a frequent keyword): the page comes from a bounded walk of the sort index
//     (index-only: the index carries name_search), which finds the page's rows in the first
//     entries when the matches are spread along the sort order (the usual case); when they
//     are not (a keyword clustered in name order, say) the walk stops at its bound and the
//     page is sorted out of every match instead (a second trigram scan). Every branch gives
//     the exact page; the branches not taken are never run (one-time filters).
func keywordListing(w *sqlWhere, keyword string, sk sortKey, p page) keywordPlan {
	base := w.sql()
	kw := fmt.Sprintf("g.name_search LIKE lower(%s)", w.arg(likePattern(keyword)))
	col := goodsSorts[sk.Field]
	end := p.offset() + int64(p.Size)
	capN := max(int64(keywordCountCap), end)
	walk := max(int64(keywordWalkMin), keywordWalkFactor*end)
	// The bounds are SQL text, not values: a plan made for unknown bounds (a generic plan of
	// a prepared statement) may scan the whole table for m (measured: a sequential scan,
	// 43 ms, instead of 2 ms through the indexes); with them in the text every plan is made
	// for the bounds it runs with.
	order := sk.orderBy(goodsSorts, "g.id")
	kOrder := fmt.Sprintf("ORDER BY g.k %s, g.id %s", sk.dir(), sk.dir())
	limit := fmt.Sprintf("LIMIT %d OFFSET %d", p.Size, p.offset())
	q := fmt.Sprintf(`WITH m AS MATERIALIZED (SELECT g.id, %[1]s AS k FROM basic.goods g%[2]s AND %[3]s LIMIT %[4]d),
n AS (SELECT count(*) AS n FROM m),
w AS MATERIALIZED (SELECT g.id, g.k FROM (SELECT g.id, %[1]s AS k, g.name_search FROM basic.goods g%[2]s AND (SELECT n FROM n) > %[5]d %[6]s LIMIT %[7]d) g
	WHERE %[3]s %[8]s LIMIT %[9]d),
a AS MATERIALIZED (SELECT g.id, %[1]s AS k FROM basic.goods g%[2]s AND %[3]s AND (SELECT n FROM n) > %[5]d AND (SELECT count(*) FROM w) < %[9]d),
p AS ((SELECT g.id FROM m g WHERE (SELECT n FROM n) <= %[5]d %[8]s %[10]s)
	UNION ALL (SELECT g.id FROM w g WHERE (SELECT count(*) FROM w) = %[9]d %[8]s %[10]s)
	UNION ALL (SELECT g.id FROM a g %[8]s %[10]s))
SELECT (SELECT n FROM n), %[11]s FROM p JOIN basic.goods g ON g.tenant_id = $1 AND g.id = p.id%[12]s %[6]s`,
		col, base, kw, capN+1, capN, order, walk, kOrder, end, limit, goodsColumns, goodsJoins)
	count := fmt.Sprintf("SELECT count(*) FROM (SELECT 1 FROM basic.goods g%s AND %s LIMIT %d) c", base, kw, capN+1)
	return keywordPlan{sql: q, count: count, cap: capN}
}

// listGoodsByKeyword is listGoods with a name keyword (see keywordListing).
func (s *store) listGoodsByKeyword(ctx context.Context, w *sqlWhere, keyword string, sk sortKey, p page) ([]*goodsRecord, goodsCount, error) {
	plan := keywordListing(w, keyword, sk, p)
	rows, err := s.pool.Query(ctx, plan.sql, w.args...)
	if err != nil {
		return nil, goodsCount{}, err
	}
	defer rows.Close()
	items := []*goodsRecord{}
	var n int64
	for rows.Next() {
		g := &goodsRecord{}
		if err := rows.Scan(&n, &g.ID, &g.ShopID, &g.ShopName, &g.Platform, &g.PlatformGoodsID, &g.Name, &g.ItemNo, &g.CategoryID,
			&g.CategoryName, &g.StaffID, &g.StaffName, &g.IsVirtual, &g.Status, &g.Price, &g.Cost, &g.ImageURL,
			&g.DisplayOrder, &g.CreatedAt, &g.UpdatedAt); err != nil {
			return nil, goodsCount{}, err
		}
		items = append(items, g)
	}
	if err := rows.Err(); err != nil {
		return nil, goodsCount{}, err
	}
	if len(items) == 0 && p.Num > 1 {
		// A page past the last match carries no count: count alone (the same bound).
		if err := s.pool.QueryRow(ctx, plan.count, w.args...).Scan(&n); err != nil {
			return nil, goodsCount{}, err
		}
	}
	return items, boundedCount(n, plan.cap), nil
}

// boundedCount is the count of a keyword listing that counted n goods, stopping after cap+1.
func boundedCount(n, capN int64) goodsCount {
	if n > capN {
		return goodsCount{Total: capN, LowerBound: true}
	}
	return goodsCount{Total: n}
}

// displayGoods is a page of a shop's on-sale goods in display order, and their number.
func (s *store) displayGoods(ctx context.Context, tenantID, shopID int64, p page) ([]*goodsRecord, int64, error) {
	ids := fmt.Sprintf(`SELECT g.id FROM basic.goods g WHERE g.tenant_id = $1 AND g.shop_id = $2 AND g.status = 'on_sale'
		ORDER BY g.display_order, g.id LIMIT %d OFFSET %d`, p.Size, p.offset())
	batch := &pgx.Batch{}
	batch.Queue("SELECT count(*) FROM basic.goods WHERE tenant_id = $1 AND shop_id = $2 AND status = 'on_sale'", tenantID, shopID)
	batch.Queue("SELECT "+goodsColumns+" FROM ("+ids+") p JOIN basic.goods g ON g.tenant_id = $1 AND g.id = p.id"+goodsJoins+" ORDER BY g.display_order, g.id", tenantID, shopID)
	br := s.pool.SendBatch(ctx, batch)
	defer br.Close()
	var total int64
	if err := br.QueryRow().Scan(&total); err != nil {
		return nil, 0, err
	}
	rows, err := br.Query()
	if err != nil {
		return nil, 0, err
	}
	items, err := collectGoods(rows)
	if err != nil {
		return nil, 0, err
	}
	return items, total, br.Close()
}

// itemNoOwner is the live goods of a shop holding an item number other than except; 0
// when none.
func (s *store) itemNoOwner(ctx context.Context, q querier, tenantID, shopID int64, itemNo string, except int64) (int64, error) {
	if itemNo == "" {
		return 0, nil
	}
	var id int64
	err := q.QueryRow(ctx, `SELECT id FROM basic.goods WHERE tenant_id = $1 AND shop_id = $2 AND item_no = $3
		AND status <> 'deleted' AND id <> $4 ORDER BY id LIMIT 1`, tenantID, shopID, itemNo, except).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return id, err
}

func itemNoConflict(itemNo string, owner int64) error {
	return apperr.New(apperr.KindConflict, "item number %q already used by goods %d in this shop", itemNo, owner)
}

// goodsInput is the writable part of a goods.
type goodsInput struct {
	ShopID       int64
	Name         string
	ItemNo       string
	CategoryID   int64
	StaffID      int64
	IsVirtual    bool
	Status       string
	Price        float64
	Cost         float64
	ImageURL     string
	DisplayOrder int32
}

// createGoods stores a new goods after checking its references.
// createGoods inserts a goods and returns it as stored, read in the same transaction: once
// the change commits nothing is left that could fail the answer.
func (s *store) createGoods(ctx context.Context, tenantID int64, in goodsInput) (*goodsRecord, error) {
	var g *goodsRecord
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := s.shopRef(ctx, tx, tenantID, in.ShopID, "goods.shop_id"); err != nil {
			return err
		}
		if err := s.categoryRef(ctx, tx, tenantID, in.CategoryID, "goods.category_id"); err != nil {
			return err
		}
		if err := s.staffRef(ctx, tx, tenantID, in.StaffID, "goods.staff_id"); err != nil {
			return err
		}
		if in.ItemNo != "" {
			if err := xactLock(ctx, tx, lockItemNo, tenantID); err != nil {
				return err
			}
			owner, err := s.itemNoOwner(ctx, tx, tenantID, in.ShopID, in.ItemNo, 0)
			if err != nil {
				return err
			}
			if owner != 0 {
				return itemNoConflict(in.ItemNo, owner)
			}
		}
		var id int64
		if err := tx.QueryRow(ctx, `INSERT INTO basic.goods (tenant_id, shop_id, name, item_no, category_id, staff_id, is_virtual,
			status, price, cost, image_url, display_order) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id`,
			tenantID, in.ShopID, in.Name, in.ItemNo, in.CategoryID, in.StaffID, in.IsVirtual, in.Status, money(in.Price),
			money(in.Cost), in.ImageURL, in.DisplayOrder).Scan(&id); err != nil {
			return err
		}
		var err error
		g, err = s.goods(ctx, tx, tenantID, id)
		return err
	})
	return g, err
}

// goodsColumnOf maps update-mask paths to goods columns.
var goodsColumnOf = map[string]string{
	"name": "name", "item_no": "item_no", "category_id": "category_id", "staff_id": "staff_id",
	"is_virtual": "is_virtual", "status": "status", "price": "price", "cost": "cost", "image_url": "image_url",
	"display_order": "display_order",
}

func (in goodsInput) value(path string) any {
	switch path {
	case "name":
		return in.Name
	case "item_no":
		return in.ItemNo
	case "category_id":
		return in.CategoryID
	case "staff_id":
		return in.StaffID
	case "is_virtual":
		return in.IsVirtual
	case "status":
		return in.Status
	case "price":
		return money(in.Price)
	case "cost":
		return money(in.Cost)
	case "image_url":
		return in.ImageURL
	case "display_order":
		return in.DisplayOrder
	}
	return nil
}

// checkRefs checks the category and staff named in a mask.
func (s *store) checkRefs(ctx context.Context, q querier, tenantID int64, in goodsInput, mask []string) error {
	for _, p := range mask {
		switch p {
		case "category_id":
			if err := s.categoryRef(ctx, q, tenantID, in.CategoryID, "goods.category_id"); err != nil {
				return err
			}
		case "staff_id":
			if err := s.staffRef(ctx, q, tenantID, in.StaffID, "goods.staff_id"); err != nil {
				return err
			}
		}
	}
	return nil
}

// setClause is "col = $n, ..., updated_at = now()" for the mask's paths.
func setClause(w *sqlWhere, in goodsInput, mask []string) string {
	var sets []string
	seen := map[string]bool{}
	for _, p := range mask {
		col, ok := goodsColumnOf[p]
		if !ok || seen[col] {
			continue
		}
		seen[col] = true
		sets = append(sets, col+" = "+w.arg(in.value(p)))
	}
	return strings.Join(append(sets, "updated_at = now()"), ", ")
}

// updateGoods changes the masked fields of one live goods.
// updateGoods applies the masked fields and returns the goods as stored, read in the same
// transaction (see createGoods).
func (s *store) updateGoods(ctx context.Context, tenantID, id int64, in goodsInput, mask []string) (*goodsRecord, error) {
	var g *goodsRecord
	changesItemNo := in.ItemNo != "" && slices.Contains(mask, "item_no")
	err := s.tx(ctx, func(tx pgx.Tx) error {
		// Locks in one order everywhere: the tenant's item number lock before goods rows (the
		// item number import takes them in that order too).
		if changesItemNo {
			if err := xactLock(ctx, tx, lockItemNo, tenantID); err != nil {
				return err
			}
		}
		var shopID int64
		var status string
		err := tx.QueryRow(ctx, "SELECT shop_id, status FROM basic.goods WHERE tenant_id = $1 AND id = $2 FOR UPDATE", tenantID, id).Scan(&shopID, &status)
		if errors.Is(err, pgx.ErrNoRows) {
			return apperr.NotFound("goods", id)
		}
		if err != nil {
			return err
		}
		if status == statusDeleted {
			return apperr.New(apperr.KindRule, "goods %d is deleted and cannot be changed", id)
		}
		if err := s.checkRefs(ctx, tx, tenantID, in, mask); err != nil {
			return err
		}
		for _, p := range mask {
			if p == "item_no" && changesItemNo {
				owner, err := s.itemNoOwner(ctx, tx, tenantID, shopID, in.ItemNo, id)
				if err != nil {
					return err
				}
				if owner != 0 {
					return itemNoConflict(in.ItemNo, owner)
				}
			}
		}
		w := &sqlWhere{}
		set := setClause(w, in, mask)
		if _, err = tx.Exec(ctx, fmt.Sprintf("UPDATE basic.goods SET %s WHERE tenant_id = %s AND id = %s", set, w.arg(tenantID), w.arg(id)), w.args...); err != nil {
			return err
		}
		g, err = s.goods(ctx, tx, tenantID, id)
		return err
	})
	return g, err
}

// updateMany applies the masked fields to the live goods among ids; it returns how many.
func (s *store) updateMany(ctx context.Context, tenantID int64, ids []int64, in goodsInput, mask []string) (int32, error) {
	var n int32
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if err := s.checkRefs(ctx, tx, tenantID, in, mask); err != nil {
			return err
		}
		if err := lockGoodsRows(ctx, tx, "id = ANY($2)", tenantID, ids); err != nil {
			return err
		}
		w := &sqlWhere{}
		set := setClause(w, in, mask)
		tag, err := tx.Exec(ctx, fmt.Sprintf("UPDATE basic.goods SET %s WHERE tenant_id = %s AND id = ANY(%s) AND status <> 'deleted'",
			set, w.arg(tenantID), w.arg(ids)), w.args...)
		n = int32(tag.RowsAffected())
		return err
	})
	return n, err
}

// deleteGoods soft-deletes the live goods among ids; it returns how many.
func (s *store) deleteGoods(ctx context.Context, tenantID int64, ids []int64) (int32, error) {
	var n int32
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if err := lockGoodsRows(ctx, tx, "id = ANY($2)", tenantID, ids); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE basic.goods SET status = 'deleted', deleted_at = now(), updated_at = now()
			WHERE tenant_id = $1 AND id = ANY($2) AND status <> 'deleted'`, tenantID, ids)
		n = int32(tag.RowsAffected())
		return err
	})
	return n, err
}

// lockGoodsRows locks the tenant's goods matching cond ($2 is arg) in id order. An UPDATE
// over many rows locks them in scan order, which differs between two transactions after
// concurrent changes, so two identical batch updates could deadlock; taking the locks in
// one order first makes the second wait instead.
func lockGoodsRows(ctx context.Context, tx pgx.Tx, cond string, tenantID int64, arg any) error {
	_, err := tx.Exec(ctx, "SELECT id FROM basic.goods WHERE tenant_id = $1 AND "+cond+" ORDER BY id FOR UPDATE", tenantID, arg)
	return err
}

// updateShopGoods sets staff and/or category on every live goods of a shop.
func (s *store) updateShopGoods(ctx context.Context, tenantID, shopID int64, staffID, categoryID *int64) (int32, error) {
	var n int32
	err := s.tx(ctx, func(tx pgx.Tx) error {
		sh, err := s.shop(ctx, tx, tenantID, shopID)
		if err != nil {
			return err
		}
		if sh == nil {
			return apperr.NotFound("shop", shopID)
		}
		w := &sqlWhere{}
		var sets []string
		if staffID != nil {
			if err := s.staffRef(ctx, tx, tenantID, *staffID, "staff_id"); err != nil {
				return err
			}
			sets = append(sets, "staff_id = "+w.arg(*staffID))
		}
		if categoryID != nil {
			if err := s.categoryRef(ctx, tx, tenantID, *categoryID, "category_id"); err != nil {
				return err
			}
			sets = append(sets, "category_id = "+w.arg(*categoryID))
		}
		sets = append(sets, "updated_at = now()")
		if err := lockGoodsRows(ctx, tx, "shop_id = $2", tenantID, shopID); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, fmt.Sprintf("UPDATE basic.goods SET %s WHERE tenant_id = %s AND shop_id = %s AND status <> 'deleted'",
			strings.Join(sets, ", "), w.arg(tenantID), w.arg(shopID)), w.args...)
		n = int32(tag.RowsAffected())
		return err
	})
	return n, err
}

// importRow is one row of an item number import.
type importRow struct {
	GoodsID int64
	ItemNo  string
}

// importError is a row not imported.
type importError struct {
	Row     int32
	Field   string
	Message string
}

// importItemNumbers applies the rows in order, skipping (and reporting) rows with a
// business error: unknown or deleted goods, a goods id already seen, an item number
// another live goods of the shop holds (after the rows before it). The accepted rows are
// written in one transaction.
func (s *store) importItemNumbers(ctx context.Context, tenantID int64, rows []importRow) (int32, []importError, error) {
	var imported int32
	var errs []importError
	err := s.tx(ctx, func(tx pgx.Tx) error {
		imported, errs = 0, nil
		if err := xactLock(ctx, tx, lockItemNo, tenantID); err != nil {
			return err
		}
		ids := make([]int64, 0, len(rows))
		itemNos := make([]string, 0, len(rows))
		for _, r := range rows {
			ids = append(ids, r.GoodsID)
			itemNos = append(itemNos, r.ItemNo)
		}
		type goodsState struct {
			shopID  int64
			itemNo  string
			deleted bool
		}
		state := map[int64]*goodsState{}
		dbRows, err := tx.Query(ctx, "SELECT id, shop_id, item_no, status FROM basic.goods WHERE tenant_id = $1 AND id = ANY($2) ORDER BY id FOR UPDATE", tenantID, ids)
		if err != nil {
			return err
		}
		for dbRows.Next() {
			var id int64
			var st goodsState
			var status string
			if err := dbRows.Scan(&id, &st.shopID, &st.itemNo, &status); err != nil {
				dbRows.Close()
				return err
			}
			st.deleted = status == statusDeleted
			state[id] = &st
		}
		dbRows.Close()
		if err := dbRows.Err(); err != nil {
			return err
		}
		// Current holders of the item numbers in the import, per shop.
		type key struct {
			shop   int64
			itemNo string
		}
		holder := map[key]int64{}
		dbRows, err = tx.Query(ctx, `SELECT id, shop_id, item_no FROM basic.goods WHERE tenant_id = $1 AND item_no = ANY($2)
			AND status <> 'deleted' ORDER BY id`, tenantID, itemNos)
		if err != nil {
			return err
		}
		for dbRows.Next() {
			var id, shop int64
			var no string
			if err := dbRows.Scan(&id, &shop, &no); err != nil {
				dbRows.Close()
				return err
			}
			if _, ok := holder[key{shop, no}]; !ok {
				holder[key{shop, no}] = id
			}
		}
		dbRows.Close()
		if err := dbRows.Err(); err != nil {
			return err
		}
		seen := map[int64]int{}
		var updIDs []int64
		var updNos []string
		for i, r := range rows {
			row := int32(i + 1)
			if first, ok := seen[r.GoodsID]; ok {
				errs = append(errs, importError{row, "goods_id", fmt.Sprintf("goods %d repeated (first in row %d)", r.GoodsID, first)})
				continue
			}
			seen[r.GoodsID] = i + 1
			st := state[r.GoodsID]
			switch {
			case st == nil:
				errs = append(errs, importError{row, "goods_id", fmt.Sprintf("goods %d not found", r.GoodsID)})
				continue
			case st.deleted:
				errs = append(errs, importError{row, "goods_id", fmt.Sprintf("goods %d is deleted", r.GoodsID)})
				continue
			}
			k := key{st.shopID, r.ItemNo}
			if owner, ok := holder[k]; ok && owner != r.GoodsID {
				errs = append(errs, importError{row, "item_no", fmt.Sprintf("item number %q already used by goods %d", r.ItemNo, owner)})
				continue
			}
			// The goods gives up its old number and takes the new one.
			if old := (key{st.shopID, st.itemNo}); st.itemNo != "" && holder[old] == r.GoodsID {
				delete(holder, old)
			}
			holder[k] = r.GoodsID
			imported++
			if st.itemNo != r.ItemNo {
				st.itemNo = r.ItemNo
				updIDs = append(updIDs, r.GoodsID)
				updNos = append(updNos, r.ItemNo)
			}
		}
		if len(errs) > 0 { // validated first: one bad row and nothing is stored
			imported = 0
			return nil
		}
		if len(updIDs) == 0 {
			return nil
		}
		_, err = tx.Exec(ctx, `UPDATE basic.goods g SET item_no = v.item_no, updated_at = now()
			FROM unnest($2::bigint[], $3::text[]) AS v(id, item_no) WHERE g.tenant_id = $1 AND g.id = v.id`, tenantID, updIDs, updNos)
		return err
	})
	return imported, errs, err
}

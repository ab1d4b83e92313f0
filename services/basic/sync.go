package basic

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	basicv1 "github.com/shopmind/shopmind/gen/go/shopmind/basic/v1"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/services/basic/partners"
)

// Sync protocol (both endpoints are synchronous, bounded by SHOPMIND_SYNC_TIMEOUT, and
// idempotent: a second run with the same upstream data writes nothing and reports every
// item unchanged).
//
// sync-from-platform pulls a shop's goods page by page (partners.Platform.ListGoods) and
// writes each page in one transaction: every goods item with all its SKUs, so a platform
// failing half way leaves the pages already written (complete goods) and nothing of the
// failed page. Goods are matched by (shop, platform goods id) (a unique index), SKUs by
// (goods, platform sku id) (a unique constraint). Each page's transaction holds the
// shop's advisory lock and locks the goods rows it reads, so two syncs of one shop at once
// serialize page by page and never create duplicates (the second finds the first's rows).
// What the platform owns is overwritten: name, status, price, image, the item number when
// the platform sends one, the SKU list (SKUs the platform no longer lists are removed).
// What the merchant owns is kept: category and cost are taken from the platform only when
// unset (0), staff, virtual flag and display order never. Goods deleted in ShopMind stay
// deleted (counted unchanged). Goods missing from the platform listing are left as they
// are. Category paths ("Women/Dresses") are found or created as a category tree.
//
// sync-sku-from-partner_a reads the SKUs of up to 100 goods from partner A
// (partners.PartnerA.AllSKUs: every page or nothing) and upserts them by (goods, platform
// sku id) in one transaction that locks the goods rows: all or nothing. SKUs partner A does
// not list are kept.

// analyzeAfter is how many goods a sync creates before it refreshes the planner statistics
// (then again at each doubling).
const analyzeAfter = 1000

// maxSyncPages bounds one platform sync (200 goods a page: a million goods).
const maxSyncPages = 5000

func (s *goodsServer) SyncFromPlatform(ctx context.Context, req *basicv1.SyncFromPlatformRequest) (*basicv1.SyncFromPlatformResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if s.c.platform == nil {
		return nil, apperr.New(apperr.KindUnavailable, "platform sync is not configured (SHOPMIND_PLATFORM_URL)")
	}
	sh, err := s.c.store.shop(ctx, s.c.pool, id.TenantID, req.GetShopId())
	if err != nil {
		return nil, err
	}
	if sh == nil {
		return nil, apperr.NotFound("shop", req.GetShopId())
	}
	switch sh.Status {
	case shopExpired:
		return nil, apperr.New(apperr.KindRule, "shop %d: the platform authorization expired; re-authorize the shop before syncing", sh.ID)
	case shopDisabled:
		return nil, apperr.New(apperr.KindRule, "shop %d is disabled; enable it before syncing", sh.ID)
	}
	sctx, cancel := context.WithTimeout(ctx, s.c.cfg.SyncTimeout)
	defer cancel()
	res, err := s.c.syncShop(sctx, id.TenantID, sh)
	s.c.pushToAnalytics(ctx, id.TenantID) // what was written before a failure is pushed too
	s.c.notifyPlatformSync(ctx, sh, res, err)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, apperr.New(apperr.KindTimeout, "sync of shop %d exceeded its time limit of %s (pages already synced were kept)", sh.ID, s.c.cfg.SyncTimeout)
		}
		return nil, err
	}
	return &basicv1.SyncFromPlatformResponse{Created: res.created, Updated: res.updated, Unchanged: res.unchanged}, nil
}

type syncCounts struct{ created, updated, unchanged int32 }

// Outcomes of one goods or SKU, in order of precedence (a goods listed twice counts once).
const (
	outUnchanged = iota + 1
	outUpdated
	outCreated
)

// syncShop runs the page loop of a platform sync.
func (c *handlerDeps) syncShop(ctx context.Context, tenantID int64, sh *shopRecord) (syncCounts, error) {
	outcome := map[string]int{}
	cats := newCategoryCache()
	seen := map[string]bool{}
	token := ""
	nextAnalyze := analyzeAfter
	for pages := 1; ; pages++ {
		page, err := c.platform.ListGoods(ctx, sh.Platform, sh.PlatformShopID, token)
		if err != nil {
			return syncCounts{}, err
		}
		if err := c.applyPage(ctx, tenantID, sh, page.Items, cats, outcome); err != nil {
			return syncCounts{}, err
		}
		if n := countOutcome(outcome, outCreated); n >= nextAnalyze {
			// Fresh statistics while a large sync fills the tables: the planner (and the
			// plans pooled connections cache) would otherwise keep treating them as small,
			// and each page would scan more.
			nextAnalyze = 2 * n
			if err := analyzeGoods(ctx, c.pool); err != nil {
				c.log.Warn("analyze during sync failed", "error", err)
			}
		}
		if page.NextPageToken == "" {
			break
		}
		if seen[page.NextPageToken] || pages >= maxSyncPages {
			return syncCounts{}, apperr.New(apperr.KindUpstream, "platform (list goods): paging did not end after %d pages", pages)
		}
		seen[page.NextPageToken] = true
		token = page.NextPageToken
	}
	var res syncCounts
	for _, o := range outcome {
		switch o {
		case outCreated:
			res.created++
		case outUpdated:
			res.updated++
		default:
			res.unchanged++
		}
	}
	return res, nil
}

func countOutcome(outcome map[string]int, o int) int {
	n := 0
	for _, v := range outcome {
		if v == o {
			n++
		}
	}
	return n
}

// categoryCache maps category paths to committed category ids.
type categoryCache struct{ ids map[string]int64 }

func newCategoryCache() *categoryCache { return &categoryCache{ids: map[string]int64{}} }

// splitPath turns "Women / Dresses" into its names (at most 64 characters each).
func splitPath(path string) []string {
	var out []string
	for _, part := range strings.Split(path, "/") {
		if p := strings.TrimSpace(part); p != "" {
			out = append(out, truncateRunes(p, 64))
		}
	}
	return out
}

// resolve finds or creates the categories of a path; it returns the leaf's id (0 for an
// empty path). New ids are returned in created so the cache learns them after commit.
func (cc *categoryCache) resolve(ctx context.Context, tx pgx.Tx, tenantID int64, path string, created map[string]int64) (int64, error) {
	names := splitPath(path)
	if len(names) == 0 {
		return 0, nil
	}
	key := strings.Join(names, "/")
	if id, ok := cc.ids[key]; ok {
		return id, nil
	}
	if id, ok := created[key]; ok {
		return id, nil
	}
	parent := int64(0)
	for i, name := range names {
		id, err := categoryChild(ctx, tx, tenantID, parent, name, i+1)
		if err != nil {
			return 0, err
		}
		parent = id
	}
	created[key] = parent
	return parent, nil
}

// existingGoods is what a sync compares a platform goods with.
type existingGoods struct {
	id                             int64
	name, itemNo, status, imageURL string
	price, cost                    float64
	categoryID                     int64
	skus                           map[string]skuRecord
}

// platformGoods normalized to the schema's bounds.
type normGoods struct {
	name, itemNo, status, imageURL string
	price, cost                    float64
}

func normalize(g partners.PlatformGoods) normGoods {
	n := normGoods{name: truncateRunes(strings.TrimSpace(g.Name), 128), status: statusOffSale,
		price: money(g.Price), cost: money(g.Cost), imageURL: g.ImageURL}
	if n.name == "" {
		n.name = truncateRunes(g.PlatformGoodsID, 128)
	}
	if g.Status == partners.StatusOnSale {
		n.status = statusOnSale
	}
	if len(n.imageURL) > 1024 {
		n.imageURL = ""
	}
	n.itemNo = truncateRunes(g.ItemNo, 64)
	return n
}

func normSKU(k partners.PlatformSKU) skuRecord {
	return skuRecord{PlatformSkuID: k.PlatformSkuID, Spec: k.Spec, Price: money(k.Price), Stock: max(k.Stock, 0), ItemNo: k.ItemNo}
}

func sameSKU(a, b skuRecord) bool {
	return a.Spec == b.Spec && a.Price == b.Price && a.Stock == b.Stock && a.ItemNo == b.ItemNo
}

// applyPage writes one page of platform goods in one transaction: it locks the shop's sync,
// loads the goods the page names, works out what each one needs (pageWrite.planGoods) and
// writes it all (pageWrite.write); then it keeps the categories the transaction created
// and the page's outcomes.
func (c *handlerDeps) applyPage(ctx context.Context, tenantID int64, sh *shopRecord, items []partners.PlatformGoods, cats *categoryCache, outcome map[string]int) error {
	if len(items) == 0 {
		return nil
	}
	var w *pageWrite
	err := c.store.tx(ctx, func(tx pgx.Tx) error {
		w = newPageWrite(ctx, tx, tenantID, sh.ID, cats, items) // a retried transaction starts afresh
		if err := xactLock(ctx, tx, lockShopSync, sh.ID); err != nil {
			return err
		}
		existing, err := c.loadExisting(ctx, tx, tenantID, sh.ID, platformIDs(items))
		if err != nil {
			return err
		}
		for _, pid := range w.order {
			if err := w.planGoods(w.latest[pid], existing[pid]); err != nil {
				return err
			}
		}
		return w.write()
	})
	if err != nil {
		return err
	}
	w.keep(outcome)
	return nil
}

// platformIDs lists the page's platform goods ids.
func platformIDs(items []partners.PlatformGoods) []string {
	ids := make([]string, 0, len(items))
	for _, g := range items {
		ids = append(ids, g.PlatformGoodsID)
	}
	return ids
}

// pageWrite is one attempt at writing a page of platform goods: the goods to insert and
// update, the SKUs to upsert and delete, and each goods' outcome.
type pageWrite struct {
	ctx              context.Context
	tx               pgx.Tx
	tenantID, shopID int64
	cats             *categoryCache
	created          map[string]int64 // categories this transaction created
	outcome          map[string]int   // by platform goods id

	latest map[string]partners.PlatformGoods // the last copy of each goods in the page
	order  []string                          // platform goods ids, first seen first

	ins    insertGoods
	upd    updateGoods
	skuUps []skuRecord // GoodsID set
	skuDel []int64
}

// newPageWrite starts a write of items. Later copies of a goods in the page win (the
// listing moved while paging).
func newPageWrite(ctx context.Context, tx pgx.Tx, tenantID, shopID int64, cats *categoryCache, items []partners.PlatformGoods) *pageWrite {
	w := &pageWrite{ctx: ctx, tx: tx, tenantID: tenantID, shopID: shopID, cats: cats,
		created: map[string]int64{}, outcome: map[string]int{}, latest: map[string]partners.PlatformGoods{}}
	for _, g := range items {
		if _, ok := w.latest[g.PlatformGoodsID]; !ok {
			w.order = append(w.order, g.PlatformGoodsID)
		}
		w.latest[g.PlatformGoodsID] = g
	}
	return w
}

// planGoods decides what g needs: an insert when it is new, nothing when its goods is
// deleted, else an update and SKU changes when it differs from ex.
func (w *pageWrite) planGoods(g partners.PlatformGoods, ex *existingGoods) error {
	pid := g.PlatformGoodsID
	n := normalize(g)
	if ex == nil {
		catID, err := w.cats.resolve(w.ctx, w.tx, w.tenantID, g.CategoryPath, w.created)
		if err != nil {
			return err
		}
		w.ins.add(pid, n, catID)
		w.outcome[pid] = outCreated
		return nil
	}
	if ex.status == statusDeleted {
		w.outcome[pid] = outUnchanged
		return nil
	}
	want, err := w.wanted(g, n, ex)
	if err != nil {
		return err
	}
	changed := goodsDiffers(want, *ex)
	if w.planSKUs(g, ex) {
		changed = true
	}
	if changed {
		w.upd.add(want)
		w.outcome[pid] = outUpdated
	} else {
		w.outcome[pid] = outUnchanged
	}
	return nil
}

// wanted is ex with the platform's fields: name, status, price and image always, the item
// number when the platform has one, the cost when ex has none, and the category when ex has
// none and the platform names one.
func (w *pageWrite) wanted(g partners.PlatformGoods, n normGoods, ex *existingGoods) (existingGoods, error) {
	want := *ex
	want.name, want.status, want.price, want.imageURL = n.name, n.status, n.price, n.imageURL
	if n.itemNo != "" {
		want.itemNo = n.itemNo
	}
	if ex.cost == 0 && n.cost > 0 {
		want.cost = n.cost
	}
	if ex.categoryID == 0 && len(splitPath(g.CategoryPath)) > 0 {
		catID, err := w.cats.resolve(w.ctx, w.tx, w.tenantID, g.CategoryPath, w.created)
		if err != nil {
			return existingGoods{}, err
		}
		want.categoryID = catID
	}
	return want, nil
}

// goodsDiffers reports whether a and b differ in a field a sync writes.
func goodsDiffers(a, b existingGoods) bool {
	return a.name != b.name || a.status != b.status || a.price != b.price || a.imageURL != b.imageURL ||
		a.itemNo != b.itemNo || a.cost != b.cost || a.categoryID != b.categoryID
}

// planSKUs queues the upserts of g's SKUs that are new or differ from ex's and the deletes
// of ex's SKUs g no longer lists; it reports whether it queued any.
func (w *pageWrite) planSKUs(g partners.PlatformGoods, ex *existingGoods) bool {
	changed := false
	listed := map[string]bool{}
	for _, k := range g.SKUs {
		nk := normSKU(k)
		listed[nk.PlatformSkuID] = true
		if old, ok := ex.skus[nk.PlatformSkuID]; ok && sameSKU(old, nk) {
			continue
		}
		nk.GoodsID = ex.id
		w.skuUps = append(w.skuUps, nk)
		changed = true
	}
	for sid, old := range ex.skus {
		if !listed[sid] {
			w.skuDel = append(w.skuDel, old.ID)
			changed = true
		}
	}
	return changed
}

// write inserts the new goods (then queues their SKUs), updates the changed ones, deletes
// the SKUs no longer listed and upserts the rest.
func (w *pageWrite) write() error {
	newIDs, err := w.ins.exec(w.ctx, w.tx, w.tenantID, w.shopID)
	if err != nil {
		return err
	}
	for _, pid := range w.ins.pids {
		for _, k := range w.latest[pid].SKUs {
			nk := normSKU(k)
			nk.GoodsID = newIDs[pid]
			w.skuUps = append(w.skuUps, nk)
		}
	}
	if err := w.upd.exec(w.ctx, w.tx, w.tenantID); err != nil {
		return err
	}
	if len(w.skuDel) > 0 {
		if err := deleteSKUs(w.ctx, w.tx, w.tenantID, w.skuDel); err != nil {
			return err
		}
	}
	_, _, err = upsertSKUs(w.ctx, w.tx, w.tenantID, w.skuUps)
	return err
}

// keep records a committed write: its categories in the cache, its outcomes in outcome
// (the strongest outcome of a goods across pages).
func (w *pageWrite) keep(outcome map[string]int) {
	for k, v := range w.created {
		w.cats.ids[k] = v
	}
	for pid, o := range w.outcome {
		outcome[pid] = max(outcome[pid], o)
	}
}

func (s *goodsServer) SyncSkuFromPartnerA(ctx context.Context, req *basicv1.SyncSkuFromPartnerARequest) (*basicv1.SyncSkuFromPartnerAResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if s.c.partnerA == nil {
		return nil, apperr.New(apperr.KindUnavailable, "partner A sync is not configured (SHOPMIND_PARTNER_A_URL)")
	}
	goodsIDs := req.GetGoodsIds()
	found, err := platformRefs(ctx, s.c.pool, id.TenantID, goodsIDs)
	if err != nil {
		return nil, err
	}
	byPID := map[string][]int64{}
	var pids []string
	for i, gid := range goodsIDs {
		t, ok := found[gid]
		field := fmt.Sprintf("goods_ids[%d]", i)
		switch {
		case !ok:
			return nil, apperr.Invalid(field, "goods.exists", fmt.Sprintf("no goods %d in your tenant", gid))
		case t.deleted:
			return nil, apperr.New(apperr.KindRule, "goods %d is deleted", gid)
		case t.pid == "":
			return nil, apperr.New(apperr.KindRule, "goods %d has no platform goods id: sync it from its platform first", gid)
		}
		if !slices.Contains(byPID[t.pid], gid) {
			if len(byPID[t.pid]) == 0 {
				pids = append(pids, t.pid)
			}
			byPID[t.pid] = append(byPID[t.pid], gid)
		}
	}
	sctx, cancel := context.WithTimeout(ctx, s.c.cfg.SyncTimeout)
	defer cancel()
	skus, err := s.c.partnerA.AllSKUs(sctx, pids, 0)
	if err != nil {
		s.c.notifyPartnerASync(ctx, len(goodsIDs), err)
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, apperr.New(apperr.KindTimeout, "partner A sync exceeded its time limit of %s; nothing was written", s.c.cfg.SyncTimeout)
		}
		return nil, err
	}
	var res basicv1.SyncSkuFromPartnerAResponse
	err = s.c.store.tx(sctx, func(tx pgx.Tx) error {
		res = basicv1.SyncSkuFromPartnerAResponse{}
		var ids []int64
		for _, list := range byPID {
			ids = append(ids, list...)
		}
		slices.Sort(ids)
		if err := lockGoods(sctx, tx, id.TenantID, ids); err != nil {
			return err
		}
		current, err := loadSKUs(sctx, tx, id.TenantID, ids)
		if err != nil {
			return err
		}
		type key struct {
			goods int64
			pid   string
		}
		have := map[key]skuRecord{}
		for _, k := range current {
			have[key{k.GoodsID, k.PlatformSkuID}] = k
		}
		var ups []skuRecord
		touched := map[int64]bool{}
		for _, ps := range skus {
			nk := skuRecord{PlatformSkuID: ps.PlatformSkuID, Spec: ps.Spec, Price: money(ps.Price), Stock: max(ps.Stock, 0), ItemNo: ps.ItemNo}
			for _, gid := range byPID[ps.PlatformGoodsID] {
				if old, ok := have[key{gid, nk.PlatformSkuID}]; ok && sameSKU(old, nk) {
					res.Unchanged++
					continue
				}
				nk.GoodsID = gid
				ups = append(ups, nk)
				touched[gid] = true
			}
		}
		created, updated, err := upsertSKUs(sctx, tx, id.TenantID, ups)
		if err != nil {
			return err
		}
		res.Created, res.Updated = created, updated
		if len(touched) > 0 {
			changed := make([]int64, 0, len(touched))
			for gid := range touched {
				changed = append(changed, gid)
			}
			err = touchGoods(sctx, tx, id.TenantID, changed)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	s.c.pushToAnalytics(ctx, id.TenantID)
	return &res, nil
}

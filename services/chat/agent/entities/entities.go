// Package entities is the agents' entity index and its tool search_entities: a vector
// search over the tenant's goods (names, item numbers, category paths), shops, categories
// (with their paths) and staff (the members goods are assigned to), read from the basic
// data service over gRPC as the caller. The index is rebuilt when the tenant's basic data
// changed: every search first reads a cheap fingerprint (the goods' count and latest
// updated_at, the shops and the category tree) and re-indexes the tenant when it differs
// from the one indexed, so syncs, imports and edits are searchable at the next search.
// With WithAdhoc it also searches the ad-hoc page records the browser extension uploaded
// (adhoc.go), read from the crx service as the caller in the same way.
package entities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	basicv1 "github.com/shopmind/shopmind/gen/go/shopmind/basic/v1"
	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/vector"
)

// BasicTarget is the target the agents dial for the basic data service.
const BasicTarget = "basic"

// Collection is the vector collection of the entities.
const Collection = "entities"

// MaxGoods bounds the goods indexed per tenant (the most recently updated first).
const MaxGoods = 20000

// Basic is what the index reads of the basic data service.
type Basic interface {
	ListGoods(ctx context.Context, req *basicv1.ListGoodsRequest) (*basicv1.ListGoodsResponse, error)
	ListGoodCategories(ctx context.Context, req *basicv1.ListGoodCategoriesRequest) (*basicv1.ListGoodCategoriesResponse, error)
	ListShops(ctx context.Context, req *basicv1.ListShopsRequest) (*basicv1.ListShopsResponse, error)
}

// GRPCBasic calls BasicDataService as the caller (agent.CallAs).
type GRPCBasic struct {
	client  basicv1.BasicDataServiceClient
	timeout time.Duration
}

// NewGRPCBasic wraps a connection to the basic target; timeout bounds each call.
func NewGRPCBasic(conn grpc.ClientConnInterface, timeout time.Duration) *GRPCBasic {
	return &GRPCBasic{client: basicv1.NewBasicDataServiceClient(conn), timeout: timeout}
}

// ListGoods implements Basic.
func (g *GRPCBasic) ListGoods(ctx context.Context, req *basicv1.ListGoodsRequest) (*basicv1.ListGoodsResponse, error) {
	return agent.CallAs(ctx, g.timeout, g.client.ListGoods, req)
}

// ListGoodCategories implements Basic.
func (g *GRPCBasic) ListGoodCategories(ctx context.Context, req *basicv1.ListGoodCategoriesRequest) (*basicv1.ListGoodCategoriesResponse, error) {
	return agent.CallAs(ctx, g.timeout, g.client.ListGoodCategories, req)
}

// ListOrders reads orders with their lines (the knowledge graph's co-purchases).
func (g *GRPCBasic) ListOrders(ctx context.Context, req *basicv1.ListOrdersRequest) (*basicv1.ListOrdersResponse, error) {
	return agent.CallAs(ctx, g.timeout, g.client.ListOrders, req)
}

// ListShops implements Basic.
func (g *GRPCBasic) ListShops(ctx context.Context, req *basicv1.ListShopsRequest) (*basicv1.ListShopsResponse, error) {
	return agent.CallAs(ctx, g.timeout, g.client.ListShops, req)
}

// Snapshot is the tenant's basic data as the index and the knowledge graph read it.
type Snapshot struct {
	Goods      []*basicv1.Goods
	Shops      []*basicv1.Shop
	Categories []*basicv1.Category
	// GoodsTotal is the number of goods listed (Goods may hold fewer: MaxGoods).
	GoodsTotal int64
}

// CategoryPath is the category's path from its top-level ancestor ("女装 / 连衣裙").
func (s *Snapshot) CategoryPath(id int64) string {
	byID := map[int64]*basicv1.Category{}
	for _, c := range s.Categories {
		byID[c.GetId()] = c
	}
	var names []string
	for c, n := byID[id], 0; c != nil && n < 20; c, n = byID[c.GetParentId()], n+1 {
		names = append([]string{c.GetName()}, names...)
	}
	return strings.Join(names, " / ")
}

const page = int32(100)

// Fingerprint reads what tells whether the tenant's basic data changed: the goods' count
// and latest update, every shop and every category.
func Fingerprint(ctx context.Context, b Basic) (string, *Snapshot, error) {
	snap := &Snapshot{}
	latest, err := b.ListGoods(ctx, &basicv1.ListGoodsRequest{PageNum: proto.Int32(1), PageSize: proto.Int32(1), Sort: "updated_at,desc"})
	if err != nil {
		return "", nil, err
	}
	snap.GoodsTotal = latest.GetTotal()
	for n := int32(1); ; n++ {
		resp, err := b.ListShops(ctx, &basicv1.ListShopsRequest{PageNum: proto.Int32(n), PageSize: proto.Int32(page), Sort: "id,asc"})
		if err != nil {
			return "", nil, err
		}
		snap.Shops = append(snap.Shops, resp.GetItems()...)
		if len(resp.GetItems()) < int(page) || int64(len(snap.Shops)) >= resp.GetTotal() {
			break
		}
	}
	for n := int32(1); ; n++ {
		resp, err := b.ListGoodCategories(ctx, &basicv1.ListGoodCategoriesRequest{PageNum: proto.Int32(n), PageSize: proto.Int32(page), Sort: "id,asc"})
		if err != nil {
			return "", nil, err
		}
		snap.Categories = append(snap.Categories, resp.GetItems()...)
		if len(resp.GetItems()) < int(page) || int64(len(snap.Categories)) >= resp.GetTotal() {
			break
		}
	}
	h := sha256.New()
	fmt.Fprintf(h, "goods %d", snap.GoodsTotal)
	for _, g := range latest.GetItems() {
		fmt.Fprintf(h, " %d %s", g.GetId(), g.GetUpdatedAt().AsTime().Format(time.RFC3339Nano))
	}
	for _, s := range snap.Shops {
		fmt.Fprintf(h, "\nshop %d %q %s %s", s.GetId(), s.GetName(), s.GetPlatform(), s.GetStatus())
	}
	for _, c := range snap.Categories {
		fmt.Fprintf(h, "\ncategory %d %d %q", c.GetId(), c.GetParentId(), c.GetName())
	}
	return hex.EncodeToString(h.Sum(nil)), snap, nil
}

// LoadGoods reads the goods (most recently updated first, at most MaxGoods) into snap, each
// once: a goods updated while the pages are read moves to the first page and may come twice.
func LoadGoods(ctx context.Context, b Basic, snap *Snapshot) error {
	snap.Goods = nil
	seen := map[int64]bool{}
	for n := int32(1); len(snap.Goods) < MaxGoods; n++ {
		resp, err := b.ListGoods(ctx, &basicv1.ListGoodsRequest{PageNum: proto.Int32(n), PageSize: proto.Int32(page), Sort: "updated_at,desc"})
		if err != nil {
			return err
		}
		for _, g := range resp.GetItems() {
			if !seen[g.GetId()] {
				seen[g.GetId()] = true
				snap.Goods = append(snap.Goods, g)
			}
		}
		if len(resp.GetItems()) < int(page) || int64(n)*int64(page) >= resp.GetTotal() {
			break
		}
	}
	return nil
}

// indexed is what a tenant's index holds: the fingerprint of its basic data (with the
// embedder's id); mu is held while the index is rebuilt.
type indexed struct {
	mu          sync.Mutex
	fingerprint string
}

// Index keeps the vector index of each tenant's entities.
type Index struct {
	basic    Basic
	store    vector.Store
	embedder vector.Embedder
	indexed  agent.PerTenant[indexed]
	adhoc    *adhocIndex // nil: no ad-hoc page records (WithAdhoc)
}

// NewIndex returns an index over store (a collection of its own) with embedder.
func NewIndex(basic Basic, store vector.Store, embedder vector.Embedder) *Index {
	return &Index{basic: basic, store: store, embedder: embedder}
}

// Entity is one search result.
type Entity struct {
	Kind         string `json:"kind"` // goods, shop, category, staff, adhoc
	ID           int64  `json:"id"`
	Name         string `json:"name"`
	ItemNo       string `json:"item_no,omitempty"`
	CategoryPath string `json:"category_path,omitempty"`
	Shop         string `json:"shop,omitempty"`
	Staff        string `json:"staff,omitempty"`
	Platform     string `json:"platform,omitempty"`
	Status       string `json:"status,omitempty"`
	// PageURL, Captured (the captured fields as "key: value" text, shortened) and
	// CollectedAt describe an ad-hoc page record; Name is its title.
	PageURL     string  `json:"page_url,omitempty"`
	Captured    string  `json:"captured,omitempty"`
	CollectedAt string  `json:"collected_at,omitempty"`
	Score       float64 `json:"score"`
	Matched     string  `json:"matched,omitempty"`
}

type text struct{ field, value string }

// items builds the indexed texts: several short texts per entity (its name, item number,
// category path), each carrying the entity in its metadata.
func items(snap *Snapshot) []vector.Item {
	var out []vector.Item
	add := func(kind string, id int64, meta map[string]string, texts ...text) {
		meta["kind"], meta["id"] = kind, strconv.FormatInt(id, 10)
		seen := map[string]bool{}
		for i, t := range texts {
			v := strings.TrimSpace(t.value)
			if v == "" || seen[strings.ToLower(v)] {
				continue
			}
			seen[strings.ToLower(v)] = true
			m := map[string]string{"field": t.field}
			for k, x := range meta {
				m[k] = x
			}
			out = append(out, vector.Item{ID: fmt.Sprintf("%s:%d:%d", kind, id, i), Text: v, Metadata: m})
		}
	}
	for _, s := range snap.Shops {
		add("shop", s.GetId(), map[string]string{"name": s.GetName(), "platform": s.GetPlatform(), "status": s.GetStatus()},
			text{"name", s.GetName()}, text{"platform_shop_id", s.GetPlatformShopId()})
	}
	for _, c := range snap.Categories {
		path := snap.CategoryPath(c.GetId())
		add("category", c.GetId(), map[string]string{"name": c.GetName(), "category_path": path}, text{"name", c.GetName()}, text{"category_path", path})
	}
	staff := map[int64]string{}
	for _, g := range snap.Goods {
		path := snap.CategoryPath(g.GetCategoryId())
		add("goods", g.GetId(), map[string]string{"name": g.GetName(), "item_no": g.GetItemNo(), "category_path": path, "shop": g.GetShopName(),
			"staff": g.GetStaffName(), "platform": g.GetPlatform(), "status": g.GetStatus()},
			text{"name", g.GetName()}, text{"item_no", g.GetItemNo()}, text{"goods", strings.TrimSpace(g.GetName() + " " + path)})
		if g.GetStaffId() > 0 && g.GetStaffName() != "" {
			staff[g.GetStaffId()] = g.GetStaffName()
		}
	}
	ids := make([]int64, 0, len(staff))
	for id := range staff {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		add("staff", id, map[string]string{"name": staff[id]}, text{"name", staff[id]})
	}
	return out
}

// Refresh re-indexes the tenant when its basic data changed since it was indexed (read as
// the caller in ctx). It reports whether it re-indexed.
func (x *Index) Refresh(ctx context.Context, tenantID int64) (bool, error) {
	fp, snap, err := Fingerprint(ctx, x.basic)
	if err != nil {
		return false, err
	}
	fp += " " + x.embedder.ID()
	st := x.indexed.Of(tenantID)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.fingerprint == fp {
		return false, nil
	}
	if err := LoadGoods(ctx, x.basic, snap); err != nil {
		return false, err
	}
	its := items(snap)
	if len(its) > 0 {
		texts := make([]string, len(its))
		for i := range its {
			texts[i] = its[i].Text
		}
		vecs, err := x.embedder.Embed(ctx, texts)
		if err != nil {
			return false, fmt.Errorf("embed entities: %w", err)
		}
		for i := range its {
			its[i].Vector = vecs[i]
		}
	}
	if err := x.store.Replace(ctx, tenantID, its); err != nil {
		return false, err
	}
	st.fingerprint = fp
	return true, nil
}

// Search returns the topK entities closest to query (one hit per entity, its best text),
// best first, after refreshing the tenant's index when its basic data changed and, with
// WithAdhoc, the viewer's ad-hoc page records when crx lists new ones to the viewer. kinds
// limits the kinds (empty: all). Ad-hoc records are the viewer's own (administrators: the
// tenant's), none when crx refuses the viewer its listing.
func (x *Index) Search(ctx context.Context, v Viewer, query string, topK int, kinds ...string) ([]Entity, error) {
	r, err := x.search(ctx, v, query, topK, kinds...)
	return r.found, err
}

// searched is a search's entities and what was left out: the ad-hoc records' failure, or
// the basic data's refusal of a user who may list ad-hoc records.
type searched struct {
	found    []Entity
	adhocErr error
	basicErr error
}

// search is Search that also reports the ad-hoc records' failure apart: when crx fails
// (not a refusal) and other kinds were asked for too, those are still found.
func (x *Index) search(ctx context.Context, v Viewer, query string, topK int, kinds ...string) (searched, error) {
	var adhocErr error
	if topK <= 0 {
		topK = 5
	}
	wantBasic, wantAdhoc := len(kinds) == 0, len(kinds) == 0
	for _, k := range kinds {
		if k == KindAdhoc {
			wantAdhoc = true
		} else {
			wantBasic = true
		}
	}
	wantAdhoc = wantAdhoc && x.adhoc != nil
	var basicErr error
	if wantBasic {
		_, basicErr = x.Refresh(ctx, v.TenantID)
		if basicErr != nil && !(wantAdhoc && denied(basicErr)) {
			return searched{}, basicErr
		}
	}
	if wantAdhoc {
		may, err := x.adhoc.refresh(ctx, x.embedder, v)
		if err != nil && (!wantBasic || basicErr != nil) {
			return searched{}, err
		}
		if !may && basicErr != nil { // refused both: the basic data's refusal is the answer
			return searched{}, basicErr
		}
		adhocErr, wantAdhoc = err, may && err == nil
	}
	// a user basic refuses (no goods permission) who may list pages: the pages only
	wantBasic = wantBasic && basicErr == nil
	vecs, err := x.embedder.Embed(ctx, []string{query})
	if err != nil {
		return searched{}, fmt.Errorf("embed query: %w", err)
	}
	var hits []vector.Hit
	if wantBasic {
		if hits, err = x.store.Search(ctx, v.TenantID, vecs[0], topK*8+16); err != nil {
			return searched{}, err
		}
	}
	if wantAdhoc {
		more, err := x.adhoc.store.Search(ctx, v.TenantID, vecs[0], topK*8+16, v.where()...)
		if err != nil {
			return searched{}, err
		}
		// one ranking over both collections, best first (ties by id, as the stores rank)
		hits = append(hits, more...)
		sort.SliceStable(hits, func(i, j int) bool {
			if hits[i].Score != hits[j].Score {
				return hits[i].Score > hits[j].Score
			}
			return hits[i].ID < hits[j].ID
		})
	}
	best := map[string]*Entity{}
	var order []string
	for _, h := range hits {
		m := h.Metadata
		if len(kinds) > 0 && !slices.Contains(kinds, m["kind"]) {
			continue
		}
		key := m["kind"] + ":" + m["id"]
		if b := best[key]; b != nil {
			continue // hits are best first: the first is the entity's best text
		}
		id, _ := strconv.ParseInt(m["id"], 10, 64)
		best[key] = &Entity{Kind: m["kind"], ID: id, Name: m["name"], ItemNo: m["item_no"], CategoryPath: m["category_path"], Shop: m["shop"],
			Staff: m["staff"], Platform: m["platform"], Status: m["status"], PageURL: m["page_url"], Captured: m["captured"],
			CollectedAt: m["collected_at"], Score: float64(int(h.Score*1000)) / 1000, Matched: h.Text}
		order = append(order, key)
	}
	out := make([]Entity, 0, min(topK, len(order)))
	for _, k := range order[:min(topK, len(order))] {
		out = append(out, *best[k])
	}
	return searched{out, adhocErr, basicErr}, nil
}

// Tool returns search_entities over the index.
func (x *Index) Tool() agent.Tool { return &searchEntities{index: x} }

// ToolName is the tool's name.
const ToolName = "search_entities"

type searchEntities struct{ index *Index }

func (t *searchEntities) Name() string { return ToolName }
func (t *searchEntities) Description() string {
	return "Find the tenant's goods, shops, categories and staff members by name, item number or category path (vector " +
		"search over the basic data, kept current with syncs, imports and edits), and the web pages the user captured with " +
		"the browser extension (kind adhoc: title, page URL and captured fields). Returns each entity's kind, id, name and, " +
		"for goods, item number, category path, shop and responsible staff; for pages, page_url and the captured fields. " +
		"Use the ids in other tools (for example create_promotion_plan's product_id) and the names in query_metrics filters."
}
func (t *searchEntities) Parameters() *agent.Schema {
	maxLen := 200
	minK, maxK := 1.0, 20.0
	return agent.Object(map[string]*agent.Schema{
		"query": {Type: "string", Description: "words naming the entity: a goods name, an item number, a shop, a category, a person, or words of a captured page", MaxLength: &maxLen},
		"top_k": {Type: "integer", Description: "how many entities to return (default 5)", Minimum: &minK, Maximum: &maxK, Default: 5},
		"kinds": {Type: "array", Items: &agent.Schema{Type: "string", Enum: []any{"goods", "shop", "category", "staff", KindAdhoc}}, Description: "only these kinds (default all)"},
	}, "query")
}

func (t *searchEntities) Call(ctx context.Context, env *agent.ToolEnv, raw json.RawMessage) (*agent.ToolResult, error) {
	var args struct {
		Query string   `json:"query"`
		TopK  int      `json:"top_k"`
		Kinds []string `json:"kinds"`
	}
	if _, err := agent.DecodeCall(env, raw, &args); err != nil {
		return nil, err
	}
	if strings.TrimSpace(args.Query) == "" {
		return nil, errors.New("query is empty")
	}
	id := env.Request.Identity
	r, err := t.index.search(ctx, Viewer{TenantID: id.TenantID, UserID: id.UserID, All: id.IsAdmin}, args.Query, args.TopK, args.Kinds...)
	if err != nil {
		return nil, err
	}
	found := r.found
	out := map[string]any{"entities": found}
	if r.adhocErr != nil { // the model should know the pages were not searched
		out["note"] = "captured pages (kind adhoc) could not be searched: " + agent.ToolErrorMessage(r.adhocErr)
	}
	if r.basicErr != nil {
		out["note"] = "only captured pages were searched; goods, shops, categories and staff: " + agent.ToolErrorMessage(r.basicErr)
	}
	names := make([]string, len(found))
	for i, e := range found {
		names[i] = e.Kind + " " + e.Name
	}
	return &agent.ToolResult{JSON: out, Data: found,
		Summary: fmt.Sprintf("%d entities: %s", len(found), strings.Join(names, ", "))}, nil
}

// Package graph is the agents' knowledge graph and its tool search_knowledge_graph: each
// tenant's business as nodes (shops, goods, categories, staff, metrics, promotion plans)
// and edges (in_category, child_of, sold_by, managed_by, depends_on between metrics,
// targets and watches from plans, bought_with between goods bought in the same orders),
// behind the Store interface: PostgreSQL by default (chat.graph_nodes and
// chat.graph_edges, searched with a recursive CTE), Neo4j by configuration (Neo4j,
// github.com/neo4j/neo4j-go-driver/v5). Builder reads the data as the caller (basic data
// and orders over gRPC, the metric catalog from the analysis service, the promotion plans
// from the chat schema) and rebuilds a tenant's graph when a fingerprint of that data
// changed, checked at every search.
package graph

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	basicv1 "github.com/shopmind/shopmind/gen/go/shopmind/basic/v1"
	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/agent/entities"
	"github.com/shopmind/shopmind/services/chat/promotion"
)

// Node is one thing of the tenant's business. ID is "<kind>:<key>" (goods:12, metric:gmv).
type Node struct {
	ID    string         `json:"id"`
	Kind  string         `json:"kind"`
	Name  string         `json:"name"`
	Props map[string]any `json:"props,omitempty"`
	// Depth is the distance from a node matching the keyword (search results only).
	Depth int `json:"depth"`
}

// Edge is a relation between two nodes.
type Edge struct {
	From   string  `json:"from"`
	To     string  `json:"to"`
	Kind   string  `json:"kind"`
	Weight float64 `json:"weight,omitempty"`
}

// Graph is a tenant's whole graph.
type Graph struct {
	Nodes []Node
	Edges []Edge
}

// Result is a search's subgraph: the nodes matching the keyword (depth 0) and their
// neighbours within the depth, with the edges among them.
type Result struct {
	Nodes []Node `json:"nodes"`
	Edges []Edge `json:"edges"`
}

// Store keeps the tenants' graphs.
type Store interface {
	// Replace makes g the tenant's whole graph.
	Replace(ctx context.Context, tenantID int64, g *Graph) error
	// Search finds at most limit nodes whose name contains keyword (case-insensitive; or
	// whose id is keyword), then their neighbours up to depth edges away (in either
	// direction), at most 5*limit nodes in all, nearest first.
	Search(ctx context.Context, tenantID int64, keyword string, limit, depth int) (*Result, error)
	// Name is the store's kind: postgres or neo4j.
	Name() string
}

// Edge kinds.
const (
	EdgeInCategory = "in_category"
	EdgeChildOf    = "child_of"
	EdgeSoldBy     = "sold_by"
	EdgeManagedBy  = "managed_by"
	EdgeDependsOn  = "depends_on"
	EdgeTargets    = "targets"
	EdgeWatches    = "watches"
	EdgeBoughtWith = "bought_with"
)

// Orders reads orders with their lines (BasicDataService.ListOrders as the caller).
type Orders interface {
	ListOrders(ctx context.Context, req *basicv1.ListOrdersRequest) (*basicv1.ListOrdersResponse, error)
}

// Plans reads the tenant's promotion plans.
type Plans interface {
	AllPlans(ctx context.Context, tenantID int64) ([]*promotion.Plan, error)
}

// Co-purchase window and bounds.
const (
	CoPurchaseDays      = 90
	CoPurchaseMaxOrders = 5000
	CoPurchasePartners  = 5 // strongest partners kept per goods
)

// Builder builds and refreshes the tenants' graphs.
type Builder struct {
	basic     entities.Basic
	orders    Orders
	analytics agent.Analytics
	plans     Plans // may be nil
	store     Store
	now       func() time.Time
	built     agent.PerTenant[built]
}

// built is what a tenant's graph was built from (the fingerprint of its data); mu is held
// while it is rebuilt.
type built struct {
	mu    sync.Mutex
	print string
}

// NewBuilder returns a builder writing to store. plans may be nil (no plans in the graph);
// now nil: time.Now.
func NewBuilder(basic entities.Basic, orders Orders, analytics agent.Analytics, plans Plans, store Store, now func() time.Time) *Builder {
	if now == nil {
		now = time.Now
	}
	return &Builder{basic: basic, orders: orders, analytics: analytics, plans: plans, store: store, now: now}
}

// source is what a graph is built from.
type source struct {
	snap    *entities.Snapshot
	metrics []agent.MetricInfo
	plans   []*promotion.Plan
	orders  []*basicv1.Order
	print   string
}

// read reads the fingerprint of the tenant's data (and the parts that are cheap to read
// whole).
func (b *Builder) read(ctx context.Context, tenantID int64) (*source, error) {
	fp, snap, err := entities.Fingerprint(ctx, b.basic)
	if err != nil {
		return nil, err
	}
	src := &source{snap: snap}
	h := sha256.New()
	h.Write([]byte(fp))
	if src.metrics, err = agent.FetchMetrics(ctx, b.analytics); err != nil {
		return nil, err
	}
	for _, m := range src.metrics {
		fmt.Fprintf(h, "\nmetric %s %q %s", m.Name, m.DisplayName, m.Expression)
	}
	if b.plans != nil {
		if src.plans, err = b.plans.AllPlans(ctx, tenantID); err != nil {
			return nil, err
		}
		for _, p := range src.plans {
			fmt.Fprintf(h, "\nplan %d %s %s", p.ID, p.Status, p.UpdatedAt.Format(time.RFC3339Nano))
		}
	}
	latest, err := b.orders.ListOrders(ctx, b.ordersPage(1, 1))
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(h, "\norders %d", latest.GetTotal())
	for _, o := range latest.GetItems() {
		fmt.Fprintf(h, " %d", o.GetId())
	}
	src.print = hex.EncodeToString(h.Sum(nil))
	return src, nil
}

func (b *Builder) ordersPage(num, size int32) *basicv1.ListOrdersRequest {
	today := b.now().UTC().Truncate(24 * time.Hour)
	return &basicv1.ListOrdersRequest{PageNum: proto.Int32(num), PageSize: proto.Int32(size), Sort: "ordered_at,desc",
		StartTime: timestamppb.New(today.AddDate(0, 0, -CoPurchaseDays)), EndTime: timestamppb.New(today.AddDate(0, 0, 1))}
}

// Refresh rebuilds the tenant's graph when its data changed since it was built (read as
// the caller in ctx); it reports whether it rebuilt.
func (b *Builder) Refresh(ctx context.Context, tenantID int64) (bool, error) {
	src, err := b.read(ctx, tenantID)
	if err != nil {
		return false, err
	}
	st := b.built.Of(tenantID)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.print == src.print {
		return false, nil
	}
	if err := entities.LoadGoods(ctx, b.basic, src.snap); err != nil {
		return false, err
	}
	for n := int32(1); len(src.orders) < CoPurchaseMaxOrders; n++ {
		resp, err := b.orders.ListOrders(ctx, b.ordersPage(n, 100))
		if err != nil {
			return false, err
		}
		src.orders = append(src.orders, resp.GetItems()...)
		if len(resp.GetItems()) < 100 || int64(len(src.orders)) >= resp.GetTotal() {
			break
		}
	}
	if err := b.store.Replace(ctx, tenantID, Build(src.snap, src.metrics, src.plans, src.orders)); err != nil {
		return false, err
	}
	st.print = src.print
	return true, nil
}

func id(kind string, key int64) string { return kind + ":" + strconv.FormatInt(key, 10) }

// Build turns the tenant's data into its graph.
func Build(snap *entities.Snapshot, metrics []agent.MetricInfo, plans []*promotion.Plan, orders []*basicv1.Order) *Graph {
	g := &Graph{}
	has := map[string]bool{}
	node := func(n Node) {
		if !has[n.ID] {
			has[n.ID] = true
			g.Nodes = append(g.Nodes, n)
		}
	}
	// One edge per (from, to, kind), the store's key: the data may name a pair twice (a plan
	// watching a metric twice, a goods read twice while the listing changed under the pages).
	type edgeKey struct{ from, to, kind string }
	hasEdge := map[edgeKey]bool{}
	edge := func(from, to, kind string, w float64) {
		k := edgeKey{from, to, kind}
		if has[from] && has[to] && from != to && !hasEdge[k] {
			hasEdge[k] = true
			g.Edges = append(g.Edges, Edge{From: from, To: to, Kind: kind, Weight: w})
		}
	}
	for _, s := range snap.Shops {
		node(Node{ID: id("shop", s.GetId()), Kind: "shop", Name: s.GetName(), Props: map[string]any{"platform": s.GetPlatform(), "status": s.GetStatus()}})
	}
	for _, c := range snap.Categories {
		node(Node{ID: id("category", c.GetId()), Kind: "category", Name: c.GetName(), Props: map[string]any{"path": snap.CategoryPath(c.GetId()), "level": c.GetLevel()}})
	}
	for _, c := range snap.Categories {
		if c.GetParentId() > 0 {
			edge(id("category", c.GetId()), id("category", c.GetParentId()), EdgeChildOf, 1)
		}
	}
	for _, gd := range snap.Goods {
		gid := id("goods", gd.GetId())
		node(Node{ID: gid, Kind: "goods", Name: gd.GetName(), Props: map[string]any{"item_no": gd.GetItemNo(), "status": gd.GetStatus(), "price": gd.GetPrice()}})
		if gd.GetStaffId() > 0 {
			node(Node{ID: id("staff", gd.GetStaffId()), Kind: "staff", Name: gd.GetStaffName()})
		}
		edge(gid, id("category", gd.GetCategoryId()), EdgeInCategory, 1)
		edge(gid, id("shop", gd.GetShopId()), EdgeSoldBy, 1)
		edge(gid, id("staff", gd.GetStaffId()), EdgeManagedBy, 1)
	}
	for _, m := range metrics {
		node(Node{ID: "metric:" + m.Name, Kind: "metric", Name: m.Label(), Props: map[string]any{"name": m.Name, "type": m.Type,
			"grain": string(m.Grain), "expression": m.Expression}})
	}
	for _, m := range metrics {
		for _, dep := range formulaOperands(m.Expression) {
			edge("metric:"+m.Name, "metric:"+dep, EdgeDependsOn, 1)
		}
	}
	for _, p := range plans {
		pid := id("plan", p.ID)
		node(Node{ID: pid, Kind: "promotion_plan", Name: p.Title, Props: map[string]any{"status": p.Status, "goal": p.Goal, "mechanics": p.Mechanics,
			"start_date": p.StartDate.Format(time.DateOnly), "end_date": p.EndDate.Format(time.DateOnly)}})
		for _, gid := range p.ProductIDs {
			edge(pid, id("goods", gid), EdgeTargets, 1)
		}
		for _, m := range p.Metrics {
			edge(pid, "metric:"+m, EdgeWatches, 1)
		}
	}
	for _, e := range coPurchases(orders) {
		edge(e.From, e.To, EdgeBoughtWith, e.Weight)
	}
	return g
}

// formulaOperands are the metric names a formula expression uses.
func formulaOperands(expr string) []string {
	var out []string
	seen := map[string]bool{}
	for _, tok := range strings.FieldsFunc(expr, func(r rune) bool { return !(r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') }) {
		if tok[0] >= '0' && tok[0] <= '9' || seen[tok] {
			continue
		}
		seen[tok] = true
		out = append(out, tok)
	}
	return out
}

// coPurchases are the bought_with edges: for each goods its CoPurchasePartners strongest
// partners, weighted by the number of orders holding both (one edge per pair, from the
// smaller id).
func coPurchases(orders []*basicv1.Order) []Edge {
	type pair struct{ a, b int64 }
	count := map[pair]int{}
	for _, o := range orders {
		var ids []int64
		seen := map[int64]bool{}
		for _, l := range o.GetLines() {
			if g := l.GetGoodsId(); g > 0 && !seen[g] {
				seen[g] = true
				ids = append(ids, g)
			}
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		for i := range ids {
			for j := i + 1; j < len(ids); j++ {
				count[pair{ids[i], ids[j]}]++
			}
		}
	}
	partners := map[int64][]pair{}
	for p := range count {
		partners[p.a] = append(partners[p.a], p)
		partners[p.b] = append(partners[p.b], p)
	}
	keep := map[pair]bool{}
	for _, ps := range partners {
		sort.Slice(ps, func(i, j int) bool {
			if count[ps[i]] != count[ps[j]] {
				return count[ps[i]] > count[ps[j]]
			}
			return ps[i].a < ps[j].a || ps[i].a == ps[j].a && ps[i].b < ps[j].b
		})
		for _, p := range ps[:min(CoPurchasePartners, len(ps))] {
			keep[p] = true
		}
	}
	out := make([]Edge, 0, len(keep))
	for p := range keep {
		out = append(out, Edge{From: id("goods", p.a), To: id("goods", p.b), Kind: EdgeBoughtWith, Weight: float64(count[p])})
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].From < out[j].From || out[i].From == out[j].From && out[i].To < out[j].To
	})
	return out
}

// Tool returns search_knowledge_graph over the builder's store.
func (b *Builder) Tool() agent.Tool { return &searchGraph{b: b} }

// ToolName is the tool's name.
const ToolName = "search_knowledge_graph"

type searchGraph struct{ b *Builder }

func (t *searchGraph) Name() string { return ToolName }
func (t *searchGraph) Description() string {
	return "Search the tenant's knowledge graph: shops, goods, categories, staff, metrics and promotion plans, and how " +
		"they relate (goods in_category, sold_by a shop, managed_by staff; categories child_of their parent; metrics " +
		"depends_on the metrics of their formula; plans targets goods and watches metrics; goods bought_with other goods, " +
		"weighted by the orders of the last 90 days holding both). Returns the nodes whose name contains the keyword and " +
		"their neighbours with the edges."
}
func (t *searchGraph) Parameters() *agent.Schema {
	maxLen := 100
	minL, maxL, maxD := 1.0, 50.0, 2.0
	return agent.Object(map[string]*agent.Schema{
		"keyword": {Type: "string", Description: "a name or part of one (goods, shop, category, staff, metric, plan), or a node id such as goods:12", MaxLength: &maxLen},
		"limit":   {Type: "integer", Description: "matching nodes to start from (default 10)", Minimum: &minL, Maximum: &maxL, Default: 10},
		"depth":   {Type: "integer", Description: "edges to follow from them (default 1, at most 2)", Minimum: &minL, Maximum: &maxD, Default: 1},
	}, "keyword")
}

func (t *searchGraph) Call(ctx context.Context, env *agent.ToolEnv, raw json.RawMessage) (*agent.ToolResult, error) {
	var args struct {
		Keyword string `json:"keyword"`
		Limit   int    `json:"limit"`
		Depth   int    `json:"depth"`
	}
	if _, err := agent.DecodeCall(env, raw, &args); err != nil {
		return nil, err
	}
	args.Keyword = strings.TrimSpace(args.Keyword)
	if args.Keyword == "" {
		return nil, errors.New("keyword is empty")
	}
	if args.Limit <= 0 {
		args.Limit = 10
	}
	if args.Depth <= 0 {
		args.Depth = 1
	}
	tenant := env.Request.Identity.TenantID
	if _, err := t.b.Refresh(ctx, tenant); err != nil {
		return nil, err
	}
	res, err := t.b.store.Search(ctx, tenant, args.Keyword, args.Limit, args.Depth)
	if err != nil {
		return nil, err
	}
	matched := 0
	for _, n := range res.Nodes {
		if n.Depth == 0 {
			matched++
		}
	}
	return &agent.ToolResult{JSON: res, Data: res,
		Summary: fmt.Sprintf("%d nodes matching %q, %d nodes and %d edges in all", matched, args.Keyword, len(res.Nodes), len(res.Edges))}, nil
}

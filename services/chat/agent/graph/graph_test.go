package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	basicv1 "github.com/shopmind/shopmind/gen/go/shopmind/basic/v1"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/testutil/pgtest"
	"github.com/shopmind/shopmind/services/chat"
	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/agent/agenttest"
	"github.com/shopmind/shopmind/services/chat/agent/graph"
	"github.com/shopmind/shopmind/services/chat/promotion"
)

type fixture struct {
	basic *agenttest.FakeBasic
	plans *promotion.Store
	reg   *agent.Registry
	b     *graph.Builder
}

func newFixture(t *testing.T) *fixture {
	db := pgtest.New(t, *chat.Service().Migrations)
	f := &fixture{basic: agenttest.NewFakeBasic(), plans: promotion.NewStore(db.Pool)}
	f.b = graph.NewBuilder(f.basic, f.basic, agenttest.NewFakeAnalytics(), f.plans, graph.NewPostgres(db.Pool), agenttest.Clock)
	f.reg = agent.NewRegistry(0, f.b.Tool())
	return f
}

func (f *fixture) search(t *testing.T, tenant int64, args string) *graph.Result {
	t.Helper()
	id := agenttest.Identity()
	id.TenantID = tenant
	content, _, err := f.reg.Run(authn.WithIdentity(context.Background(), id), &agent.ToolEnv{Request: &agent.Request{Identity: id}}, graph.ToolName, args)
	if err != nil {
		t.Fatalf("%s: %v", args, err)
	}
	var res graph.Result
	if err := json.Unmarshal([]byte(content), &res); err != nil {
		t.Fatal(err)
	}
	return &res
}

func edges(res *graph.Result, kind string) map[string]float64 {
	out := map[string]float64{}
	for _, e := range res.Edges {
		if e.Kind == kind {
			out[e.From+">"+e.To] = e.Weight
		}
	}
	return out
}

func nodeIDs(res *graph.Result) map[string]int {
	out := map[string]int{}
	for _, n := range res.Nodes {
		out[n.ID] = n.Depth
	}
	return out
}

// coBought counts tenant 42's fake orders of the last 90 days holding both goods.
func coBought(t *testing.T, f *fixture, a, b int64) float64 {
	t.Helper()
	ctx := authn.WithIdentity(context.Background(), agenttest.Identity())
	today := agenttest.Now.Truncate(24 * time.Hour)
	n := 0
	for page := int32(1); ; page++ {
		size := int32(100)
		resp, err := f.basic.ListOrders(ctx, &basicv1.ListOrdersRequest{PageNum: &page, PageSize: &size})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range resp.GetItems() {
			if o.GetOrderedAt().AsTime().Before(today.AddDate(0, 0, -graph.CoPurchaseDays)) {
				continue
			}
			has := map[int64]bool{}
			for _, l := range o.GetLines() {
				has[l.GetGoodsId()] = true
			}
			if has[a] && has[b] {
				n++
			}
		}
		if len(resp.GetItems()) < int(size) {
			return float64(n)
		}
	}
}

func TestKnowledgeGraph(t *testing.T) {
	f := newFixture(t)

	// a goods with its category, shop, staff and the goods bought with it
	res := f.search(t, 42, `{"keyword":"Wool coat"}`)
	ids := nodeIDs(res)
	if ids["goods:2"] != 0 {
		t.Fatalf("no seed: %v", ids)
	}
	for _, want := range []string{"category:1", "shop:3", "staff:100"} {
		if d, ok := ids[want]; !ok || d != 1 {
			t.Errorf("%s not a neighbour: %v", want, ids)
		}
	}
	bought := edges(res, graph.EdgeBoughtWith)
	if len(bought) == 0 {
		t.Fatalf("no co-purchases: %+v", res.Edges)
	}
	for pair, w := range bought {
		var a, b int64
		fmt.Sscanf(strings.ReplaceAll(strings.ReplaceAll(pair, "goods:", ""), ">", " "), "%d %d", &a, &b)
		if want := coBought(t, f, a, b); w != want {
			t.Errorf("%s weight %v, orders holding both %v", pair, w, want)
		}
	}
	if edges(res, graph.EdgeInCategory)["goods:2>category:1"] != 1 || edges(res, graph.EdgeSoldBy)["goods:2>shop:3"] != 1 {
		t.Fatalf("%+v", res.Edges)
	}
	// depth 2: the category's parent
	if _, ok := nodeIDs(f.search(t, 42, `{"keyword":"Wool coat","depth":2}`))["category:10"]; !ok {
		t.Fatal("depth 2 does not reach the parent category")
	}
	// metrics and their formula dependencies
	res = f.search(t, 42, `{"keyword":"Average order value"}`)
	if dep := edges(res, graph.EdgeDependsOn); dep["metric:avg_order_value>metric:gmv"] != 1 || dep["metric:avg_order_value>metric:order_count"] != 1 {
		t.Fatalf("%+v", res)
	}
	// a new promotion plan is in the graph at the next search, with what it targets and watches
	// (named twice by the model: one edge each)
	p, err := f.plans.CreatePlan(context.Background(), &promotion.Plan{TenantID: 42, Title: "Winter coat push", ProductIDs: []int64{2, 2},
		StartDate: agenttest.Now, EndDate: agenttest.Now.AddDate(0, 0, 7), Metrics: []string{"units_sold", "units_sold"}, CreatedBy: 7})
	if err != nil {
		t.Fatal(err)
	}
	res = f.search(t, 42, `{"keyword":"winter coat push"}`)
	pid := fmt.Sprintf("plan:%d", p.ID)
	if edges(res, graph.EdgeTargets)[pid+">goods:2"] != 1 || edges(res, graph.EdgeWatches)[pid+">metric:units_sold"] != 1 {
		t.Fatalf("%+v", res)
	}
	// an edit is in the graph at the next search; an unchanged tenant is not rebuilt
	f.basic.Edit(42, 2, func(g *basicv1.Goods) { g.Name = "Cashmere overcoat" })
	if ids := nodeIDs(f.search(t, 42, `{"keyword":"cashmere"}`)); ids["goods:2"] != 0 {
		t.Fatalf("%v", ids)
	}
	if again, err := f.b.Refresh(authn.WithIdentity(context.Background(), agenttest.Identity()), 42); err != nil || again {
		t.Fatalf("rebuilt without a change: %v %v", again, err)
	}
	// LIKE wildcards are literal; another tenant sees only its own graph
	if res := f.search(t, 42, `{"keyword":"%"}`); len(res.Nodes) != 0 {
		t.Fatalf("%% matched %v", res.Nodes)
	}
	if res := f.search(t, 7, `{"keyword":"coat"}`); len(res.Nodes) != 0 {
		t.Fatalf("tenant 7 sees %v", res.Nodes)
	}
	if ids := nodeIDs(f.search(t, 7, `{"keyword":"Silk dress deluxe"}`)); ids["goods:901"] != 0 || len(ids) != 2 {
		t.Fatalf("tenant 7: %v", ids)
	}
	// limit bounds the seeds and the nodes (5 per seed)
	if res := f.search(t, 42, `{"keyword":"e","limit":2,"depth":2}`); len(res.Nodes) > 10 {
		t.Fatalf("%d nodes", len(res.Nodes))
	}

	// failures are the status object
	f.basic.Fail = status.Error(codes.Unavailable, "basic is down")
	id := agenttest.Identity()
	content, _, err := f.reg.Run(authn.WithIdentity(context.Background(), id), &agent.ToolEnv{Request: &agent.Request{Identity: id}}, graph.ToolName, `{"keyword":"coat"}`)
	if err == nil || agenttest.ErrorMessage(t, content) != "basic is down" {
		t.Fatal(content)
	}
}

package graph_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"

	basicv1 "github.com/shopmind/shopmind/gen/go/shopmind/basic/v1"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/testutil/pgtest"
	"github.com/shopmind/shopmind/services/chat"
	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/agent/agenttest"
	"github.com/shopmind/shopmind/services/chat/agent/entities"
	"github.com/shopmind/shopmind/services/chat/agent/graph"
)

// fakeGraph is tenant's graph built from the fakes.
func fakeGraph(t *testing.T, tenant int64) *graph.Graph {
	t.Helper()
	id := agenttest.Identity()
	id.TenantID = tenant
	ctx := authn.WithIdentity(context.Background(), id)
	basic := agenttest.NewFakeBasic()
	_, snap, err := entities.Fingerprint(ctx, basic)
	if err != nil {
		t.Fatal(err)
	}
	if err := entities.LoadGoods(ctx, basic, snap); err != nil {
		t.Fatal(err)
	}
	metrics, err := agent.FetchMetrics(ctx, agenttest.NewFakeAnalytics())
	if err != nil {
		t.Fatal(err)
	}
	var orders []*basicv1.Order
	for n := int32(1); ; n++ {
		resp, err := basic.ListOrders(ctx, &basicv1.ListOrdersRequest{PageNum: proto.Int32(n), PageSize: proto.Int32(100)})
		if err != nil {
			t.Fatal(err)
		}
		orders = append(orders, resp.GetItems()...)
		if len(resp.GetItems()) < 100 {
			break
		}
	}
	return graph.Build(snap, metrics, nil, orders)
}

// The Neo4j store through the real driver against the Bolt fake: the same searches give
// the same nodes, depths, properties and edges as the PostgreSQL store on the same graphs;
// the graph is written in batches inside one transaction; tenants stay apart.
func TestNeo4jStoreAgainstTheBoltFake(t *testing.T) {
	fake := newBoltFake(t)
	neo, err := graph.NewNeo4j(graph.Neo4jConfig{URI: fake.uri(), User: "neo4j", Password: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	t.Cleanup(func() { _ = neo.Close(ctx) })
	if err := neo.Health(ctx); err != nil {
		t.Fatal(err)
	}
	pg := graph.NewPostgres(pgtest.New(t, *chat.Service().Migrations).Pool)
	g42, g7 := fakeGraph(t, 42), fakeGraph(t, 7)
	for _, s := range []graph.Store{pg, neo} {
		if err := s.Replace(ctx, 42, g42); err != nil {
			t.Fatalf("%s: %v", s.Name(), err)
		}
		if err := s.Replace(ctx, 7, g7); err != nil {
			t.Fatalf("%s: %v", s.Name(), err)
		}
	}
	for _, c := range []struct {
		tenant         int64
		keyword        string
		limit, depth   int
		wantAtLeastHit int
	}{
		{42, "Wool coat", 10, 1, 5}, {42, "wool coat", 10, 2, 8}, {42, "goods:5", 1, 1, 4}, {42, "Average order value", 5, 1, 3},
		{42, "e", 3, 2, 3}, {42, "%", 10, 1, 0}, {7, "silk", 10, 1, 2}, {7, "Wool coat", 10, 1, 0},
	} {
		want, err := pg.Search(ctx, c.tenant, c.keyword, c.limit, c.depth)
		if err != nil {
			t.Fatal(err)
		}
		got, err := neo.Search(ctx, c.tenant, c.keyword, c.limit, c.depth)
		if err != nil {
			t.Fatal(err)
		}
		if len(want.Nodes) < c.wantAtLeastHit || !reflect.DeepEqual(fmt.Sprint(got), fmt.Sprint(want)) {
			t.Errorf("%d %q limit %d depth %d:\nneo4j    %v\npostgres %v", c.tenant, c.keyword, c.limit, c.depth, got, want)
		}
	}
	// batches: 2,500 nodes are three CREATE statements in the replacing transaction
	big := &graph.Graph{}
	for i := range 2500 {
		big.Nodes = append(big.Nodes, graph.Node{ID: fmt.Sprintf("goods:%d", i), Kind: "goods", Name: fmt.Sprintf("Goods %d", i)})
		if i > 0 {
			big.Edges = append(big.Edges, graph.Edge{From: fmt.Sprintf("goods:%d", i-1), To: fmt.Sprintf("goods:%d", i), Kind: graph.EdgeBoughtWith, Weight: 1})
		}
	}
	before := len(fake.statements())
	if err := neo.Replace(ctx, 99, big); err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, q := range fake.statements()[before:] {
		count[q]++
	}
	if count[graph.Neo4jDeleteTenant] != 1 || count[graph.Neo4jCreateNodes] != 3 || count[graph.Neo4jCreateEdges] != 3 {
		t.Fatalf("%v", count)
	}
	res, err := neo.Search(ctx, 99, "goods 1200", 1, 1)
	if err != nil || len(res.Nodes) != 3 || len(res.Edges) != 2 {
		t.Fatalf("%+v %v", res, err)
	}
	fake.mu.Lock()
	hello := fake.hellos[0]
	fake.mu.Unlock()
	if hello["principal"] != "neo4j" || hello["credentials"] != "secret" || hello["scheme"] != "basic" {
		t.Fatalf("HELLO %v", hello)
	}
}

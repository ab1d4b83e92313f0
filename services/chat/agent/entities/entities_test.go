package entities

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	basicv1 "github.com/shopmind/shopmind/gen/go/shopmind/basic/v1"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/agent/agenttest"
	"github.com/shopmind/shopmind/services/chat/vector"
)

func search(t *testing.T, reg *agent.Registry, tenant int64, args string) []Entity {
	t.Helper()
	id := agenttest.Identity()
	id.TenantID = tenant
	ctx := authn.WithIdentity(context.Background(), id)
	content, _, err := reg.Run(ctx, &agent.ToolEnv{Request: &agent.Request{Identity: id}}, ToolName, args)
	if err != nil {
		t.Fatalf("%s: %v", args, err)
	}
	var out struct {
		Entities []Entity `json:"entities"`
	}
	if err := json.Unmarshal([]byte(content), &out); err != nil {
		t.Fatal(err)
	}
	return out.Entities
}

func TestSearchEntities(t *testing.T) {
	basic := agenttest.NewFakeBasic()
	x := NewIndex(basic, vector.NewMemory(), vector.NewHashEmbedder(256))
	reg := agent.NewRegistry(0, x.Tool())

	got := search(t, reg, 42, `{"query":"wool coat","top_k":3}`)
	if len(got) == 0 || got[0].Kind != "goods" || got[0].Name != "Wool coat" || got[0].CategoryPath != "服装 Apparel / 女装" ||
		got[0].Shop == "" || got[0].Staff == "" || got[0].ItemNo == "" {
		t.Fatalf("%+v", got)
	}
	item := got[0].ItemNo
	if got := search(t, reg, 42, `{"query":"`+item+`","top_k":1}`); len(got) != 1 || got[0].Name != "Wool coat" || got[0].Matched != item {
		t.Fatalf("by item number %s: %+v", item, got)
	}
	if got := search(t, reg, 42, `{"query":"鞋靴","top_k":2,"kinds":["category"]}`); len(got) == 0 || got[0].Kind != "category" ||
		got[0].CategoryPath != "鞋包配饰 Shoes and accessories / 鞋靴" {
		t.Fatalf("category: %+v", got)
	}
	if got := search(t, reg, 42, `{"query":"Li Na","top_k":1,"kinds":["staff"]}`); len(got) != 1 || got[0].Name != "Li Na" {
		t.Fatalf("staff: %+v", got)
	}
	if got := search(t, reg, 42, `{"query":"Outlet","top_k":1,"kinds":["shop"]}`); len(got) != 1 || got[0].Name != "Outlet Store" {
		t.Fatalf("shop: %+v", got)
	}
	// tenants are separate: tenant 7 sees its own goods only, tenant 42 never sees them
	for _, e := range search(t, reg, 42, `{"query":"Silk dress deluxe","top_k":20}`) {
		if e.ID == 901 || e.Shop == "Other Tenant Shop" {
			t.Fatalf("another tenant's entity: %+v", e)
		}
	}
	if got := search(t, reg, 7, `{"query":"silk dress","top_k":5}`); len(got) == 0 || got[0].ID != 901 {
		t.Fatalf("tenant 7: %+v", got)
	}
	for _, e := range search(t, reg, 7, `{"query":"wool coat","top_k":20}`) {
		if e.Name == "Wool coat" {
			t.Fatal("tenant 7 sees tenant 42's goods")
		}
	}

	// kept fresh: an edit (as a sync or import would make) and a new shop are found at the
	// next search; the old name is gone; an unchanged tenant is not re-indexed
	basic.Edit(42, 2, func(g *basicv1.Goods) { g.Name = "Cashmere overcoat" })
	basic.AddShop(42, &basicv1.Shop{Id: 77, Name: "Riverside Pop-up", Platform: "douyin", Status: "active"})
	got = search(t, reg, 42, `{"query":"cashmere overcoat","top_k":1}`)
	if len(got) != 1 || got[0].ID != 2 || got[0].Name != "Cashmere overcoat" {
		t.Fatalf("after the edit: %+v", got)
	}
	for _, e := range search(t, reg, 42, `{"query":"wool coat","top_k":10,"kinds":["goods"]}`) {
		if e.Name == "Wool coat" {
			t.Fatal("the old name is still indexed")
		}
	}
	if got := search(t, reg, 42, `{"query":"Riverside Pop-up","top_k":1}`); len(got) != 1 || got[0].ID != 77 {
		t.Fatalf("new shop: %+v", got)
	}
	basic.Edit(42, 3, func(g *basicv1.Goods) { g.Status = "deleted" })
	for _, e := range search(t, reg, 42, `{"query":"Denim jacket","top_k":10}`) {
		if e.ID == 3 && e.Kind == "goods" {
			t.Fatal("a deleted goods is still found")
		}
	}
	ctx := authn.WithIdentity(context.Background(), agenttest.Identity())
	if again, err := x.Refresh(ctx, 42); err != nil || again {
		t.Fatalf("unchanged data re-indexed: %v %v", again, err)
	}

	// failures are the status object
	basic.Fail = status.Error(codes.PermissionDenied, "permission basic:goods:list required")
	content, _, err := reg.Run(ctx, &agent.ToolEnv{Request: &agent.Request{Identity: agenttest.Identity()}}, ToolName, `{"query":"coat"}`)
	if err == nil || agenttest.ErrorMessage(t, content) != "permission basic:goods:list required" {
		t.Fatal(content)
	}
	content, _, err = reg.Run(ctx, &agent.ToolEnv{Request: &agent.Request{}}, ToolName, `{"query":"coat"}`)
	if err == nil || !strings.Contains(agenttest.ErrorMessage(t, content), "identity") {
		t.Fatal(content)
	}
}

// gatedBasic holds tenant 42's goods pages (not the one-row read of the fingerprint) until
// gate closes.
type gatedBasic struct {
	*agenttest.FakeBasic
	gate    chan struct{}
	reached chan struct{}
}

func (g *gatedBasic) ListGoods(ctx context.Context, req *basicv1.ListGoodsRequest) (*basicv1.ListGoodsResponse, error) {
	if authn.FromContext(ctx).TenantID == 42 && req.GetPageSize() > 1 {
		g.reached <- struct{}{}
		<-g.gate
	}
	return g.FakeBasic.ListGoods(ctx, req)
}

// A tenant's re-index does not wait for another tenant's, still running.
func TestRefreshOfOneTenantDoesNotWaitForAnother(t *testing.T) {
	basic := &gatedBasic{FakeBasic: agenttest.NewFakeBasic(), gate: make(chan struct{}), reached: make(chan struct{}, 1)}
	x := NewIndex(basic, vector.NewMemory(), vector.NewHashEmbedder(256))
	as := func(tenant int64) context.Context {
		id := agenttest.Identity()
		id.TenantID = tenant
		return authn.WithIdentity(context.Background(), id)
	}
	slow := make(chan error, 1)
	go func() { _, err := x.Refresh(as(42), 42); slow <- err }()
	<-basic.reached // tenant 42 is re-indexing, held
	other := make(chan error, 1)
	go func() { _, err := x.Refresh(as(7), 7); other <- err }()
	select {
	case err := <-other:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second): // a bound on waiting, not a timing assertion
		t.Fatal("tenant 7's refresh waited for tenant 42's")
	}
	close(basic.gate)
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
}

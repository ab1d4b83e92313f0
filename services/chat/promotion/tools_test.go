package promotion_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	basicv1 "github.com/shopmind/shopmind/gen/go/shopmind/basic/v1"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/testutil/pgtest"
	"github.com/shopmind/shopmind/services/chat"
	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/agent/agenttest"
	"github.com/shopmind/shopmind/services/chat/promotion"
)

// goodsOf answers GetGoods from the caller's tenant's goods only, as the basic service does.
type goodsOf map[int64]map[int64]string

func (g goodsOf) GetGoods(ctx context.Context, req *basicv1.GetGoodsRequest) (*basicv1.GetGoodsResponse, error) {
	name, ok := g[authn.FromContext(ctx).TenantID][req.GetId()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "goods %d not found", req.GetId())
	}
	return &basicv1.GetGoodsResponse{Goods: &basicv1.Goods{Id: req.GetId(), Name: name}}, nil
}

func TestPromotionTools(t *testing.T) {
	db := pgtest.New(t, *chat.Service().Migrations)
	st := promotion.NewStore(db.Pool)
	reg := agent.NewRegistry(0, promotion.Tools(st, goodsOf{42: {5: "Running shoes"}, 7: {900: "Other goods"}}, agenttest.Clock)...)
	id := agenttest.Identity()
	ctx := authn.WithIdentity(context.Background(), id)
	env := &agent.ToolEnv{Request: &agent.Request{Identity: id, ConversationID: "c-1"}}
	run := func(tool, args string) (map[string]any, string, error) {
		t.Helper()
		content, _, err := reg.Run(ctx, env, tool, args)
		var out map[string]any
		_ = json.Unmarshal([]byte(content), &out)
		return out, content, err
	}

	out, content, err := run(promotion.ToolCreatePlan, `{"analysis_result":"Running shoes: units sold -35% against September","product_id":5,"discount_rate":0.15,"budget":5000}`)
	if err != nil || out["status"] != "draft" || out["start_date"] != "2026-11-23" || out["end_date"] != "2026-12-06" || out["mechanics"] != "15% off" {
		t.Fatalf("%v %s", err, content)
	}
	tid := int64(out["template_id"].(float64))
	p, err := st.GetPlan(context.Background(), 42, tid)
	if err != nil || p.ProductNames[0] != "Running shoes" || p.Title != "Promotion: Running shoes" || p.ConversationID != "c-1" || p.CreatedBy != id.UserID ||
		strings.Join(p.Metrics, ",") != "units_sold,line_amount" || p.Budget != 5000 {
		t.Fatalf("%+v %v", p, err)
	}
	out, content, err = run(promotion.ToolStrategy, `{"template_id":`+jsonInt(tid)+`,"strategy_info":{"name":"Double 12 push","channel":"taobao","budget":3000,"actions":["homepage banner","coupon 30 off 300"]}}`)
	if err != nil || out["status"] != "planned" || out["start_date"] != "2026-11-23" || out["channel"] != "taobao" || out["budget"] != 3000.0 {
		t.Fatalf("%v %s", err, content)
	}
	out, _, err = run(promotion.ToolStrategy, `{"template_id":`+jsonInt(tid)+`,"strategy_info":"flash sale on Friday"}`)
	if err != nil || out["name"] != "Promotion: Running shoes · execution" {
		t.Fatalf("%v %v", err, out)
	}

	// failures are the status object, nothing stored
	for _, c := range []struct{ tool, args, msg string }{
		{promotion.ToolCreatePlan, `{"analysis_result":"x","product_id":900}`, "product_id 900: goods 900 not found"}, // another tenant's goods
		{promotion.ToolCreatePlan, `{"analysis_result":"x","product_id":5,"start_date":"2026-12-10","end_date":"2026-12-01"}`, "end_date is before start_date"},
		{promotion.ToolCreatePlan, `{"analysis_result":"x","product_id":5,"discount_rate":1.5}`, "discount_rate: must be at most 1"},
		{promotion.ToolCreatePlan, `{"product_id":5}`, "analysis_result: is required"},
		{promotion.ToolStrategy, `{"template_id":999999,"strategy_info":{"name":"x"}}`, "promotion plan 999999 not found"},
		{promotion.ToolStrategy, `{"template_id":` + jsonInt(tid) + `,"strategy_info":42}`, "must be an object or a non-empty text"},
	} {
		_, content, err := run(c.tool, c.args)
		if err == nil || !strings.Contains(agenttest.ErrorMessage(t, content), c.msg) {
			t.Errorf("%s %s: %s", c.tool, c.args, content)
		}
	}
	if total, _, _ := st.ListPlans(context.Background(), 42, promotion.PlanFilter{Limit: 10}); total != 1 {
		t.Fatalf("%d plans stored", total)
	}
	// another tenant cannot link to this tenant's template
	other := agenttest.Identity()
	other.TenantID = 7
	content, _, err = reg.Run(authn.WithIdentity(context.Background(), other), &agent.ToolEnv{Request: &agent.Request{Identity: other}},
		promotion.ToolStrategy, `{"template_id":`+jsonInt(tid)+`,"strategy_info":{"name":"x"}}`)
	if err == nil || !strings.Contains(agenttest.ErrorMessage(t, content), "not found") {
		t.Fatal(content)
	}
}

func jsonInt(v int64) string { b, _ := json.Marshal(v); return string(b) }

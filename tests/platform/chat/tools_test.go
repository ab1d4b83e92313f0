//go:build platform

package chat

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/testutil/stack"
	"github.com/shopmind/shopmind/services/chat"
	"github.com/shopmind/shopmind/services/chat/llm"
	"github.com/shopmind/shopmind/services/chat/llm/llmtest"
)

// firstGoods is the demo data's first goods as the goods listing answers it.
type firstGoods struct {
	ID   json.Number `json:"id"`
	Name string      `json:"name"`
}

// demoWithModel runs the platform with the demo data and the scripted OpenAI-compatible
// fake as the chat's model, and returns them, the demo admin's token and the first goods.
func demoWithModel(t *testing.T) (*stack.Stack, *llmtest.Server, string, firstGoods) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the whole platform")
	}
	fake := llmtest.New(t)
	s := stack.Start(t, func(c *app.Config) {
		c.DemoData = true
		cc := app.ServiceConfig[chat.Config](c, "chat")
		cc.LLM.BaseURL, cc.LLM.MaxRetries = fake.BaseURL(), 0
	})
	token := s.Admin(t).Access
	goods := decode[struct {
		Items []firstGoods `json:"items"`
	}](t, expect(t, s, "GET", "/api/v1/basic/goods?page_size=1&sort=id,asc", "", token, 0, `"items"`)).Items[0]
	return s, fake, token, goods
}

func toolCall(id, name string, args any) llm.ToolCall {
	b, _ := json.Marshal(args)
	return llm.ToolCall{ID: id, Type: "function", Function: llm.FunctionCall{Name: name, Arguments: string(b)}}
}

// TestEveryToolThroughTheModel: on the whole platform with the demo data and the scripted
// OpenAI-compatible fake as the model, the LLM planner calls each agent tool; every
// result (and a failing call's status object) reaches the model, the expert it starts runs
// its own loop, the answer completes, and the plan it created is readable over REST.
func TestEveryToolThroughTheModel(t *testing.T) {
	s, fake, token, goods := demoWithModel(t)
	const planner = "You lead an analysis team"
	fake.Add(
		llmtest.Reply{Match: planner, ToolCalls: []llm.ToolCall{
			toolCall("t1", "search_indicators", map[string]any{"query": "sales"}),
			toolCall("t2", "get_database_info", map[string]any{}),
			toolCall("t3", "env_perception", map[string]any{"current_page_info": map[string]any{"route": "/goods"}}),
			toolCall("t4", "query_metrics", map[string]any{"metrics": []string{"gmv"}, "period": "last month"}),
			toolCall("t5", "search_entities", map[string]any{"query": goods.Name, "top_k": 3}),
			toolCall("t6", "search_knowledge_graph", map[string]any{"keyword": "goods:" + goods.ID.String()}),
			toolCall("t7", "create_promotion_plan", map[string]any{"analysis_result": "units fell", "product_id": goods.ID, "discount_rate": 0.2}),
			toolCall("t8", "create_promotion_plan", map[string]any{"analysis_result": "x", "product_id": 999999999}),
			toolCall("t9", "trigger_parallel_analysis", map[string]any{"task_description": "analyse last month's sales", "agents_to_use": []string{"sales"}}),
		}},
		llmtest.Reply{Match: "sales expert", Text: []string{"- GMV last month: from query_metrics"}},
		llmtest.Reply{Match: planner, ToolCalls: []llm.ToolCall{
			toolCall("t10", "promotion_strategy", map[string]any{"template_id": 1, "strategy_info": map[string]any{"name": "Flash week", "channel": "taobao"}}),
		}},
		llmtest.Reply{Match: planner, Text: []string{"Plan 1 is ready."}},
	)
	_, events := stream(t, s, "/api/v2/chat/message", `{"message":"plan a promotion for our weakest goods"}`, token)
	if got := textOf(t, events); got != "Plan 1 is ready." {
		t.Fatalf("answer %q: %v", got, events)
	}
	var calls []llmtest.Request
	for _, r := range fake.Requests() {
		if strings.Contains(r.Messages[0].Content, planner) {
			calls = append(calls, r)
		}
	}
	if len(calls) != 3 {
		t.Fatalf("%d planner calls", len(calls))
	}
	results := map[string]string{}
	for _, c := range calls[1:] {
		for _, m := range c.Messages {
			if m.Role == "tool" {
				results[m.ToolCallID] = m.Content
			}
		}
	}
	for id, want := range map[string]string{
		"t1": `"indicators"`, "t2": `"sql_rules"`, "t3": "route: /goods", "t4": `"rows"`,
		"t5": fmt.Sprintf(`"name":%q`, goods.Name), "t6": fmt.Sprintf(`"id":"goods:%s"`, goods.ID), "t7": `"template_id":1`,
		"t8": `{"message":"product_id 999999999: goods 999999999 not found","status":"error"}`, "t9": `"findings":"- GMV last month: from query_metrics"`, "t10": `"execution_id":1`,
	} {
		if !strings.Contains(results[id], want) {
			t.Errorf("%s: result lacks %s: %.600s", id, want, results[id])
		}
	}
	plan := expect(t, s, "GET", "/api/v1/chat/promotion-plans/1", "", token, 0, `"plan"`)
	var got struct {
		Plan struct {
			ProductIDs []json.Number `json:"product_ids"`
			Status     string        `json:"status"`
		} `json:"plan"`
		Executions []struct {
			Name string `json:"name"`
		} `json:"executions"`
	}
	if err := json.Unmarshal(plan, &got); err != nil || len(got.Plan.ProductIDs) != 1 || got.Plan.ProductIDs[0] != goods.ID ||
		got.Plan.Status != "draft" || len(got.Executions) != 1 || got.Executions[0].Name != "Flash week" {
		t.Fatalf("%v %s", err, plan)
	}
	// the merchant approves it; a refused move is a 422 envelope
	expect(t, s, "PUT", "/api/v1/chat/promotion-plans/1/status", `{"status":"approved"}`, token, 0, `"approved"`)
	expect(t, s, "PUT", "/api/v1/chat/promotion-plans/1/status", `{"status":"completed"}`, token, 422, "cannot change from approved to completed")
	expect(t, s, "PUT", "/api/v1/chat/promotion-plans/1/status", `{"status":"bogus"}`, token, 400, "status")
}

// TestEntitiesFollowBasicData: a goods renamed through basic's REST API is found by
// search_entities at the next message, under its new name only (the model is the scripted
// fake; the index reads the real basic service).
func TestEntitiesFollowBasicData(t *testing.T) {
	s, fake, token, goods := demoWithModel(t)
	const renamed = "Aurora Quilted Parka ZX-81"
	search := toolCall("e1", "search_entities", map[string]any{"query": renamed, "top_k": 1, "kinds": []string{"goods"}})
	for range 2 {
		fake.Add(llmtest.Reply{ToolCalls: []llm.ToolCall{search}}, llmtest.Reply{Text: []string{"ok"}})
	}
	lastResult := func() string {
		reqs := fake.Requests()
		msgs := reqs[len(reqs)-1].Messages
		return msgs[len(msgs)-1].Content
	}
	stream(t, s, "/api/v2/chat/message", `{"message":"find the parka"}`, token)
	if strings.Contains(lastResult(), renamed) {
		t.Fatalf("found before the rename: %s", lastResult())
	}
	expect(t, s, "POST", "/api/v1/basic/goods/update", fmt.Sprintf(`{"id":%s,"goods":{"name":%q},"update_mask":"name"}`, goods.ID, renamed), token, 0, "")
	stream(t, s, "/api/v2/chat/message", `{"message":"find the parka"}`, token)
	if got := lastResult(); !strings.Contains(got, fmt.Sprintf(`"id":%s,"name":%q`, goods.ID, renamed)) {
		t.Fatalf("after the rename: %s", got)
	}
}

package llmagent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/agent/agenttest"
	"github.com/shopmind/shopmind/services/chat/agent/charts"
	"github.com/shopmind/shopmind/services/chat/agent/offline"
	"github.com/shopmind/shopmind/services/chat/agent/plan"
	"github.com/shopmind/shopmind/services/chat/llm"
	"github.com/shopmind/shopmind/services/chat/llm/llmtest"
)

// The model asks for a plan (query_plan, whose schema is the plan) and the plan computes the
// numbers: the same question answered by the built-in analyst gives the same numbers.
func TestLLMAgentAsksForAPlan(t *testing.T) {
	f := agenttest.NewFakeAnalytics()
	tools := agenttest.Tools(f)
	tools.Add(plan.Tool(f, agenttest.Clock))
	args := `{"analysis":"ranking","metrics":["gmv"],"dimensions":["shop"],"order":"asc","start_date":"2026-10-01","end_date":"2026-10-31"}`
	srv := llmtest.New(t,
		llmtest.Reply{ToolCalls: []llm.ToolCall{call("call_1", plan.ToolQueryPlan, args)}},
		llmtest.Reply{Text: []string{"Done."}},
	)
	client, err := llm.New(llm.Config{Endpoint: llm.Endpoint{BaseURL: srv.BaseURL(), APIKey: "sk-test", Model: "fake-gpt", RetryBackoff: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	a := New(client, tools, Options{Clock: agenttest.Clock})
	ev := &agenttest.Events{}
	q := "Which shop had the lowest sales last month?"
	if err := a.Answer(context.Background(), &agent.Request{Identity: agenttest.Identity(), ConversationID: "c-1", Message: q}, ev.Emit); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	var declared bool
	for _, tl := range reqs[0].Tools {
		declared = declared || tl.Function.Name == plan.ToolQueryPlan && strings.Contains(string(tl.Function.Parameters), `"growth_ranking"`)
	}
	if !declared {
		t.Fatal("query_plan is not declared with the plan's schema")
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	var res struct {
		Rows []plan.Row `json:"rows"`
	}
	if last.ToolCallID != "call_1" || json.Unmarshal([]byte(last.Content), &res) != nil || len(res.Rows) != 3 {
		t.Fatalf("tool result %s", last.Content)
	}
	lowest := res.Rows[0]
	for _, r := range res.Rows {
		if r.Values["gmv"] < lowest.Values["gmv"] {
			t.Fatalf("not lowest first: %+v", res.Rows)
		}
	}
	// the built-in analyst, same question, same numbers
	builtin := agenttest.Ask(t, offline.New(f, agenttest.Tools(f), offline.Options{Clock: agenttest.Clock}), q)
	text := builtin.Text()
	if !strings.Contains(text, lowest.Label) || !strings.Contains(text, charts.FormatNumber(lowest.Values["gmv"], 2)) {
		t.Fatalf("built-in answer %q lacks %s %v", text, lowest.Label, lowest.Values["gmv"])
	}
	if len(ev.Visualizations()) != 1 {
		t.Fatalf("visualizations %v", ev.Visualizations())
	}
}

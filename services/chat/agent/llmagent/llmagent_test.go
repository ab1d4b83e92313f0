package llmagent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	chatv2 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v2"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/agent/agenttest"
	"github.com/shopmind/shopmind/services/chat/agent/charts"
	"github.com/shopmind/shopmind/services/chat/llm"
	"github.com/shopmind/shopmind/services/chat/llm/llmtest"
)

func newTestLLMAgent(t *testing.T, srv *llmtest.Server, f *agenttest.FakeAnalytics, maxIter int) *Agent {
	t.Helper()
	client, err := llm.New(llm.Config{Endpoint: llm.Endpoint{BaseURL: srv.BaseURL(), APIKey: "sk-test", Model: "fake-gpt", RetryBackoff: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	return New(client, agenttest.Tools(f), Options{MaxIterations: maxIter, Clock: agenttest.Clock})
}

func call(id, name, args string) llm.ToolCall {
	return llm.ToolCall{ID: id, Type: "function", Function: llm.FunctionCall{Name: name, Arguments: args}}
}

func TestLLMAgentToolLoop(t *testing.T) {
	f := agenttest.NewFakeAnalytics()
	srv := llmtest.New(t,
		llmtest.Reply{Text: []string{"Let me look ", "that up."}, ToolCalls: []llm.ToolCall{call("call_1", agent.ToolSearchIndicators, `{"query":"GMV","top_k":3}`)},
			Usage: &llm.Usage{PromptTokens: 100, CompletionTokens: 10, TotalTokens: 110}},
		llmtest.Reply{ToolCalls: []llm.ToolCall{call("call_2", agent.ToolQueryMetrics,
			`{"metrics":["gmv"],"dimensions":["shop"],"start_date":"2026-11-15","end_date":"2026-11-21"}`)},
			Usage: &llm.Usage{PromptTokens: 200, CompletionTokens: 20, TotalTokens: 220}},
		llmtest.Reply{Text: []string{"GMV by shop: ", "**Outlet Store** leads."}, Usage: &llm.Usage{PromptTokens: 300, CompletionTokens: 30, TotalTokens: 330}},
	)
	a := newTestLLMAgent(t, srv, f, 0)
	ev := &agenttest.Events{}
	usage := &agent.Usage{}
	req := &agent.Request{Identity: agenttest.Identity(), ConversationID: "c-9", Message: "What was GMV by shop last 7 days?",
		History: []agent.Message{{Role: agent.RoleUser, Content: "hi"}, {Role: agent.RoleAssistant, Content: "Hello!"}}}
	if err := a.Answer(agent.WithUsage(context.Background(), usage), req, ev.Emit); err != nil {
		t.Fatal(err)
	}
	if got := ev.Text(); got != "Let me look that up.\n\nGMV by shop: **Outlet Store** leads." {
		t.Fatalf("text %q", got)
	}
	// requests: tools declared, history, tool results fed back
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model calls", len(reqs))
	}
	r0 := reqs[0]
	if len(r0.Tools) != 4 || !r0.Stream || r0.Model != "fake-gpt" || len(r0.Messages) != 4 || r0.Messages[0].Role != "system" ||
		!strings.Contains(r0.Messages[0].Content, "2026-11-22") || r0.Messages[1].Content != "hi" || r0.Messages[3].Content != req.Message {
		t.Fatalf("first request %+v", r0)
	}
	r1 := reqs[1].Messages
	asst, tool := r1[len(r1)-2], r1[len(r1)-1]
	if asst.Role != "assistant" || len(asst.ToolCalls) != 1 || asst.ToolCalls[0].ID != "call_1" || asst.Content != "Let me look that up." {
		t.Fatalf("assistant turn %+v", asst)
	}
	var si struct {
		Indicators []agent.IndicatorHit `json:"indicators"`
	}
	if tool.Role != "tool" || tool.ToolCallID != "call_1" || json.Unmarshal([]byte(tool.Content), &si) != nil || si.Indicators[0].Name != "gmv" {
		t.Fatalf("tool turn %+v", tool)
	}
	r2 := reqs[2].Messages
	var qm struct {
		Rows [][]any `json:"rows"`
	}
	last := r2[len(r2)-1]
	if last.ToolCallID != "call_2" || json.Unmarshal([]byte(last.Content), &qm) != nil || len(qm.Rows) != 3 {
		t.Fatalf("query result turn %+v", last)
	}
	// one ThinkingProcess per tool step, running then done; a chart of the query
	th := ev.Renders(agent.ComponentThinking)
	if len(th) != 4 || th[0].GetId() != "thinking-1" || th[1].GetId() != "thinking-1" || th[2].GetId() != "thinking-2" || th[3].GetId() != "thinking-2" {
		t.Fatalf("thinking renders %v", th)
	}
	if th[0].GetProps().GetFields()["status"].GetStringValue() != agent.StatusRunning || th[3].GetProps().GetFields()["status"].GetStringValue() != agent.StatusDone ||
		!strings.Contains(agenttest.ProtoText(th[3]), "3 rows") || th[2].GetProps().GetFields()["title"].GetStringValue() != "Querying metrics" {
		t.Fatalf("thinking %v / %v", th[0], th[3])
	}
	vz := ev.Visualizations()
	if len(vz) != 1 || vz[0].GetChartType() != charts.ChartBar || len(vz[0].GetRows()) != 3 || vz[0].GetId() != "viz-1" {
		t.Fatalf("visualizations %v", vz)
	}
	// chunks: the model's name; no finish_reason (the chat service closes with "stop")
	var lastChunk *chatv2.SendMessageResponse
	for _, e := range ev.List {
		if e.GetChunk() != nil {
			lastChunk = e
			if e.GetChunk().GetModel() != "fake-gpt" || e.GetConversationId() != "c-9" {
				t.Fatalf("chunk %v", e)
			}
		}
	}
	if lastChunk.GetChunk().GetChoices()[0].GetFinishReason() != "" {
		t.Fatalf("last chunk %v", lastChunk)
	}
	// the query ran as the caller
	for _, id := range f.Identities() {
		if id == nil || id.Token != "tok-123" {
			t.Fatalf("identity %+v", id)
		}
	}
	if p, c, tot := usage.Totals(); p != 600 || c != 60 || tot != 660 {
		t.Fatalf("usage %d %d %d", p, c, tot)
	}
}

func TestLLMAgentProviderErrorMidStream(t *testing.T) {
	f := agenttest.NewFakeAnalytics()
	srv := llmtest.New(t,
		llmtest.Reply{ToolCalls: []llm.ToolCall{call("c1", agent.ToolGetDatabaseInfo, `{}`)}},
		llmtest.Reply{Text: []string{"Partial ", "answer ", "lost"}, FailAfter: 2, ErrorMessage: "model overloaded"})
	a := newTestLLMAgent(t, srv, f, 0)
	ev := &agenttest.Events{}
	err := a.Answer(context.Background(), &agent.Request{Identity: agenttest.Identity(), Message: "tables?"}, ev.Emit)
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Kind != apperr.KindUpstream || !strings.Contains(err.Error(), "model overloaded") {
		t.Fatalf("%v", err)
	}
	if ev.Text() != "Partial answer " {
		t.Fatalf("partial %q", ev.Text())
	}
	if !llm.Retryable(err) {
		t.Fatal("a provider server error is retryable")
	}
}

func TestLLMAgentProviderRejects(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Status: 401, ErrorMessage: "Incorrect API key provided"})
	a := newTestLLMAgent(t, srv, agenttest.NewFakeAnalytics(), 0)
	ev := &agenttest.Events{}
	err := a.Answer(context.Background(), &agent.Request{Identity: agenttest.Identity(), Message: "hi"}, ev.Emit)
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Kind != apperr.KindUpstream || !strings.Contains(ae.Message, "HTTP 401") || len(ev.List) != 0 {
		t.Fatalf("%v %v", err, ev.List)
	}
}

func TestLLMAgentLoopBound(t *testing.T) {
	f := agenttest.NewFakeAnalytics()
	loop := llmtest.Reply{ToolCalls: []llm.ToolCall{call("c", agent.ToolEnvPerception, `{}`)}}
	srv := llmtest.New(t, loop, loop, loop, loop)
	a := newTestLLMAgent(t, srv, f, 3)
	ev := &agenttest.Events{}
	if err := a.Answer(context.Background(), &agent.Request{Identity: agenttest.Identity(), Message: "loop"}, ev.Emit); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model calls", len(reqs))
	}
	if string(reqs[2].ToolChoice) != `"none"` || len(reqs[0].ToolChoice) != 0 {
		t.Fatalf("tool_choice %s / %s", reqs[2].ToolChoice, reqs[0].ToolChoice)
	}
	if !strings.Contains(ev.Text(), "stopped after 3 steps") || len(ev.Renders(agent.ComponentThinking)) != 4 {
		t.Fatalf("%q %d", ev.Text(), len(ev.Renders(agent.ComponentThinking)))
	}
	var last *chatv2.SendMessageResponse
	for _, e := range ev.List {
		if e.GetChunk() != nil {
			last = e
		}
	}
	if last.GetChunk().GetChoices()[0].GetFinishReason() != "length" {
		t.Fatal(last)
	}
}

func TestLLMAgentToolFailureIsAResult(t *testing.T) {
	f := agenttest.NewFakeAnalytics()
	srv := llmtest.New(t,
		llmtest.Reply{ToolCalls: []llm.ToolCall{call("c1", agent.ToolQueryMetrics, `{"metrics":["gmv"],"dimensions":["category"]}`),
			call("c2", "no_such_tool", `{}`)}},
		llmtest.Reply{Text: []string{"Sales by category need line_amount."}})
	a := newTestLLMAgent(t, srv, f, 0)
	ev := &agenttest.Events{}
	if err := a.Answer(context.Background(), &agent.Request{Identity: agenttest.Identity(), Message: "上个月各类目的销售额"}, ev.Emit); err != nil {
		t.Fatal(err)
	}
	msgs := srv.Requests()[1].Messages
	for i, want := range []string{"cannot be split by goods or category", "unknown tool"} {
		m := msgs[len(msgs)-2+i]
		if !strings.Contains(m.Content, `"status":"error"`) || !strings.Contains(m.Content, want) {
			t.Fatalf("tool result %d: %s", i, m.Content)
		}
	}
	th := ev.Renders(agent.ComponentThinking)
	if th[1].GetProps().GetFields()["status"].GetStringValue() != agent.StatusError || th[0].GetProps().GetFields()["title"].GetStringValue() != "查询指标数据" {
		t.Fatalf("%v", th)
	}
	if len(ev.Visualizations()) != 0 {
		t.Fatal("chart of a failed query")
	}
}

func TestLLMAgentHistoryToolCalls(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Text: []string{"ok"}})
	a := newTestLLMAgent(t, srv, agenttest.NewFakeAnalytics(), 0)
	h := []agent.Message{
		{Role: agent.RoleUser, Content: "GMV?"},
		{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "t1", Name: agent.ToolSearchIndicators, Arguments: `{"query":"GMV"}`}}},
		{Role: agent.RoleTool, ToolCallID: "t1", Name: agent.ToolSearchIndicators, Content: `{"indicators":[]}`},
		{Role: agent.RoleAssistant, Content: "No GMV."},
	}
	if err := a.Answer(context.Background(), &agent.Request{Identity: agenttest.Identity(), Message: "again", History: h}, (&agenttest.Events{}).Emit); err != nil {
		t.Fatal(err)
	}
	m := srv.Requests()[0].Messages
	if len(m) != 6 || m[2].ToolCalls[0].Function.Name != agent.ToolSearchIndicators || m[2].ToolCalls[0].Type != "function" || m[3].ToolCallID != "t1" {
		t.Fatalf("%+v", m)
	}
}

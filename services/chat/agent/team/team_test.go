package team

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	analysisv1 "github.com/shopmind/shopmind/gen/go/shopmind/analysis/v1"
	chatv2 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v2"
	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/agent/agenttest"
	"github.com/shopmind/shopmind/services/chat/agent/charts"
	"github.com/shopmind/shopmind/services/chat/agent/llmagent"
	"github.com/shopmind/shopmind/services/chat/agent/offline"
	"github.com/shopmind/shopmind/services/chat/llm"
	"github.com/shopmind/shopmind/services/chat/llm/llmtest"
)

// offlineTeam is the production offline wiring over the fake semantic layer.
func offlineTeam(f *agenttest.FakeAnalytics, opts Options) (*Planner, *agent.Registry) {
	tools := agenttest.Tools(f)
	tm := New(DefaultExperts(), NewOfflineRunner(f, tools, agenttest.Clock), opts)
	tools.Add(tm.Tool())
	return NewPlanner(offline.New(f, tools, offline.Options{Clock: agenttest.Clock}), tm, tools, offline.Model, agenttest.Clock), tools
}

type card struct {
	Tasks []struct {
		ID, Status string
	} `json:"tasks"`
	Completed, Total int
}

func cards(t *testing.T, ev *agenttest.Events) []card {
	t.Helper()
	var out []card
	for _, r := range ev.Renders(agent.ComponentTaskPlan) {
		if r.GetId() != PlanID {
			continue
		}
		var c card
		b, _ := r.GetProps().MarshalJSON()
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// statesOf lists each subtask's successive states across the cards.
func statesOf(cs []card) map[string][]string {
	out := map[string][]string{}
	for _, c := range cs {
		for _, task := range c.Tasks {
			s := out[task.ID]
			if len(s) == 0 || s[len(s)-1] != task.Status {
				out[task.ID] = append(s, task.Status)
			}
		}
	}
	return out
}

func sum(f *agenttest.FakeAnalytics, t *testing.T, metric, dim string, start, end time.Time) *analysisv1.PreviewQueryResponse {
	t.Helper()
	req := &analysisv1.PreviewQueryRequest{MetricNames: []string{metric}, StartTime: timestamppb.New(start), EndTime: timestamppb.New(end)}
	if dim != "" {
		req.Dimensions = []string{dim}
		req.Sort = []*analysisv1.QuerySort{{Field: metric, Order: "desc"}}
		req.Limit = proto.Int32(50)
	}
	resp, err := f.PreviewQuery(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// The offline team answers a broad request: the TaskPlanCard's subtasks go todo ->
// in_progress -> done, and the merged report's numbers are the semantic layer's for the
// same metric and period.
func TestOfflineTeamReport(t *testing.T) {
	f := agenttest.NewFakeAnalytics()
	p, _ := offlineTeam(f, Options{})
	ev := agenttest.Ask(t, p, "analyse last month's sales, goods and shops")
	cs := cards(t, ev)
	if len(cs) == 0 {
		t.Fatal("no TaskPlanCard")
	}
	first, last := cs[0], cs[len(cs)-1]
	if len(first.Tasks) != 3 || first.Completed != 0 || last.Completed != 3 || last.Total != 3 {
		t.Fatalf("cards %+v … %+v", first, last)
	}
	for id, states := range statesOf(cs) {
		if strings.Join(states, ">") != "todo>in_progress>done" {
			t.Errorf("%s: %v", id, states)
		}
	}
	for _, id := range f.Identities() {
		if id == nil || id.TenantID != 42 {
			t.Fatalf("a call without the caller: %v", id)
		}
	}
	text := ev.Text()
	oct, nov := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	sep := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	gmv := sum(f, t, "gmv", "", oct, nov).GetRows()[0].GetValues()[0].GetNumberValue()
	gmvPrev := sum(f, t, "gmv", "", sep, oct).GetRows()[0].GetValues()[0].GetNumberValue()
	cat := sum(f, t, "line_amount", "category", oct, nov).GetRows()[0].GetValues()
	shop := sum(f, t, "gmv", "shop", oct, nov).GetRows()[0].GetValues()
	for _, want := range []string{"## Team analysis · 2026-10-01 – 2026-10-31", "### Sales", "### Goods and categories", "### Shops and staff",
		"**GMV** (gmv): " + charts.FormatNumber(gmv, 2), charts.FormatNumber(gmvPrev, 2),
		cat[1].GetStringValue() + ": " + charts.FormatNumber(cat[2].GetNumberValue(), 2),
		shop[1].GetStringValue() + ": " + charts.FormatNumber(shop[2].GetNumberValue(), 2),
		"by staff member: not available", "3 of 3 experts reported.", "- change by shop: ", "of the change)"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "### Promotion") {
		t.Error("promotion was not asked for")
	}
	if len(ev.Visualizations()) < 3 {
		t.Errorf("%d charts", len(ev.Visualizations()))
	}
	if f.CatalogCalls() != 1 { // the shops expert read the catalog for the staff dimension
		t.Errorf("%d catalog calls", f.CatalogCalls())
	}
	// the page the question was asked from is read with env_perception
	page, _ := structpb.NewStruct(map[string]any{"route": "/analysis/overview", "shop_name": "Outlet Store"})
	ev = &agenttest.Events{}
	if err := p.Answer(context.Background(), &agent.Request{Identity: agenttest.Identity(), Message: "analyse last month's sales and shops",
		CurrentPageInfo: page}, ev.Emit); err != nil {
		t.Fatal(err)
	}
	th := ev.Renders(agent.ComponentThinking)
	if last := agenttest.ProtoText(th[len(th)-1]); !strings.Contains(last, "route: /analysis/overview") || !strings.Contains(last, agent.ToolEnvPerception) {
		t.Fatalf("thinking %s", last)
	}
	// a narrow question still goes to the single-question analyst
	ev = agenttest.Ask(t, p, "What was GMV by shop last 7 days?")
	if len(cards(t, ev)) != 0 || !strings.Contains(ev.Text(), "in the last 7 days") {
		t.Fatal(ev.Text())
	}
}

func TestOfflineTeamChinesePromotion(t *testing.T) {
	f := agenttest.NewFakeAnalytics()
	p, _ := offlineTeam(f, Options{})
	ev := agenttest.Ask(t, p, "全面分析一下上个月的经营情况")
	text := ev.Text()
	for _, want := range []string{"## 团队分析", "### 销售", "### 商品与类目", "### 店铺与员工", "### 促销", "本期销量最低", "4/4 位专家完成分析"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
}

func TestPlanExperts(t *testing.T) {
	all := []string{ExpertSales, ExpertGoods, ExpertShops, ExpertPromotion}
	for q, want := range map[string]string{
		"analyse last month's sales, goods and shops": "sales,goods,shops",
		"Give me an overview of the business":         "sales,goods,shops,promotion",
		"分析上个月各店铺和商品的情况":                              "goods,shops",
		"report on promotions and categories":         "goods,promotion",
		"What was GMV by shop last 7 days?":           "",
		"analyse sales last week":                     "",
		"上个月各类目的销售额是多少":                               "",
	} {
		if got := strings.Join(PlanExperts(q, all), ","); got != want {
			t.Errorf("%q: %q, want %q", q, got, want)
		}
	}
}

// scriptRunner is a Runner the test writes.
type scriptRunner func(ctx context.Context, x Expert) (*Finding, error)

func (s scriptRunner) Run(ctx context.Context, _ *agent.ToolEnv, x Expert, _ Task) (*Finding, error) {
	return s(ctx, x)
}

func env() *agent.ToolEnv {
	return &agent.ToolEnv{Request: &agent.Request{Identity: agenttest.Identity(), Message: "analyse everything"}}
}

// One expert failing, one panicking and one missing its deadline fail their subtasks only;
// the others report; the tool's result names each failure.
func TestFailuresAreIsolated(t *testing.T) {
	tm := New(DefaultExperts(), scriptRunner(func(ctx context.Context, x Expert) (*Finding, error) {
		switch x.Name {
		case ExpertGoods:
			return nil, errors.New("goods data unavailable")
		case ExpertShops:
			panic("boom")
		case ExpertPromotion:
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return &Finding{Text: "- GMV 100"}, nil
	}), Options{Timeout: 50 * time.Millisecond})
	ev := &agenttest.Events{}
	e := agent.NewEmitter(ev.Emit, "c", "m", agenttest.Now)
	reg := agent.NewRegistry(0, tm.Tool())
	content, res, err := reg.Run(context.Background(), &agent.ToolEnv{Request: env().Request, Emitter: e}, ToolTriggerParallelAnalysis, `{"task_description":"analyse everything"}`)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Results []ExpertReport `json:"results"`
	}
	if err := json.Unmarshal([]byte(content), &out); err != nil || len(out.Results) != 4 {
		t.Fatalf("%v %s", err, content)
	}
	want := map[string]string{ExpertSales: "done:", ExpertGoods: "failed:goods data unavailable", ExpertShops: "failed:expert shops failed unexpectedly",
		ExpertPromotion: "failed:expert promotion did not finish within 50ms"}
	for _, r := range out.Results {
		if got := r.Status + ":" + r.Error; got != want[r.Agent] {
			t.Errorf("%s: %s, want %s", r.Agent, got, want[r.Agent])
		}
	}
	states := statesOf(cards(t, ev))
	if strings.Join(states[ExpertSales], ">") != "todo>in_progress>done" || strings.Join(states[ExpertGoods], ">") != "todo>in_progress>failed" {
		t.Fatalf("%v", states)
	}
	text := Merge(res.Data.(*Outcome), "2026-10-01 – 2026-10-31", true)
	if !strings.Contains(text, "### Not completed\n- Goods and categories: goods data unavailable") || !strings.Contains(text, "1 of 4 experts reported.") {
		t.Fatal(text)
	}
	// unknown experts and missing arguments are the status object
	for args, msg := range map[string]string{
		`{"task_description":"x","agents_to_use":["finance"]}`: "must be one of sales, goods, shops, promotion",
		`{"agents_to_use":["sales"]}`:                          "task_description: is required",
	} {
		content, _, err := reg.Run(context.Background(), env(), ToolTriggerParallelAnalysis, args)
		if err == nil || !strings.Contains(agenttest.ErrorMessage(t, content), msg) {
			t.Errorf("%s: %s", args, content)
		}
	}
}

func TestConcurrencyIsBounded(t *testing.T) {
	var running, peak atomic.Int32
	tm := New(DefaultExperts(), scriptRunner(func(ctx context.Context, x Expert) (*Finding, error) {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
		running.Add(-1)
		return &Finding{Text: x.Name}, nil
	}), Options{Concurrency: 2})
	results, err := tm.Analyse(context.Background(), nil, env(), Task{Description: "x"}, nil)
	if err != nil || len(results) != 4 || peak.Load() > 2 {
		t.Fatalf("%v %d results, peak %d", err, len(results), peak.Load())
	}
	for i, r := range results {
		if r.Expert.Name != tm.Names()[i] || r.Finding.Text != r.Expert.Name {
			t.Fatalf("result %d: %+v", i, r)
		}
	}
}

func call(id, name, args string) llm.ToolCall {
	return llm.ToolCall{ID: id, Type: "function", Function: llm.FunctionCall{Name: name, Arguments: args}}
}

// The LLM planner calls trigger_parallel_analysis; each chosen expert runs its own LLM loop
// with its own instructions and tools (the sales expert queries the semantic layer); a
// failing expert is reported to the planner as failed; the planner's answer completes.
func TestLLMTeam(t *testing.T) {
	f := agenttest.NewFakeAnalytics()
	srv := llmtest.New(t,
		llmtest.Reply{Match: "You lead an analysis team", ToolCalls: []llm.ToolCall{call("c1", ToolTriggerParallelAnalysis,
			`{"task_description":"analyse October 2026 sales and goods","agents_to_use":["sales","goods"]}`)}},
		llmtest.Reply{Match: "sales expert", ToolCalls: []llm.ToolCall{call("s1", agent.ToolQueryMetrics,
			`{"metrics":["gmv"],"start_date":"2026-10-01","end_date":"2026-10-31"}`)}},
		llmtest.Reply{Match: "sales expert", Text: []string{"- GMV in October: see the numbers"}},
		llmtest.Reply{Match: "goods and categories expert", Status: 400, ErrorMessage: "context length exceeded"},
		llmtest.Reply{Match: "You lead an analysis team", Text: []string{"Summary: sales reported, goods failed."}},
	)
	client, err := llm.New(llm.Config{Endpoint: llm.Endpoint{BaseURL: srv.BaseURL(), Model: "fake-gpt", RetryBackoff: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	tools := agenttest.Tools(f)
	tm := New(DefaultExperts(), NewLLMRunner(client, tools, 4), Options{})
	tools.Add(tm.Tool())
	planner := llmagentNew(client, tools)
	ev := agenttest.Ask(t, planner, "How did October go for sales and goods?")
	if ev.Text() != "Summary: sales reported, goods failed." {
		t.Fatal(ev.Text())
	}
	states := statesOf(cards(t, ev))
	if strings.Join(states[ExpertSales], ">") != "todo>in_progress>done" || strings.Join(states[ExpertGoods], ">") != "todo>in_progress>failed" {
		t.Fatalf("%v", states)
	}
	var plannerCalls, salesTools []llmtest.Request
	for _, r := range srv.Requests() {
		switch sys := r.Messages[0].Content; {
		case strings.Contains(sys, "You lead an analysis team"):
			plannerCalls = append(plannerCalls, r)
		case strings.Contains(sys, "sales expert"):
			salesTools = append(salesTools, r)
		}
	}
	if len(plannerCalls) != 2 || len(salesTools) != 2 {
		t.Fatalf("%d planner calls, %d sales expert calls", len(plannerCalls), len(salesTools))
	}
	// the expert sees its own tools only (never trigger_parallel_analysis)
	var names []string
	for _, d := range salesTools[0].Tools {
		names = append(names, d.Function.Name)
	}
	if strings.Join(names, ",") != "search_indicators,query_metrics,get_database_info" {
		t.Fatal(names)
	}
	// the sales expert's query result reached it, and the experts' findings reached the planner
	if last := salesTools[1].Messages; !strings.Contains(last[len(last)-1].Content, `"rows"`) {
		t.Fatal(last[len(last)-1])
	}
	msgs := plannerCalls[1].Messages
	toolMsg := msgs[len(msgs)-1]
	var out struct {
		Results []ExpertReport `json:"results"`
	}
	if err := json.Unmarshal([]byte(toolMsg.Content), &out); err != nil || len(out.Results) != 2 ||
		out.Results[0].Findings != "- GMV in October: see the numbers" || out.Results[1].Status != "failed" ||
		!strings.Contains(out.Results[1].Error, "context length exceeded") {
		t.Fatalf("%v %s", err, toolMsg.Content)
	}
	// the sales expert's chart is shown
	var viz []*chatv2.VisualizationEvent
	for _, v := range ev.Visualizations() {
		if strings.HasPrefix(v.GetId(), "team-sales-") {
			viz = append(viz, v)
		}
	}
	if len(viz) != 1 {
		t.Fatalf("%d sales charts", len(viz))
	}
}

func llmagentNew(client *llm.Client, tools *agent.Registry) agent.Agent {
	return llmagent.New(client, tools, llmagent.Options{SystemPrompt: llmagent.DefaultSystemPrompt + "\n" + PlannerPrompt, Clock: agenttest.Clock})
}

// A v1 workflow's agents_to_use chooses the experts, whatever the task's words say.
func TestWorkflowChoosesTheExperts(t *testing.T) {
	f := agenttest.NewFakeAnalytics()
	p, _ := offlineTeam(f, Options{})
	page, _ := structpb.NewStruct(map[string]any{"workflow": map[string]any{"id": "wf1", "agents_to_use": []any{ExpertPromotion, ExpertSales}}})
	ev := &agenttest.Events{}
	if err := p.Answer(context.Background(), &agent.Request{Identity: agenttest.Identity(),
		Message: "analyse last month's sales, goods and shops", CurrentPageInfo: page}, ev.Emit); err != nil {
		t.Fatal(err)
	}
	cs := cards(t, ev)
	if len(cs) == 0 {
		t.Fatal("no TaskPlanCard")
	}
	if last := cs[len(cs)-1]; last.Total != 2 {
		t.Fatalf("%d subtasks, want the two the workflow named", last.Total)
	}
	text := ev.Text()
	if !strings.Contains(text, "### Sales") || !strings.Contains(text, "### Promotion") || strings.Contains(text, "### Goods") {
		t.Fatalf("report of other experts than the workflow named:\n%s", text)
	}
	// a narrow task the words alone would give the single analyst runs the team when named
	ev = &agenttest.Events{}
	if err := p.Answer(context.Background(), &agent.Request{Identity: agenttest.Identity(), Message: "GMV last 7 days", CurrentPageInfo: page}, ev.Emit); err != nil {
		t.Fatal(err)
	}
	if len(cards(t, ev)) == 0 {
		t.Fatal("the named experts did not run")
	}
}

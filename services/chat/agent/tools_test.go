package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	chatv2 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v2"
	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/agent/agenttest"
	"github.com/shopmind/shopmind/services/chat/vector"
)

func d(s string) time.Time {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestBuiltinTools(t *testing.T) {
	ctx := context.Background()
	f := agenttest.NewFakeAnalytics()
	r := agenttest.Tools(f)
	page, _ := structpb.NewStruct(map[string]any{"route": "/analysis/sales", "title": "Sales overview", "shop_name": "Outlet Store",
		"date_range": []any{"2026-11-01", "2026-11-21"}, "metrics": []any{"gmv", "order_count"}, "theme": "dark"})
	env := &agent.ToolEnv{Request: &agent.Request{Identity: agenttest.Identity(), CurrentPageInfo: page, CurrentUser: &chatv2.CurrentUser{Username: "alice"}}}
	if got := r.Names(); strings.Join(got, ",") != "search_indicators,get_database_info,env_perception,query_metrics" {
		t.Fatal(got)
	}

	content, _, err := r.Run(ctx, env, agent.ToolSearchIndicators, `{"query":"销售额","top_k":2}`)
	if err != nil {
		t.Fatal(err)
	}
	var si struct {
		Indicators []agent.IndicatorHit `json:"indicators"`
	}
	_ = json.Unmarshal([]byte(content), &si)
	if len(si.Indicators) != 2 || si.Indicators[0].Name != "gmv" || si.Indicators[0].Score < 0.99 || si.Indicators[0].Matched != "销售额" {
		t.Fatalf("%s", content)
	}
	content, _, _ = r.Run(ctx, env, agent.ToolSearchIndicators, `{"query":"orders by shop"}`)
	_ = json.Unmarshal([]byte(content), &si)
	if len(si.Indicators) != 5 || si.Indicators[0].Name != "order_count" {
		t.Fatalf("%s", content)
	}

	content, _, err = r.Run(ctx, env, agent.ToolGetDatabaseInfo, `{}`)
	if err != nil || !strings.Contains(content, `"sql_rules"`) || !strings.Contains(content, "SELECT statements only") ||
		!strings.Contains(content, `"basic_orders"`) || !strings.Contains(content, `"name":"shop"`) || !strings.Contains(content, "i_tenant_id") {
		t.Fatalf("%v %s", err, content)
	}

	content, _, err = r.Run(ctx, env, agent.ToolEnvPerception, `{}`)
	for _, want := range []string{"user: alice", "page: Sales overview", "route: /analysis/sales", "shop: Outlet Store",
		`date range: ["2026-11-01","2026-11-21"]`, `visible metrics: ["gmv","order_count"]`, "theme: dark"} {
		if err != nil || !strings.Contains(content, want) {
			t.Errorf("env_perception lacks %q: %s", want, content)
		}
	}
	content, _, _ = r.Run(ctx, env, agent.ToolEnvPerception, `{"current_page_info":{"route":"/goods"}}`)
	if !strings.Contains(content, "route: /goods") || strings.Contains(content, "Outlet") {
		t.Fatal(content)
	}
	content, _, _ = r.Run(ctx, &agent.ToolEnv{Request: &agent.Request{Identity: agenttest.Identity()}}, agent.ToolEnvPerception, `{}`)
	if !strings.Contains(content, "No page information") {
		t.Fatal(content)
	}

	content, res, err := r.Run(ctx, env, agent.ToolQueryMetrics, `{"metrics":["gmv"],"dimensions":["shop"],"period":"last 7 days","top_n":2}`)
	if err != nil {
		t.Fatal(err)
	}
	out := res.Data.(*agent.QueryOutcome)
	if out.Request.GetLimit() != 2 || !out.Request.GetStartTime().AsTime().Equal(d("2026-11-15")) || !out.Request.GetEndTime().AsTime().Equal(d("2026-11-22")) {
		t.Fatalf("%v", out.Request)
	}
	var qm struct {
		Rows     [][]any           `json:"rows"`
		Period   map[string]string `json:"period"`
		RowCount int               `json:"row_count"`
	}
	_ = json.Unmarshal([]byte(content), &qm)
	if qm.RowCount != 2 || len(qm.Rows) != 2 || qm.Period["end_date"] != "2026-11-21" {
		t.Fatal(content)
	}
	_, res, _ = r.Run(ctx, env, agent.ToolQueryMetrics, `{"metrics":["units_sold"],"start_date":"2026-10-01","end_date":"2026-10-31","granularity":"week",
		"filters":[{"field":"platform","operator":"in","value":["jd","taobao"]}]}`)
	req := res.Data.(*agent.QueryOutcome).Request
	if !req.GetEndTime().AsTime().Equal(d("2026-11-01")) || req.GetTimeGranularity() != "week" || req.GetFilters()[0].GetValue().GetListValue() == nil {
		t.Fatalf("%v", req)
	}
	for args, want := range map[string]string{
		`{"metrics":["gmv"],"period":"whenever"}`:                               "not understood",
		`{"metrics":["gmv"],"start_date":"2026-10-31","end_date":"2026-10-01"}`: "before start_date",
		`{"metrics":["gmv"],"start_date":"yesterday"}`:                          "not a date",
		`{"metrics":[]}`:       "at least 1 items",
		`{"metrics":["nope"]}`: `unknown metric "nope"`,
		`{"metrics":["gmv"],"dimensions":["category"]}`: "cannot be split by goods or category",
	} {
		content, _, err := r.Run(ctx, env, agent.ToolQueryMetrics, args)
		if err == nil || !strings.Contains(agenttest.ErrorMessage(t, content), want) {
			t.Errorf("%s: %s", args, content)
		}
	}
	// without identity
	content, _, err = r.Run(ctx, &agent.ToolEnv{Request: &agent.Request{}}, agent.ToolQueryMetrics, `{"metrics":["gmv"]}`)
	if !errors.Is(err, agent.ErrNoIdentity) || !strings.Contains(content, "identity") {
		t.Fatal(content)
	}
}

func TestMetricIndexReindexes(t *testing.T) {
	ctx := context.Background()
	store := vector.NewMemory()
	x := agent.NewMetricIndex(store, vector.NewHashEmbedder(128))
	metrics := agent.MetricInfos(agenttest.DemoMetricDefs())
	hits, err := x.Search(ctx, 1, metrics, "客单价", 1)
	if err != nil || len(hits) != 1 || hits[0].Metric.Name != "avg_order_value" {
		t.Fatalf("%v %v", hits, err)
	}
	// a metric renamed: the old name disappears from results, the new one is found
	for i := range metrics {
		if metrics[i].Name == "avg_order_value" {
			metrics[i].Name, metrics[i].Synonyms = "aov", []string{"平均客单价"}
		}
	}
	hits, _ = x.Search(ctx, 1, metrics, "客单价", 3)
	if hits[0].Metric.Name != "aov" {
		t.Fatalf("%v", hits)
	}
	for _, h := range hits {
		if h.Metric.Name == "avg_order_value" {
			t.Fatal("stale metric returned")
		}
	}
	// another tenant's index is separate
	hits, _ = x.Search(ctx, 2, metrics[:1], "客单价", 3)
	if len(hits) != 1 || hits[0].Metric.Name != metrics[0].Name {
		t.Fatalf("%v", hits)
	}
}

package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	chatv2 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v2"
	"github.com/shopmind/shopmind/services/chat/vector"
)

type echoTool struct {
	out  string
	fail error
}

func (t *echoTool) Name() string        { return "echo" }
func (t *echoTool) Description() string { return "echoes" }
func (t *echoTool) Parameters() *Schema {
	return Object(map[string]*Schema{
		"text":  {Type: "string", MaxLength: ptr(10)},
		"n":     {Type: "integer", Minimum: ptr(1.0), Maximum: ptr(5.0)},
		"mode":  {Type: "string", Enum: []any{"a", "b"}},
		"items": {Type: "array", Items: &Schema{Type: "string"}, MaxItems: ptr(2)},
	}, "text")
}
func (t *echoTool) Call(_ context.Context, _ *ToolEnv, args json.RawMessage) (*ToolResult, error) {
	if t.fail != nil {
		return nil, t.fail
	}
	if t.out != "" {
		return &ToolResult{Text: t.out}, nil
	}
	var a map[string]any
	_ = json.Unmarshal(args, &a)
	return &ToolResult{JSON: map[string]any{"echo": a["text"]}}, nil
}

func errorOf(t *testing.T, content string) string {
	t.Helper()
	var m map[string]string
	if err := json.Unmarshal([]byte(content), &m); err != nil || m["status"] != "error" {
		t.Fatalf("not an error result: %s", content)
	}
	return m["message"]
}

func TestRegistry(t *testing.T) {
	ctx := context.Background()
	r := NewRegistry(40, &echoTool{})
	content, res, err := r.Run(ctx, nil, "echo", `{"text":"hi","n":2,"mode":"a","items":["x"],"extra":true}`)
	if err != nil || content != `{"echo":"hi"}` || res == nil {
		t.Fatalf("%v %s", err, content)
	}
	for args, want := range map[string]string{
		`{}`:                                 "text: is required",
		`{"text":5}`:                         "text: must be a string",
		`{"text":"01234567890"}`:             "at most 10 characters",
		`{"text":"a","n":1.5}`:               "n: must be an integer",
		`{"text":"a","n":9}`:                 "n: must be at most 5",
		`{"text":"a","mode":"c"}`:            "mode: must be one of a, b",
		`{"text":"a","items":[1]}`:           "items[0]: must be a string",
		`{"text":"a","items":["a","b","c"]}`: "at most 2 items",
		`[1]`:                                "must be an object",
		`{"text":`:                           "not valid JSON",
	} {
		content, res, err := r.Run(ctx, nil, "echo", args)
		if err == nil || res != nil || !strings.Contains(errorOf(t, content), want) {
			t.Errorf("%s: %v %s", args, err, content)
		}
	}
	content, _, err = r.Run(ctx, nil, "nope", `{}`)
	if err == nil || !strings.Contains(errorOf(t, content), "unknown tool") {
		t.Fatal(content)
	}
	// failures: {"status":"error","message":...}, gRPC messages without the code prefix
	r = NewRegistry(40, &echoTool{fail: status.Error(codes.InvalidArgument, "bad metric")})
	content, _, err = r.Run(ctx, nil, "echo", `{"text":"a"}`)
	if err == nil || errorOf(t, content) != "bad metric" {
		t.Fatal(content)
	}
	// truncation with a marker
	long := strings.Repeat("销", 100)
	r = NewRegistry(40, &echoTool{out: long})
	content, _, _ = r.Run(ctx, nil, "echo", `{"text":"a"}`)
	if !strings.HasPrefix(content, strings.Repeat("销", 40)) || !strings.Contains(content, TruncationMarker+" 40 of 100 characters shown]") {
		t.Fatal(content)
	}
	if NewRegistry(0).maxChars != DefaultToolResultMaxChars {
		t.Fatal("default threshold")
	}
	// definitions in the OpenAI shape
	defs := NewRegistry(0, &echoTool{}).Definitions()
	b, _ := json.Marshal(defs)
	if !strings.Contains(string(b), `"type":"function","function":{"name":"echo","description":"echoes","parameters":{"type":"object"`) ||
		!strings.Contains(string(b), `"required":["text"]`) {
		t.Fatal(string(b))
	}
}

func newTestTools(f *fakeAnalytics) *Registry {
	index := NewMetricIndex(vector.NewMemory(), vector.NewHashEmbedder(256))
	return NewRegistry(0, Tools(f, index, testClock)...)
}

func TestBuiltinTools(t *testing.T) {
	ctx := context.Background()
	f := newFakeAnalytics()
	r := newTestTools(f)
	page, _ := structpb.NewStruct(map[string]any{"route": "/analysis/sales", "title": "Sales overview", "shop_name": "Outlet Store",
		"date_range": []any{"2026-11-01", "2026-11-21"}, "metrics": []any{"gmv", "order_count"}, "theme": "dark"})
	env := &ToolEnv{Request: &Request{Identity: testIdentity(), CurrentPageInfo: page, CurrentUser: &chatv2.CurrentUser{Username: "alice"}}}
	if got := r.Names(); strings.Join(got, ",") != "search_indicators,get_database_info,env_perception,query_metrics" {
		t.Fatal(got)
	}

	content, _, err := r.Run(ctx, env, ToolSearchIndicators, `{"query":"销售额","top_k":2}`)
	if err != nil {
		t.Fatal(err)
	}
	var si struct {
		Indicators []IndicatorHit `json:"indicators"`
	}
	_ = json.Unmarshal([]byte(content), &si)
	if len(si.Indicators) != 2 || si.Indicators[0].Name != "gmv" || si.Indicators[0].Score < 0.99 || si.Indicators[0].Matched != "销售额" {
		t.Fatalf("%s", content)
	}
	content, _, _ = r.Run(ctx, env, ToolSearchIndicators, `{"query":"orders by shop"}`)
	_ = json.Unmarshal([]byte(content), &si)
	if len(si.Indicators) != 5 || si.Indicators[0].Name != "order_count" {
		t.Fatalf("%s", content)
	}

	content, _, err = r.Run(ctx, env, ToolGetDatabaseInfo, `{}`)
	if err != nil || !strings.Contains(content, `"sql_rules"`) || !strings.Contains(content, "SELECT statements only") ||
		!strings.Contains(content, `"basic_orders"`) || !strings.Contains(content, `"name":"shop"`) || !strings.Contains(content, "i_tenant_id") {
		t.Fatalf("%v %s", err, content)
	}

	content, _, err = r.Run(ctx, env, ToolEnvPerception, `{}`)
	for _, want := range []string{"user: alice", "page: Sales overview", "route: /analysis/sales", "shop: Outlet Store",
		`date range: ["2026-11-01","2026-11-21"]`, `visible metrics: ["gmv","order_count"]`, "theme: dark"} {
		if err != nil || !strings.Contains(content, want) {
			t.Errorf("env_perception lacks %q: %s", want, content)
		}
	}
	content, _, _ = r.Run(ctx, env, ToolEnvPerception, `{"current_page_info":{"route":"/goods"}}`)
	if !strings.Contains(content, "route: /goods") || strings.Contains(content, "Outlet") {
		t.Fatal(content)
	}
	content, _, _ = r.Run(ctx, &ToolEnv{Request: &Request{Identity: testIdentity()}}, ToolEnvPerception, `{}`)
	if !strings.Contains(content, "No page information") {
		t.Fatal(content)
	}

	content, res, err := r.Run(ctx, env, ToolQueryMetrics, `{"metrics":["gmv"],"dimensions":["shop"],"period":"last 7 days","top_n":2}`)
	if err != nil {
		t.Fatal(err)
	}
	out := res.Data.(*QueryOutcome)
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
	_, res, _ = r.Run(ctx, env, ToolQueryMetrics, `{"metrics":["units_sold"],"start_date":"2026-10-01","end_date":"2026-10-31","granularity":"week",
		"filters":[{"field":"platform","operator":"in","value":["jd","taobao"]}]}`)
	req := res.Data.(*QueryOutcome).Request
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
		content, _, err := r.Run(ctx, env, ToolQueryMetrics, args)
		if err == nil || !strings.Contains(errorOf(t, content), want) {
			t.Errorf("%s: %s", args, content)
		}
	}
	// without identity
	content, _, err = r.Run(ctx, &ToolEnv{Request: &Request{}}, ToolQueryMetrics, `{"metrics":["gmv"]}`)
	if !errors.Is(err, errNoIdentity) || !strings.Contains(content, "identity") {
		t.Fatal(content)
	}
}

func TestMetricIndexReindexes(t *testing.T) {
	ctx := context.Background()
	store := vector.NewMemory()
	x := NewMetricIndex(store, vector.NewHashEmbedder(128))
	metrics := metricInfos(demoMetricDefs())
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

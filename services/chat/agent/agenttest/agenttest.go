// Package agenttest holds the fakes the agent packages' tests share: a small semantic layer
// over deterministic orders (FakeAnalytics, the demo tenant's metrics), a recorder of the
// Events an answer emits (Events), the test clock and identity, and the registry of the
// agent tools over the fake (Tools).
package agenttest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	analysisv1 "github.com/shopmind/shopmind/gen/go/shopmind/analysis/v1"
	chatv2 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v2"
	"github.com/shopmind/shopmind/internal/analytics/demodata"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/agent/period"
	"github.com/shopmind/shopmind/services/chat/vector"
)

// Now is the clock of the tests: Sunday 2026-11-22 10:30 UTC.
var Now = time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)

// Clock is the test clock (Now).
func Clock() time.Time { return Now }

// DemoMetricDefs are the demo tenant's metrics (demodata.Metrics and AverageOrderValue,
// as services/analysis seeds them) with ids in creation order, listed by group.
func DemoMetricDefs() *analysisv1.ListMetricsResponse {
	var metrics []*analysisv1.Metric
	_, _ = demodata.StandardMetrics(func(m *analysisv1.Metric) (int64, error) {
		m.Id = int64(len(metrics) + 1)
		metrics = append(metrics, m)
		return m.Id, nil
	})
	byGroup := map[string][]*analysisv1.Metric{}
	for _, m := range metrics {
		byGroup[m.Group] = append(byGroup[m.Group], m)
	}
	var res analysisv1.ListMetricsResponse
	for _, g := range slices.Sorted(maps.Keys(byGroup)) {
		res.Groups = append(res.Groups, &analysisv1.MetricGroup{Group: g, Metrics: byGroup[g]})
	}
	return &res
}

type fakeOrder struct {
	id       int
	day      time.Time
	shop     int
	platform string
	status   string
	buyer    int
	paid     float64
	lines    []fakeLine
}

type fakeLine struct {
	goods, category, qty int
	amount               float64
}

var (
	fakeShops      = []string{"", "Flagship Store", "Outlet Store", "Kids Store"}
	fakeCategories = []string{"", "女装", "男装", "鞋靴", "配饰"}
	fakeGoods      = []struct {
		name     string
		category int
		price    float64
	}{{}, {"Silk dress", 1, 299.5}, {"Wool coat", 1, 899}, {"Denim jacket", 2, 459}, {"Oxford shirt", 2, 199.9},
		{"Running shoes", 3, 649}, {"Leather boots", 3, 1099}, {"Scarf", 4, 89.9}, {"Belt", 4, 129}}
)

// fakeData builds orders from 2026-08-01 to 2026-11-22 (today, partial), deterministic.
func fakeData() []fakeOrder {
	var out []fakeOrder
	id := 0
	for d := time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC); !d.After(Now); d = d.AddDate(0, 0, 1) {
		n := 3 + (d.YearDay()*7)%5
		for k := 0; k < n; k++ {
			id++
			o := fakeOrder{id: id, day: d, shop: 1 + (id*5+d.Day())%3, platform: []string{"taobao", "jd", "douyin"}[id%3],
				status: []string{"paid", "completed", "shipped", "cancelled", "completed", "refunded", "paid"}[id%7], buyer: 1 + (id*13)%97}
			nl := 1 + id%3
			for l := 0; l < nl; l++ {
				g := 1 + (id*3+l*5)%8
				qty := 1 + (id+l)%3
				amt := math.Round(fakeGoods[g].price*float64(qty)*100) / 100
				o.lines = append(o.lines, fakeLine{goods: g, category: fakeGoods[g].category, qty: qty, amount: amt})
				o.paid += amt
			}
			o.paid = math.Round(o.paid*100) / 100
			out = append(out, o)
		}
	}
	return out
}

// FakeAnalytics is a small semantic layer over fakeData: the demo metrics, the named
// dimensions shop, goods, category, platform and status, day/week/month buckets, sort,
// limit. Order-level metrics refuse goods and category (InvalidArgument), as a semantic
// layer must.
type FakeAnalytics struct {
	mu       sync.Mutex
	orders   []fakeOrder
	previews []*analysisv1.PreviewQueryRequest
	// FailPreview, when set, answers every preview with this error; FailList likewise
	// ListMetrics. Delay is slept in every call. Set them before the calls start.
	FailPreview error
	FailList    error
	Delay       time.Duration
	identities  []*authn.Identity
	catalogs    int
}

// NewFakeAnalytics returns the fake over the deterministic orders.
func NewFakeAnalytics() *FakeAnalytics { return &FakeAnalytics{orders: fakeData()} }

func (f *FakeAnalytics) seen(ctx context.Context) {
	f.mu.Lock()
	f.identities = append(f.identities, authn.FromContext(ctx))
	f.mu.Unlock()
	if f.Delay > 0 {
		time.Sleep(f.Delay)
	}
}

func (f *FakeAnalytics) ListMetrics(ctx context.Context, _ *analysisv1.ListMetricsRequest) (*analysisv1.ListMetricsResponse, error) {
	f.seen(ctx)
	if f.FailList != nil {
		return nil, f.FailList
	}
	return DemoMetricDefs(), nil
}

func (f *FakeAnalytics) GetCatalog(ctx context.Context, _ *analysisv1.GetCatalogRequest) (*analysisv1.GetCatalogResponse, error) {
	f.seen(ctx)
	f.mu.Lock()
	f.catalogs++
	f.mu.Unlock()
	return &analysisv1.GetCatalogResponse{
		Tables: []*analysisv1.CatalogTable{{Name: "basic_orders", Description: "orders", DefaultTimeColumn: "ordered_at", Columns: []*analysisv1.CatalogColumn{
			{Name: "order_id", Type: "int", Role: "dimension"}, {Name: "paid_amount", Type: "float", Role: "measure", Description: "amount paid (GMV)"},
			{Name: "ordered_at", Type: "time", Role: "time"}}}},
		Dimensions: []*analysisv1.CatalogDimension{{Name: "shop", Columns: []string{"basic_shops.shop_id", "basic_shops.shop_name"}},
			{Name: "goods"}, {Name: "category"}, {Name: "staff"}, {Name: "platform"}, {Name: "status"}},
	}, nil
}

func paidStatus(s string) bool { return s == "paid" || s == "shipped" || s == "completed" }

func bucket(d time.Time, g string) time.Time {
	switch g {
	case "week":
		return period.WeekStart(d)
	case "month":
		return period.MonthStart(d.Year(), d.Month())
	}
	return d
}

type acc struct {
	keys    []*structpb.Value
	gmv     float64
	orders  map[int]bool
	units   float64
	lines   float64
	buyers  map[int]bool
	sortKey time.Time
}

func (f *FakeAnalytics) PreviewQuery(ctx context.Context, req *analysisv1.PreviewQueryRequest) (*analysisv1.PreviewQueryResponse, error) {
	f.seen(ctx)
	f.mu.Lock()
	f.previews = append(f.previews, proto.Clone(req).(*analysisv1.PreviewQueryRequest))
	fail := f.FailPreview
	f.mu.Unlock()
	if fail != nil {
		return nil, fail
	}
	known := map[string]string{"gmv": "decimal", "order_count": "integer", "units_sold": "integer", "line_amount": "decimal",
		"buyers": "integer", "avg_order_value": "decimal"}
	lineLevel := false
	for _, d := range req.GetDimensions() {
		switch d {
		case "goods", "category":
			lineLevel = true
		case "shop", "platform", "status":
		default:
			return nil, status.Errorf(codes.InvalidArgument, "dimensions: unknown dimension %q", d)
		}
	}
	for _, m := range req.GetMetricNames() {
		if _, ok := known[m]; !ok {
			return nil, status.Errorf(codes.InvalidArgument, "metric_names: unknown metric %q", m)
		}
		if lineLevel && m != "units_sold" && m != "line_amount" {
			return nil, status.Errorf(codes.InvalidArgument, "metric %s is measured on orders and cannot be split by goods or category", m)
		}
	}
	start, end := req.GetStartTime().AsTime(), req.GetEndTime().AsTime()
	groups := map[string]*acc{}
	var order []string
	add := func(o fakeOrder, l *fakeLine) {
		var keys []*structpb.Value
		key := ""
		var t time.Time
		if g := req.GetTimeGranularity(); g != "" {
			t = bucket(o.day, g)
			keys = append(keys, structpb.NewStringValue(t.Format(time.RFC3339)))
			key += t.String()
		}
		for _, d := range req.GetDimensions() {
			switch d {
			case "shop":
				keys = append(keys, structpb.NewNumberValue(float64(o.shop)), structpb.NewStringValue(fakeShops[o.shop]))
				key += fmt.Sprint("|s", o.shop)
			case "platform":
				keys = append(keys, structpb.NewStringValue(o.platform))
				key += "|p" + o.platform
			case "status":
				keys = append(keys, structpb.NewStringValue(o.status))
				key += "|st" + o.status
			case "goods":
				keys = append(keys, structpb.NewNumberValue(float64(l.goods)), structpb.NewStringValue(fakeGoods[l.goods].name))
				key += fmt.Sprint("|g", l.goods)
			case "category":
				keys = append(keys, structpb.NewNumberValue(float64(l.category)), structpb.NewStringValue(fakeCategories[l.category]))
				key += fmt.Sprint("|c", l.category)
			}
		}
		a := groups[key]
		if a == nil {
			a = &acc{keys: keys, orders: map[int]bool{}, buyers: map[int]bool{}, sortKey: t}
			groups[key] = a
			order = append(order, key)
		}
		if l == nil {
			if paidStatus(o.status) {
				a.gmv += o.paid
				a.orders[o.id] = true
			}
			a.buyers[o.buyer] = true
			for _, ln := range o.lines {
				a.units += float64(ln.qty)
				a.lines += ln.amount
			}
			return
		}
		a.units += float64(l.qty)
		a.lines += l.amount
	}
	for _, o := range f.orders {
		if o.day.Before(start) || !o.day.Before(end) {
			continue
		}
		if lineLevel {
			for i := range o.lines {
				add(o, &o.lines[i])
			}
		} else {
			add(o, nil)
		}
	}
	if len(req.GetDimensions()) == 0 && req.GetTimeGranularity() == "" && len(groups) == 0 {
		groups[""] = &acc{orders: map[int]bool{}, buyers: map[int]bool{}}
		order = append(order, "")
	}
	resp := &analysisv1.PreviewQueryResponse{Sql: "SELECT ... (fake)"}
	if req.GetTimeGranularity() != "" {
		resp.Columns = append(resp.Columns, &analysisv1.ResultColumn{Name: "time", Type: "date", Role: "time"})
	}
	for _, d := range req.GetDimensions() {
		switch d {
		case "shop", "goods", "category":
			resp.Columns = append(resp.Columns, &analysisv1.ResultColumn{Name: d + "_id", Type: "integer", Role: "dimension"},
				&analysisv1.ResultColumn{Name: d + "_name", Type: "string", Role: "dimension"})
		default:
			resp.Columns = append(resp.Columns, &analysisv1.ResultColumn{Name: d, Type: "string", Role: "dimension"})
		}
	}
	for _, m := range req.GetMetricNames() {
		resp.Columns = append(resp.Columns, &analysisv1.ResultColumn{Name: m, Type: known[m], Role: "measure"})
	}
	type row struct {
		a    *acc
		vals []*structpb.Value
	}
	var rows []row
	for _, k := range order {
		a := groups[k]
		vals := append([]*structpb.Value{}, a.keys...)
		for _, m := range req.GetMetricNames() {
			var v float64
			switch m {
			case "gmv":
				v = math.Round(a.gmv*100) / 100
			case "order_count":
				v = float64(len(a.orders))
			case "units_sold":
				v = a.units
			case "line_amount":
				v = math.Round(a.lines*100) / 100
			case "buyers":
				v = float64(len(a.buyers))
			case "avg_order_value":
				if len(a.orders) == 0 {
					vals = append(vals, structpb.NewNullValue())
					continue
				}
				v = math.Round(a.gmv/float64(len(a.orders))*100) / 100
			}
			vals = append(vals, structpb.NewNumberValue(v))
		}
		rows = append(rows, row{a, vals})
	}
	metricIdx := func(name string) int {
		for i, c := range resp.Columns {
			if c.Name == name {
				return i
			}
		}
		return -1
	}
	sort.SliceStable(rows, func(i, j int) bool {
		for _, s := range req.GetSort() {
			if s.GetField() == "time" {
				if !rows[i].a.sortKey.Equal(rows[j].a.sortKey) {
					return rows[i].a.sortKey.Before(rows[j].a.sortKey) == (s.GetOrder() == "asc")
				}
				continue
			}
			k := metricIdx(s.GetField())
			if k < 0 {
				continue
			}
			x, y := rows[i].vals[k].GetNumberValue(), rows[j].vals[k].GetNumberValue()
			if x != y {
				return (x < y) == (s.GetOrder() == "asc")
			}
		}
		return false
	})
	limit := 100
	if req.Limit != nil {
		limit = int(req.GetLimit())
	}
	if len(rows) > limit {
		rows = rows[:limit]
		resp.Truncated = true
	}
	for _, r := range rows {
		resp.Rows = append(resp.Rows, &structpb.ListValue{Values: r.vals})
	}
	return resp, nil
}

// Events records emitted Events.
type Events struct {
	mu sync.Mutex
	// List are the events in order, At their arrival times.
	List []*chatv2.SendMessageResponse
	At   []time.Time
}

// Emit records an event (an agent.Emit).
func (e *Events) Emit(ev *chatv2.SendMessageResponse) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.List = append(e.List, ev)
	e.At = append(e.At, time.Now())
	return nil
}

// Text is the text of the chunks.
func (e *Events) Text() string {
	var s string
	for _, ev := range e.List {
		for _, c := range ev.GetChunk().GetChoices() {
			s += c.GetDelta().GetContent()
		}
	}
	return s
}

// Renders are the render events of component.
func (e *Events) Renders(component string) []*chatv2.RenderEvent {
	var out []*chatv2.RenderEvent
	for _, ev := range e.List {
		if r := ev.GetRender(); r != nil && r.GetComponent() == component {
			out = append(out, r)
		}
	}
	return out
}

// Visualizations are the visualization events.
func (e *Events) Visualizations() []*chatv2.VisualizationEvent {
	var out []*chatv2.VisualizationEvent
	for _, ev := range e.List {
		if v := ev.GetVisualization(); v != nil {
			out = append(out, v)
		}
	}
	return out
}

// Identity is the caller of the tests (tenant 42).
func Identity() *authn.Identity {
	return &authn.Identity{UserID: 7, Username: "analyst", TenantID: 42, Token: "tok-123", Audience: "test"}
}

// Previews are the preview requests received so far.
func (f *FakeAnalytics) Previews() []*analysisv1.PreviewQueryRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*analysisv1.PreviewQueryRequest(nil), f.previews...)
}

// Identities are the callers seen so far, one per call.
func (f *FakeAnalytics) Identities() []*authn.Identity {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*authn.Identity(nil), f.identities...)
}

// Tools is the registry of the agent tools over f (memory vector store, hashed embedding,
// the test clock).
func Tools(f *FakeAnalytics) *agent.Registry {
	index := agent.NewMetricIndex(vector.NewMemory(), vector.NewHashEmbedder(256))
	return agent.NewRegistry(0, agent.Tools(f, index, Clock)...)
}

// ErrorMessage is the message of a failed tool's content {"status":"error","message":...};
// it fails the test when content is not one.
func ErrorMessage(t testing.TB, content string) string {
	t.Helper()
	var m map[string]string
	if err := json.Unmarshal([]byte(content), &m); err != nil || m["status"] != "error" {
		t.Fatalf("not an error result: %s", content)
	}
	return m["message"]
}

// ProtoText is a message as JSON text, for searching in failure messages.
func ProtoText(m proto.Message) string {
	b, _ := protojson.Marshal(m)
	return string(b)
}

// Ask has a answer question as the test identity and returns the events; an error fails
// the test.
func Ask(t testing.TB, a agent.Agent, question string) *Events {
	t.Helper()
	ev := &Events{}
	err := a.Answer(context.Background(), &agent.Request{Identity: Identity(), ConversationID: "c-1", Message: question}, ev.Emit)
	if err != nil {
		t.Fatalf("%q: %v", question, err)
	}
	return ev
}

// CatalogCalls is the number of GetCatalog calls so far.
func (f *FakeAnalytics) CatalogCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.catalogs
}

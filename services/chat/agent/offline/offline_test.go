package offline

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	analysisv1 "github.com/shopmind/shopmind/gen/go/shopmind/analysis/v1"
	chatv2 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v2"
	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/agent/agenttest"
	"github.com/shopmind/shopmind/services/chat/agent/charts"
	"github.com/shopmind/shopmind/services/chat/vector"
)

func newTestAnalyst(f *agenttest.FakeAnalytics) *Analyst {
	index := agent.NewMetricIndex(vector.NewMemory(), vector.NewHashEmbedder(256))
	reg := agent.NewRegistry(0, agent.Tools(f, index, agenttest.Clock)...)
	return New(f, reg, Options{Clock: agenttest.Clock})
}

// previewFor runs the fake's preview for the same query the analyst must have sent.
func previewFor(t *testing.T, f *agenttest.FakeAnalytics, req *analysisv1.PreviewQueryRequest) *analysisv1.PreviewQueryResponse {
	t.Helper()
	resp, err := f.PreviewQuery(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// sentPreviews are the previews an answer sent, without the lexicon's reads of the members
// (a year by one dimension, unsorted, 10000 rows).
func sentPreviews(f *agenttest.FakeAnalytics) []*analysisv1.PreviewQueryRequest {
	var out []*analysisv1.PreviewQueryRequest
	for _, p := range f.Previews() {
		if p.GetLimit() == 10000 && len(p.GetSort()) == 0 && p.GetTimeGranularity() == "" &&
			p.GetEndTime().AsTime().Sub(p.GetStartTime().AsTime()) > 364*24*time.Hour {
			continue
		}
		out = append(out, p)
	}
	return out
}

func ts(s string) *timestamppb.Timestamp { return timestamppb.New(d(s)) }

func checkOrder(t *testing.T, ev *agenttest.Events) {
	t.Helper()
	first := ev.List[0]
	if first.GetRender().GetComponent() != agent.ComponentThinking || first.GetConversationId() != "c-1" || first.GetType() != agent.EventRender {
		t.Fatalf("first event %v", first)
	}
	plan, chunk, viz := -1, -1, -1
	for i, e := range ev.List {
		switch {
		case e.GetRender().GetComponent() == agent.ComponentTaskPlan && plan < 0:
			plan = i
		case e.GetChunk() != nil && chunk < 0:
			chunk = i
		case e.GetVisualization() != nil && viz < 0:
			viz = i
		}
		if e.GetConversationId() != "c-1" || e.GetType() == "" {
			t.Fatalf("event %d: %v", i, e)
		}
	}
	if !(plan > 0 && chunk > plan && viz > chunk) {
		t.Fatalf("order: plan %d chunk %d viz %d", plan, chunk, viz)
	}
	// chunks: OpenAI shape, one id, role on the first, no finish_reason (the chat service
	// sends the closing chunk)
	var chunks []int
	for i, e := range ev.List {
		if e.GetChunk() != nil {
			chunks = append(chunks, i)
		}
	}
	c0 := ev.List[chunks[0]].GetChunk()
	last := ev.List[chunks[len(chunks)-1]].GetChunk()
	if c0.GetObject() != "chat.completion.chunk" || c0.GetChoices()[0].GetDelta().GetRole() != "assistant" || c0.GetModel() != Model ||
		c0.GetCreated() != agenttest.Now.Unix() || !strings.HasPrefix(c0.GetId(), "chatcmpl-") {
		t.Fatalf("first chunk %v", c0)
	}
	if last.GetChoices()[0].GetFinishReason() != "" || last.GetId() != c0.GetId() {
		t.Fatalf("last chunk %v", last)
	}
	// the thinking process and the plan end done
	th := ev.Renders(agent.ComponentThinking)
	if th[len(th)-1].GetProps().GetFields()["status"].GetStringValue() != agent.StatusDone {
		t.Fatalf("thinking ends %v", th[len(th)-1].GetProps())
	}
	pl := ev.Renders(agent.ComponentTaskPlan)
	if p := pl[len(pl)-1].GetProps().GetFields(); p["progress"].GetNumberValue() != 1 {
		t.Fatalf("plan ends %v", p)
	}
}

func TestOfflineGMVByShopLast7Days(t *testing.T) {
	f := agenttest.NewFakeAnalytics()
	ev := agenttest.Ask(t, newTestAnalyst(f), "What was GMV by shop last 7 days?")
	checkOrder(t, ev)

	sent := sentPreviews(f)
	if len(sent) != 3 {
		t.Fatalf("%d previews", len(sent))
	}
	// the caller's identity reached every analysis call
	for _, id := range f.Identities() {
		if id == nil || id.TenantID != 42 || id.Token != "tok-123" {
			t.Fatalf("identity %+v", id)
		}
	}
	main := &analysisv1.PreviewQueryRequest{MetricNames: []string{"gmv"}, Dimensions: []string{"shop"},
		StartTime: ts("2026-11-15"), EndTime: ts("2026-11-22"), Limit: proto.Int32(50),
		Sort: []*analysisv1.QuerySort{{Field: "gmv", Order: "desc"}}}
	if !proto.Equal(sent[0], main) {
		t.Fatalf("main query %v", sent[0])
	}
	total := &analysisv1.PreviewQueryRequest{MetricNames: []string{"gmv"}, StartTime: ts("2026-11-15"), EndTime: ts("2026-11-22"), Limit: proto.Int32(100)}
	if !proto.Equal(sent[1], total) {
		t.Fatalf("total query %v", sent[1])
	}
	prev := &analysisv1.PreviewQueryRequest{MetricNames: []string{"gmv"}, StartTime: ts("2026-11-08"), EndTime: ts("2026-11-15"), Limit: proto.Int32(100)}
	if !proto.Equal(sent[2], prev) {
		t.Fatalf("previous query %v", sent[2])
	}

	// the numbers are the preview's
	byShop := previewFor(t, f, main)
	tot := previewFor(t, f, total).GetRows()[0].GetValues()[0].GetNumberValue()
	before := previewFor(t, f, prev).GetRows()[0].GetValues()[0].GetNumberValue()
	text := ev.Text()
	leader := byShop.GetRows()[0].GetValues()
	for _, want := range []string{"**GMV** (gmv)", "2026-11-15 – 2026-11-21", charts.FormatNumber(tot, 2), charts.FormatNumber(before, 2),
		leader[1].GetStringValue(), charts.FormatNumber(leader[2].GetNumberValue(), 2)} {
		if !strings.Contains(text, want) {
			t.Errorf("answer lacks %q:\n%s", want, text)
		}
	}
	pct := (tot - before) / before * 100
	word := "up"
	if pct < 0 {
		word, pct = "down", -pct
	}
	if !strings.Contains(text, word+" "+strings.TrimSuffix(charts.FormatNumber(pct, 1), "")+"%") {
		t.Errorf("change %s %.1f%% missing:\n%s", word, pct, text)
	}
	// bar chart of the same rows
	vz := ev.Visualizations()
	if len(vz) != 1 || vz[0].GetChartType() != charts.ChartBar || len(vz[0].GetRows()) != len(byShop.GetRows()) {
		t.Fatalf("visualization %v", vz)
	}
	for i, r := range vz[0].GetRows() {
		if !proto.Equal(r, byShop.GetRows()[i]) {
			t.Fatalf("row %d: %v != %v", i, r, byShop.GetRows()[i])
		}
	}
	spec := vz[0].GetSpec().GetFields()
	if spec["xField"].GetStringValue() != "shop_name" || spec["yFields"].GetListValue().GetValues()[0].GetStringValue() != "gmv" {
		t.Fatalf("spec %v", spec)
	}
	// the thinking process shows the search_indicators step
	th := ev.Renders(agent.ComponentThinking)
	if !strings.Contains(agenttest.ProtoText(th[len(th)-1]), agent.ToolSearchIndicators) || !strings.Contains(agenttest.ProtoText(th[len(th)-1]), "gmv (1.00)") {
		t.Fatalf("thinking %v", th[len(th)-1])
	}
}

func TestOfflineLastMonthByCategoryChinese(t *testing.T) {
	f := agenttest.NewFakeAnalytics()
	ev := agenttest.Ask(t, newTestAnalyst(f), "上个月各类目的销售额是多少")
	checkOrder(t, ev)
	sent := sentPreviews(f)
	main := &analysisv1.PreviewQueryRequest{MetricNames: []string{"line_amount"}, Dimensions: []string{"category"},
		StartTime: ts("2026-10-01"), EndTime: ts("2026-11-01"), Limit: proto.Int32(50),
		Sort: []*analysisv1.QuerySort{{Field: "line_amount", Order: "desc"}}}
	if !proto.Equal(sent[0], main) {
		t.Fatalf("main query %v", sent[0])
	}
	if !sent[2].GetStartTime().AsTime().Equal(d("2026-09-01")) || !sent[2].GetEndTime().AsTime().Equal(d("2026-10-01")) {
		t.Fatalf("previous month %v", sent[2])
	}
	byCat := previewFor(t, f, main)
	tot := previewFor(t, f, sent[1]).GetRows()[0].GetValues()[0].GetNumberValue()
	var sum float64
	for _, r := range byCat.GetRows() {
		sum += r.GetValues()[2].GetNumberValue()
	}
	if charts.FormatNumber(sum, 2) != charts.FormatNumber(tot, 2) {
		t.Fatalf("categories add up to %v, total %v", sum, tot)
	}
	text := ev.Text()
	leader := byCat.GetRows()[0].GetValues()
	for _, want := range []string{"2026年10月", "商品销售额", "line_amount", charts.FormatNumber(tot, 2), "按类目看", leader[1].GetStringValue(),
		charts.FormatNumber(leader[2].GetNumberValue(), 2), "说明", "订单行"} {
		if !strings.Contains(text, want) {
			t.Errorf("answer lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "Line amount") && !strings.Contains(text, "（line_amount）") {
		t.Errorf("label:\n%s", text)
	}
	vz := ev.Visualizations()
	if len(vz) != 1 || vz[0].GetChartType() != charts.ChartBar || len(vz[0].GetRows()) != 4 {
		t.Fatalf("visualization %v", vz)
	}
}

func TestOfflineTimeSeriesAndTable(t *testing.T) {
	f := agenttest.NewFakeAnalytics()
	a := newTestAnalyst(f)
	ev := agenttest.Ask(t, a, "GMV by day last 7 days")
	vz := ev.Visualizations()
	if len(vz) != 1 || vz[0].GetChartType() != charts.ChartLine || len(vz[0].GetRows()) != 7 || vz[0].GetSpec().GetFields()["xField"].GetStringValue() != "time" {
		t.Fatalf("line %v", vz)
	}
	if !strings.Contains(ev.Text(), "highest day") {
		t.Fatalf("%s", ev.Text())
	}
	sent := sentPreviews(f)
	if sent[0].GetTimeGranularity() != "day" || sent[0].GetSort()[0].GetField() != "time" || sent[0].GetSort()[0].GetOrder() != "asc" {
		t.Fatalf("series query %v", sent[0])
	}

	f2 := agenttest.NewFakeAnalytics()
	ev = agenttest.Ask(t, newTestAnalyst(f2), "How many orders yesterday?")
	vz = ev.Visualizations()
	if len(vz) != 1 || vz[0].GetChartType() != charts.ChartTable || vz[0].GetColumns()[0] != "metric" {
		t.Fatalf("table %v", vz)
	}
	sent = sentPreviews(f2)
	if len(sent) != 2 { // the total is the question's query; then the previous day
		t.Fatalf("%d previews", len(sent))
	}
	n := previewFor(t, f2, sent[0]).GetRows()[0].GetValues()[0].GetNumberValue()
	if !strings.Contains(ev.Text(), "**"+charts.FormatNumber(n, 0)+"**") {
		t.Fatalf("count %v missing: %s", n, ev.Text())
	}
	if got := vz[0].GetRows()[0].GetValues()[2].GetNumberValue(); got != n {
		t.Fatalf("table value %v != %v", got, n)
	}
}

func TestOfflineMetricFoundBySearch(t *testing.T) {
	f := agenttest.NewFakeAnalytics()
	ev := agenttest.Ask(t, newTestAnalyst(f), "GMVs by shop last week")
	sent := sentPreviews(f)
	if len(sent) == 0 || sent[0].GetMetricNames()[0] != "gmv" || sent[0].GetDimensions()[0] != "shop" ||
		!sent[0].GetStartTime().AsTime().Equal(d("2026-11-09")) {
		t.Fatalf("%v", sent)
	}
	if !strings.Contains(ev.Text(), "**GMV**") {
		t.Fatal(ev.Text())
	}
}

func TestOfflineTopN(t *testing.T) {
	f := agenttest.NewFakeAnalytics()
	ev := agenttest.Ask(t, newTestAnalyst(f), "上月销量前3的商品")
	sent := sentPreviews(f)
	if sent[0].GetLimit() != 3 || sent[0].GetDimensions()[0] != "goods" || sent[0].GetMetricNames()[0] != "units_sold" {
		t.Fatalf("%v", sent[0])
	}
	text := ev.Text()
	if !strings.Contains(text, "商品前 3 名") || !strings.Contains(text, "1. ") || !strings.Contains(text, "3. ") || strings.Contains(text, "4. ") {
		t.Fatalf("%s", text)
	}
}

func TestOfflineUnknownQuestionHelps(t *testing.T) {
	for q, want := range map[string][]string{
		"hello there": {"could not tell which metric", "**GMV** (`gmv`)", "What was GMV by shop last 7 days?", "上个月各类目的销售额是多少"},
		"今天天气怎么样":     {"没能识别出", "最近7天各店铺的销售额是多少？", "上个月各类目的销售额是多少"},
	} {
		f := agenttest.NewFakeAnalytics()
		ev := agenttest.Ask(t, newTestAnalyst(f), q)
		text := ev.Text()
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("%q: help lacks %q:\n%s", q, w, text)
			}
		}
		if len(sentPreviews(f)) != 0 || len(ev.Visualizations()) != 0 {
			t.Errorf("%q: queried", q)
		}
	}
}

func TestOfflineFailures(t *testing.T) {
	// a query the analysis service refuses: explained, not an error
	f := agenttest.NewFakeAnalytics()
	f.FailPreview = status.Error(codes.InvalidArgument, "metric gmv cannot be split by staff")
	ev := agenttest.Ask(t, newTestAnalyst(f), "GMV by shop last 7 days")
	if !strings.Contains(ev.Text(), "cannot be split by staff") || !strings.Contains(ev.Text(), "Try another metric") {
		t.Fatalf("%s", ev.Text())
	}
	th := ev.Renders(agent.ComponentThinking)
	if th[len(th)-1].GetProps().GetFields()["status"].GetStringValue() != agent.StatusError {
		t.Fatal("thinking does not end in error")
	}
	// the analysis service is down: an error for the chat service
	f = agenttest.NewFakeAnalytics()
	f.FailPreview = status.Error(codes.Unavailable, "connection refused")
	evs := &agenttest.Events{}
	err := newTestAnalyst(f).Answer(context.Background(), &agent.Request{Identity: agenttest.Identity(), ConversationID: "c-1", Message: "GMV last 7 days"}, evs.Emit)
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("%v", err)
	}
	// metric definitions unreadable
	f = agenttest.NewFakeAnalytics()
	f.FailList = status.Error(codes.Unavailable, "down")
	err = newTestAnalyst(f).Answer(context.Background(), &agent.Request{Identity: agenttest.Identity(), ConversationID: "c-1", Message: "GMV"}, (&agenttest.Events{}).Emit)
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("%v", err)
	}
	// an emit failure stops the answer
	stop := errors.New("client gone")
	err = newTestAnalyst(agenttest.NewFakeAnalytics()).Answer(context.Background(), &agent.Request{Identity: agenttest.Identity(), Message: "GMV"},
		func(*chatv2.SendMessageResponse) error { return stop })
	if !errors.Is(err, stop) {
		t.Fatalf("%v", err)
	}
}

func TestOfflineFirstEventLatency(t *testing.T) {
	f := agenttest.NewFakeAnalytics()
	f.Delay = 20 * time.Millisecond // every analysis call
	a := newTestAnalyst(f)
	ev := &agenttest.Events{}
	start := time.Now()
	if err := a.Answer(context.Background(), &agent.Request{Identity: agenttest.Identity(), Message: "What was GMV by shop last 7 days?"}, ev.Emit); err != nil {
		t.Fatal(err)
	}
	if first := ev.At[0].Sub(start); first > 200*time.Millisecond {
		t.Fatalf("first event after %v", first)
	}
}

package agent

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
	"github.com/shopmind/shopmind/services/chat/vector"
)

func newTestAnalyst(f *fakeAnalytics) *OfflineAnalyst {
	index := NewMetricIndex(vector.NewMemory(), vector.NewHashEmbedder(256))
	reg := NewRegistry(0, Tools(f, index, testClock)...)
	return NewOfflineAnalyst(f, reg, OfflineOptions{Clock: testClock})
}

func ask(t *testing.T, a Agent, question string) *events {
	t.Helper()
	ev := &events{}
	err := a.Answer(context.Background(), &Request{Identity: testIdentity(), ConversationID: "c-1", Message: question}, ev.emit)
	if err != nil {
		t.Fatalf("%q: %v", question, err)
	}
	return ev
}

// previewFor runs the fake's preview for the same query the analyst must have sent.
func previewFor(t *testing.T, f *fakeAnalytics, req *analysisv1.PreviewQueryRequest) *analysisv1.PreviewQueryResponse {
	t.Helper()
	resp, err := f.PreviewQuery(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func sentPreviews(f *fakeAnalytics) []*analysisv1.PreviewQueryRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*analysisv1.PreviewQueryRequest(nil), f.previews...)
}

func ts(s string) *timestamppb.Timestamp { return timestamppb.New(d(s)) }

func checkOrder(t *testing.T, ev *events) {
	t.Helper()
	first := ev.list[0]
	if first.GetRender().GetComponent() != ComponentThinking || first.GetConversationId() != "c-1" || first.GetType() != EventRender {
		t.Fatalf("first event %v", first)
	}
	plan, chunk, viz := -1, -1, -1
	for i, e := range ev.list {
		switch {
		case e.GetRender().GetComponent() == ComponentTaskPlan && plan < 0:
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
	for i, e := range ev.list {
		if e.GetChunk() != nil {
			chunks = append(chunks, i)
		}
	}
	c0 := ev.list[chunks[0]].GetChunk()
	last := ev.list[chunks[len(chunks)-1]].GetChunk()
	if c0.GetObject() != "chat.completion.chunk" || c0.GetChoices()[0].GetDelta().GetRole() != "assistant" || c0.GetModel() != OfflineModel ||
		c0.GetCreated() != testNow.Unix() || !strings.HasPrefix(c0.GetId(), "chatcmpl-") {
		t.Fatalf("first chunk %v", c0)
	}
	if last.GetChoices()[0].GetFinishReason() != "" || last.GetId() != c0.GetId() {
		t.Fatalf("last chunk %v", last)
	}
	// the thinking process and the plan end done
	th := ev.renders(ComponentThinking)
	if th[len(th)-1].GetProps().GetFields()["status"].GetStringValue() != StatusDone {
		t.Fatalf("thinking ends %v", th[len(th)-1].GetProps())
	}
	pl := ev.renders(ComponentTaskPlan)
	if p := pl[len(pl)-1].GetProps().GetFields(); p["progress"].GetNumberValue() != 1 {
		t.Fatalf("plan ends %v", p)
	}
}

func TestOfflineGMVByShopLast7Days(t *testing.T) {
	f := newFakeAnalytics()
	ev := ask(t, newTestAnalyst(f), "What was GMV by shop last 7 days?")
	checkOrder(t, ev)

	sent := sentPreviews(f)
	if len(sent) != 3 {
		t.Fatalf("%d previews", len(sent))
	}
	// the caller's identity reached every analysis call
	for _, id := range f.identities {
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
	text := ev.text()
	leader := byShop.GetRows()[0].GetValues()
	for _, want := range []string{"**GMV** (gmv)", "2026-11-15 – 2026-11-21", formatNumber(tot, 2), formatNumber(before, 2),
		leader[1].GetStringValue(), formatNumber(leader[2].GetNumberValue(), 2)} {
		if !strings.Contains(text, want) {
			t.Errorf("answer lacks %q:\n%s", want, text)
		}
	}
	pct := (tot - before) / before * 100
	word := "up"
	if pct < 0 {
		word, pct = "down", -pct
	}
	if !strings.Contains(text, word+" "+strings.TrimSuffix(formatNumber(pct, 1), "")+"%") {
		t.Errorf("change %s %.1f%% missing:\n%s", word, pct, text)
	}
	// bar chart of the same rows
	vz := ev.visualizations()
	if len(vz) != 1 || vz[0].GetChartType() != ChartBar || len(vz[0].GetRows()) != len(byShop.GetRows()) {
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
	th := ev.renders(ComponentThinking)
	if !strings.Contains(protoText(th[len(th)-1]), ToolSearchIndicators) || !strings.Contains(protoText(th[len(th)-1]), "gmv (1.00)") {
		t.Fatalf("thinking %v", th[len(th)-1])
	}
}

func protoText(m proto.Message) string {
	b, _ := protoJSON.Marshal(m)
	return string(b)
}

func TestOfflineLastMonthByCategoryChinese(t *testing.T) {
	f := newFakeAnalytics()
	ev := ask(t, newTestAnalyst(f), "上个月各类目的销售额是多少")
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
	if formatNumber(sum, 2) != formatNumber(tot, 2) {
		t.Fatalf("categories add up to %v, total %v", sum, tot)
	}
	text := ev.text()
	leader := byCat.GetRows()[0].GetValues()
	for _, want := range []string{"2026年10月", "商品销售额", "line_amount", formatNumber(tot, 2), "按类目看", leader[1].GetStringValue(),
		formatNumber(leader[2].GetNumberValue(), 2), "说明", "订单行"} {
		if !strings.Contains(text, want) {
			t.Errorf("answer lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "Line amount") && !strings.Contains(text, "（line_amount）") {
		t.Errorf("label:\n%s", text)
	}
	vz := ev.visualizations()
	if len(vz) != 1 || vz[0].GetChartType() != ChartBar || len(vz[0].GetRows()) != 4 {
		t.Fatalf("visualization %v", vz)
	}
}

func TestOfflineTimeSeriesAndTable(t *testing.T) {
	f := newFakeAnalytics()
	a := newTestAnalyst(f)
	ev := ask(t, a, "GMV by day last 7 days")
	vz := ev.visualizations()
	if len(vz) != 1 || vz[0].GetChartType() != ChartLine || len(vz[0].GetRows()) != 7 || vz[0].GetSpec().GetFields()["xField"].GetStringValue() != "time" {
		t.Fatalf("line %v", vz)
	}
	if !strings.Contains(ev.text(), "highest day") {
		t.Fatalf("%s", ev.text())
	}
	sent := sentPreviews(f)
	if sent[0].GetTimeGranularity() != "day" || sent[0].GetSort()[0].GetField() != "time" || sent[0].GetSort()[0].GetOrder() != "asc" {
		t.Fatalf("series query %v", sent[0])
	}

	f2 := newFakeAnalytics()
	ev = ask(t, newTestAnalyst(f2), "How many orders yesterday?")
	vz = ev.visualizations()
	if len(vz) != 1 || vz[0].GetChartType() != ChartTable || vz[0].GetColumns()[0] != "metric" {
		t.Fatalf("table %v", vz)
	}
	sent = sentPreviews(f2)
	if len(sent) != 2 { // the total is the question's query; then the previous day
		t.Fatalf("%d previews", len(sent))
	}
	n := previewFor(t, f2, sent[0]).GetRows()[0].GetValues()[0].GetNumberValue()
	if !strings.Contains(ev.text(), "**"+formatNumber(n, 0)+"**") {
		t.Fatalf("count %v missing: %s", n, ev.text())
	}
	if got := vz[0].GetRows()[0].GetValues()[2].GetNumberValue(); got != n {
		t.Fatalf("table value %v != %v", got, n)
	}
}

func TestOfflineMetricFoundBySearch(t *testing.T) {
	f := newFakeAnalytics()
	ev := ask(t, newTestAnalyst(f), "GMVs by shop last week")
	sent := sentPreviews(f)
	if len(sent) == 0 || sent[0].GetMetricNames()[0] != "gmv" || sent[0].GetDimensions()[0] != "shop" ||
		!sent[0].GetStartTime().AsTime().Equal(d("2026-11-09")) {
		t.Fatalf("%v", sent)
	}
	if !strings.Contains(ev.text(), "**GMV**") {
		t.Fatal(ev.text())
	}
}

func TestOfflineTopN(t *testing.T) {
	f := newFakeAnalytics()
	ev := ask(t, newTestAnalyst(f), "上月销量前3的商品")
	sent := sentPreviews(f)
	if sent[0].GetLimit() != 3 || sent[0].GetDimensions()[0] != "goods" || sent[0].GetMetricNames()[0] != "units_sold" {
		t.Fatalf("%v", sent[0])
	}
	text := ev.text()
	if !strings.Contains(text, "商品前 3 名") || !strings.Contains(text, "1. ") || !strings.Contains(text, "3. ") || strings.Contains(text, "4. ") {
		t.Fatalf("%s", text)
	}
}

func TestOfflineUnknownQuestionHelps(t *testing.T) {
	for q, want := range map[string][]string{
		"hello there": {"could not tell which metric", "**GMV** (`gmv`)", "What was GMV by shop last 7 days?", "上个月各类目的销售额是多少"},
		"今天天气怎么样":     {"没能识别出", "最近7天各店铺的销售额是多少？", "上个月各类目的销售额是多少"},
	} {
		f := newFakeAnalytics()
		ev := ask(t, newTestAnalyst(f), q)
		text := ev.text()
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("%q: help lacks %q:\n%s", q, w, text)
			}
		}
		if len(sentPreviews(f)) != 0 || len(ev.visualizations()) != 0 {
			t.Errorf("%q: queried", q)
		}
	}
}

func TestOfflineFailures(t *testing.T) {
	// a query the analysis service refuses: explained, not an error
	f := newFakeAnalytics()
	f.failPreview = status.Error(codes.InvalidArgument, "metric gmv cannot be split by staff")
	ev := ask(t, newTestAnalyst(f), "GMV by shop last 7 days")
	if !strings.Contains(ev.text(), "cannot be split by staff") || !strings.Contains(ev.text(), "Try another metric") {
		t.Fatalf("%s", ev.text())
	}
	th := ev.renders(ComponentThinking)
	if th[len(th)-1].GetProps().GetFields()["status"].GetStringValue() != StatusError {
		t.Fatal("thinking does not end in error")
	}
	// the analysis service is down: an error for the chat service
	f = newFakeAnalytics()
	f.failPreview = status.Error(codes.Unavailable, "connection refused")
	evs := &events{}
	err := newTestAnalyst(f).Answer(context.Background(), &Request{Identity: testIdentity(), ConversationID: "c-1", Message: "GMV last 7 days"}, evs.emit)
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("%v", err)
	}
	// metric definitions unreadable
	f = newFakeAnalytics()
	f.failList = status.Error(codes.Unavailable, "down")
	err = newTestAnalyst(f).Answer(context.Background(), &Request{Identity: testIdentity(), ConversationID: "c-1", Message: "GMV"}, (&events{}).emit)
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("%v", err)
	}
	// an emit failure stops the answer
	stop := errors.New("client gone")
	err = newTestAnalyst(newFakeAnalytics()).Answer(context.Background(), &Request{Identity: testIdentity(), Message: "GMV"},
		func(*chatv2Event) error { return stop })
	if !errors.Is(err, stop) {
		t.Fatalf("%v", err)
	}
}

func TestOfflineFirstEventLatency(t *testing.T) {
	f := newFakeAnalytics()
	f.delay = 20 * time.Millisecond // every analysis call
	a := newTestAnalyst(f)
	ev := &events{}
	start := time.Now()
	if err := a.Answer(context.Background(), &Request{Identity: testIdentity(), Message: "What was GMV by shop last 7 days?"}, ev.emit); err != nil {
		t.Fatal(err)
	}
	if first := ev.at[0].Sub(start); first > 200*time.Millisecond {
		t.Fatalf("first event after %v", first)
	}
}

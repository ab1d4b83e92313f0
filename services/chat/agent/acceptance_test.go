package agent_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	analysisv1 "github.com/shopmind/shopmind/gen/go/shopmind/analysis/v1"
	chatv2 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v2"
	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/testutil/stack"
	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/chatconfig"
)

// identityOf builds the caller's identity from an access token (its claims are trusted
// here: the analysis service verifies the token again).
func identityOf(t *testing.T, token string) *authn.Identity {
	t.Helper()
	parts := strings.Split(token, ".")
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Tid int64           `json:"tid"`
		Uid int64           `json:"uid"`
		Aud json.RawMessage `json:"aud"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	var aud string
	if json.Unmarshal(c.Aud, &aud) != nil {
		var list []string
		_ = json.Unmarshal(c.Aud, &list)
		if len(list) > 0 {
			aud = list[0]
		}
	}
	return &authn.Identity{Token: token, TenantID: c.Tid, UserID: c.Uid, Audience: aud}
}

type answer struct {
	text string
	viz  []*chatv2.VisualizationEvent
}

func run(t *testing.T, a agent.Agent, id *authn.Identity, q string) answer {
	t.Helper()
	var out answer
	err := a.Answer(context.Background(), &agent.Request{Identity: id, ConversationID: "acc", Message: q}, func(e *chatv2.SendMessageResponse) error {
		if c := e.GetChunk(); c != nil {
			out.text += c.GetChoices()[0].GetDelta().GetContent()
		}
		if v := e.GetVisualization(); v != nil {
			out.viz = append(out.viz, proto.Clone(v).(*chatv2.VisualizationEvent))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%q: %v", q, err)
	}
	return out
}

// fmtMoney is the analyst's format of amounts: thousands separators, two decimals.
func fmtMoney(v float64) string { return agent.FormatNumber(v, 2) }

// TestAcceptanceAgainstAnalysis runs the offline analyst on the whole platform (real
// analysis service and semantic layer on the demo data): the two acceptance questions
// stream numbers equal to the analytics preview of the same queries.
func TestAcceptanceAgainstAnalysis(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole platform")
	}
	s := stack.Start(t, func(c *app.Config) { c.DemoData = true })
	id := identityOf(t, s.Admin(t).Access)
	cfg, err := chatconfig.LLMFromMap(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	a, checks, err := agent.New(context.Background(), cfg, func(string) (grpc.ClientConnInterface, error) { return s.Conn, nil }, s.DB.Pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := checks[0].Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	qc := analysisv1.NewQueryServiceClient(s.Conn)
	ctx := authn.Outgoing(authn.WithIdentity(context.Background(), id))
	preview := func(req *analysisv1.PreviewQueryRequest) *analysisv1.PreviewQueryResponse {
		t.Helper()
		resp, err := qc.PreviewQuery(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	today := time.Now().UTC().Truncate(24 * time.Hour)
	ts := timestamppb.New

	// What was GMV by shop last 7 days?
	got := run(t, a, id, "What was GMV by shop last 7 days?")
	start := today.AddDate(0, 0, -7)
	byShop := preview(&analysisv1.PreviewQueryRequest{MetricNames: []string{"gmv"}, Dimensions: []string{"shop"},
		StartTime: ts(start), EndTime: ts(today), Limit: proto.Int32(50), Sort: []*analysisv1.QuerySort{{Field: "gmv", Order: "desc"}}})
	total := preview(&analysisv1.PreviewQueryRequest{MetricNames: []string{"gmv"}, StartTime: ts(start), EndTime: ts(today)})
	if len(byShop.GetRows()) == 0 {
		t.Fatal("no demo data")
	}
	leader := byShop.GetRows()[0].GetValues()
	for _, want := range []string{fmtMoney(total.GetRows()[0].GetValues()[0].GetNumberValue()), leader[1].GetStringValue(),
		fmtMoney(leader[2].GetNumberValue())} {
		if !strings.Contains(got.text, want) {
			t.Errorf("GMV by shop: answer lacks %q:\n%s", want, got.text)
		}
	}
	if len(got.viz) != 1 || got.viz[0].GetChartType() != "bar" || len(got.viz[0].GetRows()) != len(byShop.GetRows()) {
		t.Fatalf("GMV by shop: %v", got.viz)
	}
	for i, r := range got.viz[0].GetRows() {
		if !proto.Equal(r, byShop.GetRows()[i]) {
			t.Fatalf("row %d: %v != %v", i, r, byShop.GetRows()[i])
		}
	}

	// 上个月各类目的销售额是多少: line_amount by category for last month
	got = run(t, a, id, "上个月各类目的销售额是多少")
	first := time.Date(today.Year(), today.Month(), 1, 0, 0, 0, 0, time.UTC)
	prevMonth := first.AddDate(0, -1, 0)
	byCat := preview(&analysisv1.PreviewQueryRequest{MetricNames: []string{"line_amount"}, Dimensions: []string{"category"},
		StartTime: ts(prevMonth), EndTime: ts(first), Limit: proto.Int32(50), Sort: []*analysisv1.QuerySort{{Field: "line_amount", Order: "desc"}}})
	total = preview(&analysisv1.PreviewQueryRequest{MetricNames: []string{"line_amount"}, StartTime: ts(prevMonth), EndTime: ts(first)})
	leader = byCat.GetRows()[0].GetValues()
	for _, want := range []string{"line_amount", "商品销售额", fmtMoney(total.GetRows()[0].GetValues()[0].GetNumberValue()),
		leader[1].GetStringValue(), fmtMoney(leader[2].GetNumberValue()), "按类目看"} {
		if !strings.Contains(got.text, want) {
			t.Errorf("上个月各类目: answer lacks %q:\n%s", want, got.text)
		}
	}
	if len(got.viz) != 1 || len(got.viz[0].GetRows()) != len(byCat.GetRows()) {
		t.Fatalf("上个月各类目: %v", got.viz)
	}
	for i, r := range got.viz[0].GetRows() {
		if !proto.Equal(r, byCat.GetRows()[i]) {
			t.Fatalf("row %d: %v != %v", i, r, byCat.GetRows()[i])
		}
	}
}

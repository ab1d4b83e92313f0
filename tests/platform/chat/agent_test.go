//go:build platform

package chat

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/testutil/stack"
)

// money is an amount as the answers write it: thousands separators, two decimals (an
// independent formatter, not the analyst's).
func money(v float64) string { return message.NewPrinter(language.English).Sprintf("%.2f", v) }

// preview runs the analysis preview through the gateway and returns its rows.
func preview(t *testing.T, s *stack.Stack, token string, body map[string]any) [][]any {
	t.Helper()
	b, _ := json.Marshal(body)
	data := expect(t, s, "POST", "/api/v1/anls/query/preview", string(b), token, 0, `"rows"`)
	return decode[struct {
		Rows [][]any `json:"rows"`
	}](t, data).Rows
}

// ask sends a v2 message through the gateway and returns its text and visualizations.
func ask(t *testing.T, s *stack.Stack, token, question string) (string, []map[string]any, []map[string]any) {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"message": question})
	_, events := stream(t, s, "/api/v2/chat/message", string(b), token)
	var viz, renders []map[string]any
	for _, ev := range events {
		switch ev["type"] {
		case "visualization":
			viz = append(viz, ev)
		case "render":
			renders = append(renders, ev)
		}
	}
	return textOf(t, events), viz, renders
}

func day(t time.Time) string { return t.Format(time.RFC3339) }

// TestOfflineAnalystAgainstAnalysis asks the production chat service (the offline analyst:
// no LLM is configured) on the whole platform with the demo data, through the gateway: the
// two acceptance questions stream numbers and charts equal to the analysis preview of the
// same queries.
func TestOfflineAnalystAgainstAnalysis(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole platform")
	}
	s := stack.Start(t, func(c *app.Config) { c.DemoData = true })
	token := s.Admin(t).Access
	today := time.Now().UTC().Truncate(24 * time.Hour)

	// What was GMV by shop last 7 days?
	text, viz, _ := ask(t, s, token, "What was GMV by shop last 7 days?")
	start := today.AddDate(0, 0, -7)
	byShop := preview(t, s, token, map[string]any{"metric_names": []string{"gmv"}, "dimensions": []string{"shop"},
		"start_time": day(start), "end_time": day(today), "limit": 50, "sort": []any{map[string]string{"field": "gmv", "order": "desc"}}})
	total := preview(t, s, token, map[string]any{"metric_names": []string{"gmv"}, "start_time": day(start), "end_time": day(today)})
	if len(byShop) == 0 {
		t.Fatal("no demo data")
	}
	leader := byShop[0]
	for _, want := range []string{money(total[0][0].(float64)), leader[1].(string), money(leader[2].(float64))} {
		if !strings.Contains(text, want) {
			t.Errorf("GMV by shop: answer lacks %q:\n%s", want, text)
		}
	}
	if len(viz) != 1 || viz[0]["chart_type"] != "bar" || fmt.Sprint(viz[0]["rows"]) != fmt.Sprint(byShop) {
		t.Fatalf("GMV by shop: %v\nwant rows %v", viz, byShop)
	}

	// 上个月各类目的销售额是多少: line_amount by category for last month
	text, viz, _ = ask(t, s, token, "上个月各类目的销售额是多少")
	first := time.Date(today.Year(), today.Month(), 1, 0, 0, 0, 0, time.UTC)
	prevMonth := first.AddDate(0, -1, 0)
	byCat := preview(t, s, token, map[string]any{"metric_names": []string{"line_amount"}, "dimensions": []string{"category"},
		"start_time": day(prevMonth), "end_time": day(first), "limit": 50, "sort": []any{map[string]string{"field": "line_amount", "order": "desc"}}})
	total = preview(t, s, token, map[string]any{"metric_names": []string{"line_amount"}, "start_time": day(prevMonth), "end_time": day(first)})
	leader = byCat[0]
	for _, want := range []string{"line_amount", "商品销售额", money(total[0][0].(float64)), leader[1].(string), money(leader[2].(float64)), "按类目看"} {
		if !strings.Contains(text, want) {
			t.Errorf("上个月各类目: answer lacks %q:\n%s", want, text)
		}
	}
	if len(viz) != 1 || fmt.Sprint(viz[0]["rows"]) != fmt.Sprint(byCat) {
		t.Fatalf("上个月各类目: %v\nwant rows %v", viz, byCat)
	}
}

// TestOfflineTeamAgainstAnalysis: on the whole platform with the demo data and no LLM, a v2
// message asking for a broad analysis streams a TaskPlanCard whose subtasks end done, then
// a merged report whose numbers equal the analysis preview for the same metric and period.
func TestOfflineTeamAgainstAnalysis(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole platform")
	}
	s := stack.Start(t, func(c *app.Config) { c.DemoData = true })
	token := s.Admin(t).Access
	text, viz, renders := ask(t, s, token, "analyse last month's sales, goods and shops")

	var last map[string]any
	for _, r := range renders {
		if r["component"] == "TaskPlanCard" && r["id"] == "team-plan" {
			last, _ = r["props"].(map[string]any)
		}
	}
	tasks, _ := last["tasks"].([]any)
	if len(tasks) != 3 {
		t.Fatalf("team plan: %v", last)
	}
	for _, task := range tasks {
		if m := task.(map[string]any); m["status"] != "done" {
			t.Fatalf("subtask %v", m)
		}
	}

	today := time.Now().UTC().Truncate(24 * time.Hour)
	first := time.Date(today.Year(), today.Month(), 1, 0, 0, 0, 0, time.UTC)
	prevMonth := first.AddDate(0, -1, 0)
	before := prevMonth.AddDate(0, -1, 0)
	counts := message.NewPrinter(language.English)
	format := func(metric string, v float64) string {
		switch metric {
		case "gmv", "line_amount", "avg_order_value":
			return money(v)
		}
		return counts.Sprintf("%d", int64(v))
	}
	q := func(start, end time.Time, metrics []string, dim, gran string) [][]any {
		body := map[string]any{"metric_names": metrics, "start_time": day(start), "end_time": day(end)}
		if dim != "" {
			body["dimensions"], body["limit"] = []string{dim}, 50
			body["sort"] = []any{map[string]string{"field": metrics[0], "order": "desc"}}
		}
		if gran != "" {
			body["time_granularity"], body["limit"] = gran, 1000
			body["sort"] = []any{map[string]string{"field": "time", "order": "asc"}}
		}
		return preview(t, s, token, body)
	}
	var wants []string
	// sales: every metric's total and the previous month's
	sales := []string{"gmv", "order_count", "buyers", "avg_order_value"}
	cur, prev := q(prevMonth, first, sales, "", ""), q(before, prevMonth, sales, "", "")
	for i, m := range sales {
		wants = append(wants, fmt.Sprintf("(%s): %s (", m, format(m, cur[0][i].(float64))), " against "+format(m, prev[0][i].(float64))+")")
	}
	// the highest and lowest day
	days := q(prevMonth, first, []string{"gmv"}, "", "day")
	hi, lo := 0, 0
	for i, r := range days {
		if r[1].(float64) > days[hi][1].(float64) {
			hi = i
		}
		if r[1].(float64) < days[lo][1].(float64) {
			lo = i
		}
	}
	wants = append(wants, fmt.Sprintf("highest %s on %.10s, lowest %s on %.10s", money(days[hi][1].(float64)), days[hi][0], money(days[lo][1].(float64)), days[lo][0]))
	// every leader listed: categories, goods, shops (the top 5 of each, label and value)
	for _, c := range []struct{ metric, dim string }{{"line_amount", "category"}, {"units_sold", "goods"}, {"gmv", "shop"}, {"order_count", "shop"}} {
		rows := q(prevMonth, first, []string{c.metric}, c.dim, "")
		total := q(prevMonth, first, []string{c.metric}, "", "")[0][0].(float64)
		wants = append(wants, fmt.Sprintf("(%s) by %s, %s – %s (total %s):", c.metric, c.dim, prevMonth.Format(time.DateOnly),
			first.AddDate(0, 0, -1).Format(time.DateOnly), format(c.metric, total)))
		for i, r := range rows[:min(5, len(rows))] {
			wants = append(wants, fmt.Sprintf("  %d. %s: %s", i+1, r[1], format(c.metric, r[2].(float64))))
		}
	}
	wants = append(wants, "3 of 3 experts reported.")
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	if len(viz) < 3 {
		t.Errorf("%d charts", len(viz))
	}
}

// TestOfflineTeamCreatesAPlan: without an LLM, the offline promotion expert finds the goods
// (search_entities), what is bought with it (search_knowledge_graph) and stores a plan and
// its execution (create_promotion_plan, promotion_strategy), readable over REST.
func TestOfflineTeamCreatesAPlan(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole platform")
	}
	s := stack.Start(t, func(c *app.Config) { c.DemoData = true })
	token := s.Admin(t).Access
	text, _, _ := ask(t, s, token, "analyse last month's goods and promotions and create a promotion plan")
	list := decode[struct {
		Total json.Number `json:"total"`
		Items []struct {
			ID           json.Number `json:"id"`
			ProductNames []string    `json:"product_names"`
		} `json:"items"`
	}](t, expect(t, s, "GET", "/api/v1/chat/promotion-plans", "", token, 0, `"items"`))
	if list.Total != "1" || len(list.Items) != 1 {
		t.Fatalf("plans %+v\n%s", list, text)
	}
	for _, want := range []string{"- suggestion: a promotion for " + list.Items[0].ProductNames[0], "goods id ", "often bought with: ",
		"promotion plan template " + list.Items[0].ID.String(), "- execution: execution "} {
		if !strings.Contains(text, want) {
			t.Errorf("answer lacks %q:\n%s", want, text)
		}
	}
	got := expect(t, s, "GET", "/api/v1/chat/promotion-plans/"+list.Items[0].ID.String(), "", token, 0, `"executions"`)
	if !strings.Contains(string(got), `"status":"planned"`) {
		t.Fatalf("%s", got)
	}
}

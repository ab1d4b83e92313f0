package offline

import (
	"slices"
	"testing"
	"time"

	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/agent/agenttest"
	"github.com/shopmind/shopmind/services/chat/agent/charts"
)

func d(s string) time.Time {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestParseQuestion(t *testing.T) {
	metrics := agent.MetricInfos(agenttest.DemoMetricDefs())
	cases := []struct {
		q           string
		metrics     []string // after the grain rule
		dim, gran   string
		start, end  string // [start, end)
		topN        int
		periodGiven bool
	}{
		{"What was GMV by shop last 7 days?", []string{"gmv"}, "shop", "", "2026-11-15", "2026-11-22", 0, true},
		{"上个月各类目的销售额是多少", []string{"line_amount"}, "category", "", "2026-10-01", "2026-11-01", 0, true},
		{"上月各类目的销售额", []string{"line_amount"}, "category", "", "2026-10-01", "2026-11-01", 0, true},
		{"orders by shop yesterday", []string{"order_count"}, "shop", "", "2026-11-21", "2026-11-22", 0, true},
		{"GMV this month by day", []string{"gmv"}, "", "day", "2026-11-01", "2026-11-23", 0, true},
		{"top 5 goods by units sold last month", []string{"units_sold"}, "goods", "", "2026-10-01", "2026-11-01", 5, true},
		{"2026-10 的订单数", []string{"order_count"}, "", "", "2026-10-01", "2026-11-01", 0, true},
		{"本月客单价", []string{"avg_order_value"}, "", "", "2026-11-01", "2026-11-23", 0, true},
		{"最近30天每天的销售额", []string{"gmv"}, "", "day", "2026-10-23", "2026-11-22", 0, true},
		{"昨天各店铺的成交额", []string{"gmv"}, "shop", "", "2026-11-21", "2026-11-22", 0, true},
		{"Sales by category last month", []string{"line_amount"}, "category", "", "2026-10-01", "2026-11-01", 0, true},
		{"How many buyers in the last 14 days?", []string{"buyers"}, "", "", "2026-11-08", "2026-11-22", 0, true},
		{"上月销量前3的商品", []string{"units_sold"}, "goods", "", "2026-10-01", "2026-11-01", 3, true},
		{"Revenue by platform this week", []string{"gmv"}, "platform", "", "2026-11-16", "2026-11-23", 0, true},
		{"GMV last week", []string{"gmv"}, "", "", "2026-11-09", "2026-11-16", 0, true},
		{"2026年10月各店铺订单量", []string{"order_count"}, "shop", "", "2026-10-01", "2026-11-01", 0, true},
		{"商品销售额 by category in October", []string{"line_amount"}, "category", "", "2026-10-01", "2026-11-01", 0, true},
		{"GMV and orders by shop last 7 days", []string{"gmv", "order_count"}, "shop", "", "2026-11-15", "2026-11-22", 0, true},
		{"GMV from 2026-11-01 to 2026-11-10", []string{"gmv"}, "", "", "2026-11-01", "2026-11-11", 0, true},
		{"GMV trend last 7 days", []string{"gmv"}, "", "day", "2026-11-15", "2026-11-22", 0, true},
		{"monthly GMV this year", []string{"gmv"}, "", "month", "2026-01-01", "2026-11-23", 0, true},
		{"最近一周的订单", []string{"order_count"}, "", "", "2026-11-15", "2026-11-22", 0, true},
		{"前7天的销售额", []string{"gmv"}, "", "", "2026-11-15", "2026-11-22", 0, true},
		{"GMV in 2025", []string{"gmv"}, "", "", "2025-01-01", "2026-01-01", 0, true},
		{"今天的销售额", []string{"gmv"}, "", "", "2026-11-22", "2026-11-23", 0, true},
		{"Top 3 shops by revenue last month", []string{"gmv"}, "shop", "", "2026-10-01", "2026-11-01", 3, true},
		{"销售额最高的前五个店铺 最近7天", []string{"gmv"}, "shop", "", "2026-11-15", "2026-11-22", 5, true},
		{"units sold by category last 30 days", []string{"units_sold"}, "category", "", "2026-10-23", "2026-11-22", 0, true},
		{"weekly orders last 3 months", []string{"order_count"}, "", "week", "2026-08-22", "2026-11-22", 0, true},
		{"GMV", []string{"gmv"}, "", "", "2026-10-23", "2026-11-22", 0, false},
		{"ＧＭＶ　ｂｙ　ｓｈｏｐ　昨天", []string{"gmv"}, "shop", "", "2026-11-21", "2026-11-22", 0, true},
		{"what's the weather like", nil, "", "", "2026-10-23", "2026-11-22", 0, false},
		{"GMV by status on 2026-11-03", []string{"gmv"}, "status", "", "2026-11-03", "2026-11-04", 0, true},
		{"3月的订单数", []string{"order_count"}, "", "", "2026-03-01", "2026-04-01", 0, true},
		{"December GMV", []string{"gmv"}, "", "", "2025-12-01", "2026-01-01", 0, true},
	}
	for _, c := range cases {
		q := ParseQuestion(c.q, agenttest.Now, metrics, nil)
		q.ApplyGrainRule(metrics)
		if !slices.Equal(q.Metrics, c.metrics) {
			t.Errorf("%q: metrics %v, want %v", c.q, q.Metrics, c.metrics)
		}
		if q.Dimension != c.dim {
			t.Errorf("%q: dimension %q, want %q", c.q, q.Dimension, c.dim)
		}
		if q.Granularity != c.gran {
			t.Errorf("%q: granularity %q, want %q", c.q, q.Granularity, c.gran)
		}
		if !q.Period.Start.Equal(d(c.start)) || !q.Period.End.Equal(d(c.end)) {
			t.Errorf("%q: period %s – %s, want %s – %s", c.q, q.Period.Start.Format(time.DateOnly), q.Period.End.Format(time.DateOnly), c.start, c.end)
		}
		if q.TopN != c.topN {
			t.Errorf("%q: top %d, want %d", c.q, q.TopN, c.topN)
		}
		if q.PeriodGiven != c.periodGiven {
			t.Errorf("%q: period given %v", c.q, q.PeriodGiven)
		}
	}
}

func TestGrainRuleRecordsSubstitution(t *testing.T) {
	metrics := agent.MetricInfos(agenttest.DemoMetricDefs())
	q := ParseQuestion("上个月各类目的销售额是多少", agenttest.Now, metrics, nil)
	if !slices.Equal(q.Metrics, []string{"gmv"}) || q.Terms["gmv"] != "销售额" {
		t.Fatalf("before the rule: %v %v", q.Metrics, q.Terms)
	}
	q.ApplyGrainRule(metrics)
	if q.Substituted["gmv"] != "line_amount" {
		t.Fatalf("substitution %v", q.Substituted)
	}
	// by shop gmv stays
	q = ParseQuestion("销售额 by shop", agenttest.Now, metrics, nil)
	q.ApplyGrainRule(metrics)
	if !slices.Equal(q.Metrics, []string{"gmv"}) || q.Substituted != nil {
		t.Fatalf("%v %v", q.Metrics, q.Substituted)
	}
}

func TestMetricInfos(t *testing.T) {
	byName := map[string]agent.MetricInfo{}
	for _, m := range agent.MetricInfos(agenttest.DemoMetricDefs()) {
		byName[m.Name] = m
	}
	check := func(name string, grain agent.Grain, money, additive bool) {
		m := byName[name]
		if m.Grain != grain || m.Money != money || m.Additive != additive {
			t.Errorf("%s: %+v", name, m)
		}
	}
	check("gmv", agent.GrainOrder, true, true)
	check("order_count", agent.GrainOrder, false, true)
	check("units_sold", agent.GrainLine, false, true)
	check("line_amount", agent.GrainLine, true, true)
	check("buyers", agent.GrainOrder, false, false)
	check("avg_order_value", agent.GrainOrder, true, false)
}

func TestFormatNumber(t *testing.T) {
	for v, want := range map[float64]string{0: "0.00", 1234567.891: "1,234,567.89", -1234.5: "-1,234.50", 999.999: "1,000.00", 12: "12.00"} {
		if got := charts.FormatNumber(v, 2); got != want {
			t.Errorf("%v: %s", v, got)
		}
	}
	if got := charts.FormatValue(agent.MetricInfo{}, 12345); got != "12,345" {
		t.Fatal(got)
	}
}

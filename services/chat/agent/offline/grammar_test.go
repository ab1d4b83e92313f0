package offline

import (
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/agent/agenttest"
	"github.com/shopmind/shopmind/services/chat/agent/plan"
)

func testLexicon() *Lexicon {
	metrics := agent.MetricInfos(agenttest.DemoMetricDefs())
	return NewLexicon(metrics, map[string][]plan.Member{
		"shop": {{Key: "1", Label: "潮流服饰旗舰店 Trend Apparel Flagship"}, {Key: "2", Label: "家居生活旗舰店 Home Living Flagship"},
			{Key: "3", Label: "数码京东自营店 Digital JD Store"}, {Key: "5", Label: "好物拼团店 Daily Deals Group Store"}},
		"platform": {{Key: "tmall", Label: "tmall"}, {Key: "jd", Label: "jd"}, {Key: "pdd", Label: "pdd"}},
		"category": {{Key: "11", Label: "T恤 T-Shirt"}, {Key: "23", Label: "耳机 Headphones"}},
		"goods":    {{Key: "100", Label: "经典T恤 Classic T-Shirt X1"}, {Key: "101", Label: "经典T恤 Classic T-Shirt X2"}},
	})
}

func TestParsePlanShapes(t *testing.T) {
	lx := testLexicon()
	now := agenttest.Now // Sunday 2026-11-22
	type want struct {
		analysis   plan.Analysis
		metrics    string
		dims       string
		filters    string
		start, end string
		order      string
		compare    string
	}
	cases := map[string]want{
		"How much did I sell last month?":                  {plan.Value, "gmv", "", "", "2026-10-01", "2026-10-31", "", ""},
		"What were the sales of Trend Apparel last month?": {plan.Value, "gmv", "", "shop+1", "2026-10-01", "2026-10-31", "", ""},
		"潮流服饰上个月的销售额":                                      {plan.Value, "gmv", "", "shop+1", "2026-10-01", "2026-10-31", "", ""},
		"GMV of all shops except Daily Deals last month":   {plan.Value, "gmv", "", "shop-5", "2026-10-01", "2026-10-31", "", ""},
		"除了好物拼团店之外，上个月的销售额是多少":                             {plan.Value, "gmv", "", "shop-5", "2026-10-01", "2026-10-31", "", ""},
		"Orders last quarter excluding Tmall":              {plan.Value, "order_count", "", "platform-tmall", "2026-07-01", "2026-09-30", "", ""},
		"Which shop had the lowest sales last month?":      {plan.Ranking, "gmv", "shop", "", "2026-10-01", "2026-10-31", "asc", ""},
		"上个月各平台销售额占比":                                      {plan.Share, "gmv", "platform", "", "2026-10-01", "2026-10-31", "", ""},
		"Which category grew fastest last month?":          {plan.GrowthRanking, "line_amount", "category", "", "2026-10-01", "2026-10-31", "", "previous"},
		"Compare sales this quarter vs last quarter":       {plan.Comparison, "gmv", "", "", "2026-10-01", "2026-11-22", "", "previous"},
		"上个月销售额同比":                                         {plan.Comparison, "gmv", "", "", "2026-10-01", "2026-10-31", "", "year_ago"},
		"Why did sales change last month?":                 {plan.Drivers, "gmv", "", "", "2026-10-01", "2026-10-31", "", "previous"},
		"上个月退款率高于4%的店铺有哪些":                                 {plan.Members, "refund_rate", "shop", "", "2026-10-01", "2026-10-31", "", ""},
		"近15天的GMV":                                            {plan.Value, "gmv", "", "", "2026-11-07", "2026-11-21", "", ""},
		"上半年的销售额":                                             {plan.Value, "gmv", "", "", "2026-01-01", "2026-06-30", "", ""},
		"Monthly sales from July to September":                {plan.Trend, "gmv", "", "", "2026-07-01", "2026-09-30", "", ""},
		"Top 3 shops on Tmall by orders last month":           {plan.Ranking, "order_count", "shop", "platform+tmall", "2026-10-01", "2026-10-31", "", ""},
		"How many orders were refunded last month?":           {plan.Value, "refunded_orders", "", "", "2026-10-01", "2026-10-31", "", ""},
		"October vs September orders":                         {plan.Comparison, "order_count", "", "", "2026-10-01", "2026-10-31", "", "previous"},
		"Top 2 products in each category by units last month": {plan.Ranking, "units_sold", "category,goods", "", "2026-10-01", "2026-10-31", "", ""},
	}
	for q, w := range cases {
		p := ParsePlan(q, nil, now, lx)
		if p.Plan == nil {
			t.Errorf("%s: no plan (clarify %+v)", q, p.Clarify)
			continue
		}
		x := *p.Plan
		if x.Analysis != w.analysis && !(w.analysis == plan.GrowthRanking && x.Analysis == plan.GrowthRanking) {
			t.Errorf("%s: analysis %s, want %s", q, x.Analysis, w.analysis)
		}
		// the executor substitutes line metrics; the grammar names what was asked
		if got := strings.Join(x.Metrics, ","); got != w.metrics && !(w.metrics == "line_amount" && got == "gmv") {
			t.Errorf("%s: metrics %s, want %s", q, got, w.metrics)
		}
		if got := strings.Join(x.Dimensions, ","); got != w.dims {
			t.Errorf("%s: dims %s, want %s", q, got, w.dims)
		}
		var fs []string
		for _, f := range x.Filters {
			sign := "+"
			if f.Exclude {
				sign = "-"
			}
			for _, m := range f.Members {
				fs = append(fs, f.Dimension+sign+m.Key)
			}
		}
		if got := strings.Join(fs, ","); got != w.filters {
			t.Errorf("%s: filters %s, want %s", q, got, w.filters)
		}
		if x.Start != w.start || x.End != w.end {
			t.Errorf("%s: period %s..%s, want %s..%s", q, x.Start, x.End, w.start, w.end)
		}
		if x.Order != w.order || x.Compare != w.compare {
			t.Errorf("%s: order %q compare %q, want %q %q", q, x.Order, x.Compare, w.order, w.compare)
		}
		if err := x.Check(); err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
}

func TestParsePlanClarifies(t *testing.T) {
	lx := testLexicon()
	twins := NewLexicon(lx.Metrics, map[string][]plan.Member{"shop": {{Key: "1", Label: "Apparel Flagship North"}, {Key: "2", Label: "Apparel Outlet South"}}})
	for q, lx := range map[string]*Lexicon{"Which shop is the best?": lx, "哪个店铺最好？": lx, "apparel sales last month": twins} {
		p := ParsePlan(q, nil, agenttest.Now, lx)
		if p.Clarify == nil || len(p.Clarify.Choices) < 2 {
			t.Errorf("%s: no clarifying question: %+v %+v", q, p.Plan, p.Clarify)
		}
	}
}

func TestParsePlanFollowUps(t *testing.T) {
	lx := testLexicon()
	hist := func(qs ...string) []agent.Message {
		var out []agent.Message
		for _, q := range qs {
			out = append(out, agent.Message{Role: "user", Content: q}, agent.Message{Role: "assistant", Content: "..."})
		}
		return out
	}
	cases := []struct {
		history []string
		q       string
		check   func(p plan.Plan) bool
	}{
		{[]string{"What was GMV last month?"}, "only tmall", func(p plan.Plan) bool {
			return p.Metrics[0] == "gmv" && len(p.Filters) == 1 && p.Filters[0].Members[0].Key == "tmall" && p.Start == "2026-10-01"
		}},
		{[]string{"上个月的销售额是多少"}, "只看天猫", func(p plan.Plan) bool { return len(p.Filters) == 1 && p.Filters[0].Members[0].Key == "tmall" }},
		{[]string{"What was GMV last month?"}, "what about orders?", func(p plan.Plan) bool { return p.Metrics[0] == "order_count" && p.Start == "2026-10-01" }},
		{[]string{"上个月的销售额是多少"}, "改成订单数", func(p plan.Plan) bool { return p.Metrics[0] == "order_count" }},
		{[]string{"What was GMV in October?"}, "and in September?", func(p plan.Plan) bool { return p.Start == "2026-09-01" && p.Metrics[0] == "gmv" }},
		{[]string{"Sales by shop last month"}, "by category instead", func(p plan.Plan) bool {
			return len(p.Dimensions) == 1 && p.Dimensions[0] == "category" && p.Start == "2026-10-01"
		}},
		{[]string{"Which shop had the most orders last month?", "only JD"}, "and in September?", func(p plan.Plan) bool {
			return p.Analysis == plan.Ranking && len(p.Filters) == 1 && p.Start == "2026-09-01"
		}},
	}
	for _, c := range cases {
		p := ParsePlan(c.q, hist(c.history...), agenttest.Now, lx)
		if p.Plan == nil || !p.FollowUp || !c.check(*p.Plan) {
			t.Errorf("%v then %q: %+v", c.history, c.q, p.Plan)
		}
	}
}

// BenchmarkParsePlan measures the grammar (parse and plan) on a 200-character question:
// ns/op (wall), p99-ns (the 99th percentile of the iterations' wall times) and cpu-ns/op
// (the process's user and system time per iteration, less sensitive to a loaded machine).
func BenchmarkParsePlan(b *testing.B) {
	lx := testLexicon()
	q := "Compared with the same period last year, which shop other than Daily Deals Group Store had the lowest refund rate on Tmall " +
		"in Q3, and what were its sales and orders by month?"
	for len(q) < 200 {
		q += " please"
	}
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	var times []time.Duration
	cpu0 := cpuTime()
	for b.Loop() {
		t0 := time.Now()
		ParsePlan(q, nil, now, lx)
		times = append(times, time.Since(t0))
	}
	cpu := cpuTime() - cpu0
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)*99/100]), "p99-ns")
	b.ReportMetric(float64(cpu)/float64(len(times)), "cpu-ns/op")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// The rules added for the blind questions, one case (or two) per rule.
func TestParsePlanBlindRules(t *testing.T) {
	lx := testLexicon()
	now := agenttest.Now // Sunday 2026-11-22
	cases := []struct {
		q     string
		check func(p plan.Plan) bool
	}{
		// "make" / "bring in" / 成交了多少 are sales verbs
		{"What did we make last week?", func(p plan.Plan) bool {
			return p.Metrics[0] == "gmv" && p.Start == "2026-11-09" && p.End == "2026-11-15"
		}},
		{"How much money did we bring in during October?", func(p plan.Plan) bool { return p.Metrics[0] == "gmv" && p.Start == "2026-10-01" }},
		{"10月份一共成交了多少金额", func(p plan.Plan) bool { return p.Metrics[0] == "gmv" && p.Start == "2026-10-01" }},
		// the third quarter
		{"Revenue in the third quarter", func(p plan.Plan) bool { return p.Start == "2026-07-01" && p.End == "2026-09-30" }},
		// 跟...比: the second period named is the comparison
		{"这个季度跟上个季度比，订单量怎么样", func(p plan.Plan) bool {
			return p.Analysis == plan.Comparison && p.CompareStart == "2026-07-01" && p.CompareEnd == "2026-09-30"
		}},
		// "product category" is the category, 的店 the shop
		{"Which product category had the smallest revenue in September?", func(p plan.Plan) bool {
			return p.Analysis == plan.Ranking && strings.Join(p.Dimensions, ",") == "category" && p.Order == "asc"
		}},
		{"本季度客单价最低的店", func(p plan.Plan) bool {
			return p.Analysis == plan.Ranking && strings.Join(p.Dimensions, ",") == "shop" && p.Order == "asc"
		}},
		// exclusions: leaving out, every shop but, 除去, 除了...，
		{"Sales last quarter, leaving out Pinduoduo", func(p plan.Plan) bool { return len(p.Filters) == 1 && p.Filters[0].Exclude }},
		{"Orders in September for every shop but Digital JD Store", func(p plan.Plan) bool {
			return p.Analysis == plan.Value && len(p.Filters) == 1 && p.Filters[0].Exclude && p.Filters[0].Members[0].Key == "3"
		}},
		{"上季度除去拼多多的销售额", func(p plan.Plan) bool { return len(p.Filters) == 1 && p.Filters[0].Exclude }},
		{"9月除了数码京东自营店，其他店铺的订单数", func(p plan.Plan) bool {
			return p.Analysis == plan.Value && len(p.Filters) == 1 && p.Filters[0].Exclude
		}},
		// month-by-month since June, 各月
		{"Month-by-month order count since June", func(p plan.Plan) bool {
			return p.Analysis == plan.Trend && p.Grain == "month" && p.Start == "2026-06-01"
		}},
		{"三季度各月销量", func(p plan.Plan) bool {
			return p.Analysis == plan.Trend && p.Grain == "month" && p.Start == "2026-07-01"
		}},
		// what portion ... account for: a share
		{"What portion of units sold did JD account for last month?", func(p plan.Plan) bool {
			return p.Analysis == plan.Share && strings.Join(p.Dimensions, ",") == "platform"
		}},
		// refunds read as money or as a rate; a cancellation
		{"How much money did we refund in September?", func(p plan.Plan) bool { return p.Metrics[0] == "refund_amount" }},
		{"What percentage of orders got refunded last quarter?", func(p plan.Plan) bool {
			return strings.Join(p.Metrics, ",") == "refund_rate" && p.Analysis == plan.Value
		}},
		{"Cancellation count for Home Living Flagship this month", func(p plan.Plan) bool {
			return p.Metrics[0] == "cancelled_orders" && len(p.Filters) == 1
		}},
	}
	for _, c := range cases {
		p := ParsePlan(c.q, nil, now, lx)
		if p.Plan == nil || !c.check(*p.Plan) {
			t.Errorf("%q: %+v (clarify %+v)", c.q, p.Plan, p.Clarify)
		}
	}
	hist := func(q string) []agent.Message {
		return []agent.Message{{Role: "user", Content: q}, {Role: "assistant", Content: "..."}}
	}
	follows := []struct {
		first, q string
		check    func(p plan.Plan) bool
	}{
		{"Revenue by shop last month", "and the month before?", func(p plan.Plan) bool {
			return p.Start == "2026-09-01" && p.End == "2026-09-30" && strings.Join(p.Dimensions, ",") == "shop"
		}},
		{"上个月各店铺的销售额", "那前一个月呢", func(p plan.Plan) bool { return p.Start == "2026-09-01" && p.Limit == 0 }},
		{"Sales on JD in October", "switch to units sold", func(p plan.Plan) bool {
			return p.Metrics[0] == "units_sold" && len(p.Filters) == 1 && p.Start == "2026-10-01"
		}},
		{"GMV in October", "compare with September", func(p plan.Plan) bool {
			return p.Analysis == plan.Comparison && p.Start == "2026-10-01" && p.CompareStart == "2026-09-01"
		}},
		{"10月的GMV", "和9月比呢", func(p plan.Plan) bool { return p.Start == "2026-10-01" && p.CompareStart == "2026-09-01" }},
	}
	for _, c := range follows {
		p := ParsePlan(c.q, hist(c.first), now, lx)
		if p.Plan == nil || !p.FollowUp || !c.check(*p.Plan) {
			t.Errorf("%q then %q: %+v", c.first, c.q, p.Plan)
		}
	}
}

// Top-level categories (root_category) are members and a dimension; a name that is both a
// shop's and a category's asks which is meant unless a word beside it says.
func TestParsePlanTopLevelCategories(t *testing.T) {
	metrics := agent.MetricInfos(agenttest.DemoMetricDefs())
	garden, toys := plan.Member{Key: "7", Label: "园艺 Garden"}, plan.Member{Key: "9", Label: "玩具 Toys"}
	gardenShop := plan.Member{Key: "4", Label: "园艺生活馆 Garden Centre Outlet"}
	lx := NewLexicon(metrics, map[string][]plan.Member{
		"shop":          {gardenShop, {Key: "1", Label: "潮流服饰旗舰店 Trend Apparel Flagship"}},
		"category":      {{Key: "71", Label: "花盆 Flower Pot"}},
		"root_category": {garden, toys},
	})
	filter := func(dim, key string, exclude bool) func(p plan.Plan) bool {
		return func(p plan.Plan) bool {
			return len(p.Filters) == 1 && p.Filters[0].Dimension == dim && p.Filters[0].Exclude == exclude &&
				len(p.Filters[0].Members) == 1 && p.Filters[0].Members[0].Key == key
		}
	}
	split := func(p plan.Plan) bool {
		return strings.Join(p.Dimensions, ",") == "root_category" && len(p.Filters) == 0
	}
	for q, check := range map[string]func(p plan.Plan) bool{
		"Toys sales last month":                             filter("root_category", "9", false),
		"玩具类上个月的销售额":                                        filter("root_category", "9", false),
		"Units sold last month excluding the Toys category": filter("root_category", "9", true),
		"上个月不算玩具类目的销量":                                      filter("root_category", "9", true),
		"Garden category sales last month":                  filter("root_category", "7", false),
		"园艺类上个月的销售额":                                        filter("root_category", "7", false),
		"Orders of the Garden store last week":              filter("shop", "4", false),
		"Revenue per top-level category in October":         split,
		"10月各一级类目的销售额":                                      split,
	} {
		p := ParsePlan(q, nil, agenttest.Now, lx)
		if p.Clarify != nil || p.Plan == nil || !check(*p.Plan) {
			t.Errorf("%s: %+v %+v", q, p.Plan, p.Clarify)
		}
	}
	for _, q := range []string{"Garden sales last month", "上个月园艺卖了多少"} {
		p := ParsePlan(q, nil, agenttest.Now, lx)
		if p.Clarify == nil || !slices.Contains(p.Clarify.Choices, gardenShop.Label) || !slices.Contains(p.Clarify.Choices, garden.Label) {
			t.Errorf("%s: no question naming the shop and the category: %+v %+v", q, p.Plan, p.Clarify)
		}
	}
}

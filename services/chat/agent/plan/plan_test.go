package plan_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/agent/agenttest"
	"github.com/shopmind/shopmind/services/chat/agent/plan"
)

func TestPlanCheckNamesTheField(t *testing.T) {
	ok := plan.Plan{Analysis: plan.Ranking, Metrics: []string{"gmv"}, Dimensions: []string{"shop"}, Start: "2026-10-01", End: "2026-10-31"}
	if err := ok.Check(); err != nil {
		t.Fatal(err)
	}
	for want, change := range map[string]func(*plan.Plan){
		"analysis":   func(p *plan.Plan) { p.Analysis = "guess" },
		"metrics":    func(p *plan.Plan) { p.Metrics = nil },
		"dimensions": func(p *plan.Plan) { p.Dimensions = []string{"colour"} },
		"filters[0]": func(p *plan.Plan) { p.Filters = []plan.Filter{{Dimension: "shop"}} },
		"end_date":   func(p *plan.Plan) { p.End = "2026-09-01" },
		"order":      func(p *plan.Plan) { p.Order = "up" },
		"compare":    func(p *plan.Plan) { p.Compare = "lastyear" },
		"condition":  func(p *plan.Plan) { p.Analysis = plan.Members },
		"grain":      func(p *plan.Plan) { p.Analysis, p.Dimensions = plan.Trend, nil },
	} {
		p := ok
		change(&p)
		if err := p.Check(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", want, err)
		}
	}
}

// The executor's numbers are the preview's: a ranking from the bottom, growth and drivers
// add up to what the preview answers for the same metric and periods.
func TestExecutorAgainstThePreview(t *testing.T) {
	f := agenttest.NewFakeAnalytics()
	ctx := authn.WithIdentity(context.Background(), agenttest.Identity())
	metrics := agent.MetricInfos(agenttest.DemoMetricDefs())
	x := &plan.Executor{Analytics: f, Metrics: metrics}
	base := plan.Plan{Metrics: []string{"gmv"}, Dimensions: []string{"shop"}, Start: "2026-10-01", End: "2026-10-31", PeriodKind: "month"}

	asc := base
	asc.Analysis, asc.Order, asc.Limit = plan.Ranking, "asc", 2
	res, err := x.Execute(ctx, asc)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 2 || res.Omitted != 1 || res.Rows[0].Values["gmv"] > res.Rows[1].Values["gmv"] {
		t.Fatalf("ranking %+v", res.Rows)
	}
	sum := 0.0
	all := base
	all.Analysis = plan.Breakdown
	full, err := x.Execute(ctx, all)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range full.Rows {
		sum += r.Values["gmv"]
	}
	if math.Abs(sum-full.Totals["gmv"]) > 0.01 || math.Abs(full.Rows[0].Share+full.Rows[1].Share+full.Rows[2].Share-100) > 0.01 {
		t.Fatalf("split %v against total %v", sum, full.Totals)
	}

	why := base
	why.Analysis, why.Dimensions, why.Compare = plan.Drivers, nil, plan.ComparePrevious
	res, err = x.Execute(ctx, why)
	if err != nil {
		t.Fatal(err)
	}
	change := res.Totals["gmv"] - res.PreviousTotals["gmv"]
	var shop *plan.Driver
	for i := range res.Drivers {
		if res.Drivers[i].Dimension == "shop" {
			shop = &res.Drivers[i]
		}
	}
	if shop == nil || len(shop.Rows) == 0 {
		t.Fatalf("drivers %+v", res.Drivers)
	}
	for _, r := range shop.Rows {
		if (r.Change > 0) != (change > 0) || math.Abs(r.Share-r.Change/change*100) > 1e-6 {
			t.Fatalf("driver %+v against change %v", r, change)
		}
	}
	text := plan.Renderer{ByName: map[string]agent.MetricInfo{}, ZH: false}.Narrative(res)
	if !strings.Contains(text, shop.Rows[0].Label) || !strings.Contains(text, "of the change") {
		t.Fatal(text)
	}
}

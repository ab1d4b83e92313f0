// The query_plan tool: the LLM agent asks for a plan (its JSON schema is the plan) and the
// plan, not the model, computes the numbers.

package plan

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/agent/period"
)

// ToolQueryPlan is the tool's name.
const ToolQueryPlan = "query_plan"

// Tool returns the query_plan tool over the analysis service; now is the clock.
func Tool(analytics agent.Analytics, now func() time.Time) agent.Tool {
	if now == nil {
		now = time.Now
	}
	return &queryPlan{analytics: analytics, now: now}
}

type queryPlan struct {
	analytics agent.Analytics
	now       func() time.Time
}

func (t *queryPlan) Name() string { return ToolQueryPlan }
func (t *queryPlan) Description() string {
	return "Answer a metric question with a query plan the semantic layer executes (prefer it to SQL for metric " +
		"questions): metrics (names from search_indicators), optional dimensions, member filters (include or exclude " +
		"shops, platforms, categories, goods by key: ids from search_entities, platform values such as tmall, jd, pdd), " +
		"the period (start_date/end_date inclusive, or a period phrase), the comparison (previous or year_ago, or " +
		"explicit compare dates), grain, ranking order and limit (per group with per_group and two dimensions), and " +
		"the analysis: value, breakdown, ranking, comparison, growth_ranking, share, trend, drivers (why a metric " +
		"changed: the members that contributed most) or members (those meeting condition). Returns the numbers, " +
		"the rows and a narrative."
}

// Parameters is the plan's JSON schema.
func (t *queryPlan) Parameters() *agent.Schema {
	str := func(d string) *agent.Schema { return &agent.Schema{Type: "string", Description: d, MaxLength: ip(64)} }
	dims := make([]any, len(Dimensions))
	for i, d := range Dimensions {
		dims[i] = d
	}
	kinds := make([]any, len(Analyses))
	for i, a := range Analyses {
		kinds[i] = string(a)
	}
	return agent.Object(map[string]*agent.Schema{
		"analysis":   {Type: "string", Enum: kinds, Description: "what to answer"},
		"metrics":    {Type: "array", Items: str("metric name"), MinItems: ip(1), MaxItems: ip(5), Description: "metric names, the first one ranks"},
		"dimensions": {Type: "array", Items: &agent.Schema{Type: "string", Enum: dims}, MaxItems: ip(2), Description: "split by; two for a ranking within groups (group first)"},
		"filters": {Type: "array", MaxItems: ip(6), Description: "member filters, ANDed",
			Items: agent.Object(map[string]*agent.Schema{
				"dimension": {Type: "string", Enum: dims},
				"members": {Type: "array", MinItems: ip(1), MaxItems: ip(100), Items: agent.Object(map[string]*agent.Schema{
					"key":   str("member key: a shop, category, goods or staff id, or a platform or status value"),
					"label": str("member name, for the answer"),
				}, "key")},
				"exclude": {Type: "boolean", Description: "true: all members except these"},
			}, "dimension", "members")},
		"start_date":         {Type: "string", Description: "first day, YYYY-MM-DD (UTC)", MaxLength: ip(10)},
		"end_date":           {Type: "string", Description: "last day, YYYY-MM-DD (inclusive)", MaxLength: ip(10)},
		"period":             {Type: "string", Description: "instead of dates: a period phrase (last month, this quarter, 2026-10, 上个月, 近15天)", MaxLength: ip(100)},
		"compare":            {Type: "string", Enum: []any{"", ComparePrevious, CompareYearAgo}, Description: "comparison period"},
		"compare_start_date": {Type: "string", Description: "explicit comparison period start", MaxLength: ip(10)},
		"compare_end_date":   {Type: "string", Description: "explicit comparison period end (inclusive)", MaxLength: ip(10)},
		"grain":              {Type: "string", Enum: []any{"", "day", "week", "month"}, Description: "trend buckets"},
		"order":              {Type: "string", Enum: []any{"", "desc", "asc"}, Description: "desc: highest first; asc: lowest first"},
		"limit":              {Type: "integer", Minimum: fp(0), Maximum: fp(1000), Description: "members shown (per group); default 10"},
		"per_group":          {Type: "boolean", Description: "rank dimensions[1] within each member of dimensions[0]"},
		"condition": agent.Object(map[string]*agent.Schema{
			"metric": str("metric name"),
			"op":     {Type: "string", Enum: []any{"gt", "gte", "lt", "lte", "eq"}},
			"value":  {Type: "number"},
		}, "metric", "op", "value"),
	}, "analysis", "metrics")
}

func ip(v int) *int         { return &v }
func fp(v float64) *float64 { return &v }

type toolArgs struct {
	Plan
	PeriodPhrase string `json:"period"`
}

func (t *queryPlan) Call(ctx context.Context, env *agent.ToolEnv, raw json.RawMessage) (*agent.ToolResult, error) {
	var a toolArgs
	req, err := agent.DecodeCall(env, raw, &a)
	if err != nil {
		return nil, err
	}
	p := a.Plan
	for i := range p.Metrics {
		p.Metrics[i] = strings.TrimSpace(strings.ToLower(p.Metrics[i]))
	}
	if p.Start == "" || p.End == "" {
		today := period.Day(t.now())
		pp := period.DaysBefore(today, period.DefaultDays)
		if a.PeriodPhrase != "" {
			got, _, ok := period.Parse(strings.ToLower(agent.NormalizeText(a.PeriodPhrase)), t.now())
			if !ok {
				return nil, apperr.Invalid("period", "period", fmt.Sprintf("period %q is not understood; give start_date and end_date", a.PeriodPhrase))
			}
			pp = got
		}
		p.SetPeriod(pp)
	}
	metrics, err := agent.FetchMetrics(ctx, t.analytics)
	if err != nil {
		return nil, err
	}
	x := &Executor{Analytics: t.analytics, Metrics: metrics}
	res, err := x.Execute(ctx, p)
	if err != nil {
		return nil, err
	}
	byName := map[string]agent.MetricInfo{}
	for _, m := range metrics {
		byName[m.Name] = m
	}
	zh := agent.HasHan(req.Message)
	rd := Renderer{ByName: byName, ZH: zh}
	out := map[string]any{
		"understood": rd.Understood(res.Plan), "narrative": rd.Narrative(res),
		"period":  map[string]string{"start_date": res.Period.Start.Format(time.DateOnly), "end_date": res.Period.LastDay().Format(time.DateOnly)},
		"compare": map[string]string{"start_date": res.Compare.Start.Format(time.DateOnly), "end_date": res.Compare.LastDay().Format(time.DateOnly)},
		"totals":  res.Totals, "previous_totals": res.PreviousTotals,
	}
	if len(res.Rows) > 0 {
		out["rows"] = jsonRows(res.Rows)
		out["omitted"] = res.Omitted
	}
	if len(res.Drivers) > 0 {
		ds := make([]Driver, len(res.Drivers))
		for i, d := range res.Drivers {
			d.Rows = jsonRows(d.Rows)
			ds[i] = d
		}
		out["drivers"] = ds
	}
	return &agent.ToolResult{JSON: out, Data: res, Visualization: rd.Visualization("plan", res),
		Summary: fmt.Sprintf("%s: %d rows, %s", res.Plan.Analysis, len(res.Rows), res.Period.Range())}, nil
}

// jsonRows are the rows without NaN (which JSON cannot hold).
func jsonRows(rows []Row) []Row {
	out := make([]Row, len(rows))
	for i, r := range rows {
		if r.ChangePct != r.ChangePct {
			r.ChangePct = 0
		}
		out[i] = r
	}
	return out
}

// Package plan is the analysts' query plan: what a metric question asks (metrics,
// dimensions, member filters with include and exclude, period and comparison period, grain,
// ranking direction and N, also within groups, and the kind of analysis), executed through
// the semantic layer (the analysis service's preview, so its numbers are the preview's for
// the same metric, filters and period) and rendered as a narrative and a table or chart.
// The built-in grammar (offline.ParsePlan) and the LLM agent (the query_plan tool, whose
// JSON schema is the plan) both produce it.
package plan

import (
	"fmt"
	"strings"
	"time"

	"github.com/shopmind/shopmind/services/chat/agent/period"
)

// Analysis is the kind of answer a plan asks for.
type Analysis string

// The analyses.
const (
	Value         Analysis = "value"          // the metrics' totals (with the comparison period's)
	Breakdown     Analysis = "breakdown"      // the metrics by the dimensions
	Ranking       Analysis = "ranking"        // the members ordered by the first metric, N of them
	Comparison    Analysis = "comparison"     // the period against the comparison period
	GrowthRanking Analysis = "growth_ranking" // the members ordered by their change on the comparison period
	Share         Analysis = "share"          // each member's share of the total
	Trend         Analysis = "trend"          // a series by grain
	Drivers       Analysis = "drivers"        // the members that contributed most to the change
	Members       Analysis = "members"        // the members whose value meets Condition
)

// Analyses lists the kinds, for the tool's schema.
var Analyses = []Analysis{Value, Breakdown, Ranking, Comparison, GrowthRanking, Share, Trend, Drivers, Members}

// Comparison periods.
const (
	ComparePrevious = "previous" // the period before, of the same kind (previous month of a month...)
	CompareYearAgo  = "year_ago" // the same period one year earlier
)

// Dimensions a plan may split or filter by (root_category: the top-level category of a
// goods' category).
var Dimensions = []string{"shop", "platform", "category", "root_category", "goods", "staff", "status"}

// Member is one member of a dimension: its key as the store holds it (a shop, category,
// goods or staff id; a platform or status value) and its label.
type Member struct {
	Key   string `json:"key"`
	Label string `json:"label,omitempty"`
}

// Filter keeps (or, with Exclude, leaves out) the members of a dimension.
type Filter struct {
	Dimension string   `json:"dimension"`
	Members   []Member `json:"members"`
	Exclude   bool     `json:"exclude,omitempty"`
}

// Threshold is the condition of a member listing: metric op value (op gt, gte, lt, lte, eq).
type Threshold struct {
	Metric string  `json:"metric"`
	Op     string  `json:"op"`
	Value  float64 `json:"value"`
}

// Plan is what a question asks.
type Plan struct {
	Analysis Analysis `json:"analysis"`
	Metrics  []string `json:"metrics"`
	// Dimensions split the answer (at most two: a ranking within groups has the group first).
	Dimensions []string `json:"dimensions,omitempty"`
	Filters    []Filter `json:"filters,omitempty"`
	// Start and End are the period's first and last day (YYYY-MM-DD, inclusive, UTC).
	Start string `json:"start_date"`
	End   string `json:"end_date"`
	// PeriodKind is how the period was named (period.Period.Kind: month, quarter, ytd...).
	PeriodKind string `json:"period_kind,omitempty"`
	// Compare is the comparison period: previous, year_ago, or "" (none; a value answer
	// still shows the previous period).
	Compare string `json:"compare,omitempty"`
	// CompareStart and CompareEnd name the comparison period explicitly ("October vs
	// September"); they win over Compare.
	CompareStart string `json:"compare_start_date,omitempty"`
	CompareEnd   string `json:"compare_end_date,omitempty"`
	Grain        string `json:"grain,omitempty"` // day, week, month (trend)
	// Order is desc (leaders, default) or asc (the lowest first).
	Order string `json:"order,omitempty"`
	// Limit is how many members a ranking shows (0: 10); within groups, per group.
	Limit int `json:"limit,omitempty"`
	// PerGroup ranks within each member of Dimensions[0] (Dimensions[1] is ranked).
	PerGroup  bool       `json:"per_group,omitempty"`
	Condition *Threshold `json:"condition,omitempty"`
}

// PeriodOf is the plan's period.
func (p Plan) PeriodOf() (period.Period, error) {
	s, err := time.Parse(time.DateOnly, p.Start)
	if err != nil {
		return period.Period{}, fmt.Errorf("start_date: %q is not a date (YYYY-MM-DD)", p.Start)
	}
	e, err := time.Parse(time.DateOnly, p.End)
	if err != nil {
		return period.Period{}, fmt.Errorf("end_date: %q is not a date (YYYY-MM-DD)", p.End)
	}
	if e.Before(s) {
		return period.Period{}, fmt.Errorf("end_date %s is before start_date %s", p.End, p.Start)
	}
	kind := p.PeriodKind
	if kind == "" {
		kind = "range"
	}
	return period.Period{Start: s, End: e.AddDate(0, 0, 1), Kind: kind}, nil
}

// SetPeriod sets the plan's period.
func (p *Plan) SetPeriod(pp period.Period) {
	p.Start, p.End, p.PeriodKind = pp.Start.Format(time.DateOnly), pp.LastDay().Format(time.DateOnly), pp.Kind
}

// ComparePeriod is the comparison period of the plan (the previous one when Compare is
// empty), and whether one is asked for explicitly.
func (p Plan) ComparePeriod() (period.Period, bool, error) {
	cur, err := p.PeriodOf()
	if err != nil {
		return period.Period{}, false, err
	}
	if p.CompareStart != "" && p.CompareEnd != "" {
		c := Plan{Start: p.CompareStart, End: p.CompareEnd}
		cp, err := c.PeriodOf()
		if err != nil {
			return period.Period{}, false, fmt.Errorf("compare: %w", err)
		}
		return cp, true, nil
	}
	switch p.Compare {
	case CompareYearAgo:
		return cur.YearAgo(), true, nil
	case ComparePrevious:
		return cur.Previous(), true, nil
	}
	return cur.Previous(), false, nil
}

// Check reports what is wrong with a plan (for the tool): an unknown analysis, dimension,
// order, grain or comparison, no metric, a bad period.
func (p Plan) Check() error {
	ok := false
	for _, a := range Analyses {
		ok = ok || a == p.Analysis
	}
	if !ok {
		return fmt.Errorf("analysis: %q is not one of %v", p.Analysis, Analyses)
	}
	if len(p.Metrics) == 0 {
		return fmt.Errorf("metrics: at least one metric")
	}
	for _, d := range p.Dimensions {
		if !isDim(d) {
			return fmt.Errorf("dimensions: %q is not one of %s", d, strings.Join(Dimensions, ", "))
		}
	}
	if len(p.Dimensions) > 2 {
		return fmt.Errorf("dimensions: at most two")
	}
	for i, f := range p.Filters {
		if !isDim(f.Dimension) {
			return fmt.Errorf("filters[%d].dimension: %q is not one of %s", i, f.Dimension, strings.Join(Dimensions, ", "))
		}
		if len(f.Members) == 0 {
			return fmt.Errorf("filters[%d].members: at least one member", i)
		}
	}
	switch p.Order {
	case "", "asc", "desc":
	default:
		return fmt.Errorf("order: asc or desc")
	}
	switch p.Grain {
	case "", "day", "week", "month":
	default:
		return fmt.Errorf("grain: day, week or month")
	}
	switch p.Compare {
	case "", ComparePrevious, CompareYearAgo:
	default:
		return fmt.Errorf("compare: previous or year_ago")
	}
	if _, err := p.PeriodOf(); err != nil {
		return err
	}
	if _, _, err := p.ComparePeriod(); err != nil {
		return err
	}
	needDim := map[Analysis]bool{Breakdown: true, Ranking: true, GrowthRanking: true, Share: true, Members: true}
	if needDim[p.Analysis] && len(p.Dimensions) == 0 {
		return fmt.Errorf("dimensions: a %s needs a dimension", p.Analysis)
	}
	if p.Analysis == Members && p.Condition == nil {
		return fmt.Errorf("condition: a member listing needs a condition")
	}
	if p.Analysis == Trend && p.Grain == "" {
		return fmt.Errorf("grain: a trend needs a grain (day, week or month)")
	}
	if p.Limit < 0 || p.Limit > 1000 {
		return fmt.Errorf("limit: 0 to 1000")
	}
	return nil
}

func isDim(d string) bool {
	for _, x := range Dimensions {
		if x == d {
			return true
		}
	}
	return false
}

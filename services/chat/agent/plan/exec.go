// Executing a plan through the semantic layer (agent.Analytics.PreviewQuery).

package plan

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	analysisv1 "github.com/shopmind/shopmind/gen/go/shopmind/analysis/v1"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/agent/charts"
	"github.com/shopmind/shopmind/services/chat/agent/period"
)

// Row is one member (or time bucket) of a result.
type Row struct {
	// Group is the group's label of a ranking within groups.
	Group string `json:"group,omitempty"`
	Key   string `json:"key,omitempty"`
	Label string `json:"label"`
	// Values are the metrics in the period; Previous in the comparison period.
	Values   map[string]float64 `json:"values"`
	Previous map[string]float64 `json:"previous,omitempty"`
	// Change is the first metric's change on the comparison period (Previous); ChangePct
	// in percent (NaN: the comparison had none).
	Change    float64 `json:"change,omitempty"`
	ChangePct float64 `json:"change_pct,omitempty"`
	// Share is the first metric's share of the total, in percent (additive metrics); for
	// drivers, the share of the total change.
	Share float64 `json:"share,omitempty"`
}

// Driver lists the members of one dimension that moved the total most.
type Driver struct {
	Dimension string `json:"dimension"`
	Metric    string `json:"metric"`
	Rows      []Row  `json:"rows"`
}

// Result is an executed plan.
type Result struct {
	Plan    Plan          `json:"plan"`
	Period  period.Period `json:"-"`
	Compare period.Period `json:"-"`
	// Compared is true when the plan asked for the comparison (otherwise Previous is the
	// default previous period, shown beside a value).
	Compared bool `json:"compared"`
	// Totals are the metrics over the period (with the filters); PreviousTotals over the
	// comparison period (nil when it failed).
	Totals         map[string]float64 `json:"totals"`
	PreviousTotals map[string]float64 `json:"previous_totals,omitempty"`
	// Rows of a split, ranking, series or listing, in the order shown; Omitted counts the
	// members a ranking or listing left out.
	Rows    []Row    `json:"rows,omitempty"`
	Omitted int      `json:"omitted,omitempty"`
	Drivers []Driver `json:"drivers,omitempty"`
	// Substituted records a metric replaced because it cannot be split by goods or
	// category (gmv -> line_amount).
	Substituted map[string]string `json:"substituted,omitempty"`
	// Series is the preview answer of a trend (for the chart).
	Series *analysisv1.PreviewQueryResponse `json:"-"`
}

// Executor runs plans for one caller (the context carries the identity).
type Executor struct {
	Analytics agent.Analytics
	Metrics   []agent.MetricInfo
}

func (x *Executor) byName() map[string]agent.MetricInfo {
	out := map[string]agent.MetricInfo{}
	for _, m := range x.Metrics {
		out[m.Name] = m
	}
	return out
}

// filters are the plan's filters as preview conditions.
func filters(p Plan) ([]*analysisv1.Condition, error) {
	var out []*analysisv1.Condition
	for _, f := range p.Filters {
		var vals []any
		for _, m := range f.Members {
			switch f.Dimension {
			case "platform", "status":
				vals = append(vals, m.Key)
			default:
				n, err := strconv.ParseInt(m.Key, 10, 64)
				if err != nil {
					return nil, fmt.Errorf("filters: %s key %q is not an id", f.Dimension, m.Key)
				}
				vals = append(vals, float64(n))
			}
		}
		v, err := structpb.NewValue(vals)
		if err != nil {
			return nil, err
		}
		op := "in"
		if f.Exclude {
			op = "not_in"
		}
		out = append(out, &analysisv1.Condition{Field: f.Dimension, Operator: op, Value: v})
	}
	return out, nil
}

// query runs one preview: metrics by dims (and grain) over pp with the plan's filters.
func (x *Executor) query(ctx context.Context, p Plan, metrics, dims []string, grain string, pp period.Period, limit int32) (*analysisv1.PreviewQueryResponse, error) {
	conds, err := filters(p)
	if err != nil {
		return nil, err
	}
	req := &analysisv1.PreviewQueryRequest{MetricNames: metrics, Dimensions: dims, TimeGranularity: grain,
		StartTime: timestampOf(pp.Start), EndTime: timestampOf(pp.End), Filters: conds, Limit: &limit}
	switch {
	case grain != "":
		req.Sort = []*analysisv1.QuerySort{{Field: "time", Order: "asc"}}
	case len(dims) > 0:
		req.Sort = []*analysisv1.QuerySort{{Field: metrics[0], Order: "desc"}}
	}
	return x.Analytics.PreviewQuery(ctx, req)
}

// splitMetrics applies the grain rule: an order-level money metric split by goods or
// category becomes the tenant's order-line amount metric.
func (x *Executor) splitMetrics(p Plan, dims []string, sub map[string]string) []string {
	lineDim := false
	for _, d := range dims {
		lineDim = lineDim || d == "goods" || d == "category" || d == "root_category"
	}
	for _, f := range p.Filters {
		lineDim = lineDim || f.Dimension == "goods" || f.Dimension == "category" || f.Dimension == "root_category"
	}
	if !lineDim {
		return p.Metrics
	}
	by := x.byName()
	line := ""
	for _, m := range x.Metrics {
		if m.Name == "line_amount" || line == "" && m.Grain == agent.GrainLine && m.Money && m.Additive {
			line = m.Name
		}
	}
	out := make([]string, 0, len(p.Metrics))
	for _, n := range p.Metrics {
		if m := by[n]; line != "" && m.Grain == agent.GrainOrder && m.Money && m.Additive {
			sub[n] = line
			n = line
		}
		if !containsStr(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func containsStr(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// Execute runs the plan.
func (x *Executor) Execute(ctx context.Context, p Plan) (*Result, error) {
	if err := p.Check(); err != nil {
		return nil, apperr.New(apperr.KindInvalid, "%s", err.Error())
	}
	cur, _ := p.PeriodOf()
	cmp, asked, _ := p.ComparePeriod()
	res := &Result{Plan: p, Period: cur, Compare: cmp, Compared: asked, Substituted: map[string]string{}}
	metrics := x.splitMetrics(p, p.Dimensions, res.Substituted)
	res.Plan.Metrics = metrics
	p.Metrics = metrics
	first := metrics[0]

	tot, err := x.query(ctx, p, metrics, nil, "", cur, 1)
	if err != nil {
		return nil, err
	}
	res.Totals = totalsOf(tot, metrics)
	if prev, err := x.query(ctx, p, metrics, nil, "", cmp, 1); err == nil {
		res.PreviousTotals = totalsOf(prev, metrics)
	} else if ctx.Err() != nil {
		return nil, ctx.Err()
	}

	limit := p.Limit
	if limit <= 0 {
		limit = 10
	}
	switch p.Analysis {
	case Value, Comparison:
		if len(p.Dimensions) > 0 {
			rows, err := x.split(ctx, p, metrics, cur, 1000)
			if err != nil {
				return nil, err
			}
			if p.Analysis == Comparison {
				prev, err := x.split(ctx, p, metrics, cmp, 1000)
				if err != nil {
					return nil, err
				}
				joinPrevious(rows, prev, first)
			}
			res.Rows = rows
		}
	case Breakdown, Share:
		rows, err := x.split(ctx, p, metrics, cur, 1000)
		if err != nil {
			return nil, err
		}
		x.shares(rows, res.Totals, first)
		res.Rows = rows
		if p.Limit > 0 && len(rows) > p.Limit {
			res.Rows, res.Omitted = rows[:p.Limit], len(rows)-p.Limit
		}
	case Ranking:
		rows, err := x.split(ctx, p, metrics, cur, 10000)
		if err != nil {
			return nil, err
		}
		x.shares(rows, res.Totals, first)
		res.Rows, res.Omitted = rank(rows, first, p.Order == "asc", limit, p.PerGroup)
	case GrowthRanking:
		rows, err := x.split(ctx, p, metrics, cur, 10000)
		if err != nil {
			return nil, err
		}
		prev, err := x.split(ctx, p, metrics, cmp, 10000)
		if err != nil {
			return nil, err
		}
		rows = joinPrevious(rows, prev, first)
		asc := p.Order == "asc"
		sort.SliceStable(rows, func(i, j int) bool {
			a, b := growthKey(rows[i]), growthKey(rows[j])
			if asc {
				return a < b
			}
			return a > b
		})
		if len(rows) > limit {
			res.Rows, res.Omitted = rows[:limit], len(rows)-limit
		} else {
			res.Rows = rows
		}
	case Trend:
		dims := p.Dimensions
		resp, err := x.query(ctx, p, metrics, dims, p.Grain, cur, 10000)
		if err != nil {
			return nil, err
		}
		res.Series = resp
		res.Rows = rowsOf(resp, metrics, dims, p.Grain)
	case Members:
		rows, err := x.split(ctx, p, metrics, cur, 10000)
		if err != nil {
			return nil, err
		}
		c := p.Condition
		if !containsStr(metrics, c.Metric) {
			return nil, fmt.Errorf("condition.metric: %q is not one of the plan's metrics", c.Metric)
		}
		var kept []Row
		for _, r := range rows {
			v := r.Values[c.Metric]
			if compare(v, c.Op, c.Value) {
				kept = append(kept, r)
			}
		}
		res.Rows = kept
	case Drivers:
		drivers, err := x.drivers(ctx, p, cur, cmp, res.Totals[first]-res.PreviousTotals[first])
		if err != nil {
			return nil, err
		}
		res.Drivers = drivers
	}
	return res, nil
}

func compare(v float64, op string, t float64) bool {
	switch op {
	case "gt":
		return v > t
	case "gte":
		return v >= t
	case "lt":
		return v < t
	case "lte":
		return v <= t
	case "eq":
		return math.Abs(v-t) < 1e-9
	}
	return false
}

func growthKey(r Row) float64 {
	if math.IsNaN(r.ChangePct) {
		return math.Inf(1)
	}
	return r.ChangePct
}

// split runs the plan's metrics by its dimensions over pp.
func (x *Executor) split(ctx context.Context, p Plan, metrics []string, pp period.Period, limit int32) ([]Row, error) {
	resp, err := x.query(ctx, p, metrics, p.Dimensions, "", pp, limit)
	if err != nil {
		return nil, err
	}
	return rowsOf(resp, metrics, p.Dimensions, ""), nil
}

func (x *Executor) shares(rows []Row, totals map[string]float64, first string) {
	m := x.byName()[first]
	t := totals[first]
	if !m.Additive || t == 0 {
		return
	}
	for i := range rows {
		rows[i].Share = rows[i].Values[first] / t * 100
	}
}

// rank orders rows by metric (ascending for asc) and keeps n (per group when perGroup).
func rank(rows []Row, metric string, asc bool, n int, perGroup bool) ([]Row, int) {
	sort.SliceStable(rows, func(i, j int) bool {
		if perGroup && rows[i].Group != rows[j].Group {
			return rows[i].Group < rows[j].Group
		}
		a, b := rows[i].Values[metric], rows[j].Values[metric]
		if asc {
			return a < b
		}
		return a > b
	})
	if !perGroup {
		if len(rows) > n {
			return rows[:n], len(rows) - n
		}
		return rows, 0
	}
	var out []Row
	count := map[string]int{}
	for _, r := range rows {
		if count[r.Group] < n {
			out = append(out, r)
		}
		count[r.Group]++
	}
	return out, len(rows) - len(out)
}

// joinPrevious sets each row's previous values and change from prev (members only in prev
// are added with zero values: they fell away).
func joinPrevious(rows, prev []Row, first string) []Row {
	byKey := map[string]Row{}
	for _, r := range prev {
		byKey[r.Group+"\x00"+r.Key] = r
	}
	seen := map[string]bool{}
	for i := range rows {
		k := rows[i].Group + "\x00" + rows[i].Key
		seen[k] = true
		rows[i].Previous = byKey[k].Values
		setChange(&rows[i], first)
	}
	for _, r := range prev {
		k := r.Group + "\x00" + r.Key
		if !seen[k] {
			nr := Row{Group: r.Group, Key: r.Key, Label: r.Label, Values: map[string]float64{}, Previous: r.Values}
			setChange(&nr, first)
			rows = append(rows, nr)
		}
	}
	return rows
}

func setChange(r *Row, first string) {
	cur, prev := r.Values[first], r.Previous[first]
	r.Change = cur - prev
	if prev == 0 {
		r.ChangePct = math.NaN()
	} else {
		r.ChangePct = (cur - prev) / math.Abs(prev) * 100
	}
}

// DriverDimensions are the dimensions a change is decomposed over.
var DriverDimensions = []string{"shop", "platform", "category", "goods"}

// drivers decomposes the change of the first metric between the comparison period and the
// period over each dimension: the members whose change went the way of the total's most,
// with their share of the total change. Metrics that do not add up (ratios) are
// decomposed through their first additive dependency... they are skipped: a ratio's change
// is not a sum of members' changes.
func (x *Executor) drivers(ctx context.Context, p Plan, cur, cmp period.Period, total float64) ([]Driver, error) {
	var out []Driver
	by := x.byName()
	for _, d := range DriverDimensions {
		q := p
		q.Dimensions = []string{d}
		sub := map[string]string{}
		metrics := x.splitMetrics(q, q.Dimensions, sub)
		m := metrics[0]
		if !by[m].Additive {
			continue
		}
		rows, err := x.split(ctx, q, []string{m}, cur, 10000)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			continue // a metric that cannot be split by d
		}
		prev, err := x.split(ctx, q, []string{m}, cmp, 10000)
		if err != nil {
			continue
		}
		rows = joinPrevious(rows, prev, m)
		tot := total
		if m != p.Metrics[0] { // line metric: its own total change
			tot = 0
			for _, r := range rows {
				tot += r.Change
			}
		}
		sort.SliceStable(rows, func(i, j int) bool {
			if tot >= 0 {
				return rows[i].Change > rows[j].Change
			}
			return rows[i].Change < rows[j].Change
		})
		var top []Row
		for _, r := range rows {
			if len(top) == 3 || (tot >= 0) != (r.Change >= 0) || r.Change == 0 {
				break
			}
			if tot != 0 {
				r.Share = r.Change / tot * 100
			}
			top = append(top, r)
		}
		out = append(out, Driver{Dimension: d, Metric: m, Rows: top})
	}
	return out, nil
}

func totalsOf(resp *analysisv1.PreviewQueryResponse, metrics []string) map[string]float64 {
	v := charts.ViewOf(resp)
	out := map[string]float64{}
	for _, m := range metrics {
		if x, ok := v.Value(0, m); ok {
			out[m] = x
		}
	}
	return out
}

// RowsOf reads the rows of a preview answer by dims (no time buckets).
func RowsOf(resp *analysisv1.PreviewQueryResponse, metrics, dims []string) []Row {
	return rowsOf(resp, metrics, dims, "")
}

// rowsOf reads preview rows: the key and label of the last dimension (the group: the first
// of two), the time bucket of a series, the metrics.
func rowsOf(resp *analysisv1.PreviewQueryResponse, metrics, dims []string, grain string) []Row {
	idx := map[string]int{}
	for i, c := range resp.GetColumns() {
		idx[c.GetName()] = i
	}
	label := func(r *structpb.ListValue, d string) (string, string) {
		k := ""
		if i, ok := idx[d]; ok {
			k = charts.TextOf(r.Values[i])
		} else if i, ok := idx[d+"_id"]; ok {
			k = charts.TextOf(r.Values[i])
		}
		l := k
		if i, ok := idx[d+"_name"]; ok {
			l = charts.TextOf(r.Values[i])
		}
		return k, l
	}
	var out []Row
	for _, r := range resp.GetRows() {
		row := Row{Values: map[string]float64{}}
		if len(dims) > 0 {
			row.Key, row.Label = label(r, dims[len(dims)-1])
			if len(dims) > 1 {
				_, row.Group = label(r, dims[0])
			}
		}
		if grain != "" {
			if i, ok := idx["time"]; ok {
				t := charts.TextOf(r.Values[i])
				if tt, err := time.Parse(time.RFC3339, t); err == nil {
					t = tt.UTC().Format(time.DateOnly)
					if grain == "month" {
						t = tt.UTC().Format("2006-01")
					}
				}
				if len(dims) > 0 {
					row.Group = row.Label
				}
				row.Label = t
			}
		}
		for _, m := range metrics {
			if i, ok := idx[m]; ok {
				if v, ok := charts.NumberOf(r.Values[i]); ok {
					row.Values[m] = v
				}
			}
		}
		out = append(out, row)
	}
	return out
}

func timestampOf(t time.Time) *timestamppb.Timestamp { return timestamppb.New(t) }

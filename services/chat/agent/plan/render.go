// Rendering an executed plan: what was understood, the narrative and the table or chart.

package plan

import (
	"fmt"
	"math"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"

	chatv2 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v2"
	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/agent/charts"
	"github.com/shopmind/shopmind/services/chat/agent/period"
)

var dimLabels = map[string][2]string{
	"shop": {"shop", "店铺"}, "goods": {"goods", "商品"}, "category": {"category", "类目"},
	"root_category": {"top-level category", "一级类目"},
	"staff":         {"staff member", "员工"}, "platform": {"platform", "平台"}, "status": {"status", "状态"},
}

// DimName names a dimension in English or Chinese.
func DimName(d string, zh bool) string {
	if n, ok := dimLabels[d]; ok {
		return agent.Tr(zh, n[0], n[1])
	}
	return d
}

// Renderer writes answers with the tenant's metric labels.
type Renderer struct {
	ByName map[string]agent.MetricInfo
	ZH     bool
}

func (r Renderer) label(m string) string {
	if mi, ok := r.ByName[m]; ok {
		return mi.LabelIn(r.ZH)
	}
	return m
}

// Format writes a metric value (ratios named *_rate as percentages).
func (r Renderer) Format(m string, v float64) string {
	if strings.HasSuffix(m, "_rate") && math.Abs(v) <= 1 {
		return charts.FormatNumber(v*100, 2) + "%"
	}
	return charts.FormatValue(r.ByName[m], v)
}

func (r Renderer) periodText(p period.Period) string {
	d := p.Describe(r.ZH)
	if d == p.Range() {
		return d
	}
	return d + " (" + p.Range() + ")"
}

// Understood says plainly what the plan asks: "GMV · shop Trend Apparel Flagship · 2026-10".
func (r Renderer) Understood(p Plan) string {
	var parts []string
	var ms []string
	for _, m := range p.Metrics {
		ms = append(ms, r.label(m))
	}
	parts = append(parts, strings.Join(ms, agent.Tr(r.ZH, ", ", "、")))
	for _, f := range p.Filters {
		var names []string
		for _, m := range f.Members {
			names = append(names, firstNonEmpty(m.Label, m.Key))
		}
		w := DimName(f.Dimension, r.ZH) + " " + strings.Join(names, agent.Tr(r.ZH, ", ", "、"))
		if f.Exclude {
			w = agent.Tr(r.ZH, "excluding "+w, "不含"+w)
		}
		parts = append(parts, w)
	}
	for _, d := range p.Dimensions {
		parts = append(parts, agent.Tr(r.ZH, "by "+DimName(d, false), "按"+DimName(d, true)))
	}
	if pp, err := p.PeriodOf(); err == nil {
		parts = append(parts, r.periodText(pp))
		if cp, asked, err := p.ComparePeriod(); err == nil && asked {
			parts = append(parts, agent.Tr(r.ZH, "vs ", "对比 ")+r.periodText(cp))
		}
	}
	if p.Grain != "" {
		parts = append(parts, agent.Tr(r.ZH, "per "+p.Grain, map[string]string{"day": "按天", "week": "按周", "month": "按月"}[p.Grain]))
	}
	switch p.Analysis {
	case Ranking:
		dir := agent.Tr(r.ZH, "highest first", "从高到低")
		if p.Order == "asc" {
			dir = agent.Tr(r.ZH, "lowest first", "从低到高")
		}
		parts = append(parts, dir)
	case GrowthRanking:
		parts = append(parts, agent.Tr(r.ZH, "ranked by growth", "按增长排名"))
	case Share:
		parts = append(parts, agent.Tr(r.ZH, "share of total", "占比"))
	case Drivers:
		parts = append(parts, agent.Tr(r.ZH, "what drove the change", "变化原因"))
	}
	return strings.Join(parts, " · ")
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (r Renderer) change(cur, prev float64, m string) string {
	if prev == 0 {
		if cur == 0 {
			return agent.Tr(r.ZH, "unchanged", "持平")
		}
		return agent.Tr(r.ZH, "none before", "上期为 0")
	}
	pct := (cur - prev) / math.Abs(prev) * 100
	switch {
	case math.Abs(pct) < 0.05:
		return agent.Tr(r.ZH, "unchanged", "持平")
	case pct > 0:
		return agent.Tr(r.ZH, fmt.Sprintf("up %.1f%%", pct), fmt.Sprintf("增长 %.1f%%", pct))
	}
	return agent.Tr(r.ZH, fmt.Sprintf("down %.1f%%", -pct), fmt.Sprintf("下降 %.1f%%", -pct))
}

// Narrative writes the answer's text.
func (r Renderer) Narrative(res *Result) string {
	var b strings.Builder
	p := res.Plan
	first := p.Metrics[0]
	when := r.periodText(res.Period)
	cmpText := r.periodText(res.Compare)
	for old, repl := range res.Substituted {
		b.WriteString(agent.Tr(r.ZH,
			fmt.Sprintf("(%s split by goods or category is measured on order lines: %s.)\n", r.label(old), r.label(repl)),
			fmt.Sprintf("（按商品或类目拆分的%s使用订单行指标：%s。）\n", r.label(old), r.label(repl))))
	}
	for _, m := range p.Metrics {
		cur, ok := res.Totals[m]
		if !ok {
			b.WriteString(agent.Tr(r.ZH, fmt.Sprintf("**%s**, %s: no data.\n", r.label(m), when), fmt.Sprintf("%s **%s**：没有数据。\n", when, r.label(m))))
			continue
		}
		line := agent.Tr(r.ZH, fmt.Sprintf("**%s**, %s: **%s**", r.label(m), when, r.Format(m, cur)),
			fmt.Sprintf("%s **%s** 为 **%s**", when, r.label(m), r.Format(m, cur)))
		if res.PreviousTotals != nil {
			prev := res.PreviousTotals[m]
			line += agent.Tr(r.ZH, fmt.Sprintf("; %s: %s (%s)", cmpText, r.Format(m, prev), r.change(cur, prev, m)),
				fmt.Sprintf("；%s：%s（%s）", cmpText, r.Format(m, prev), r.change(cur, prev, m)))
		}
		b.WriteString(line + agent.Tr(r.ZH, ".\n", "。\n"))
	}
	dim := ""
	if len(p.Dimensions) > 0 {
		dim = p.Dimensions[len(p.Dimensions)-1]
	}
	switch p.Analysis {
	case Ranking, Breakdown, Share:
		if len(res.Rows) == 0 {
			b.WriteString(agent.Tr(r.ZH, "No member has data in this period.\n", "该时间段没有数据。\n"))
			break
		}
		top := res.Rows[0]
		if p.Analysis == Ranking && !p.PerGroup {
			w := agent.Tr(r.ZH, "highest", "最高")
			if p.Order == "asc" {
				w = agent.Tr(r.ZH, "lowest", "最低")
			}
			b.WriteString(agent.Tr(r.ZH, fmt.Sprintf("The %s %s by %s: **%s** (%s).\n", w, DimName(dim, false), r.label(first), top.Label, r.Format(first, top.Values[first])),
				fmt.Sprintf("%s%s的%s：**%s**（%s）。\n", r.label(first), w, DimName(dim, true), top.Label, r.Format(first, top.Values[first]))))
		}
		for i, row := range res.Rows {
			prefix := ""
			if row.Group != "" {
				prefix = row.Group + " · "
			}
			line := fmt.Sprintf("%d. %s%s — %s", i+1, prefix, row.Label, r.Format(first, row.Values[first]))
			if row.Share != 0 {
				line += agent.Tr(r.ZH, fmt.Sprintf(" (%.1f%% of the total)", row.Share), fmt.Sprintf("（占 %.1f%%）", row.Share))
			}
			b.WriteString(line + "\n")
		}
		if res.Omitted > 0 {
			b.WriteString(agent.Tr(r.ZH, fmt.Sprintf("(%d more not shown.)\n", res.Omitted), fmt.Sprintf("（另有 %d 个未列出。）\n", res.Omitted)))
		}
	case GrowthRanking, Comparison:
		if len(res.Rows) == 0 {
			break
		}
		if p.Analysis == GrowthRanking {
			top := res.Rows[0]
			w := agent.Tr(r.ZH, "grew fastest", "增长最快")
			if p.Order == "asc" {
				w = agent.Tr(r.ZH, "fell most", "下降最多")
			}
			b.WriteString(agent.Tr(r.ZH, fmt.Sprintf("The %s that %s: **%s** (%s → %s, %s).\n", DimName(dim, false), w, top.Label,
				r.Format(first, top.Previous[first]), r.Format(first, top.Values[first]), r.change(top.Values[first], top.Previous[first], first)),
				fmt.Sprintf("%s的%s：**%s**（%s → %s，%s）。\n", w, DimName(dim, true), top.Label,
					r.Format(first, top.Previous[first]), r.Format(first, top.Values[first]), r.change(top.Values[first], top.Previous[first], first))))
		}
		for i, row := range res.Rows {
			fmt.Fprintf(&b, "%d. %s — %s → %s (%s)\n", i+1, row.Label, r.Format(first, row.Previous[first]), r.Format(first, row.Values[first]),
				r.change(row.Values[first], row.Previous[first], first))
		}
	case Trend:
		if len(res.Rows) == 0 {
			b.WriteString(agent.Tr(r.ZH, "No data in this period.\n", "该时间段没有数据。\n"))
			break
		}
		hi, lo := res.Rows[0], res.Rows[0]
		for _, row := range res.Rows {
			if row.Values[first] > hi.Values[first] {
				hi = row
			}
			if row.Values[first] < lo.Values[first] {
				lo = row
			}
		}
		if len(p.Dimensions) == 0 {
			b.WriteString(agent.Tr(r.ZH, fmt.Sprintf("Per %s: highest %s (%s), lowest %s (%s).\n", p.Grain, hi.Label, r.Format(first, hi.Values[first]), lo.Label, r.Format(first, lo.Values[first])),
				fmt.Sprintf("最高 %s（%s），最低 %s（%s）。\n", hi.Label, r.Format(first, hi.Values[first]), lo.Label, r.Format(first, lo.Values[first]))))
			for _, row := range res.Rows {
				fmt.Fprintf(&b, "- %s: %s\n", row.Label, r.Format(first, row.Values[first]))
			}
		}
	case Members:
		c := p.Condition
		b.WriteString(agent.Tr(r.ZH, fmt.Sprintf("%d %s with %s %s %s:\n", len(res.Rows), DimName(dim, false), r.label(c.Metric), opText(c.Op, false), r.Format(c.Metric, c.Value)),
			fmt.Sprintf("%s%s%s的%s共 %d 个：\n", r.label(c.Metric), opText(c.Op, true), r.Format(c.Metric, c.Value), DimName(dim, true), len(res.Rows))))
		for i, row := range res.Rows {
			fmt.Fprintf(&b, "%d. %s — %s\n", i+1, row.Label, r.Format(c.Metric, row.Values[c.Metric]))
		}
	case Drivers:
		delta := res.Totals[first] - res.PreviousTotals[first]
		b.WriteString(agent.Tr(r.ZH, fmt.Sprintf("The change (%s) came mostly from:\n", signed(r.Format(first, delta), delta)),
			fmt.Sprintf("变化（%s）主要来自：\n", signed(r.Format(first, delta), delta))))
		for _, d := range res.Drivers {
			if len(d.Rows) == 0 {
				continue
			}
			var items []string
			for _, row := range d.Rows {
				items = append(items, agent.Tr(r.ZH, fmt.Sprintf("%s %s (%.0f%% of the change)", row.Label, signed(r.Format(d.Metric, row.Change), row.Change), row.Share),
					fmt.Sprintf("%s %s（占变化 %.0f%%）", row.Label, signed(r.Format(d.Metric, row.Change), row.Change), row.Share)))
			}
			fmt.Fprintf(&b, "- %s: %s\n", agent.Tr(r.ZH, "by "+DimName(d.Dimension, false), "按"+DimName(d.Dimension, true)), strings.Join(items, agent.Tr(r.ZH, "; ", "；")))
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func signed(s string, v float64) string {
	if v > 0 {
		return "+" + s
	}
	return s
}

func opText(op string, zh bool) string {
	m := map[string][2]string{"gt": {"above", "高于"}, "gte": {"at least", "不低于"}, "lt": {"below", "低于"}, "lte": {"at most", "不高于"}, "eq": {"equal to", "等于"}}[op]
	return agent.Tr(zh, m[0], m[1])
}

// Visualization is the answer's chart (a trend) or table.
func (r Renderer) Visualization(id string, res *Result) *chatv2.VisualizationEvent {
	p := res.Plan
	title := r.Understood(p)
	if p.Analysis == Trend && res.Series != nil {
		return charts.Build(id, title, res.Series, r.ByName)
	}
	cols := []string{"label"}
	names := []any{map[string]any{"field": "label", "name": agent.Tr(r.ZH, "Member", "成员")}}
	var rows []*structpb.ListValue
	switch {
	case p.Analysis == Drivers:
		cols = append(cols, "dimension", "change", "share_of_change")
		names = append(names, map[string]any{"field": "dimension", "name": agent.Tr(r.ZH, "Dimension", "维度")},
			map[string]any{"field": "change", "name": agent.Tr(r.ZH, "Change", "变化"), "format": "number"},
			map[string]any{"field": "share_of_change", "name": agent.Tr(r.ZH, "Share of the change %", "占变化 %"), "format": "percent"})
		for _, d := range res.Drivers {
			for _, row := range d.Rows {
				rows = append(rows, &structpb.ListValue{Values: []*structpb.Value{structpb.NewStringValue(row.Label),
					structpb.NewStringValue(d.Dimension), structpb.NewNumberValue(row.Change), structpb.NewNumberValue(round1(row.Share))}})
			}
		}
	case len(res.Rows) > 0:
		if res.Rows[0].Group != "" {
			cols = append([]string{"group"}, cols...)
			names = append([]any{map[string]any{"field": "group", "name": agent.Tr(r.ZH, "Group", "分组")}}, names...)
		}
		for _, m := range p.Metrics {
			cols = append(cols, m)
			names = append(names, map[string]any{"field": m, "name": r.label(m), "format": "number"})
		}
		withPrev := p.Analysis == GrowthRanking || p.Analysis == Comparison
		if withPrev {
			cols = append(cols, "previous", "change_pct")
			names = append(names, map[string]any{"field": "previous", "name": agent.Tr(r.ZH, "Previous", "对比期"), "format": "number"},
				map[string]any{"field": "change_pct", "name": agent.Tr(r.ZH, "Change %", "变化 %"), "format": "percent"})
		}
		withShare := p.Analysis == Share || p.Analysis == Breakdown || p.Analysis == Ranking
		if withShare {
			cols = append(cols, "share_pct")
			names = append(names, map[string]any{"field": "share_pct", "name": agent.Tr(r.ZH, "Share %", "占比 %"), "format": "percent"})
		}
		for _, row := range res.Rows {
			var vals []*structpb.Value
			if row.Group != "" {
				vals = append(vals, structpb.NewStringValue(row.Group))
			}
			vals = append(vals, structpb.NewStringValue(row.Label))
			for _, m := range p.Metrics {
				vals = append(vals, structpb.NewNumberValue(row.Values[m]))
			}
			if withPrev {
				vals = append(vals, structpb.NewNumberValue(row.Previous[p.Metrics[0]]))
				if math.IsNaN(row.ChangePct) {
					vals = append(vals, structpb.NewNullValue())
				} else {
					vals = append(vals, structpb.NewNumberValue(round1(row.ChangePct)))
				}
			}
			if withShare {
				vals = append(vals, structpb.NewNumberValue(round1(row.Share)))
			}
			rows = append(rows, &structpb.ListValue{Values: vals})
		}
	default:
		cols = []string{"metric", "value", "previous", "change_pct"}
		names = []any{map[string]any{"field": "metric", "name": agent.Tr(r.ZH, "Metric", "指标")},
			map[string]any{"field": "value", "name": agent.Tr(r.ZH, "Value", "数值"), "format": "number"},
			map[string]any{"field": "previous", "name": agent.Tr(r.ZH, "Comparison period", "对比期"), "format": "number"},
			map[string]any{"field": "change_pct", "name": agent.Tr(r.ZH, "Change %", "变化 %"), "format": "percent"}}
		for _, m := range p.Metrics {
			cur, prev := res.Totals[m], res.PreviousTotals[m]
			ch := structpb.NewNullValue()
			if prev != 0 {
				ch = structpb.NewNumberValue(round1((cur - prev) / math.Abs(prev) * 100))
			}
			rows = append(rows, &structpb.ListValue{Values: []*structpb.Value{structpb.NewStringValue(r.label(m)),
				structpb.NewNumberValue(cur), structpb.NewNumberValue(prev), ch}})
		}
	}
	spec, _ := structpb.NewStruct(map[string]any{"period": res.Period.Range(), "previous_period": res.Compare.Range(), "columns": names})
	return &chatv2.VisualizationEvent{Id: id, ChartType: charts.ChartTable, Title: title, Spec: spec, Columns: cols, Rows: rows}
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

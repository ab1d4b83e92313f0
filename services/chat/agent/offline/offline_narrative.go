// The offline analyst's answer text: what it understood, the narrative of the numbers
// (totals, changes, leaders, peaks, notes) and the totals table.

package offline

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

func (a *Analyst) describeParse(q Question, zh bool) string {
	var parts []string
	if len(q.Metrics) > 0 {
		parts = append(parts, agent.Tr(zh, "metric words: ", "指标词：")+joinTerms(q))
	}
	if q.Dimension != "" {
		parts = append(parts, agent.Tr(zh, "by ", "按")+dimName(q.Dimension, zh))
	}
	if q.Granularity != "" {
		parts = append(parts, agent.Tr(zh, "per ", "粒度 ")+q.Granularity)
	}
	parts = append(parts, agent.Tr(zh, "period ", "时间 ")+q.Period.Range())
	if q.TopN > 0 {
		parts = append(parts, fmt.Sprintf("top %d", q.TopN))
	}
	return strings.Join(parts, "; ")
}

func joinTerms(q Question) string {
	var out []string
	for _, m := range q.Metrics {
		out = append(out, fmt.Sprintf("%s → %s", q.Terms[m], m))
	}
	return strings.Join(out, ", ")
}

func metricLabels(names []string, byName map[string]agent.MetricInfo, zh bool) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = byName[n].LabelIn(zh)
	}
	return strings.Join(out, agent.Tr(zh, ", ", "、"))
}

func (a *Analyst) describeQuestion(q Question, byName map[string]agent.MetricInfo, zh bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", agent.Tr(zh, "metrics:", "指标："), strings.Join(q.Metrics, ", "))
	if q.Dimension != "" {
		fmt.Fprintf(&b, "; %s %s", agent.Tr(zh, "dimension:", "维度："), q.Dimension)
	}
	if q.Granularity != "" {
		fmt.Fprintf(&b, "; %s %s", agent.Tr(zh, "granularity:", "粒度："), q.Granularity)
	}
	fmt.Fprintf(&b, "; %s %s", agent.Tr(zh, "period:", "时间："), q.Period.Range())
	if !q.PeriodGiven {
		b.WriteString(agent.Tr(zh, " (default)", "（默认）"))
	}
	if q.TopN > 0 {
		fmt.Fprintf(&b, "; top %d", q.TopN)
	}
	for old, repl := range q.Substituted {
		fmt.Fprintf(&b, "; %s → %s (%s)", old, repl, agent.Tr(zh, "split by "+q.Dimension+" needs order lines", "按"+dimName(q.Dimension, true)+"拆分需用订单行指标"))
	}
	return b.String()
}

func (a *Analyst) queryTitle(q Question, byName map[string]agent.MetricInfo, zh bool) string {
	t := agent.Tr(zh, "Query ", "查询 ") + metricLabels(q.Metrics, byName, zh)
	if q.Dimension != "" {
		t += agent.Tr(zh, " by "+dimName(q.Dimension, false), " 按"+dimName(q.Dimension, true))
	}
	if q.Granularity != "" {
		t += agent.Tr(zh, " per "+q.Granularity, "，粒度 "+q.Granularity)
	}
	return t + agent.Tr(zh, ", ", "，") + q.Period.Range()
}

func (a *Analyst) chartTitle(q Question, byName map[string]agent.MetricInfo, zh bool) string {
	t := metricLabels(q.Metrics, byName, zh)
	if q.Dimension != "" {
		t += agent.Tr(zh, " by "+dimName(q.Dimension, false), " · 按"+dimName(q.Dimension, true))
	}
	if q.Granularity != "" {
		t += agent.Tr(zh, " per "+q.Granularity, " · "+q.Granularity)
	}
	return t + " · " + q.Period.Range()
}

// periodPhrase names the period in the narrative (English: with its preposition).
func periodPhrase(p period.Period, zh bool) string {
	r := p.Range()
	switch p.Kind {
	case "days":
		return agent.Tr(zh, fmt.Sprintf("in the last %d days (%s)", p.Days(), r), fmt.Sprintf("最近%d天（%s）", p.Days(), r))
	case "months":
		return agent.Tr(zh, "in "+r, r)
	case "day":
		return agent.Tr(zh, "on "+r, r)
	case "week":
		return agent.Tr(zh, "in the week "+r, "当周（"+r+"）")
	case "wtd":
		return agent.Tr(zh, "this week to date ("+r+")", "本周至今（"+r+"）")
	case "mtd":
		return agent.Tr(zh, "this month to date ("+r+")", "本月至今（"+r+"）")
	case "ytd":
		return agent.Tr(zh, "this year to date ("+r+")", "今年至今（"+r+"）")
	case "month", "year":
		dsc := p.Describe(zh)
		return agent.Tr(zh, "in "+dsc+" ("+r+")", dsc+"（"+r+"）")
	}
	return agent.Tr(zh, "in "+r, r)
}

func changePhrase(cur, prev float64, m agent.MetricInfo, p period.Period, zh bool) string {
	pv := charts.FormatValue(m, prev)
	pr := p.Range()
	if prev == 0 {
		if cur == 0 {
			return agent.Tr(zh, "the same as the previous period ("+pr+": 0)", "与上一期（"+pr+"：0）持平")
		}
		return agent.Tr(zh, "the previous period ("+pr+") had none", "上一期（"+pr+"）为 0")
	}
	pct := (cur - prev) / math.Abs(prev) * 100
	switch {
	case math.Abs(pct) < 0.05:
		return agent.Tr(zh, fmt.Sprintf("unchanged on the previous period (%s: %s)", pr, pv), fmt.Sprintf("与上一期（%s：%s）持平", pr, pv))
	case pct > 0:
		return agent.Tr(zh, fmt.Sprintf("up %.1f%% on the previous period (%s: %s)", pct, pr, pv), fmt.Sprintf("比上一期（%s：%s）增长 %.1f%%", pr, pv, pct))
	}
	return agent.Tr(zh, fmt.Sprintf("down %.1f%% on the previous period (%s: %s)", -pct, pr, pv), fmt.Sprintf("比上一期（%s：%s）下降 %.1f%%", pr, pv, -pct))
}

// narrative writes the answer: each metric's total with its change, the leaders of a
// split (or the peak of a series), and notes (metric substitution, default period).
func (a *Analyst) narrative(q Question, byName map[string]agent.MetricInfo, main, totals, previous *agent.QueryOutcome, zh bool) string {
	var b strings.Builder
	tv := charts.ViewOf(totals.Response)
	var pv charts.View
	if previous != nil {
		pv = charts.ViewOf(previous.Response)
	}
	when := periodPhrase(q.Period, zh)
	for _, name := range q.Metrics {
		m := byName[name]
		cur, ok := tv.Value(0, name)
		label := fmt.Sprintf("**%s**", m.LabelIn(zh))
		if m.LabelIn(zh) != name {
			label = agent.Tr(zh, fmt.Sprintf("**%s** (%s)", m.Label(), name), fmt.Sprintf("**%s**（%s）", m.LabelIn(zh), name))
		}
		if !ok {
			b.WriteString(agent.Tr(zh, fmt.Sprintf("%s: no data %s.", label, when), fmt.Sprintf("%s：%s没有数据。", label, when)))
			b.WriteString("\n")
			continue
		}
		change := ""
		if previous != nil {
			pval, pok := pv.Value(0, name)
			if !pok {
				pval = 0
			}
			change = changePhrase(cur, pval, m, previous.Period, zh)
		}
		if zh {
			fmt.Fprintf(&b, "%s%s为 **%s**", when, label, charts.FormatValue(m, cur))
			if change != "" {
				b.WriteString("，" + change)
			}
			b.WriteString("。\n")
		} else {
			fmt.Fprintf(&b, "%s %s: **%s**", label, when, charts.FormatValue(m, cur))
			if change != "" {
				b.WriteString(", " + change)
			}
			b.WriteString(".\n")
		}
	}

	first := q.Metrics[0]
	fm := byName[first]
	mv := charts.ViewOf(main.Response)
	rows := len(main.Response.GetRows())
	total, hasTotal := tv.Value(0, first)
	switch {
	case rows == 0 && (q.Dimension != "" || q.Granularity != ""):
		b.WriteString(agent.Tr(zh, "No rows matched the split.\n", "拆分后没有数据。\n"))
	case q.Granularity == "" && q.Dimension != "" && rows > 0:
		dn := dimName(q.Dimension, zh)
		if q.TopN > 0 {
			b.WriteString(agent.Tr(zh, fmt.Sprintf("\nTop %d %s by %s:\n", q.TopN, pluralDim(q.Dimension), fm.Label()),
				fmt.Sprintf("\n%s前 %d 名（按%s）：\n", dn, q.TopN, fm.LabelIn(zh))))
			for r := 0; r < rows && r < q.TopN; r++ {
				v, _ := mv.Value(r, first)
				fmt.Fprintf(&b, "%d. %s — %s%s\n", r+1, mv.Label(r), charts.FormatValue(fm, v), share(fm, v, total, hasTotal, zh))
			}
		} else {
			v, _ := mv.Value(0, first)
			if zh {
				fmt.Fprintf(&b, "按%s看，**%s** 最高，为 %s%s", dn, mv.Label(0), charts.FormatValue(fm, v), share(fm, v, total, hasTotal, zh))
			} else {
				fmt.Fprintf(&b, "By %s, **%s** leads with %s%s", dn, mv.Label(0), charts.FormatValue(fm, v), share(fm, v, total, hasTotal, zh))
			}
			var next []string
			for r := 1; r < rows && r < 3; r++ {
				v, _ := mv.Value(r, first)
				next = append(next, agent.Tr(zh, fmt.Sprintf("%s (%s)", mv.Label(r), charts.FormatValue(fm, v)), fmt.Sprintf("%s（%s）", mv.Label(r), charts.FormatValue(fm, v))))
			}
			if len(next) > 0 {
				b.WriteString(agent.Tr(zh, ", followed by "+strings.Join(next, " and "), "，其次是 "+strings.Join(next, "、")))
			}
			b.WriteString(agent.Tr(zh, ".", "。"))
			if main.Response.GetTruncated() || rows >= main.Args.TopN && main.Args.TopN > 0 {
				b.WriteString(agent.Tr(zh, fmt.Sprintf(" The chart shows the top %d.", rows), fmt.Sprintf("图表显示前 %d 名。", rows)))
			}
			b.WriteString("\n")
		}
	case q.Granularity != "" && rows > 0 && q.Dimension == "":
		hi, lo := 0, 0
		for r := 1; r < rows; r++ {
			v, _ := mv.Value(r, first)
			h, _ := mv.Value(hi, first)
			l, _ := mv.Value(lo, first)
			if v > h {
				hi = r
			}
			if v < l {
				lo = r
			}
		}
		h, _ := mv.Value(hi, first)
		l, _ := mv.Value(lo, first)
		unit := map[string][2]string{"day": {"day", "天"}, "week": {"week", "周"}, "month": {"month", "个月"}}[q.Granularity]
		if zh {
			fmt.Fprintf(&b, "共 %d %s的数据；最高为 %s（%s），最低为 %s（%s）。\n", rows, unit[1], mv.Label(hi), charts.FormatValue(fm, h), mv.Label(lo), charts.FormatValue(fm, l))
		} else {
			fmt.Fprintf(&b, "Over %d %ss, the highest %s was %s (%s) and the lowest %s (%s).\n", rows, unit[0], unit[0], mv.Label(hi), charts.FormatValue(fm, h), mv.Label(lo), charts.FormatValue(fm, l))
		}
	case q.Granularity != "" && rows > 0:
		b.WriteString(agent.Tr(zh, fmt.Sprintf("The chart shows %s per %s for each %s.\n", fm.Label(), q.Granularity, dimName(q.Dimension, false)),
			fmt.Sprintf("图表按%s展示各%s的%s。\n", q.Granularity, dimName(q.Dimension, true), fm.LabelIn(zh))))
	}

	for old, repl := range q.Substituted {
		om, rm := byName[old], byName[repl]
		b.WriteString(agent.Tr(zh,
			fmt.Sprintf("\nNote: sales split by %s are measured on order lines (%s, %s) rather than %s (%s): one order can hold goods of several categories, so an order-level amount cannot be split by goods or category.\n",
				dimName(q.Dimension, false), rm.Label(), repl, om.Label(), old),
			fmt.Sprintf("\n说明：按%s拆分的销售额使用订单行金额（%s，%s），而不是 %s（%s）：一个订单可能包含多个类目的商品，订单级金额无法按商品或类目拆分。\n",
				dimName(q.Dimension, true), rm.LabelIn(zh), repl, om.LabelIn(zh), old)))
	}
	if !q.PeriodGiven {
		b.WriteString(agent.Tr(zh, fmt.Sprintf("\n(No period was named: I used the last %d days.)\n", period.DefaultDays),
			fmt.Sprintf("\n（问题中没有指定时间，默认统计最近%d天。）\n", period.DefaultDays)))
	}
	return strings.TrimRight(b.String(), "\n")
}

func pluralDim(d string) string {
	switch d {
	case "goods", "staff", "status":
		return d
	case "category":
		return "categories"
	case "root_category":
		return "top-level categories"
	}
	return d + "s"
}

func share(m agent.MetricInfo, v, total float64, ok, zh bool) string {
	if !m.Additive || !ok || total <= 0 {
		return ""
	}
	return agent.Tr(zh, fmt.Sprintf(" (%.1f%% of the total)", v/total*100), fmt.Sprintf("（占 %.1f%%）", v/total*100))
}

// totalsTable is the table of a question without split: metric, value, previous value and
// change.
func totalsTable(id, title string, q Question, byName map[string]agent.MetricInfo, totals, previous *agent.QueryOutcome, zh bool) *chatv2.VisualizationEvent {
	tv := charts.ViewOf(totals.Response)
	var pv charts.View
	if previous != nil {
		pv = charts.ViewOf(previous.Response)
	}
	cols := []string{"metric", "name", "value", "previous", "change_pct"}
	var rows []*structpb.ListValue
	for _, name := range q.Metrics {
		m := byName[name]
		vals := []*structpb.Value{structpb.NewStringValue(m.Label()), structpb.NewStringValue(name)}
		cur, ok := tv.Value(0, name)
		if ok {
			vals = append(vals, structpb.NewNumberValue(cur))
		} else {
			vals = append(vals, structpb.NewNullValue())
		}
		prevV, pok := 0.0, false
		if previous != nil {
			prevV, pok = pv.Value(0, name)
		}
		if pok {
			vals = append(vals, structpb.NewNumberValue(prevV))
		} else {
			vals = append(vals, structpb.NewNullValue())
		}
		if ok && pok && prevV != 0 {
			vals = append(vals, structpb.NewNumberValue(math.Round((cur-prevV)/math.Abs(prevV)*1000)/10))
		} else {
			vals = append(vals, structpb.NewNullValue())
		}
		rows = append(rows, &structpb.ListValue{Values: vals})
	}
	prevRange := ""
	if previous != nil {
		prevRange = previous.Period.Range()
	}
	spec, _ := structpb.NewStruct(map[string]any{
		"period": q.Period.Range(), "previous_period": prevRange,
		"columns": []any{
			map[string]any{"field": "metric", "name": agent.Tr(zh, "Metric", "指标")},
			map[string]any{"field": "value", "name": agent.Tr(zh, "Value", "数值"), "format": "number"},
			map[string]any{"field": "previous", "name": agent.Tr(zh, "Previous period", "上一期"), "format": "number"},
			map[string]any{"field": "change_pct", "name": agent.Tr(zh, "Change %", "变化 %"), "format": "percent"},
		},
	})
	return &chatv2.VisualizationEvent{Id: id, ChartType: charts.ChartTable, Title: title, Spec: spec, Columns: cols, Rows: rows}
}

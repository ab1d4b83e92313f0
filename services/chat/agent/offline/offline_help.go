// The offline analyst's help answer, for a question without a recognisable metric.

package offline

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	analysisv1 "github.com/shopmind/shopmind/gen/go/shopmind/analysis/v1"
	"github.com/shopmind/shopmind/services/chat/agent"
)

// help answers a question without a recognisable metric: what the analyst can answer,
// with examples built from the tenant's metrics and dimensions.
func (a *Analyst) help(ctx context.Context, e *agent.Emitter, question string, zh bool, metrics []agent.MetricInfo) error {
	dims := []string{}
	if cat, err := a.analytics.GetCatalog(ctx, &analysisv1.GetCatalogRequest{}); err == nil {
		for _, d := range cat.GetDimensions() {
			dims = append(dims, d.GetName())
		}
	}
	if len(dims) == 0 {
		dims = allDims
	}
	var b strings.Builder
	if len(metrics) == 0 {
		b.WriteString(agent.Tr(zh, "I answer questions about your business metrics, but no metric is defined for your organisation yet. "+
			"An administrator can define metrics (for example GMV or order count) in the analysis settings.",
			"我可以回答业务指标相关的问题，但您的组织还没有定义任何指标。管理员可以在分析设置中定义指标（例如 GMV、订单数）。"))
		if err := streamText(e, b.String()); err != nil {
			return err
		}
		return e.Finish("stop")
	}
	b.WriteString(agent.Tr(zh, "I answer questions about your business metrics, but I could not tell which metric you mean. ",
		"我可以回答业务指标相关的问题，但没能识别出您问的是哪个指标。"))
	b.WriteString(agent.Tr(zh, "Your metrics:\n", "您可以问的指标：\n"))
	metrics = slices.Clone(metrics)
	sort.SliceStable(metrics, func(i, j int) bool { return metrics[i].ID < metrics[j].ID })
	for i, m := range metrics {
		if i >= 12 {
			fmt.Fprintf(&b, agent.Tr(zh, "- … and %d more\n", "- ……等共 %d 个\n"), len(metrics))
			break
		}
		words := m.Synonyms
		if len(words) > 4 {
			words = words[:4]
		}
		extra := ""
		if len(words) > 0 {
			extra = agent.Tr(zh, " — also: ", " — 也可以说：") + strings.Join(words, ", ")
		}
		fmt.Fprintf(&b, "- **%s** (`%s`)%s\n", m.Label(), m.Name, extra)
	}
	dn := make([]string, len(dims))
	for i, d := range dims {
		dn[i] = dimName(d, zh)
	}
	b.WriteString(agent.Tr(zh, "\nSplit them by: ", "\n可按以下维度拆分：") + strings.Join(dn, ", ") +
		agent.Tr(zh, "; or per day, week or month; for periods such as yesterday, last 7 days, this month, last month or 2026-10.\n",
			"；也可以按天、周、月查看趋势；时间如：昨天、最近7天、本月、上个月、2026-10。\n"))
	b.WriteString(agent.Tr(zh, "\nFor example:\n", "\n例如：\n"))
	for _, ex := range examples(metrics, dims, zh) {
		b.WriteString("- " + ex + "\n")
	}
	if err := streamText(e, strings.TrimRight(b.String(), "\n")); err != nil {
		return err
	}
	return e.Finish("stop")
}

// examples builds example questions from the tenant's metrics and dimensions.
func examples(metrics []agent.MetricInfo, dims []string, zh bool) []string {
	word := func(m agent.MetricInfo) string {
		if zh {
			for _, s := range append(append([]string{}, m.Synonyms...), builtinTerms[m.Name]...) {
				if agent.HasHan(s) {
					return s
				}
			}
		}
		return m.Label()
	}
	hasDim := func(d string) bool { return contains(dims, d) }
	var out []string
	pick := func(pred func(agent.MetricInfo) bool) (agent.MetricInfo, bool) {
		for _, m := range metrics {
			if pred(m) {
				return m, true
			}
		}
		return agent.MetricInfo{}, false
	}
	money, ok := pick(func(m agent.MetricInfo) bool { return m.Money && m.Grain == agent.GrainOrder })
	if !ok {
		money = metrics[0]
	}
	if hasDim("shop") {
		out = append(out, agent.Tr(zh, fmt.Sprintf("What was %s by shop last 7 days?", word(money)), fmt.Sprintf("最近7天各店铺的%s是多少？", word(money))))
	} else {
		out = append(out, agent.Tr(zh, fmt.Sprintf("What was %s last 7 days?", word(money)), fmt.Sprintf("最近7天的%s是多少？", word(money))))
	}
	if line := lineAmountMetric(metrics); line != "" && hasDim("category") {
		out = append(out, agent.Tr(zh, "上个月各类目的销售额是多少", "上个月各类目的销售额是多少"))
	}
	if other, ok := pick(func(m agent.MetricInfo) bool { return m.Name != money.Name && !m.Money }); ok {
		out = append(out, agent.Tr(zh, fmt.Sprintf("%s by day this month", word(other)), fmt.Sprintf("本月每天的%s", word(other))))
	}
	if units, ok := pick(func(m agent.MetricInfo) bool { return m.Grain == agent.GrainLine && !m.Money }); ok && hasDim("goods") {
		out = append(out, agent.Tr(zh, fmt.Sprintf("Top 5 goods by %s last month", word(units)), fmt.Sprintf("上个月%s前5名的商品", word(units))))
	}
	return out
}

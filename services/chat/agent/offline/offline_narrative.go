// The offline analyst's answer text: what it understood, the narrative of the numbers
// (totals, changes, leaders, peaks, notes) and the totals table.

package offline

import (
	"fmt"
	"strings"

	"github.com/shopmind/shopmind/services/chat/agent"
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

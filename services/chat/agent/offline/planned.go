// The offline analyst's plan path: questions the grammar reads into a query plan beyond a
// plain total, split or series (filters, exclusions, rankings from the bottom, shares,
// growth rankings, comparisons, drivers, listings, quarters) and follow-ups are answered by
// executing the plan; ambiguous ones get one clarifying question.

package offline

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/agent/plan"
)

// answerPlan reads the question with the tenant's lexicon and the conversation; it ends the
// answer with a clarifying question, or with the executed plan when the plan asks for more
// than the classic path answers (or follows up on the previous question).
func (r *offlineAnswer) answerPlan() error {
	members, err := r.a.members.get(r.ctx, r.req.Identity.TenantID, r.a.analytics, r.metrics, r.now)
	if err != nil {
		return r.fail(err, "I could not read your shops and goods", "无法读取店铺和商品")
	}
	lx := NewLexicon(r.metrics, members)
	parsed := ParsePlan(r.req.Message, r.req.History, r.now, lx)
	if parsed.Clarify != nil {
		return r.clarify(parsed.Clarify)
	}
	if parsed.Plan == nil || !parsed.Advanced && !parsed.FollowUp {
		return nil
	}
	return r.runPlan(*parsed.Plan)
}

// clarify asks one short question with its choices and ends the answer.
func (r *offlineAnswer) clarify(c *Clarify) error {
	r.ended = true
	_ = r.th.Add(agent.Step{Title: agent.Tr(r.zh, "Needs a choice", "需要确认"), Detail: c.Question, Status: agent.StatusDone})
	if err := r.th.Done(agent.StatusDone); err != nil {
		return err
	}
	sep := agent.Tr(r.zh, ", ", "、")
	text := c.Question + " " + strings.Join(c.Choices, sep)
	if err := streamText(r.e, text); err != nil {
		return err
	}
	return r.e.Finish("stop")
}

// runPlan executes the plan, narrates it and draws its table or chart.
func (r *offlineAnswer) runPlan(p plan.Plan) error {
	r.ended = true
	byName := map[string]agent.MetricInfo{}
	for _, m := range r.metrics {
		byName[m.Name] = m
	}
	rd := plan.Renderer{ByName: byName, ZH: r.zh}
	b, _ := json.Marshal(p)
	if err := r.th.Add(agent.Step{Title: agent.Tr(r.zh, "Understood", "已理解"), Detail: rd.Understood(p), Status: agent.StatusDone}); err != nil {
		return err
	}
	if err := r.th.Add(agent.Step{Title: agent.Tr(r.zh, "Running the query plan", "执行查询计划"), Tool: plan.ToolQueryPlan, Detail: string(b), Status: agent.StatusRunning}); err != nil {
		return err
	}
	x := &plan.Executor{Analytics: r.a.analytics, Metrics: r.metrics}
	res, err := x.Execute(r.ctx, p)
	if err != nil {
		_ = r.th.Update(agent.StatusError, agent.ToolErrorMessage(err))
		return r.fail(err, "The query failed", "查询失败")
	}
	_ = r.th.Update(agent.StatusDone, fmt.Sprintf("%d rows", len(res.Rows)))
	if err := r.th.Done(agent.StatusDone); err != nil {
		return err
	}
	text := agent.Tr(r.zh, "Understood: ", "理解为：") + rd.Understood(res.Plan) + "\n\n" + rd.Narrative(res)
	if err := streamText(r.e, text); err != nil {
		return err
	}
	if err := r.e.Visualization(rd.Visualization("viz-1", res)); err != nil {
		return err
	}
	return r.e.Finish("stop")
}

// The offline planner: broad analysis requests go to the team through
// trigger_parallel_analysis, other questions to the offline analyst.

package team

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/services/chat/agent"
)

// Planner is the team's planner without a model. A message asking for an analysis
// ("analyse", "overview", "report", 分析, 报告, 复盘 …) that names two or more areas
// (sales, goods/categories, shops/staff, promotion), or names the business as a whole, is
// planned as a team analysis: the experts of the areas named (all four for the whole
// business) run through trigger_parallel_analysis, and their findings are merged into one
// answer. Any other message goes to the single-question analyst.
type Planner struct {
	single agent.Agent
	team   *Team
	tools  *agent.Registry
	model  string
	now    func() time.Time
}

// NewPlanner returns the planner of team; tools must hold the team's
// trigger_parallel_analysis (Team.Tool); single answers the other messages. now nil:
// time.Now.
func NewPlanner(single agent.Agent, team *Team, tools *agent.Registry, model string, now func() time.Time) *Planner {
	if now == nil {
		now = time.Now
	}
	return &Planner{single: single, team: team, tools: tools, model: model, now: now}
}

var (
	analysisWords = regexp.MustCompile(`\b(analy[sz]e|analy[sz]is|analy[sz]ing|overview|report|review|breakdown|deep dive|summary|summari[sz]e)\b|分析|报告|复盘|概况|总结|盘点|诊断`)
	wholeBusiness = regexp.MustCompile(`\b(business|everything|overall|all areas|whole|entire)\b|经营|整体|全面|全部|生意`)
	areaWords     = map[string]*regexp.Regexp{
		ExpertSales:     regexp.MustCompile(`\b(sales|revenue|gmv|turnover|orders)\b|销售|业绩|营收|成交|订单`),
		ExpertGoods:     regexp.MustCompile(`\b(goods|products?|items?|skus?|categor(y|ies)|merchandise)\b|商品|类目|品类|单品|产品|货品`),
		ExpertShops:     regexp.MustCompile(`\b(shops?|stores?|staff|employees?|salespeople)\b|店铺|门店|员工|店员`),
		ExpertPromotion: regexp.MustCompile(`\b(promotions?|promote|discounts?|campaigns?|coupons?|marketing)\b|促销|活动|营销|优惠|折扣`),
	}
)

// PlannerPrompt is added to the LLM agent's instructions when the team is available: the
// LLM agent is then the planner.
const PlannerPrompt = `You lead an analysis team. For a broad request spanning several areas (sales, goods and categories, shops and staff, promotion), call trigger_parallel_analysis once with the task (with its period) and the experts to use, then merge their findings into one answer: a short summary first, then a section per area, keeping their numbers exactly; mention experts that failed. For a narrow question, use the other tools yourself.`

// PlanExperts returns the experts a message asks for, in the team's order, or nil when
// the message is not a team analysis.
func PlanExperts(message string, team []string) []string {
	text := agent.NormalizeText(message)
	if !analysisWords.MatchString(text) {
		return nil
	}
	var named []string
	for _, n := range team {
		if re := areaWords[n]; re != nil && re.MatchString(text) {
			named = append(named, n)
		}
	}
	switch {
	case len(named) >= 2:
		return named
	case len(named) == 0 && wholeBusiness.MatchString(text):
		return team
	}
	return nil
}

// requestedExperts are the experts a v1 workflow named (current_page_info.workflow.
// agents_to_use, checked against the team when the workflow started), in the team's order;
// nil when it named none.
func requestedExperts(req *agent.Request, team []string) []string {
	wf := req.CurrentPageInfo.GetFields()["workflow"].GetStructValue()
	var named []string
	for _, v := range wf.GetFields()["agents_to_use"].GetListValue().GetValues() {
		named = append(named, v.GetStringValue())
	}
	var out []string
	for _, n := range team {
		if slices.Contains(named, n) {
			out = append(out, n)
		}
	}
	return out
}

// Answer implements agent.Agent.
func (p *Planner) Answer(ctx context.Context, req *agent.Request, emit agent.Emit) error {
	experts := requestedExperts(req, p.team.Names())
	if len(experts) == 0 {
		experts = PlanExperts(req.Message, p.team.Names())
	}
	if len(experts) == 0 {
		return p.single.Answer(ctx, req, emit)
	}
	if req.Identity == nil {
		return apperr.New(apperr.KindUnauthenticated, "no caller identity")
	}
	ctx = authn.WithIdentity(ctx, req.Identity)
	zh := agent.HasHan(req.Message)
	e := agent.NewEmitter(emit, req.ConversationID, p.model, p.now().UTC())
	th := agent.NewThinking(e, "thinking", agent.Tr(zh, "Planning the analysis", "规划分析"))
	per, given := TaskPeriod(req.Message, p.now())
	detail := strings.Join(experts, ", ") + " · " + per.Range()
	if !given {
		detail += agent.Tr(zh, " (default period)", "（默认时间）")
	}
	if err := th.Add(agent.Step{Title: agent.Tr(zh, "Choosing the experts", "选择专家"), Detail: detail, Status: agent.StatusDone}); err != nil {
		return err
	}
	env := &agent.ToolEnv{Request: req, Emitter: e}
	if len(req.CurrentPageInfo.GetFields()) > 0 {
		// the page the question was asked from, for the thinking display
		_, res, err := p.tools.Run(ctx, env, agent.ToolEnvPerception, "{}")
		step := agent.Step{Title: agent.Tr(zh, "Looking at the current page", "感知当前页面"), Tool: agent.ToolEnvPerception, Status: agent.StatusDone}
		if err != nil {
			step.Status, step.Detail = agent.StatusError, agent.ToolErrorMessage(err)
		} else {
			step.Detail = res.Text
		}
		if err := th.Add(step); err != nil {
			return err
		}
	}
	if err := th.Add(agent.Step{Title: agent.Tr(zh, "Parallel analysis", "并行分析"), Tool: ToolTriggerParallelAnalysis, Status: agent.StatusRunning}); err != nil {
		return err
	}
	args, _ := json.Marshal(map[string]any{"task_description": req.Message, "agents_to_use": experts})
	_, res, err := p.tools.Run(ctx, env, ToolTriggerParallelAnalysis, string(args))
	if err != nil {
		_ = th.Update(agent.StatusError, agent.ToolErrorMessage(err))
		_ = th.Done(agent.StatusError)
		return err
	}
	out := res.Data.(*Outcome)
	if err := th.Update(agent.StatusDone, res.Summary); err != nil {
		return err
	}
	if err := e.TextDelta(Merge(out, per.Range(), given)); err != nil {
		return err
	}
	if err := th.Done(agent.StatusDone); err != nil {
		return err
	}
	return e.Finish("stop")
}

// Merge writes the experts' findings as one answer: a heading with the period, a section
// per expert in the team's order, and the experts that failed with their reason.
func Merge(out *Outcome, periodRange string, periodGiven bool) string {
	zh := out.Task.ZH
	var b strings.Builder
	fmt.Fprintf(&b, agent.Tr(zh, "## Team analysis · %s\n", "## 团队分析 · %s\n"), periodRange)
	if !periodGiven {
		b.WriteString(agent.Tr(zh, "(No period was named: the last 30 days.)\n", "（未指定时间：最近 30 天。）\n"))
	}
	var failed []string
	done := 0
	for _, r := range out.Results {
		if r.Err != nil {
			failed = append(failed, fmt.Sprintf("%s: %s", r.Expert.TitleIn(zh), agent.ToolErrorMessage(r.Err)))
			continue
		}
		done++
		fmt.Fprintf(&b, "\n### %s\n%s\n", r.Expert.TitleIn(zh), strings.TrimSpace(r.Finding.Text))
	}
	if len(failed) > 0 {
		b.WriteString(agent.Tr(zh, "\n### Not completed\n", "\n### 未完成\n"))
		for _, f := range failed {
			b.WriteString("- " + f + "\n")
		}
	}
	fmt.Fprintf(&b, agent.Tr(zh, "\n%d of %d experts reported.", "\n%d/%d 位专家完成分析。"), done, len(out.Results))
	return b.String()
}

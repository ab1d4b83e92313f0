// Package offline is the offline analyst: the agent that answers metric questions without
// a model, deterministically, by parsing the question (ParseQuestion) and running the
// tools over the semantic layer (AGENTS.md, "Offline analyst").
package offline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	chatv2 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v2"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/agent/charts"
	"github.com/shopmind/shopmind/services/chat/agent/period"
)

// Model is the model name of the offline analyst's chunks.
const Model = "shopmind-analyst"

// Options configure the offline analyst.
type Options struct {
	// Clock gives the current time (periods are relative to it, in UTC); nil: time.Now.
	Clock func() time.Time
	// Model names the answers' chunks; empty: Model.
	Model string
	// MinSearchScore is the similarity a search_indicators hit needs to be taken when no
	// metric word of the tenant matched (default 0.5).
	MinSearchScore float32
	// Logger; nil: discard.
	Logger *slog.Logger
}

// Analyst answers metric questions without a model, deterministically: it parses
// the question (ParseQuestion), finds the metric with the tenant's words and the
// search_indicators tool, runs query_metrics for the period and for the previous period of
// the same length, and streams a ThinkingProcess, a TaskPlanCard, a narrative with the
// numbers and a visualization. Questions it cannot map get example questions built from
// the tenant's metrics and dimensions.
type Analyst struct {
	analytics agent.Analytics
	tools     *agent.Registry
	opts      Options
	members   memberCache
}

// New returns the analyst. tools must hold search_indicators and
// query_metrics (agent.Tools()).
func New(analytics agent.Analytics, tools *agent.Registry, opts Options) *Analyst {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Model == "" {
		opts.Model = Model
	}
	if opts.MinSearchScore == 0 {
		opts.MinSearchScore = 0.5
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Analyst{analytics: analytics, tools: tools, opts: opts}
}

var dimensionNames = map[string][2]string{
	"shop": {"shop", "店铺"}, "goods": {"goods", "商品"}, "category": {"category", "类目"}, "root_category": {"top-level category", "一级类目"},
	"staff": {"staff member", "员工"}, "platform": {"platform", "平台"}, "status": {"status", "状态"},
}

func dimName(d string, zh bool) string {
	n, ok := dimensionNames[d]
	if !ok {
		return d
	}
	if zh {
		return n[1]
	}
	return n[0]
}

// defaultTopN is how many rows a split shows when the question asks no top-N.
func defaultTopN(dim string) int {
	if dim == "goods" {
		return 10
	}
	return 50
}

// Answer implements Agent: it reads the question, finds its metrics, sends the plan,
// queries the period and the one before it, narrates the numbers and draws the chart, each
// a step of an offlineAnswer. A step may end the answer early (a failure the user can act
// on, a question without a metric); the steps after it are then not run.
func (a *Analyst) Answer(ctx context.Context, req *agent.Request, emit agent.Emit) error {
	r, err := a.begin(ctx, req, emit)
	if err != nil {
		return err
	}
	steps := []func() error{
		r.readQuestion,
		r.answerPlan,
		r.searchIndicators,
		r.helpWithoutMetric,
		r.settleQuestion,
		r.sendPlan,
		r.queryPeriod,
		r.comparePreviousPeriod,
		r.narrate,
		r.drawChart,
		r.finish,
	}
	for _, step := range steps {
		if err := step(); err != nil || r.ended {
			return err
		}
	}
	return nil
}

// offlineAnswer is one answer in the making: the request, the events it has sent and what
// its steps have found so far.
type offlineAnswer struct {
	a     *Analyst
	ctx   context.Context
	req   *agent.Request
	env   *agent.ToolEnv
	now   time.Time
	e     *agent.Emitter
	th    *agent.Thinking
	pl    *agent.Plan
	zh    bool
	ended bool // the reply is complete (finished, explained or helped); no step follows

	metrics []agent.MetricInfo
	byName  map[string]agent.MetricInfo
	q       Question
	prev    period.Period // the period before the question's, of the same length

	args     agent.QueryArgs     // the question's query
	main     *agent.QueryOutcome // its result
	totals   *agent.QueryOutcome // the period's totals (main itself when the query has no split)
	previous *agent.QueryOutcome // the previous period's totals; nil when that query failed
}

// begin opens the thinking process with its first step and checks the caller.
func (a *Analyst) begin(ctx context.Context, req *agent.Request, emit agent.Emit) (*offlineAnswer, error) {
	if req.Identity != nil {
		ctx = authn.WithIdentity(ctx, req.Identity)
	}
	now := a.opts.Clock().UTC()
	e := agent.NewEmitter(emit, req.ConversationID, a.opts.Model, now)
	zh := agent.HasHan(req.Message)
	th := agent.NewThinking(e, "thinking", agent.Tr(zh, "Analysing the question", "分析问题"))
	if err := th.Add(agent.Step{Title: agent.Tr(zh, "Reading the question", "理解问题"), Status: agent.StatusRunning}); err != nil {
		return nil, err
	}
	if req.Identity == nil {
		return nil, apperr.New(apperr.KindUnauthenticated, "no caller identity")
	}
	return &offlineAnswer{a: a, ctx: ctx, req: req, env: &agent.ToolEnv{Request: req, Emitter: e}, now: now, e: e, th: th, zh: zh}, nil
}

// fail ends the answer with the failure (Analyst.fail).
func (r *offlineAnswer) fail(err error, en, cn string) error {
	r.ended = true
	return r.a.fail(r.ctx, r.e, r.th, r.zh, err, agent.Tr(r.zh, en, cn))
}

// readQuestion lists the tenant's metrics and parses the question with their words.
func (r *offlineAnswer) readQuestion() error {
	metrics, err := agent.FetchMetrics(r.ctx, r.a.analytics)
	if err != nil {
		_ = r.th.Update(agent.StatusError, agent.ToolErrorMessage(err))
		return r.fail(err, "I could not read your metric definitions", "无法读取指标定义")
	}
	r.metrics = metrics
	r.q = ParseQuestion(r.req.Message, r.now, metrics, nil)
	return r.th.Update(agent.StatusDone, r.a.describeParse(r.q, r.zh))
}

// searchQuery is what search_indicators looks for: the question's metric words, else the
// rest of the question, else the whole message.
func (r *offlineAnswer) searchQuery() string {
	query := r.q.Rest
	if len(r.q.Metrics) > 0 {
		var words []string
		for _, m := range r.q.Metrics {
			words = append(words, r.q.Terms[m])
		}
		query = strings.Join(words, " ")
	}
	if strings.TrimSpace(query) == "" {
		query = r.req.Message
	}
	return query
}

// searchIndicators runs search_indicators, shown in the thinking process; its best hit is
// taken when no metric word of the tenant matched and it scores high enough.
func (r *offlineAnswer) searchIndicators() error {
	if err := r.th.Add(agent.Step{Title: agent.Tr(r.zh, "Searching indicators", "检索指标"), Tool: agent.ToolSearchIndicators, Status: agent.StatusRunning}); err != nil {
		return err
	}
	args, _ := json.Marshal(map[string]any{"query": r.searchQuery(), "top_k": 3})
	_, res, serr := r.a.tools.Run(r.ctx, r.env, agent.ToolSearchIndicators, string(args))
	var hits []agent.MetricHit
	if serr == nil && res != nil {
		hits, _ = res.Data.([]agent.MetricHit)
	}
	if len(r.q.Metrics) == 0 && len(hits) > 0 && hits[0].Score >= r.a.opts.MinSearchScore {
		r.q.Metrics = []string{hits[0].Metric.Name}
		r.q.Terms[hits[0].Metric.Name] = hits[0].Matched
	}
	if serr != nil {
		r.a.opts.Logger.Warn("search_indicators failed; words only", "error", serr)
		_ = r.th.Update(agent.StatusError, agent.ToolErrorMessage(serr))
		return nil
	}
	var found []string
	for _, h := range hits {
		found = append(found, fmt.Sprintf("%s (%.2f)", h.Metric.Name, h.Score))
	}
	_ = r.th.Update(agent.StatusDone, strings.Join(found, ", "))
	return nil
}

// helpWithoutMetric ends the answer with example questions when no metric was found.
func (r *offlineAnswer) helpWithoutMetric() error {
	if len(r.q.Metrics) > 0 {
		return nil
	}
	r.ended = true
	if err := r.th.Done(agent.StatusDone); err != nil {
		return err
	}
	return r.a.help(r.ctx, r.e, r.req.Message, r.zh, r.metrics)
}

// settleQuestion applies the grain rule and shows the question as understood.
func (r *offlineAnswer) settleQuestion() error {
	r.q.ApplyGrainRule(r.metrics)
	r.byName = map[string]agent.MetricInfo{}
	for _, m := range r.metrics {
		r.byName[m.Name] = m
	}
	return r.th.Add(agent.Step{Title: agent.Tr(r.zh, "Understood", "已理解"), Detail: r.a.describeQuestion(r.q, r.byName, r.zh), Status: agent.StatusDone})
}

// sendPlan sends the task plan: query, compare, summary, chart.
func (r *offlineAnswer) sendPlan() error {
	zh := r.zh
	r.prev = r.q.Period.Previous()
	r.pl = agent.NewPlan(r.e, "plan", agent.Tr(zh, "Analysis plan", "分析计划"), []agent.Step{
		{ID: "query", Title: r.a.queryTitle(r.q, r.byName, zh), Status: agent.TaskTodo, Tool: agent.ToolQueryMetrics},
		{ID: "compare", Title: agent.Tr(zh, "Compare with ", "对比上一期 ") + r.prev.Range(), Status: agent.TaskTodo, Tool: agent.ToolQueryMetrics},
		{ID: "summary", Title: agent.Tr(zh, "Summarise the numbers", "总结数据"), Status: agent.TaskTodo},
		{ID: "chart", Title: agent.Tr(zh, "Draw the chart", "生成图表"), Status: agent.TaskTodo},
	})
	return r.pl.Send()
}

// questionQuery is the question's query_metrics arguments: its metrics over its period,
// split by its dimension (top N rows when not also by time) or by its granularity.
func questionQuery(q Question) agent.QueryArgs {
	args := agent.QueryArgs{Metrics: q.Metrics, Granularity: q.Granularity,
		StartDate: q.Period.Start.Format(time.DateOnly), EndDate: q.Period.LastDay().Format(time.DateOnly)}
	if q.Dimension != "" {
		args.Dimensions = []string{q.Dimension}
		if q.Granularity == "" {
			args.TopN = q.TopN
			if args.TopN == 0 {
				args.TopN = defaultTopN(q.Dimension)
			}
		}
	}
	return args
}

// split reports whether the question's query is split by a dimension or by time.
func (r *offlineAnswer) split() bool {
	return len(r.args.Dimensions) > 0 || r.args.Granularity != ""
}

// queryPeriod runs the question's query and, when it is split, the period's totals too.
func (r *offlineAnswer) queryPeriod() error {
	r.args = questionQuery(r.q)
	if err := r.pl.Set("query", agent.TaskInProgress); err != nil {
		return err
	}
	main, err := r.a.query(r.ctx, r.env, r.th, r.args, r.zh)
	if err != nil {
		_ = r.pl.Set("query", agent.TaskFailed)
		return r.fail(err, "The query failed", "查询失败")
	}
	r.main, r.totals = main, main
	if r.split() {
		totalArgs := agent.QueryArgs{Metrics: r.q.Metrics, StartDate: r.args.StartDate, EndDate: r.args.EndDate}
		if r.totals, err = r.a.query(r.ctx, r.env, r.th, totalArgs, r.zh); err != nil {
			_ = r.pl.Set("query", agent.TaskFailed)
			return r.fail(err, "The query failed", "查询失败")
		}
	}
	return r.pl.Set("query", agent.TaskDone)
}

// comparePreviousPeriod queries the previous period's totals, for the change; its failure
// leaves the answer without a comparison.
func (r *offlineAnswer) comparePreviousPeriod() error {
	if err := r.pl.Set("compare", agent.TaskInProgress); err != nil {
		return err
	}
	prevArgs := agent.QueryArgs{Metrics: r.q.Metrics, StartDate: r.prev.Start.Format(time.DateOnly), EndDate: r.prev.LastDay().Format(time.DateOnly)}
	previous, err := r.a.query(r.ctx, r.env, r.th, prevArgs, r.zh)
	if err != nil {
		if r.ctx.Err() != nil {
			return r.ctx.Err()
		}
		r.a.opts.Logger.Warn("previous period query failed", "error", err)
		r.previous = nil
		_ = r.pl.Set("compare", agent.TaskFailed)
		return nil
	}
	r.previous = previous
	return r.pl.Set("compare", agent.TaskDone)
}

// narrate streams the narrative with the numbers.
func (r *offlineAnswer) narrate() error {
	if err := r.pl.Set("summary", agent.TaskInProgress); err != nil {
		return err
	}
	text := r.a.narrative(r.q, r.byName, r.main, r.totals, r.previous, r.zh)
	if err := streamText(r.e, text); err != nil {
		return err
	}
	return r.pl.Set("summary", agent.TaskDone)
}

// drawChart sends the visualization: the split's chart, or a table of the totals.
func (r *offlineAnswer) drawChart() error {
	var viz *chatv2.VisualizationEvent
	title := r.a.chartTitle(r.q, r.byName, r.zh)
	if r.split() {
		viz = charts.Build("viz-1", title, r.main.Response, r.byName)
	} else {
		viz = totalsTable("viz-1", title, r.q, r.byName, r.totals, r.previous, r.zh)
	}
	if err := r.e.Visualization(viz); err != nil {
		return err
	}
	return r.pl.Set("chart", agent.TaskDone)
}

// finish closes the thinking process and ends the reply.
func (r *offlineAnswer) finish() error {
	r.ended = true
	if err := r.th.Done(agent.StatusDone); err != nil {
		return err
	}
	return r.e.Finish("stop")
}

// query runs query_metrics through the registry, shown as a thinking step.
func (a *Analyst) query(ctx context.Context, env *agent.ToolEnv, th *agent.Thinking, args agent.QueryArgs, zh bool) (*agent.QueryOutcome, error) {
	b, _ := json.Marshal(args)
	if err := th.Add(agent.Step{Title: agent.Tr(zh, "Running query_metrics", "执行 query_metrics"), Tool: agent.ToolQueryMetrics, Detail: string(b), Status: agent.StatusRunning}); err != nil {
		return nil, err
	}
	_, res, err := a.tools.Run(ctx, env, agent.ToolQueryMetrics, string(b))
	if err != nil {
		_ = th.Update(agent.StatusError, agent.ToolErrorMessage(err))
		return nil, err
	}
	out, ok := res.Data.(*agent.QueryOutcome)
	if !ok || out.Response == nil {
		return nil, errors.New("query_metrics returned no result")
	}
	if err := th.Update(agent.StatusDone, string(b)+" → "+res.Summary); err != nil {
		return nil, err
	}
	return out, nil
}

// userFixable reports failures the user can act on (an answer explains them) rather than
// failures of the platform (returned as errors).
func userFixable(err error) bool {
	var ae *apperr.Error
	if errors.As(err, &ae) {
		switch ae.Kind {
		case apperr.KindInvalid, apperr.KindRule, apperr.KindNotFound, apperr.KindForbidden:
			return true
		}
		return false
	}
	if st, ok := status.FromError(err); ok {
		switch st.Code() {
		case codes.InvalidArgument, codes.FailedPrecondition, codes.NotFound, codes.PermissionDenied, codes.OutOfRange:
			return true
		}
	}
	return false
}

// fail ends the reply: an explanation for failures the user can act on, the error
// otherwise (the chat service turns it into an error event).
func (a *Analyst) fail(ctx context.Context, e *agent.Emitter, th *agent.Thinking, zh bool, err error, what string) error {
	_ = th.Done(agent.StatusError)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if !userFixable(err) {
		return err
	}
	msg := agent.ToolErrorMessage(err)
	text := fmt.Sprintf("%s: %s", what, msg)
	if st, ok := status.FromError(err); ok && st.Code() == codes.PermissionDenied {
		text += agent.Tr(zh, "\n\nAsk an administrator for the analysis permissions (analysis:metric:list, analysis:query:preview).",
			"\n\n请联系管理员开通分析权限（analysis:metric:list、analysis:query:preview）。")
	} else {
		text += agent.Tr(zh, "\n\nTry another metric, dimension or period, for example “What was GMV by shop last 7 days?”.",
			"\n\n请换一个指标、维度或时间段试试，例如“上个月各类目的销售额是多少”。")
	}
	if err := streamText(e, text); err != nil {
		return err
	}
	return e.Finish("stop")
}

// streamText sends text in a few chunks (lines, then sentences).
func streamText(e *agent.Emitter, text string) error {
	var parts []string
	start := 0
	for i := 0; i < len(text); {
		r, size := rune(text[i]), 1
		if text[i] >= 0x80 {
			rr := []rune(text[i:min(i+4, len(text))])
			r, size = rr[0], len(string(rr[0]))
		}
		i += size
		if r == '\n' || r == '。' || r == '！' || r == '？' || ((r == '.' || r == '!' || r == '?') && i < len(text) && text[i] == ' ') {
			parts = append(parts, text[start:i])
			start = i
		}
	}
	if start < len(text) {
		parts = append(parts, text[start:])
	}
	for _, p := range parts {
		if err := e.TextDelta(p); err != nil {
			return err
		}
	}
	return nil
}

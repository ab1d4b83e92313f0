// Package offline is the offline analyst: the agent that answers metric questions without
// a model, deterministically, by reading the question into a query plan (ParsePlan) and
// executing it over the semantic layer (AGENTS.md, "Offline analyst").
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

	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/agent/plan"
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

// Analyst answers metric questions without a model, deterministically: it reads the
// question into a query plan (ParsePlan; the search_indicators tool finds a metric the
// tenant's words do not name), executes the plan (the period, the comparison period and the
// split or series), and streams a ThinkingProcess, a TaskPlanCard, a narrative with the
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

// Answer implements Agent: it reads the question, answers it through the query plan (with
// the metric search_indicators finds when no word names one) or helps, each a step of an
// offlineAnswer. A step may end the answer early (a failure the user can act
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
		r.planSearched,
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
	zh    bool
	ended bool // the reply is complete (finished, explained or helped); no step follows

	metrics []agent.MetricInfo
	q       Question
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

// planSearched answers a question whose metric only search_indicators found: its words
// (after the grain rule) become a plan of the same shapes (a total, a split, a highest-first
// top N, a series), run like every other plan.
func (r *offlineAnswer) planSearched() error {
	r.q.ApplyGrainRule(r.metrics)
	return r.runPlan(questionPlan(r.q))
}

// questionPlan is the plan of a parsed question: a series by its granularity, a ranking of
// its top N, a split by its dimension, or the totals, over its period.
func questionPlan(q Question) plan.Plan {
	p := plan.Plan{Analysis: plan.Value, Metrics: q.Metrics,
		Start: q.Period.Start.Format(time.DateOnly), End: q.Period.LastDay().Format(time.DateOnly)}
	switch {
	case q.Granularity != "":
		p.Analysis, p.Grain = plan.Trend, q.Granularity
	case q.Dimension != "" && q.TopN > 0:
		p.Analysis, p.Dimensions, p.Order, p.Limit = plan.Ranking, []string{q.Dimension}, "desc", q.TopN
	case q.Dimension != "":
		p.Analysis, p.Dimensions = plan.Breakdown, []string{q.Dimension}
	}
	return p
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

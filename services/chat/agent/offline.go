package agent

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
)

// OfflineModel is the model name of the offline analyst's chunks.
const OfflineModel = "shopmind-analyst"

// OfflineOptions configure the offline analyst.
type OfflineOptions struct {
	// Clock gives the current time (periods are relative to it, in UTC); nil: time.Now.
	Clock func() time.Time
	// Model names the answers' chunks; empty: OfflineModel.
	Model string
	// MinSearchScore is the similarity a search_indicators hit needs to be taken when no
	// metric word of the tenant matched (default 0.5).
	MinSearchScore float32
	// Logger; nil: discard.
	Logger *slog.Logger
}

// OfflineAnalyst answers metric questions without a model, deterministically: it parses
// the question (ParseQuestion), finds the metric with the tenant's words and the
// search_indicators tool, runs query_metrics for the period and for the previous period of
// the same length, and streams a ThinkingProcess, a TaskPlanCard, a narrative with the
// numbers and a visualization. Questions it cannot map get example questions built from
// the tenant's metrics and dimensions.
type OfflineAnalyst struct {
	analytics Analytics
	tools     *Registry
	opts      OfflineOptions
}

// NewOfflineAnalyst returns the analyst. tools must hold search_indicators and
// query_metrics (Tools()).
func NewOfflineAnalyst(analytics Analytics, tools *Registry, opts OfflineOptions) *OfflineAnalyst {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Model == "" {
		opts.Model = OfflineModel
	}
	if opts.MinSearchScore == 0 {
		opts.MinSearchScore = 0.5
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &OfflineAnalyst{analytics: analytics, tools: tools, opts: opts}
}

func tr(zh bool, en, cn string) string {
	if zh {
		return cn
	}
	return en
}

var dimensionNames = map[string][2]string{
	"shop": {"shop", "店铺"}, "goods": {"goods", "商品"}, "category": {"category", "类目"},
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

// Answer implements Agent.
func (a *OfflineAnalyst) Answer(ctx context.Context, req *Request, emit Emit) error {
	if req.Identity != nil {
		ctx = authn.WithIdentity(ctx, req.Identity)
	}
	now := a.opts.Clock().UTC()
	e := newEmitter(emit, req.ConversationID, a.opts.Model, now)
	zh := hasHan(req.Message)
	th := &thinking{e: e, id: "thinking", title: tr(zh, "Analysing the question", "分析问题")}
	if err := th.add(Step{Title: tr(zh, "Reading the question", "理解问题"), Status: StatusRunning}); err != nil {
		return err
	}
	if req.Identity == nil {
		return apperr.New(apperr.KindUnauthenticated, "no caller identity")
	}
	env := &ToolEnv{Request: req}

	metrics, err := listMetrics(ctx, a.analytics)
	if err != nil {
		_ = th.update(StatusError, ToolErrorMessage(err))
		return a.fail(ctx, e, th, zh, err, tr(zh, "I could not read your metric definitions", "无法读取指标定义"))
	}
	q := ParseQuestion(req.Message, now, metrics, nil)
	if err := th.update(StatusDone, a.describeParse(q, zh)); err != nil {
		return err
	}

	// search_indicators: shown in the thinking process; taken when no metric word matched
	if err := th.add(Step{Title: tr(zh, "Searching indicators", "检索指标"), Tool: ToolSearchIndicators, Status: StatusRunning}); err != nil {
		return err
	}
	query := q.Rest
	if len(q.Metrics) > 0 {
		var words []string
		for _, m := range q.Metrics {
			words = append(words, q.Terms[m])
		}
		query = strings.Join(words, " ")
	}
	if strings.TrimSpace(query) == "" {
		query = req.Message
	}
	args, _ := json.Marshal(map[string]any{"query": query, "top_k": 3})
	_, res, serr := a.tools.Run(ctx, env, ToolSearchIndicators, string(args))
	var hits []MetricHit
	if serr == nil && res != nil {
		hits, _ = res.Data.([]MetricHit)
	}
	if len(q.Metrics) == 0 && len(hits) > 0 && hits[0].Score >= a.opts.MinSearchScore {
		q.Metrics = []string{hits[0].Metric.Name}
		q.Terms[hits[0].Metric.Name] = hits[0].Matched
	}
	if serr != nil {
		a.opts.Logger.Warn("search_indicators failed; words only", "error", serr)
		_ = th.update(StatusError, ToolErrorMessage(serr))
	} else {
		var found []string
		for _, h := range hits {
			found = append(found, fmt.Sprintf("%s (%.2f)", h.Metric.Name, h.Score))
		}
		_ = th.update(StatusDone, strings.Join(found, ", "))
	}
	if len(q.Metrics) == 0 {
		if err := th.done(StatusDone); err != nil {
			return err
		}
		return a.help(ctx, e, req.Message, zh, metrics)
	}
	q.ApplyGrainRule(metrics)
	byName := map[string]MetricInfo{}
	for _, m := range metrics {
		byName[m.Name] = m
	}
	if err := th.add(Step{Title: tr(zh, "Understood", "已理解"), Detail: a.describeQuestion(q, byName, zh), Status: StatusDone}); err != nil {
		return err
	}

	prev := q.Period.Previous()
	pl := &plan{e: e, id: "plan", title: tr(zh, "Analysis plan", "分析计划"), tasks: []Step{
		{ID: "query", Title: a.queryTitle(q, byName, zh), Status: StatusPending, Tool: ToolQueryMetrics},
		{ID: "compare", Title: tr(zh, "Compare with ", "对比上一期 ") + prev.Range(), Status: StatusPending, Tool: ToolQueryMetrics},
		{ID: "summary", Title: tr(zh, "Summarise the numbers", "总结数据"), Status: StatusPending},
		{ID: "chart", Title: tr(zh, "Draw the chart", "生成图表"), Status: StatusPending},
	}}
	if err := pl.send(); err != nil {
		return err
	}

	// the question's query
	mainArgs := QueryArgs{Metrics: q.Metrics, Granularity: q.Granularity,
		StartDate: q.Period.Start.Format(time.DateOnly), EndDate: q.Period.LastDay().Format(time.DateOnly)}
	if q.Dimension != "" {
		mainArgs.Dimensions = []string{q.Dimension}
		if q.Granularity == "" {
			mainArgs.TopN = q.TopN
			if mainArgs.TopN == 0 {
				mainArgs.TopN = defaultTopN(q.Dimension)
			}
		}
	}
	if err := pl.set("query", StatusRunning); err != nil {
		return err
	}
	main, err := a.query(ctx, env, th, mainArgs, zh)
	if err != nil {
		_ = pl.set("query", StatusError)
		return a.fail(ctx, e, th, zh, err, tr(zh, "The query failed", "查询失败"))
	}
	totals := main
	if len(mainArgs.Dimensions) > 0 || mainArgs.Granularity != "" {
		totalArgs := QueryArgs{Metrics: q.Metrics, StartDate: mainArgs.StartDate, EndDate: mainArgs.EndDate}
		if totals, err = a.query(ctx, env, th, totalArgs, zh); err != nil {
			_ = pl.set("query", StatusError)
			return a.fail(ctx, e, th, zh, err, tr(zh, "The query failed", "查询失败"))
		}
	}
	if err := pl.set("query", StatusDone); err != nil {
		return err
	}

	// the previous period, for the change
	if err := pl.set("compare", StatusRunning); err != nil {
		return err
	}
	prevArgs := QueryArgs{Metrics: q.Metrics, StartDate: prev.Start.Format(time.DateOnly), EndDate: prev.LastDay().Format(time.DateOnly)}
	previous, perr := a.query(ctx, env, th, prevArgs, zh)
	if perr != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		a.opts.Logger.Warn("previous period query failed", "error", perr)
		previous = nil
		_ = pl.set("compare", StatusError)
	} else if err := pl.set("compare", StatusDone); err != nil {
		return err
	}

	// narrative
	if err := pl.set("summary", StatusRunning); err != nil {
		return err
	}
	text := a.narrative(q, byName, main, totals, previous, zh)
	if err := streamText(e, text); err != nil {
		return err
	}
	if err := pl.set("summary", StatusDone); err != nil {
		return err
	}

	// chart
	var viz *chatv2.VisualizationEvent
	title := a.chartTitle(q, byName, zh)
	if len(mainArgs.Dimensions) > 0 || mainArgs.Granularity != "" {
		viz = buildVisualization("viz-1", title, main.Response, byName)
	} else {
		viz = totalsTable("viz-1", title, q, byName, totals, previous, zh)
	}
	if err := e.visualization(viz); err != nil {
		return err
	}
	if err := pl.set("chart", StatusDone); err != nil {
		return err
	}
	if err := th.done(StatusDone); err != nil {
		return err
	}
	return e.finish("stop")
}

// query runs query_metrics through the registry, shown as a thinking step.
func (a *OfflineAnalyst) query(ctx context.Context, env *ToolEnv, th *thinking, args QueryArgs, zh bool) (*QueryOutcome, error) {
	b, _ := json.Marshal(args)
	if err := th.add(Step{Title: tr(zh, "Running query_metrics", "执行 query_metrics"), Tool: ToolQueryMetrics, Detail: string(b), Status: StatusRunning}); err != nil {
		return nil, err
	}
	_, res, err := a.tools.Run(ctx, env, ToolQueryMetrics, string(b))
	if err != nil {
		_ = th.update(StatusError, ToolErrorMessage(err))
		return nil, err
	}
	out, ok := res.Data.(*QueryOutcome)
	if !ok || out.Response == nil {
		return nil, errors.New("query_metrics returned no result")
	}
	if err := th.update(StatusDone, string(b)+" → "+res.Summary); err != nil {
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
func (a *OfflineAnalyst) fail(ctx context.Context, e *emitter, th *thinking, zh bool, err error, what string) error {
	_ = th.done(StatusError)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if !userFixable(err) {
		return err
	}
	msg := ToolErrorMessage(err)
	text := fmt.Sprintf("%s: %s", what, msg)
	if st, ok := status.FromError(err); ok && st.Code() == codes.PermissionDenied {
		text += tr(zh, "\n\nAsk an administrator for the analysis permissions (analysis:metric:list, analysis:query:preview).",
			"\n\n请联系管理员开通分析权限（analysis:metric:list、analysis:query:preview）。")
	} else {
		text += tr(zh, "\n\nTry another metric, dimension or period, for example “What was GMV by shop last 7 days?”.",
			"\n\n请换一个指标、维度或时间段试试，例如“上个月各类目的销售额是多少”。")
	}
	if err := streamText(e, text); err != nil {
		return err
	}
	return e.finish("stop")
}

// streamText sends text in a few chunks (lines, then sentences).
func streamText(e *emitter, text string) error {
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
		if err := e.textDelta(p); err != nil {
			return err
		}
	}
	return nil
}

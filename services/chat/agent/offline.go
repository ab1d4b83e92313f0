package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	analysisv1 "github.com/shopmind/shopmind/gen/go/shopmind/analysis/v1"
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

func (a *OfflineAnalyst) describeParse(q Question, zh bool) string {
	var parts []string
	if len(q.Metrics) > 0 {
		parts = append(parts, tr(zh, "metric words: ", "指标词：")+joinTerms(q))
	}
	if q.Dimension != "" {
		parts = append(parts, tr(zh, "by ", "按")+dimName(q.Dimension, zh))
	}
	if q.Granularity != "" {
		parts = append(parts, tr(zh, "per ", "粒度 ")+q.Granularity)
	}
	parts = append(parts, tr(zh, "period ", "时间 ")+q.Period.Range())
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

func metricLabels(names []string, byName map[string]MetricInfo, zh bool) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = byName[n].LabelIn(zh)
	}
	return strings.Join(out, tr(zh, ", ", "、"))
}

func (a *OfflineAnalyst) describeQuestion(q Question, byName map[string]MetricInfo, zh bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", tr(zh, "metrics:", "指标："), strings.Join(q.Metrics, ", "))
	if q.Dimension != "" {
		fmt.Fprintf(&b, "; %s %s", tr(zh, "dimension:", "维度："), q.Dimension)
	}
	if q.Granularity != "" {
		fmt.Fprintf(&b, "; %s %s", tr(zh, "granularity:", "粒度："), q.Granularity)
	}
	fmt.Fprintf(&b, "; %s %s", tr(zh, "period:", "时间："), q.Period.Range())
	if !q.PeriodGiven {
		b.WriteString(tr(zh, " (default)", "（默认）"))
	}
	if q.TopN > 0 {
		fmt.Fprintf(&b, "; top %d", q.TopN)
	}
	for old, repl := range q.Substituted {
		fmt.Fprintf(&b, "; %s → %s (%s)", old, repl, tr(zh, "split by "+q.Dimension+" needs order lines", "按"+dimName(q.Dimension, true)+"拆分需用订单行指标"))
	}
	return b.String()
}

func (a *OfflineAnalyst) queryTitle(q Question, byName map[string]MetricInfo, zh bool) string {
	t := tr(zh, "Query ", "查询 ") + metricLabels(q.Metrics, byName, zh)
	if q.Dimension != "" {
		t += tr(zh, " by "+dimName(q.Dimension, false), " 按"+dimName(q.Dimension, true))
	}
	if q.Granularity != "" {
		t += tr(zh, " per "+q.Granularity, "，粒度 "+q.Granularity)
	}
	return t + tr(zh, ", ", "，") + q.Period.Range()
}

func (a *OfflineAnalyst) chartTitle(q Question, byName map[string]MetricInfo, zh bool) string {
	t := metricLabels(q.Metrics, byName, zh)
	if q.Dimension != "" {
		t += tr(zh, " by "+dimName(q.Dimension, false), " · 按"+dimName(q.Dimension, true))
	}
	if q.Granularity != "" {
		t += tr(zh, " per "+q.Granularity, " · "+q.Granularity)
	}
	return t + " · " + q.Period.Range()
}

// periodPhrase names the period in the narrative (English: with its preposition).
func periodPhrase(p Period, zh bool) string {
	r := p.Range()
	switch p.Kind {
	case "days":
		return tr(zh, fmt.Sprintf("in the last %d days (%s)", p.Days(), r), fmt.Sprintf("最近%d天（%s）", p.Days(), r))
	case "months":
		return tr(zh, "in "+r, r)
	case "day":
		return tr(zh, "on "+r, r)
	case "week":
		return tr(zh, "in the week "+r, "当周（"+r+"）")
	case "wtd":
		return tr(zh, "this week to date ("+r+")", "本周至今（"+r+"）")
	case "mtd":
		return tr(zh, "this month to date ("+r+")", "本月至今（"+r+"）")
	case "ytd":
		return tr(zh, "this year to date ("+r+")", "今年至今（"+r+"）")
	case "month", "year":
		dsc := p.Describe(zh)
		return tr(zh, "in "+dsc+" ("+r+")", dsc+"（"+r+"）")
	}
	return tr(zh, "in "+r, r)
}

func changePhrase(cur, prev float64, m MetricInfo, p Period, zh bool) string {
	pv := formatValue(m, prev)
	pr := p.Range()
	if prev == 0 {
		if cur == 0 {
			return tr(zh, "the same as the previous period ("+pr+": 0)", "与上一期（"+pr+"：0）持平")
		}
		return tr(zh, "the previous period ("+pr+") had none", "上一期（"+pr+"）为 0")
	}
	pct := (cur - prev) / math.Abs(prev) * 100
	switch {
	case math.Abs(pct) < 0.05:
		return tr(zh, fmt.Sprintf("unchanged on the previous period (%s: %s)", pr, pv), fmt.Sprintf("与上一期（%s：%s）持平", pr, pv))
	case pct > 0:
		return tr(zh, fmt.Sprintf("up %.1f%% on the previous period (%s: %s)", pct, pr, pv), fmt.Sprintf("比上一期（%s：%s）增长 %.1f%%", pr, pv, pct))
	}
	return tr(zh, fmt.Sprintf("down %.1f%% on the previous period (%s: %s)", -pct, pr, pv), fmt.Sprintf("比上一期（%s：%s）下降 %.1f%%", pr, pv, -pct))
}

// narrative writes the answer: each metric's total with its change, the leaders of a
// split (or the peak of a series), and notes (metric substitution, default period).
func (a *OfflineAnalyst) narrative(q Question, byName map[string]MetricInfo, main, totals, previous *QueryOutcome, zh bool) string {
	var b strings.Builder
	tv := viewOf(totals.Response)
	var pv resultView
	if previous != nil {
		pv = viewOf(previous.Response)
	}
	period := periodPhrase(q.Period, zh)
	for _, name := range q.Metrics {
		m := byName[name]
		cur, ok := tv.value(0, name)
		label := fmt.Sprintf("**%s**", m.LabelIn(zh))
		if m.LabelIn(zh) != name {
			label = tr(zh, fmt.Sprintf("**%s** (%s)", m.Label(), name), fmt.Sprintf("**%s**（%s）", m.LabelIn(zh), name))
		}
		if !ok {
			b.WriteString(tr(zh, fmt.Sprintf("%s: no data %s.", label, period), fmt.Sprintf("%s：%s没有数据。", label, period)))
			b.WriteString("\n")
			continue
		}
		change := ""
		if previous != nil {
			pval, pok := pv.value(0, name)
			if !pok {
				pval = 0
			}
			change = changePhrase(cur, pval, m, previous.Period, zh)
		}
		if zh {
			fmt.Fprintf(&b, "%s%s为 **%s**", period, label, formatValue(m, cur))
			if change != "" {
				b.WriteString("，" + change)
			}
			b.WriteString("。\n")
		} else {
			fmt.Fprintf(&b, "%s %s: **%s**", label, period, formatValue(m, cur))
			if change != "" {
				b.WriteString(", " + change)
			}
			b.WriteString(".\n")
		}
	}

	first := q.Metrics[0]
	fm := byName[first]
	mv := viewOf(main.Response)
	rows := len(main.Response.GetRows())
	total, hasTotal := tv.value(0, first)
	switch {
	case rows == 0 && (q.Dimension != "" || q.Granularity != ""):
		b.WriteString(tr(zh, "No rows matched the split.\n", "拆分后没有数据。\n"))
	case q.Granularity == "" && q.Dimension != "" && rows > 0:
		dn := dimName(q.Dimension, zh)
		if q.TopN > 0 {
			b.WriteString(tr(zh, fmt.Sprintf("\nTop %d %s by %s:\n", q.TopN, pluralDim(q.Dimension), fm.Label()),
				fmt.Sprintf("\n%s前 %d 名（按%s）：\n", dn, q.TopN, fm.LabelIn(zh))))
			for r := 0; r < rows && r < q.TopN; r++ {
				v, _ := mv.value(r, first)
				fmt.Fprintf(&b, "%d. %s — %s%s\n", r+1, mv.label(r), formatValue(fm, v), share(fm, v, total, hasTotal, zh))
			}
		} else {
			v, _ := mv.value(0, first)
			if zh {
				fmt.Fprintf(&b, "按%s看，**%s** 最高，为 %s%s", dn, mv.label(0), formatValue(fm, v), share(fm, v, total, hasTotal, zh))
			} else {
				fmt.Fprintf(&b, "By %s, **%s** leads with %s%s", dn, mv.label(0), formatValue(fm, v), share(fm, v, total, hasTotal, zh))
			}
			var next []string
			for r := 1; r < rows && r < 3; r++ {
				v, _ := mv.value(r, first)
				next = append(next, tr(zh, fmt.Sprintf("%s (%s)", mv.label(r), formatValue(fm, v)), fmt.Sprintf("%s（%s）", mv.label(r), formatValue(fm, v))))
			}
			if len(next) > 0 {
				b.WriteString(tr(zh, ", followed by "+strings.Join(next, " and "), "，其次是 "+strings.Join(next, "、")))
			}
			b.WriteString(tr(zh, ".", "。"))
			if main.Response.GetTruncated() || rows >= main.Args.TopN && main.Args.TopN > 0 {
				b.WriteString(tr(zh, fmt.Sprintf(" The chart shows the top %d.", rows), fmt.Sprintf("图表显示前 %d 名。", rows)))
			}
			b.WriteString("\n")
		}
	case q.Granularity != "" && rows > 0 && q.Dimension == "":
		hi, lo := 0, 0
		for r := 1; r < rows; r++ {
			v, _ := mv.value(r, first)
			h, _ := mv.value(hi, first)
			l, _ := mv.value(lo, first)
			if v > h {
				hi = r
			}
			if v < l {
				lo = r
			}
		}
		h, _ := mv.value(hi, first)
		l, _ := mv.value(lo, first)
		unit := map[string][2]string{"day": {"day", "天"}, "week": {"week", "周"}, "month": {"month", "个月"}}[q.Granularity]
		if zh {
			fmt.Fprintf(&b, "共 %d %s的数据；最高为 %s（%s），最低为 %s（%s）。\n", rows, unit[1], mv.label(hi), formatValue(fm, h), mv.label(lo), formatValue(fm, l))
		} else {
			fmt.Fprintf(&b, "Over %d %ss, the highest %s was %s (%s) and the lowest %s (%s).\n", rows, unit[0], unit[0], mv.label(hi), formatValue(fm, h), mv.label(lo), formatValue(fm, l))
		}
	case q.Granularity != "" && rows > 0:
		b.WriteString(tr(zh, fmt.Sprintf("The chart shows %s per %s for each %s.\n", fm.Label(), q.Granularity, dimName(q.Dimension, false)),
			fmt.Sprintf("图表按%s展示各%s的%s。\n", q.Granularity, dimName(q.Dimension, true), fm.LabelIn(zh))))
	}

	for old, repl := range q.Substituted {
		om, rm := byName[old], byName[repl]
		b.WriteString(tr(zh,
			fmt.Sprintf("\nNote: sales split by %s are measured on order lines (%s, %s) rather than %s (%s): one order can hold goods of several categories, so an order-level amount cannot be split by goods or category.\n",
				dimName(q.Dimension, false), rm.Label(), repl, om.Label(), old),
			fmt.Sprintf("\n说明：按%s拆分的销售额使用订单行金额（%s，%s），而不是 %s（%s）：一个订单可能包含多个类目的商品，订单级金额无法按商品或类目拆分。\n",
				dimName(q.Dimension, true), rm.LabelIn(zh), repl, om.LabelIn(zh), old)))
	}
	if !q.PeriodGiven {
		b.WriteString(tr(zh, fmt.Sprintf("\n(No period was named: I used the last %d days.)\n", DefaultPeriodDays),
			fmt.Sprintf("\n（问题中没有指定时间，默认统计最近%d天。）\n", DefaultPeriodDays)))
	}
	return strings.TrimRight(b.String(), "\n")
}

func pluralDim(d string) string {
	switch d {
	case "goods", "staff", "status":
		return d
	case "category":
		return "categories"
	}
	return d + "s"
}

func share(m MetricInfo, v, total float64, ok, zh bool) string {
	if !m.Additive || !ok || total <= 0 {
		return ""
	}
	return tr(zh, fmt.Sprintf(" (%.1f%% of the total)", v/total*100), fmt.Sprintf("（占 %.1f%%）", v/total*100))
}

// totalsTable is the table of a question without split: metric, value, previous value and
// change.
func totalsTable(id, title string, q Question, byName map[string]MetricInfo, totals, previous *QueryOutcome, zh bool) *chatv2.VisualizationEvent {
	tv := viewOf(totals.Response)
	var pv resultView
	if previous != nil {
		pv = viewOf(previous.Response)
	}
	cols := []string{"metric", "name", "value", "previous", "change_pct"}
	var rows []*structpb.ListValue
	for _, name := range q.Metrics {
		m := byName[name]
		vals := []*structpb.Value{structpb.NewStringValue(m.Label()), structpb.NewStringValue(name)}
		cur, ok := tv.value(0, name)
		if ok {
			vals = append(vals, structpb.NewNumberValue(cur))
		} else {
			vals = append(vals, structpb.NewNullValue())
		}
		prevV, pok := 0.0, false
		if previous != nil {
			prevV, pok = pv.value(0, name)
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
			map[string]any{"field": "metric", "name": tr(zh, "Metric", "指标")},
			map[string]any{"field": "value", "name": tr(zh, "Value", "数值"), "format": "number"},
			map[string]any{"field": "previous", "name": tr(zh, "Previous period", "上一期"), "format": "number"},
			map[string]any{"field": "change_pct", "name": tr(zh, "Change %", "变化 %"), "format": "percent"},
		},
	})
	return &chatv2.VisualizationEvent{Id: id, ChartType: ChartTable, Title: title, Spec: spec, Columns: cols, Rows: rows}
}

// help answers a question without a recognisable metric: what the analyst can answer,
// with examples built from the tenant's metrics and dimensions.
func (a *OfflineAnalyst) help(ctx context.Context, e *emitter, question string, zh bool, metrics []MetricInfo) error {
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
		b.WriteString(tr(zh, "I answer questions about your business metrics, but no metric is defined for your organisation yet. "+
			"An administrator can define metrics (for example GMV or order count) in the analysis settings.",
			"我可以回答业务指标相关的问题，但您的组织还没有定义任何指标。管理员可以在分析设置中定义指标（例如 GMV、订单数）。"))
		if err := streamText(e, b.String()); err != nil {
			return err
		}
		return e.finish("stop")
	}
	b.WriteString(tr(zh, "I answer questions about your business metrics, but I could not tell which metric you mean. ",
		"我可以回答业务指标相关的问题，但没能识别出您问的是哪个指标。"))
	b.WriteString(tr(zh, "Your metrics:\n", "您可以问的指标：\n"))
	metrics = slices.Clone(metrics)
	sort.SliceStable(metrics, func(i, j int) bool { return metrics[i].ID < metrics[j].ID })
	for i, m := range metrics {
		if i >= 12 {
			fmt.Fprintf(&b, tr(zh, "- … and %d more\n", "- ……等共 %d 个\n"), len(metrics))
			break
		}
		words := m.Synonyms
		if len(words) > 4 {
			words = words[:4]
		}
		extra := ""
		if len(words) > 0 {
			extra = tr(zh, " — also: ", " — 也可以说：") + strings.Join(words, ", ")
		}
		fmt.Fprintf(&b, "- **%s** (`%s`)%s\n", m.Label(), m.Name, extra)
	}
	dn := make([]string, len(dims))
	for i, d := range dims {
		dn[i] = dimName(d, zh)
	}
	b.WriteString(tr(zh, "\nSplit them by: ", "\n可按以下维度拆分：") + strings.Join(dn, ", ") +
		tr(zh, "; or per day, week or month; for periods such as yesterday, last 7 days, this month, last month or 2026-10.\n",
			"；也可以按天、周、月查看趋势；时间如：昨天、最近7天、本月、上个月、2026-10。\n"))
	b.WriteString(tr(zh, "\nFor example:\n", "\n例如：\n"))
	for _, ex := range examples(metrics, dims, zh) {
		b.WriteString("- " + ex + "\n")
	}
	if err := streamText(e, strings.TrimRight(b.String(), "\n")); err != nil {
		return err
	}
	return e.finish("stop")
}

// examples builds example questions from the tenant's metrics and dimensions.
func examples(metrics []MetricInfo, dims []string, zh bool) []string {
	word := func(m MetricInfo) string {
		if zh {
			for _, s := range append(append([]string{}, m.Synonyms...), builtinTerms[m.Name]...) {
				if hasHan(s) {
					return s
				}
			}
		}
		return m.Label()
	}
	hasDim := func(d string) bool { return contains(dims, d) }
	var out []string
	pick := func(pred func(MetricInfo) bool) (MetricInfo, bool) {
		for _, m := range metrics {
			if pred(m) {
				return m, true
			}
		}
		return MetricInfo{}, false
	}
	money, ok := pick(func(m MetricInfo) bool { return m.Money && m.Grain == GrainOrder })
	if !ok {
		money = metrics[0]
	}
	if hasDim("shop") {
		out = append(out, tr(zh, fmt.Sprintf("What was %s by shop last 7 days?", word(money)), fmt.Sprintf("最近7天各店铺的%s是多少？", word(money))))
	} else {
		out = append(out, tr(zh, fmt.Sprintf("What was %s last 7 days?", word(money)), fmt.Sprintf("最近7天的%s是多少？", word(money))))
	}
	if line := lineAmountMetric(metrics); line != "" && hasDim("category") {
		out = append(out, tr(zh, "上个月各类目的销售额是多少", "上个月各类目的销售额是多少"))
	}
	if other, ok := pick(func(m MetricInfo) bool { return m.Name != money.Name && !m.Money }); ok {
		out = append(out, tr(zh, fmt.Sprintf("%s by day this month", word(other)), fmt.Sprintf("本月每天的%s", word(other))))
	}
	if units, ok := pick(func(m MetricInfo) bool { return m.Grain == GrainLine && !m.Money }); ok && hasDim("goods") {
		out = append(out, tr(zh, fmt.Sprintf("Top 5 goods by %s last month", word(units)), fmt.Sprintf("上个月%s前5名的商品", word(units))))
	}
	return out
}

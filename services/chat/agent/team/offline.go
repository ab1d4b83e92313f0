// The offline experts: each computes its findings from the semantic layer with
// query_metrics (through the registry, as the caller), without a model.

package team

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	analysisv1 "github.com/shopmind/shopmind/gen/go/shopmind/analysis/v1"
	chatv2 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v2"
	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/agent/charts"
	"github.com/shopmind/shopmind/services/chat/agent/entities"
	"github.com/shopmind/shopmind/services/chat/agent/graph"
	"github.com/shopmind/shopmind/services/chat/agent/period"
	"github.com/shopmind/shopmind/services/chat/agent/plan"
)

// OfflineRunner runs the experts without a model: each expert's fixed analysis over the
// task's period (period phrases of the question grammar; the last 30 days by default)
// and the previous period of the same length.
type OfflineRunner struct {
	analytics agent.Analytics
	tools     *agent.Registry
	now       func() time.Time
}

// NewOfflineRunner returns the runner; tools must hold query_metrics. now nil: time.Now.
func NewOfflineRunner(analytics agent.Analytics, tools *agent.Registry, now func() time.Time) *OfflineRunner {
	if now == nil {
		now = time.Now
	}
	return &OfflineRunner{analytics: analytics, tools: tools, now: now}
}

// TaskPeriod is the period a task names (the last 30 days when it names none).
func TaskPeriod(description string, now time.Time) (period.Period, bool) {
	if p, _, ok := period.Parse(agent.NormalizeText(description), now.UTC()); ok {
		return p, true
	}
	return period.DaysBefore(period.Day(now.UTC()), period.DefaultDays), false
}

// Run implements Runner.
func (o *OfflineRunner) Run(ctx context.Context, env *agent.ToolEnv, x Expert, task Task) (*Finding, error) {
	metrics, err := agent.FetchMetrics(ctx, o.analytics)
	if err != nil {
		return nil, err
	}
	p, _ := TaskPeriod(task.Description, o.now())
	r := &offlineExpert{o: o, ctx: ctx, env: env, x: x, zh: task.ZH, task: task.Description, p: p, prev: p.Previous(), byName: map[string]agent.MetricInfo{}}
	for _, m := range metrics {
		r.byName[m.Name] = m
	}
	switch x.Name {
	case ExpertSales:
		err = r.sales()
	case ExpertGoods:
		err = r.goods()
	case ExpertShops:
		err = r.shops()
	case ExpertPromotion:
		err = r.promotion()
	default:
		return nil, fmt.Errorf("no offline analysis for expert %q", x.Name)
	}
	if err != nil {
		return nil, err
	}
	return &Finding{Text: strings.Join(r.lines, "\n"), Figures: r.figures, Visualizations: r.viz}, nil
}

// offlineExpert is one offline expert's run.
type offlineExpert struct {
	o       *OfflineRunner
	ctx     context.Context
	env     *agent.ToolEnv
	x       Expert
	zh      bool
	task    string
	p, prev period.Period
	byName  map[string]agent.MetricInfo
	lines   []string
	figures []Figure
	viz     []*chatv2.VisualizationEvent
}

func (r *offlineExpert) tr(en, cn string) string { return agent.Tr(r.zh, en, cn) }

// have filters the metric names the tenant has.
func (r *offlineExpert) have(names ...string) []string {
	var out []string
	for _, n := range names {
		if _, ok := r.byName[n]; ok {
			out = append(out, n)
		}
	}
	return out
}

// query runs query_metrics over p.
func (r *offlineExpert) query(p period.Period, metrics []string, dim, granularity string, topN int) (charts.View, error) {
	args := agent.QueryArgs{Metrics: metrics, Granularity: granularity, TopN: topN,
		StartDate: p.Start.Format(time.DateOnly), EndDate: p.LastDay().Format(time.DateOnly)}
	if dim != "" {
		args.Dimensions = []string{dim}
	}
	b, _ := json.Marshal(args)
	_, res, err := r.o.tools.Run(r.ctx, r.env, agent.ToolQueryMetrics, string(b))
	if err != nil {
		return charts.View{}, err
	}
	out, ok := res.Data.(*agent.QueryOutcome)
	if !ok || out.Response == nil {
		return charts.View{}, fmt.Errorf("query_metrics returned no result")
	}
	return charts.ViewOf(out.Response), nil
}

func (r *offlineExpert) figure(p period.Period, metric, dim, label string, v float64) {
	r.figures = append(r.figures, Figure{Metric: metric, Dimension: dim, Label: label, Start: p.Start.Format(time.DateOnly),
		End: p.LastDay().Format(time.DateOnly), Value: v})
}

func (r *offlineExpert) value(metric string, v float64) string {
	return charts.FormatValue(r.byName[metric], v)
}

func (r *offlineExpert) label(metric string) string {
	return fmt.Sprintf("**%s** (%s)", r.byName[metric].LabelIn(r.zh), metric)
}

func (r *offlineExpert) chart(title string, resp charts.View) {
	id := fmt.Sprintf("team-%s-%d", r.x.Name, len(r.viz)+1)
	if v := charts.Build(id, title, resp.Response(), r.byName); v != nil && len(v.GetRows()) > 0 {
		r.viz = append(r.viz, v)
	}
}

func pct(cur, prev float64) string {
	if prev == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%+.1f%%", (cur-prev)/math.Abs(prev)*100)
}

// sales: the period's totals of the sales metrics against the previous period, and the
// trend of the first.
func (r *offlineExpert) sales() error {
	metrics := r.have("gmv", "order_count", "buyers", "avg_order_value")
	if len(metrics) == 0 {
		return fmt.Errorf("the tenant has none of the sales metrics gmv, order_count, buyers, avg_order_value")
	}
	cur, err := r.query(r.p, metrics, "", "", 0)
	if err != nil {
		return err
	}
	prev, perr := r.query(r.prev, metrics, "", "", 0)
	r.lines = append(r.lines, r.tr("Period ", "时间 ")+r.p.Range()+r.tr(", compared with ", "，对比 ")+r.prev.Range()+r.tr(":", "："))
	for _, m := range metrics {
		v, ok := cur.Value(0, m)
		if !ok {
			r.lines = append(r.lines, fmt.Sprintf("- %s: %s", r.label(m), r.tr("no value", "无数据")))
			continue
		}
		r.figure(r.p, m, "", "", v)
		line := fmt.Sprintf("- %s: %s", r.label(m), r.value(m, v))
		if pv, ok := prev.Value(0, m); perr == nil && ok {
			r.figure(r.prev, m, "", "", pv)
			line += fmt.Sprintf(r.tr(" (%s against %s)", "（较上期 %s：%s）"), pct(v, pv), r.value(m, pv))
		}
		r.lines = append(r.lines, line)
	}
	if perr != nil {
		r.lines = append(r.lines, r.tr("- the previous period could not be read: ", "- 上一期数据读取失败：")+agent.ToolErrorMessage(perr))
	}
	gran := "day"
	if r.p.Days() > 62 {
		gran = "week"
	}
	if trend, err := r.query(r.p, metrics[:1], "", gran, 0); err == nil && trend.Rows() > 0 {
		hi, lo := 0, 0
		for i := 0; i < trend.Rows(); i++ {
			v, _ := trend.Value(i, metrics[0])
			if h, _ := trend.Value(hi, metrics[0]); v > h {
				hi = i
			}
			if l, _ := trend.Value(lo, metrics[0]); v < l {
				lo = i
			}
		}
		hv, _ := trend.Value(hi, metrics[0])
		lv, _ := trend.Value(lo, metrics[0])
		r.lines = append(r.lines, fmt.Sprintf(r.tr("- by %s: highest %s on %s, lowest %s on %s", "- 按%s：最高 %s（%s），最低 %s（%s）"),
			gran, r.value(metrics[0], hv), trend.Label(hi), r.value(metrics[0], lv), trend.Label(lo)))
		r.chart(r.byName[metrics[0]].LabelIn(r.zh)+" · "+gran+" · "+r.p.Range(), trend)
	}
	r.drivers(metrics[0])
	return nil
}

// drivers adds what moved the metric between the previous period and the period: the
// members of shop, platform, category and goods that contributed most (the query plan's
// drivers analysis, as the chat answers "why did GMV change").
func (r *offlineExpert) drivers(metric string) {
	var metrics []agent.MetricInfo
	for _, m := range r.byName {
		metrics = append(metrics, m)
	}
	p := plan.Plan{Analysis: plan.Drivers, Metrics: []string{metric},
		CompareStart: r.prev.Start.Format(time.DateOnly), CompareEnd: r.prev.LastDay().Format(time.DateOnly)}
	p.SetPeriod(r.p)
	x := &plan.Executor{Analytics: r.o.analytics, Metrics: metrics}
	res, err := x.Execute(r.ctx, p)
	if err != nil {
		r.note(r.tr("drivers", "变化原因"), err)
		return
	}
	rd := plan.Renderer{ByName: r.byName, ZH: r.zh}
	text := rd.Narrative(res)
	if i := strings.Index(text, "\n- "); i >= 0 { // the drivers' lines, without the totals
		for _, line := range strings.Split(text[i+1:], "\n") {
			if strings.HasPrefix(line, "- ") {
				r.lines = append(r.lines, r.tr("- change ", "- 变化")+strings.TrimPrefix(line, "- "))
			}
		}
	}
}

// leaders writes the top rows of a split with their share of total (when known).
func (r *offlineExpert) leaders(v charts.View, metric, dim string, n int, total float64) {
	for i := 0; i < v.Rows() && i < n; i++ {
		x, ok := v.Value(i, metric)
		if !ok {
			continue
		}
		label := v.Label(i)
		if _, err := strconv.Atoi(label); err == nil {
			label = dim + " #" + label // a dimension without a name column: its id
		}
		r.figure(r.p, metric, dim, label, x)
		line := fmt.Sprintf("  %d. %s: %s", i+1, label, r.value(metric, x))
		if total > 0 && r.byName[metric].Additive {
			line += fmt.Sprintf(" (%.1f%%)", x/total*100)
		}
		r.lines = append(r.lines, line)
	}
}

// split writes the leaders of metric by dim over the period, with the period's total.
func (r *offlineExpert) split(metric, dim string, n int, chartIt bool) error {
	v, err := r.query(r.p, []string{metric}, dim, "", 50)
	if err != nil {
		return err
	}
	tot, err := r.query(r.p, []string{metric}, "", "", 0)
	if err != nil {
		return err
	}
	total, _ := tot.Value(0, metric)
	r.figure(r.p, metric, "", "", total)
	r.lines = append(r.lines, fmt.Sprintf(r.tr("- %s by %s, %s (total %s):", "- %s 按%s，%s（合计 %s）："), r.label(metric), dim, r.p.Range(), r.value(metric, total)))
	r.leaders(v, metric, dim, n, total)
	if chartIt {
		r.chart(r.byName[metric].LabelIn(r.zh)+r.tr(" by "+dim, " · 按"+dim)+" · "+r.p.Range(), v)
	}
	return nil
}

// goods: sales by category and the best-selling goods.
func (r *offlineExpert) goods() error {
	amount := r.have("line_amount")
	units := r.have("units_sold")
	if len(amount)+len(units) == 0 {
		return fmt.Errorf("the tenant has neither line_amount nor units_sold")
	}
	if len(amount) > 0 {
		if err := r.split(amount[0], "category", 5, true); err != nil {
			return err
		}
	}
	if len(units) > 0 {
		if err := r.split(units[0], "goods", 5, false); err != nil {
			return err
		}
	}
	return nil
}

// shops: the shops by sales and orders; the staff when the semantic layer can split by
// staff.
func (r *offlineExpert) shops() error {
	ms := r.have("gmv", "order_count")
	if len(ms) == 0 {
		return fmt.Errorf("the tenant has neither gmv nor order_count")
	}
	for i, m := range ms {
		if err := r.split(m, "shop", 5, i == 0); err != nil {
			return err
		}
	}
	// staff: only when the catalog (get_database_info) has the dimension; then the first
	// metric the semantic layer can split by staff (an order-level amount may have no join
	// path to the staff)
	if res, ok, err := r.run(agent.ToolGetDatabaseInfo, map[string]any{}); ok && err == nil {
		if cat, _ := res.Data.(*analysisv1.GetCatalogResponse); cat != nil && !slices.ContainsFunc(cat.GetDimensions(),
			func(d *analysisv1.CatalogDimension) bool { return d.GetName() == "staff" }) {
			r.lines = append(r.lines, r.tr("- by staff member: the catalog has no staff dimension", "- 按员工：数据目录中没有员工维度"))
			return nil
		}
	}
	var err error
	for _, m := range r.have("line_amount", "units_sold", "gmv") {
		var v charts.View
		if v, err = r.query(r.p, []string{m}, "staff", "", 5); err == nil {
			r.lines = append(r.lines, fmt.Sprintf(r.tr("- %s by staff member:", "- %s 按员工："), r.label(m)))
			r.leaders(v, m, "staff", 5, 0)
			return nil
		}
	}
	if err != nil {
		r.lines = append(r.lines, r.tr("- by staff member: not available (", "- 按员工：无法计算（")+agent.ToolErrorMessage(err)+r.tr(")", "）"))
	}
	return nil
}

type goodsMove struct {
	label     string
	cur, prev float64
}

// promotion: goods whose units sold fell most against the previous period, and the
// slowest movers: candidates for a promotion.
func (r *offlineExpert) promotion() error {
	units := r.have("units_sold")
	if len(units) == 0 {
		return fmt.Errorf("the tenant has no units_sold metric")
	}
	m := units[0]
	cur, err := r.query(r.p, units, "goods", "", 200)
	if err != nil {
		return err
	}
	prev, err := r.query(r.prev, units, "goods", "", 200)
	if err != nil {
		return err
	}
	before := map[string]float64{}
	for i := 0; i < prev.Rows(); i++ {
		before[prev.Label(i)], _ = prev.Value(i, m)
	}
	var moves []goodsMove
	for i := 0; i < cur.Rows(); i++ {
		v, _ := cur.Value(i, m)
		moves = append(moves, goodsMove{label: cur.Label(i), cur: v, prev: before[cur.Label(i)]})
	}
	falling := slices.DeleteFunc(slices.Clone(moves), func(g goodsMove) bool { return !(g.prev > 0 && g.cur < g.prev) })
	sort.SliceStable(falling, func(i, j int) bool { return falling[i].cur-falling[i].prev < falling[j].cur-falling[j].prev })
	r.lines = append(r.lines, fmt.Sprintf(r.tr("- %s falling most against %s:", "- %s 较上期（%s）下降最多："), r.label(m), r.prev.Range()))
	if len(falling) == 0 {
		r.lines = append(r.lines, r.tr("  none: no goods sold fewer units than in the previous period", "  无：没有商品销量下降"))
	}
	for i, g := range falling[:min(3, len(falling))] {
		r.figure(r.p, m, "goods", g.label, g.cur)
		r.figure(r.prev, m, "goods", g.label, g.prev)
		r.lines = append(r.lines, fmt.Sprintf("  %d. %s: %s (%s, %s)", i+1, g.label, r.value(m, g.cur), pct(g.cur, g.prev), r.value(m, g.prev)))
	}
	slow := slices.Clone(moves)
	sort.SliceStable(slow, func(i, j int) bool { return slow[i].cur < slow[j].cur })
	r.lines = append(r.lines, r.tr("- slowest movers of the period:", "- 本期销量最低："))
	for i, g := range slow[:min(3, len(slow))] {
		r.figure(r.p, m, "goods", g.label, g.cur)
		r.lines = append(r.lines, fmt.Sprintf("  %d. %s: %s", i+1, g.label, r.value(m, g.cur)))
	}
	if len(falling) == 0 {
		return nil
	}
	top := falling[0]
	r.lines = append(r.lines, fmt.Sprintf(r.tr("- suggestion: a promotion for %s", "- 建议：为 %s 做一次促销"), top.label))
	r.promotionPlan(top, m)
	return nil
}

var planWords = regexp.MustCompile(`\b(plans?|planning|create|draft|set up)\b|计划|方案|制定|创建`)

// run calls a tool of the registry when it is there; ok is false when it is not.
func (r *offlineExpert) run(tool string, args any) (*agent.ToolResult, bool, error) {
	if _, ok := r.o.tools.Get(tool); !ok {
		return nil, false, nil
	}
	b, _ := json.Marshal(args)
	_, res, err := r.o.tools.Run(r.ctx, r.env, tool, string(b))
	return res, true, err
}

// note adds a line for a step that could not be taken.
func (r *offlineExpert) note(what string, err error) {
	r.lines = append(r.lines, fmt.Sprintf(r.tr("- %s: not available (%s)", "- %s：无法完成（%s）"), what, agent.ToolErrorMessage(err)))
}

// promotionPlan finds the suggested goods among the tenant's entities, the goods bought
// with it in the knowledge graph, and, when the task asks for a plan, creates the plan
// template and its execution plan.
func (r *offlineExpert) promotionPlan(top goodsMove, metric string) {
	res, ok, err := r.run(ToolSearchEntities, map[string]any{"query": top.label, "top_k": 1, "kinds": []string{"goods"}})
	if !ok {
		return
	}
	if err != nil {
		r.note(ToolSearchEntities, err)
		return
	}
	found, _ := res.Data.([]entities.Entity)
	if len(found) == 0 || found[0].Name != top.label {
		r.lines = append(r.lines, fmt.Sprintf(r.tr("  (%s is not among the goods of the basic data)", "  （基础数据中没有 %s）"), top.label))
		return
	}
	g := found[0]
	r.lines = append(r.lines, fmt.Sprintf(r.tr("  goods id %d, item number %s, %s, %s", "  商品 ID %d，货号 %s，%s，%s"), g.ID, g.ItemNo, g.CategoryPath, g.Shop))
	if res, ok, err := r.run(ToolSearchKnowledgeGraph, map[string]any{"keyword": fmt.Sprintf("goods:%d", g.ID), "limit": 1, "depth": 1}); ok && err != nil {
		r.note(ToolSearchKnowledgeGraph, err)
	} else if ok {
		if sub, _ := res.Data.(*graph.Result); sub != nil {
			names := map[string]string{}
			for _, n := range sub.Nodes {
				names[n.ID] = n.Name
			}
			var with []string
			for _, e := range sub.Edges {
				other := e.To
				if other == fmt.Sprintf("goods:%d", g.ID) {
					other = e.From
				}
				if e.Kind == graph.EdgeBoughtWith && len(with) < 3 {
					with = append(with, fmt.Sprintf(r.tr("%s (%g orders)", "%s（%g 单）"), names[other], e.Weight))
				}
			}
			if len(with) > 0 {
				r.lines = append(r.lines, r.tr("  often bought with: ", "  常一起购买：")+strings.Join(with, ", "))
			}
		}
	}
	if !planWords.MatchString(agent.NormalizeText(r.task)) {
		return
	}
	analysis := fmt.Sprintf("%s: %s %s in %s against %s in %s (%s).", top.label, r.value(metric, top.cur), metric, r.p.Range(),
		r.value(metric, top.prev), r.prev.Range(), pct(top.cur, top.prev))
	res, ok, err = r.run(ToolCreatePromotionPlan, map[string]any{"analysis_result": analysis, "product_id": g.ID, "discount_rate": 0.1,
		"goal": fmt.Sprintf("Bring %s back to %s units a period", top.label, r.value(metric, top.prev)), "metrics": []string{metric}})
	if !ok {
		return
	}
	if err != nil {
		r.note(ToolCreatePromotionPlan, err)
		return
	}
	tid, _ := res.JSON.(map[string]any)["template_id"].(int64)
	r.lines = append(r.lines, fmt.Sprintf(r.tr("- plan: promotion plan template %d (draft, 10%% off, %s)", "- 计划：促销计划模板 %d（草稿，9 折，%s）"), tid, res.Summary))
	res, ok, err = r.run(ToolPromotionStrategy, map[string]any{"template_id": tid, "strategy_info": map[string]any{
		"name": top.label + " · recovery", "channel": "all", "actions": []string{"10% off the goods", "feature it beside the goods bought with it"}}})
	switch {
	case !ok:
	case err != nil:
		r.note(ToolPromotionStrategy, err)
	default:
		r.lines = append(r.lines, fmt.Sprintf(r.tr("- execution: %s (planned)", "- 执行：%s（待执行）"), res.Summary))
	}
}

// The offline analyst's question parser: metrics, dimension, granularity, period and top-N
// of a question in English or Chinese, and the grain rule.

package offline

import (
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/agent/period"
)

// Question is what the offline analyst understood of a message.
type Question struct {
	Text string
	// ZH is true for questions written in Chinese (the answer follows).
	ZH bool
	// Metrics are the metric names found, in the order the question names them.
	Metrics []string
	// Terms are the words that named each metric.
	Terms map[string]string
	// Dimension is shop, goods, category, staff, platform, status or "".
	Dimension string
	// Granularity is day, week, month or "" (no time series).
	Granularity string
	// Period is the analysed period; PeriodGiven is false when the default was taken.
	Period      period.Period
	PeriodGiven bool
	// TopN is the number of leaders asked for (0: not asked).
	TopN int
	// Substituted records metric replacements (gmv -> line_amount by category), old -> new.
	Substituted map[string]string
	// Rest is the text left when the period, metric, granularity and dimension words are
	// taken out (what a vector search for an unknown metric word should see).
	Rest string
}

// builtinTerms are words for the demo metric names, used when the tenant has a metric of
// that name (its own display name and synonyms are always used).
var builtinTerms = map[string][]string{
	"gmv": {"gmv", "sales", "revenue", "turnover", "sell", "sold", "selling", "earn", "earned", "made", "make", "bring in", "brought in",
		"takings", "income", "成交了多少", "一共成交",
		"how are we doing", "how did we do", "how is business", "how's business", "生意怎么样", "卖得怎么样",
		"卖了多少", "卖得", "卖的", "收入", "流水", "gross merchandise value", "sales amount", "销售额", "成交额", "营业额",
		"交易额", "销售金额", "成交金额", "营收", "业绩", "卖了多少钱"},
	"order_count": {"orders", "order count", "number of orders", "order volume", "how many orders", "订单数", "订单量",
		"单量", "订单", "下单数", "多少单"},
	"units_sold": {"units sold", "units", "items sold", "quantity sold", "sales volume", "pieces sold", "销量", "件数",
		"销售量", "卖了多少件", "销售件数"},
	"line_amount": {"line amount", "goods sales", "product sales", "line sales", "商品销售额", "商品金额", "商品成交额"},
	"buyers": {"buyers", "customers", "number of buyers", "number of customers", "shoppers", "买家数", "客户数", "买家",
		"客户", "顾客", "购买人数", "下单人数"},
	"refunded_orders": {"refunded orders", "refunds", "refund", "refund count", "number of refunds", "orders refunded", "refunded",
		"退款订单", "退款单", "退款笔数", "退款的订单", "退款单数", "退款数", "退款"},
	"refund_amount": {"refund amount", "refunded amount", "amount refunded", "money refunded", "refund value", "value of refunds",
		"退款金额", "退款额", "退了多少钱", "退款总额"},
	"refund_rate": {"refund rate", "return rate", "refund ratio", "rate of refunds", "退款率", "退货率", "退款比例"},
	"cancelled_orders": {"cancelled orders", "canceled orders", "cancellations", "cancellation count", "cancellation", "cancelled", "canceled", "cancel",
		"取消订单", "取消的订单", "取消单", "取消"},
	"avg_order_value": {"average order value", "avg order value", "aov", "basket size", "客单价", "平均订单金额", "平均客单价"},
}

// dimensionTerms name the catalog's dimensions.
var dimensionTerms = map[string][]string{
	"shop": {"shop", "shops", "store", "stores", "storefront", "店铺", "门店", "商店", "网店", "各店", "每个店", "每家店", "哪家店",
		"哪个店", "的店"},
	"goods": {"goods", "product", "products", "item", "items", "sku", "skus", "商品", "单品", "产品", "货品", "宝贝"},
	"category": {"category", "categories", "类目", "品类", "分类", "类别",
		"product category", "product categories", "商品类目", "商品分类", "商品品类", "产品类别"},
	"root_category": {"top-level category", "top-level categories", "top level category", "top level categories",
		"root category", "root categories", "main category", "main categories", "一级类目", "一级分类", "一级品类", "顶级类目", "大类"},
	"staff":    {"staff", "employee", "employees", "salesperson", "salespeople", "员工", "店员", "负责人", "业务员"},
	"platform": {"platform", "platforms", "channel", "channels", "marketplace", "marketplaces", "平台", "渠道"},
	"status":   {"status", "statuses", "order status", "状态", "订单状态"},
}

var granularityTerms = map[string][]string{
	"day":  {"by day", "per day", "each day", "daily", "day by day", "every day", "每天", "每日", "按天", "按日", "逐日", "日趋势", "分天"},
	"week": {"by week", "per week", "each week", "weekly", "every week", "每周", "按周", "逐周", "周趋势", "分周"},
	"month": {"by month", "per month", "each month", "monthly", "every month", "month-by-month", "month by month", "每月", "按月", "逐月", "月趋势",
		"分月", "每个月", "各月", "月度"},
	"auto": {"trend", "trends", "over time", "time series", "趋势", "走势", "变化情况"},
}

// granularityRefs and allDimRefs are the granularity and dimension words, longest first.
var (
	granularityRefs = func() []termRef {
		var refs []termRef
		for _, g := range []string{"day", "week", "month", "auto"} {
			for _, term := range granularityTerms[g] {
				refs = append(refs, termRef{term, g})
			}
		}
		sort.SliceStable(refs, func(i, j int) bool { return len(refs[i].term) > len(refs[j].term) })
		return refs
	}()
	allDimRefs = dimRefs(allDims)
)

func dimRefs(dims []string) []termRef {
	var refs []termRef
	for _, d := range dims {
		for _, term := range dimensionTerms[d] {
			refs = append(refs, termRef{term, d})
		}
	}
	sort.SliceStable(refs, func(i, j int) bool { return len(refs[i].term) > len(refs[j].term) })
	return refs
}

func isWordByte(b byte) bool { return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '_' }

// findTerm returns the byte offsets of term in text that are not masked and, for terms
// starting or ending with an ASCII letter, stand at word boundaries.
func findTerm(text, term string, masked []bool) []int {
	var out []int
	if term == "" {
		return nil
	}
	for from := 0; from < len(text); {
		i := strings.Index(text[from:], term)
		if i < 0 {
			break
		}
		i += from
		from = i + 1
		end := i + len(term)
		if isWordByte(term[0]) && i > 0 && isWordByte(text[i-1]) {
			continue
		}
		if isWordByte(term[len(term)-1]) && end < len(text) && isWordByte(text[end]) {
			continue
		}
		free := true
		for k := i; k < end; k++ {
			if masked[k] {
				free = false
				break
			}
		}
		if free {
			out = append(out, i)
		}
	}
	return out
}

func mask(masked []bool, from, to int) {
	for k := from; k < to && k < len(masked); k++ {
		masked[k] = true
	}
}

type termRef struct {
	term, target string
}

// matchTerms finds the targets named in text, longest terms first (so 商品销售额 wins over
// 销售额), masking what they cover. It returns targets in text order with the term used.
func matchTerms(text string, masked []bool, refs []termRef) ([]string, map[string]string) {
	longer := func(i, j int) bool { return len(refs[i].term) > len(refs[j].term) }
	if !sort.SliceIsSorted(refs, longer) {
		sort.SliceStable(refs, longer)
	}
	type hit struct {
		pos          int
		target, term string
	}
	var hits []hit
	for _, r := range refs {
		for _, pos := range findTerm(text, r.term, masked) {
			hits = append(hits, hit{pos, r.target, r.term})
			mask(masked, pos, pos+len(r.term))
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].pos < hits[j].pos })
	var order []string
	terms := map[string]string{}
	for _, h := range hits {
		if _, ok := terms[h.target]; !ok {
			order = append(order, h.target)
			terms[h.target] = h.term
		}
	}
	return order, terms
}

func metricRefs(metrics []agent.MetricInfo) []termRef {
	var refs []termRef
	add := func(term, target string) {
		term = strings.TrimSpace(agent.FoldText(term))
		if term != "" {
			refs = append(refs, termRef{term, target})
		}
	}
	for _, m := range metrics {
		add(m.Name, m.Name)
		if strings.Contains(m.Name, "_") {
			add(strings.ReplaceAll(m.Name, "_", " "), m.Name)
		}
		add(m.DisplayName, m.Name)
		for _, s := range m.Synonyms {
			add(s, m.Name)
		}
		for _, s := range builtinTerms[m.Name] {
			add(s, m.Name)
		}
	}
	return refs
}

var (
	spaceRun  = regexp.MustCompile(`\s+`)
	topNRE    = regexp.MustCompile(`\btop\s*-?\s*` + period.NumberRE + `\b|\b` + period.NumberRE + `\s+(?:best|top|largest|biggest|highest|leading)\b|(?:排名前|前)\s*` + period.ChineseNumberRE + `\s*(?:名|个|位|大|款|家|种|类)?`)
	maxTopN   = 100
	allDims   = []string{"shop", "goods", "category", "root_category", "staff", "platform", "status"}
	autoGrain = "auto"
)

// periodAfter is true when rest starts with a unit of time: "前一个月" is the month before,
// not the top one.
func periodAfter(rest string) bool {
	rest = strings.TrimSpace(rest)
	for _, u := range []string{"月", "周", "星期", "年", "季", "天", "日", "期"} {
		if strings.HasPrefix(rest, u) {
			return true
		}
	}
	return false
}

// ParseQuestion reads a metric question in English or Chinese: the metrics (the tenant's
// names, display names and synonyms, and built-in words for the demo metric names), the
// dimension, the time granularity, the period (relative to now, in UTC) and a top-N.
// dims limits the dimensions recognised (nil: all six named dimensions).
func ParseQuestion(text string, now time.Time, metrics []agent.MetricInfo, dims []string) Question {
	t := agent.NormalizeText(text)
	p, span, ok := period.Parse(t, now)
	return parseQuestion(text, t, periodHit{p, span, ok}, metricRefs(metrics), metrics, dims)
}

// periodHit is a period found in a text, with its span.
type periodHit struct {
	p    period.Period
	span [2]int
	ok   bool
}

// parseQuestion is ParseQuestion on the normalized text t whose period was found already
// (spans of t).
func parseQuestion(text, t string, ph periodHit, refs []termRef, metrics []agent.MetricInfo, dims []string) Question {
	q := Question{Text: text, ZH: agent.HasHan(text), Terms: map[string]string{}}
	masked := make([]bool, len(t))

	// periods first: dates hold digits a top-N would take
	p, span, ok := ph.p, ph.span, ph.ok
	q.Period, q.PeriodGiven = p, ok
	if ok {
		mask(masked, span[0], span[1])
	}

	q.Metrics, q.Terms = matchTerms(t, masked, refs)

	if gs, _ := matchTerms(t, masked, granularityRefs); len(gs) > 0 {
		q.Granularity = gs[0]
	}

	if dims == nil {
		dims = allDims
	}
	drefs := allDimRefs
	if !slices.Equal(dims, allDims) {
		drefs = dimRefs(dims)
	}
	if ds, _ := matchTerms(t, masked, drefs); len(ds) > 0 {
		q.Dimension = ds[0]
	}

	free := []byte(t)
	for i := range free {
		if masked[i] {
			free[i] = ' '
		}
	}
	q.Rest = strings.TrimSpace(spaceRun.ReplaceAllString(string(free), " "))
	if loc := topNRE.FindStringSubmatchIndex(string(free)); loc != nil && !periodAfter(string(free)[loc[1]:]) {
		m := make([]string, len(loc)/2)
		for i := range m {
			if loc[2*i] >= 0 {
				m[i] = string(free)[loc[2*i]:loc[2*i+1]]
			}
		}
		for _, g := range m[1:] {
			if n, ok := period.ParseNumber(g); ok && g != "" && n > 0 {
				q.TopN = min(n, maxTopN)
				break
			}
		}
	}
	if q.Granularity == autoGrain {
		switch d := q.Period.Days(); {
		case d <= 62:
			q.Granularity = "day"
		case d <= 182:
			q.Granularity = "week"
		default:
			q.Granularity = "month"
		}
	}
	return q
}

// ApplyGrainRule replaces metrics that cannot be split by the question's dimension: an
// order-level money metric (gmv, "销售额") split by goods or category becomes the tenant's
// order-line amount metric (line_amount, "商品销售额"), because one order holds goods of
// several categories and only its lines carry goods and category.
func (q *Question) ApplyGrainRule(metrics []agent.MetricInfo) {
	if q.Dimension != "goods" && q.Dimension != "category" && q.Dimension != "root_category" {
		return
	}
	byName := map[string]agent.MetricInfo{}
	for _, m := range metrics {
		byName[m.Name] = m
	}
	line := lineAmountMetric(metrics)
	if line == "" {
		return
	}
	out := make([]string, 0, len(q.Metrics))
	for _, name := range q.Metrics {
		m := byName[name]
		if m.Grain == agent.GrainOrder && m.Money && m.Additive {
			if q.Substituted == nil {
				q.Substituted = map[string]string{}
			}
			q.Substituted[name] = line
			name = line
		}
		if !contains(out, name) {
			out = append(out, name)
		}
	}
	q.Metrics = out
}

// lineAmountMetric is the tenant's order-line money metric: line_amount when defined,
// otherwise the first additive money metric at line grain.
func lineAmountMetric(metrics []agent.MetricInfo) string {
	for _, m := range metrics {
		if m.Name == "line_amount" {
			return m.Name
		}
	}
	for _, m := range metrics {
		if m.Grain == agent.GrainLine && m.Money && m.Additive {
			return m.Name
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

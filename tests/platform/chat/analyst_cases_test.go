//go:build platform

package chat

import (
	"fmt"
	"math"
	"sort"
	"time"
)

type span struct{ s, e time.Time }

// val: the metric's value over p (the gold answers of both question sets are built from
// these; each is computed by SQL when its case runs).
func (g *gold) val(metric string, ws []where, p span) func() []string {
	return func() []string { return []string{g.value(metric, ws, p.s, p.e)} }
}

// two: the metric's values over a and b.
func (g *gold) two(metric string, ws []where, a, b span) func() []string {
	return func() []string { return []string{g.value(metric, ws, a.s, a.e), g.value(metric, ws, b.s, b.e)} }
}

// rank: the first member of a ranking (lowest first with asc), with its value.
func (g *gold) rank(metric, dim string, ws []where, p span, asc bool) func() []string {
	return func() []string {
		r := g.rows(metric, dim, ws, p.s, p.e)
		if len(r) == 0 {
			return []string{"no rows in gold"}
		}
		m := r[0]
		if asc {
			m = r[len(r)-1]
		}
		return []string{m.label, g.fmt(metric, m.value)}
	}
}

// topN: the first n members of a ranking.
func (g *gold) topN(metric, dim string, ws []where, p span, n int) func() []string {
	return func() []string {
		r := g.rows(metric, dim, ws, p.s, p.e)
		var out []string
		for i := 0; i < n && i < len(r); i++ {
			out = append(out, r[i].label, g.fmt(metric, r[i].value))
		}
		return out
	}
}

// shares: every member with its share of the total.
func (g *gold) shares(metric, dim string, ws []where, p span) func() []string {
	return func() []string {
		r := g.rows(metric, dim, ws, p.s, p.e)
		total := 0.0
		for _, m := range r {
			total += m.value
		}
		var out []string
		for _, m := range r {
			out = append(out, m.label, fmt.Sprintf("%.1f%%", m.value/total*100))
		}
		return out
	}
}

// evalCases are the suite's questions with their gold answers.
func evalCases(g *gold) []evalCase {
	today := g.today
	monthStart := time.Date(today.Year(), today.Month(), 1, 0, 0, 0, 0, time.UTC)
	qStart := time.Date(today.Year(), time.Month((int(today.Month())-1)/3*3+1), 1, 0, 0, 0, 0, time.UTC)
	recentMonth := func(m time.Month) span {
		y := today.Year()
		if m > today.Month() {
			y--
		}
		s := time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
		return span{s, s.AddDate(0, 1, 0)}
	}
	var (
		last7      = span{today.AddDate(0, 0, -7), today}
		last15     = span{today.AddDate(0, 0, -15), today}
		last30     = span{today.AddDate(0, 0, -30), today}
		last90     = span{today.AddDate(0, 0, -90), today}
		lastMonth  = span{monthStart.AddDate(0, -1, 0), monthStart}
		prevMonth  = span{monthStart.AddDate(0, -2, 0), monthStart.AddDate(0, -1, 0)}
		thisMonth  = span{monthStart, today.AddDate(0, 0, 1)}
		lastQ      = span{qStart.AddDate(0, -3, 0), qStart}
		prevQ      = span{qStart.AddDate(0, -6, 0), qStart.AddDate(0, -3, 0)}
		thisQ      = span{qStart, today.AddDate(0, 0, 1)}
		ytd        = span{time.Date(today.Year(), 1, 1, 0, 0, 0, 0, time.UTC), today.AddDate(0, 0, 1)}
		yesterday  = span{today.AddDate(0, 0, -1), today}
		september  = recentMonth(time.September)
		october    = recentMonth(time.October)
		q3         = span{time.Date(today.Year(), 7, 1, 0, 0, 0, 0, time.UTC), time.Date(today.Year(), 10, 1, 0, 0, 0, 0, time.UTC)}
		lastMonthY = span{lastMonth.s.AddDate(-1, 0, 0), lastMonth.e.AddDate(-1, 0, 0)}
	)
	_ = lastMonthY
	const (
		trend   = "潮流服饰旗舰店 Trend Apparel Flagship"
		home    = "家居生活旗舰店 Home Living Flagship"
		digital = "数码京东自营店 Digital JD Store"
		beauty  = "美妆个护专营店 Beauty Specialty Store"
		deals   = "好物拼团店 Daily Deals Group Store"
	)
	shopW := func(names ...string) []where { return []where{{dim: "shop", values: names}} }
	platW := func(p ...string) []where { return []where{{dim: "platform", values: p}} }
	catW := func(c ...string) []where { return []where{{dim: "category", values: c}} }
	notShop := func(names ...string) []where { return []where{{dim: "shop", values: names, exclude: true}} }
	notPlat := func(p ...string) []where { return []where{{dim: "platform", values: p, exclude: true}} }

	val, two, rank, topN, shares := g.val, g.two, g.rank, g.topN, g.shares
	// the member whose metric grew (fell, with down) most between b and a, in percent
	growth := func(metric, dim string, a, b span, down bool) func() []string {
		return func() []string {
			cur, prev := g.rows(metric, dim, nil, a.s, a.e), g.rows(metric, dim, nil, b.s, b.e)
			pv := map[string]float64{}
			for _, m := range prev {
				pv[m.label] = m.value
			}
			type ch struct {
				label string
				pct   float64
			}
			var cs []ch
			for _, m := range cur {
				if p := pv[m.label]; p != 0 {
					cs = append(cs, ch{m.label, (m.value - p) / math.Abs(p)})
				}
			}
			sort.Slice(cs, func(i, j int) bool {
				if down {
					return cs[i].pct < cs[j].pct
				}
				return cs[i].pct > cs[j].pct
			})
			if len(cs) == 0 {
				return []string{"no rows in gold"}
			}
			return []string{cs[0].label}
		}
	}
	// the member of dim that moved the total most, in the direction of the total's change
	driver := func(metric, dim string, a, b span) func() []string {
		return func() []string {
			cur, prev := g.rows(metric, dim, nil, a.s, a.e), g.rows(metric, dim, nil, b.s, b.e)
			d := map[string]float64{}
			total := 0.0
			for _, m := range cur {
				d[m.label] += m.value
				total += m.value
			}
			for _, m := range prev {
				d[m.label] -= m.value
				total -= m.value
			}
			best, bv := "", 0.0
			for l, v := range d {
				if total >= 0 && v > bv || total < 0 && v < bv {
					best, bv = l, v
				}
			}
			return []string{best}
		}
	}
	// the months of a series with their values
	series := func(metric string, ws []where, months ...span) func() []string {
		return func() []string {
			var out []string
			for _, m := range months {
				out = append(out, m.s.Format("2006-01"), g.value(metric, ws, m.s, m.e))
			}
			return out
		}
	}
	// members whose metric is above (below with lt) the threshold
	listing := func(metric, dim string, p span, threshold float64, lt bool) func() []string {
		return func() []string {
			var out []string
			for _, m := range g.rows(metric, dim, nil, p.s, p.e) {
				if lt && m.value < threshold || !lt && m.value > threshold {
					out = append(out, m.label)
				}
			}
			if len(out) == 0 {
				out = append(out, "0 ")
			}
			return out
		}
	}
	clarify := func(words ...string) func() []string { return func() []string { return words } }
	months := func(n int) []span {
		var out []span
		for i := n; i >= 1; i-- {
			out = append(out, span{monthStart.AddDate(0, -i, 0), monthStart.AddDate(0, -i+1, 0)})
		}
		return out
	}

	cs := []evalCase{
		// totals, the verbs merchants use
		{q: "How much did I sell last month?", want: val("gmv", nil, lastMonth)},
		{q: "上个月卖了多少钱？", want: val("gmv", nil, lastMonth)},
		{q: "What was my revenue in the last 7 days?", want: val("gmv", nil, last7)},
		{q: "最近7天的销售额", want: val("gmv", nil, last7)},
		{q: "How many orders did we get yesterday?", want: val("order_count", nil, yesterday)},
		{q: "昨天有多少单", want: val("order_count", nil, yesterday)},
		{q: "How many units did we sell in the last 30 days?", want: val("units_sold", nil, last30)},
		{q: "近30天销量是多少", want: val("units_sold", nil, last30)},
		{q: "How many customers bought from us last month?", want: val("buyers", nil, lastMonth)},
		{q: "上个月有多少买家下单", want: val("buyers", nil, lastMonth)},
		{q: "What is our average order value this month?", want: val("avg_order_value", nil, thisMonth)},
		{q: "本月客单价多少", want: val("avg_order_value", nil, thisMonth)},
		{q: "Total sales year to date", want: val("gmv", nil, ytd)},
		{q: "今年以来的成交额", want: val("gmv", nil, ytd)},
		{q: "GMV for the last 15 days", want: val("gmv", nil, last15)},
		{q: "近15天的GMV", want: val("gmv", nil, last15)},
		{q: "What were sales in September?", want: val("gmv", nil, september)},
		{q: "9月份的销售额是多少", want: val("gmv", nil, september)},
		{q: "Orders in October", want: val("order_count", nil, october)},
		{q: "10月订单量", want: val("order_count", nil, october)},
		// named quarters and quarter comparisons
		{q: "What was revenue last quarter?", want: val("gmv", nil, lastQ)},
		{q: "上季度的营业额", want: val("gmv", nil, lastQ)},
		{q: "How many orders in Q3?", want: val("order_count", nil, q3)},
		{q: "第三季度订单数", want: val("order_count", nil, q3)},
		{q: "Sales this quarter so far", want: val("gmv", nil, thisQ)},
		{q: "本季度销售额", want: val("gmv", nil, thisQ)},
		{q: "Compare sales this quarter vs last quarter", want: two("gmv", nil, thisQ, lastQ)},
		{q: "本季度和上季度的销售额对比", want: two("gmv", nil, thisQ, lastQ)},
		{q: "How did orders in Q3 compare with Q2?", want: two("order_count", nil, q3, span{q3.s.AddDate(0, -3, 0), q3.s})},
		{q: "last quarter vs the quarter before: units sold", want: two("units_sold", nil, lastQ, prevQ)},
		// filters on a shop, a platform, a category
		{q: "What were the sales of Trend Apparel Flagship last month?", want: val("gmv", shopW(trend), lastMonth)},
		{q: "潮流服饰旗舰店上个月的销售额", want: val("gmv", shopW(trend), lastMonth)},
		{q: "How many orders did the Home Living store get in the last 30 days?", want: val("order_count", shopW(home), last30)},
		{q: "家居生活旗舰店近30天订单数", want: val("order_count", shopW(home), last30)},
		{q: "Revenue on Tmall last month", want: val("gmv", platW("tmall"), lastMonth)},
		{q: "天猫上个月的成交额", want: val("gmv", platW("tmall"), lastMonth)},
		{q: "How much did we sell on JD in October?", want: val("gmv", platW("jd"), october)},
		{q: "京东10月份卖了多少", want: val("gmv", platW("jd"), october)},
		{q: "Orders from Pinduoduo in the last 7 days", want: val("order_count", platW("pdd"), last7)},
		{q: "拼多多最近7天订单数", want: val("order_count", platW("pdd"), last7)},
		{q: "Units sold of T-Shirt last month", want: val("units_sold", catW("T恤 T-Shirt"), lastMonth)},
		{q: "上个月T恤卖了多少件", want: val("units_sold", catW("T恤 T-Shirt"), lastMonth)},
		{q: "Sales of Headphones in the last 30 days", want: val("line_amount", catW("耳机 Headphones"), last30)},
		{q: "耳机近30天的销售额", want: val("line_amount", catW("耳机 Headphones"), last30)},
		{q: "How many buyers did the Digital JD Store have last month?", want: val("buyers", shopW(digital), lastMonth)},
		{q: "数码京东自营店上个月买家数", want: val("buyers", shopW(digital), lastMonth)},
		{q: "Average order value of Beauty Specialty Store this month", want: val("avg_order_value", shopW(beauty), thisMonth)},
		{q: "美妆个护专营店本月客单价", want: val("avg_order_value", shopW(beauty), thisMonth)},
		// exclusions
		{q: "GMV of all shops except Daily Deals Group Store last month", want: val("gmv", notShop(deals), lastMonth)},
		{q: "除了好物拼团店之外，上个月的销售额是多少", want: val("gmv", notShop(deals), lastMonth)},
		{q: "Orders last 30 days excluding Tmall", want: val("order_count", notPlat("tmall"), last30)},
		{q: "不包括天猫，近30天订单数", want: val("order_count", notPlat("tmall"), last30)},
		{q: "Sales other than JD in October", want: val("gmv", notPlat("jd"), october)},
		{q: "除京东以外10月的销售额", want: val("gmv", notPlat("jd"), october)},
		{q: "Revenue last month without Home Living Flagship", want: val("gmv", notShop(home), lastMonth)},
		{q: "除了家居生活旗舰店以外上个月的营收", want: val("gmv", notShop(home), lastMonth)},
		// rankings: the top, the bottom, top N
		{q: "Which shop had the highest sales last month?", want: rank("gmv", "shop", nil, lastMonth, false)},
		{q: "上个月哪个店铺销售额最高", want: rank("gmv", "shop", nil, lastMonth, false)},
		{q: "Which shop had the lowest sales last month?", want: rank("gmv", "shop", nil, lastMonth, true)},
		{q: "上个月哪家店销售额最低", want: rank("gmv", "shop", nil, lastMonth, true)},
		{q: "Which platform brought the fewest orders in the last 30 days?", want: rank("order_count", "platform", nil, last30, true)},
		{q: "近30天哪个平台订单最少", want: rank("order_count", "platform", nil, last30, true)},
		{q: "Top 5 products by sales last month", want: topN("line_amount", "goods", nil, lastMonth, 5)},
		{q: "上个月销售额前5的商品", want: topN("line_amount", "goods", nil, lastMonth, 5)},
		{q: "Top 3 categories by units sold in October", want: topN("units_sold", "category", nil, october, 3)},
		{q: "10月销量前三的类目", want: topN("units_sold", "category", nil, october, 3)},
		{q: "Which category sold the least units last month?", want: rank("units_sold", "category", nil, lastMonth, true)},
		{q: "上个月销量最少的类目是哪个", want: rank("units_sold", "category", nil, lastMonth, true)},
		{q: "Best selling product in the last 7 days by units", want: rank("units_sold", "goods", nil, last7, false)},
		{q: "最近7天销量最高的商品", want: rank("units_sold", "goods", nil, last7, false)},
		{q: "Which shop has the most buyers this month?", want: rank("buyers", "shop", nil, thisMonth, false)},
		{q: "本月哪个店铺买家最多", want: rank("buyers", "shop", nil, thisMonth, false)},
		{q: "Worst performing shop by revenue in Q3", want: rank("gmv", "shop", nil, q3, true)},
		{q: "第三季度营收最差的店铺", want: rank("gmv", "shop", nil, q3, true)},
		{q: "Top 3 shops on Tmall by orders last month", want: topN("order_count", "shop", platW("tmall"), lastMonth, 2)},
		{q: "上个月天猫上订单数前3的店铺", want: topN("order_count", "shop", platW("tmall"), lastMonth, 2)},
		// breakdowns and shares
		{q: "Sales by platform last month", want: topN("gmv", "platform", nil, lastMonth, 3)},
		{q: "上个月各平台的销售额", want: topN("gmv", "platform", nil, lastMonth, 3)},
		{q: "Orders by shop in the last 30 days", want: topN("order_count", "shop", nil, last30, 5)},
		{q: "近30天各店铺订单数", want: topN("order_count", "shop", nil, last30, 5)},
		{q: "What share of sales did each platform have last month?", want: shares("gmv", "platform", nil, lastMonth)},
		{q: "上个月各平台销售额占比", want: shares("gmv", "platform", nil, lastMonth)},
		{q: "Share of orders by shop in October", want: shares("order_count", "shop", nil, october)},
		{q: "10月各店铺订单占比", want: shares("order_count", "shop", nil, october)},
		{q: "What percentage of units sold came from each shop last month?", want: shares("units_sold", "shop", nil, lastMonth)},
		{q: "上个月各店铺销量的比例", want: shares("units_sold", "shop", nil, lastMonth)},
		// growth rankings
		{q: "Which category grew fastest last month?", want: growth("line_amount", "category", lastMonth, prevMonth, false)},
		{q: "上个月哪个类目增长最快", want: growth("line_amount", "category", lastMonth, prevMonth, false)},
		{q: "Which shop's orders declined the most last month?", want: growth("order_count", "shop", lastMonth, prevMonth, true)},
		{q: "上个月哪个店铺订单下降最多", want: growth("order_count", "shop", lastMonth, prevMonth, true)},
		{q: "Which platform had the fastest sales growth last month?", want: growth("gmv", "platform", lastMonth, prevMonth, false)},
		{q: "上个月哪个平台销售额增速最快", want: growth("gmv", "platform", lastMonth, prevMonth, false)},
		// comparisons
		{q: "How did sales last month compare to the month before?", want: two("gmv", nil, lastMonth, prevMonth)},
		{q: "上个月销售额环比", want: two("gmv", nil, lastMonth, prevMonth)},
		{q: "October vs September orders", want: two("order_count", nil, october, september)},
		{q: "10月和9月的订单数对比", want: two("order_count", nil, october, september)},
		{q: "Compare Tmall revenue in October with September", want: two("gmv", platW("tmall"), october, september)},
		{q: "天猫10月和9月销售额比较", want: two("gmv", platW("tmall"), october, september)},
		// series
		{q: "Monthly sales for the last 3 months", want: series("gmv", nil, months(3)[1:]...)},
		{q: "最近3个月每月的销售额", want: series("gmv", nil, months(3)[1:]...)},
		{q: "Show me orders by month over the last 90 days", want: series("order_count", nil, months(2)[1:]...)},
		{q: "按月看近90天的订单数", want: series("order_count", nil, months(2)[1:]...)},
		{q: "Monthly trend of refunds in Q3", want: series("refunded_orders", nil, span{q3.s, q3.s.AddDate(0, 1, 0)}, span{q3.s.AddDate(0, 1, 0), q3.s.AddDate(0, 2, 0)}, span{q3.s.AddDate(0, 2, 0), q3.e})},
		{q: "第三季度每月退款订单数", want: series("refunded_orders", nil, span{q3.s, q3.s.AddDate(0, 1, 0)}, span{q3.s.AddDate(0, 1, 0), q3.s.AddDate(0, 2, 0)}, span{q3.s.AddDate(0, 2, 0), q3.e})},
		// refunds and cancellations
		{q: "How many orders were refunded last month?", want: val("refunded_orders", nil, lastMonth)},
		{q: "上个月有多少退款订单", want: val("refunded_orders", nil, lastMonth)},
		{q: "What was the refund amount in the last 30 days?", want: val("refund_amount", nil, last30)},
		{q: "近30天退款金额", want: val("refund_amount", nil, last30)},
		{q: "What is our refund rate this quarter?", want: val("refund_rate", nil, thisQ)},
		{q: "本季度退款率是多少", want: val("refund_rate", nil, thisQ)},
		{q: "How many orders were cancelled yesterday?", want: val("cancelled_orders", nil, yesterday)},
		{q: "昨天取消了多少订单", want: val("cancelled_orders", nil, yesterday)},
		{q: "Refund rate by shop last month", want: topN("refund_rate", "shop", nil, lastMonth, 1)},
		{q: "上个月各店铺的退款率", want: topN("refund_rate", "shop", nil, lastMonth, 1)},
		{q: "Which shop had the highest refund rate in Q3?", want: rank("refund_rate", "shop", nil, q3, false)},
		{q: "第三季度退款率最高的店铺", want: rank("refund_rate", "shop", nil, q3, false)},
		{q: "Cancelled orders on JD last month", want: val("cancelled_orders", platW("jd"), lastMonth)},
		{q: "京东上个月取消订单数", want: val("cancelled_orders", platW("jd"), lastMonth)},
		{q: "Refund amount of Trend Apparel Flagship in October", want: val("refund_amount", shopW(trend), october)},
		{q: "潮流服饰旗舰店10月退款金额", want: val("refund_amount", shopW(trend), october)},
		// drivers
		{q: "Why did sales change last month?", want: driver("gmv", "shop", lastMonth, prevMonth)},
		{q: "上个月销售额为什么变化", want: driver("gmv", "shop", lastMonth, prevMonth)},
		{q: "What drove the change in orders last month?", want: driver("order_count", "platform", lastMonth, prevMonth)},
		{q: "上个月订单数变化的原因是什么", want: driver("order_count", "platform", lastMonth, prevMonth)},
		{q: "Why did units sold change in October?", want: driver("units_sold", "category", october, september)},
		{q: "10月销量为什么变了", want: driver("units_sold", "category", october, september)},
		// listings by a condition
		{q: "Which shops had a refund rate above 4% last month?", want: listing("refund_rate", "shop", lastMonth, 0.04, false)},
		{q: "上个月退款率高于4%的店铺有哪些", want: listing("refund_rate", "shop", lastMonth, 0.04, false)},
		{q: "Which categories sold fewer than 100 units last month?", want: listing("units_sold", "category", lastMonth, 100, true)},
		{q: "上个月销量低于100件的类目有哪些", want: listing("units_sold", "category", lastMonth, 100, true)},
		// ambiguous questions get one question back
		{q: "Which shop is the best?", want: clarify("?", "GMV")},
		{q: "哪个店铺最好？", want: clarify("？", "销售额")},
		{q: "Show me the top products", want: clarify("?", "GMV")},
		{q: "排名前五的商品", want: clarify("？", "销售额")},
		// follow-ups in the same conversation
		{q: "only tmall", follow: []string{"What was GMV last month?"}, want: val("gmv", platW("tmall"), lastMonth)},
		{q: "只看天猫", follow: []string{"上个月的销售额是多少"}, want: val("gmv", platW("tmall"), lastMonth)},
		{q: "what about orders?", follow: []string{"What was GMV last month?"}, want: val("order_count", nil, lastMonth)},
		{q: "改成订单数", follow: []string{"上个月的销售额是多少"}, want: val("order_count", nil, lastMonth)},
		{q: "and in September?", follow: []string{"What was GMV in October?"}, want: val("gmv", nil, september)},
		{q: "那9月呢？", follow: []string{"10月的销售额是多少"}, want: val("gmv", nil, september)},
		{q: "by category instead", follow: []string{"Sales by shop last month"}, want: topN("line_amount", "category", nil, lastMonth, 3)},
		{q: "换成按类目看", follow: []string{"上个月各店铺的销售额"}, want: topN("line_amount", "category", nil, lastMonth, 3)},
		{q: "only JD", follow: []string{"Which shop had the most orders last month?"}, want: rank("order_count", "shop", platW("jd"), lastMonth, false)},
		{q: "只看京东", follow: []string{"上个月哪个店铺订单最多"}, want: rank("order_count", "shop", platW("jd"), lastMonth, false)},
	}
	// phrasings written after the grammar, as merchants type them
	lastMonthLastYear := span{lastMonth.s.AddDate(-1, 0, 0), lastMonth.e.AddDate(-1, 0, 0)}
	tmallShare := func() []string {
		r := g.rows("gmv", "platform", nil, lastMonth.s, lastMonth.e)
		total, tm := 0.0, 0.0
		for _, m := range r {
			total += m.value
			if m.label == "tmall" {
				tm = m.value
			}
		}
		return []string{fmt.Sprintf("%.1f%%", tm/total*100)}
	}
	bottom3 := func(metric, dim string, ws []where, p span) func() []string {
		return func() []string {
			r := g.rows(metric, dim, ws, p.s, p.e)
			var out []string
			for i := len(r) - 1; i >= 0 && i >= len(r)-3; i-- {
				out = append(out, r[i].label)
			}
			return out
		}
	}
	cs = append(cs,
		evalCase{q: "How are we doing on JD this month compared to last month?", want: two("gmv", platW("jd"), thisMonth, lastMonth)},
		evalCase{q: "Give me the 3 worst-selling categories last month", want: bottom3("line_amount", "category", nil, lastMonth)},
		evalCase{q: "Sales per shop for September, excluding Pinduoduo", want: topN("gmv", "shop", notPlat("pdd"), september, 4)},
		evalCase{q: "去年同期相比，上个月的销售额怎么样", want: two("gmv", nil, lastMonth, lastMonthLastYear)},
		evalCase{q: "How much revenue did the Beauty store make yesterday?", want: val("gmv", shopW(beauty), yesterday)},
		evalCase{q: "客单价最高的平台是哪个", want: rank("avg_order_value", "platform", nil, last30, false)},
		evalCase{q: "What share of GMV came from Tmall last month?", want: tmallShare},
		evalCase{q: "环比上月，本月订单数变化多少", want: two("order_count", nil, thisMonth, lastMonth)},
		evalCase{q: "Lowest 3 Phone products by units last month", want: bottom3("units_sold", "goods", catW("手机 Phone"), lastMonth)},
		evalCase{q: "How many orders got cancelled on Pinduoduo this month?", want: val("cancelled_orders", platW("pdd"), thisMonth)},
		evalCase{q: "我们上个月在京东退了多少钱", want: val("refund_amount", platW("jd"), lastMonth)},
		evalCase{q: "Which shop lost the most revenue compared to last month?", want: growth("gmv", "shop", thisMonth, lastMonth, true)},
	)
	// the same shapes over each shop and platform, in both languages
	shops := []struct{ en, zh, label string }{
		{"Trend Apparel Flagship", "潮流服饰旗舰店", trend}, {"Home Living Flagship", "家居生活旗舰店", home},
		{"Digital JD Store", "数码京东自营店", digital}, {"Beauty Specialty Store", "美妆个护专营店", beauty}, {"Daily Deals Group Store", "好物拼团店", deals},
	}
	for _, sh := range shops {
		cs = append(cs,
			evalCase{q: "What were " + sh.en + "'s sales in the last 7 days?", want: val("gmv", shopW(sh.label), last7)},
			evalCase{q: sh.zh + "最近7天的销售额是多少", want: val("gmv", shopW(sh.label), last7)},
			evalCase{q: "How many refunds did " + sh.en + " have last month?", want: val("refunded_orders", shopW(sh.label), lastMonth)},
			evalCase{q: sh.zh + "上个月退款订单数", want: val("refunded_orders", shopW(sh.label), lastMonth)},
			evalCase{q: "Units sold by " + sh.en + " in October", want: val("units_sold", shopW(sh.label), october)},
			evalCase{q: sh.zh + "10月的销量", want: val("units_sold", shopW(sh.label), october)},
			evalCase{q: "Top 3 products of " + sh.en + " by sales last month", want: topN("line_amount", "goods", shopW(sh.label), lastMonth, 3)},
			evalCase{q: sh.zh + "上个月销售额前三的商品", want: topN("line_amount", "goods", shopW(sh.label), lastMonth, 3)},
			evalCase{q: "GMV of " + sh.en + " last quarter", want: val("gmv", shopW(sh.label), lastQ)},
			evalCase{q: sh.zh + "上季度的成交额", want: val("gmv", shopW(sh.label), lastQ)},
			evalCase{q: "Sales of all shops except " + sh.en + " in the last 30 days", want: val("gmv", notShop(sh.label), last30)},
			evalCase{q: "除" + sh.zh + "之外近30天的销售额", want: val("gmv", notShop(sh.label), last30)},
		)
	}
	plats := []struct{ en, zh, key string }{{"Tmall", "天猫", "tmall"}, {"JD", "京东", "jd"}, {"Pinduoduo", "拼多多", "pdd"}}
	for _, p := range plats {
		cs = append(cs,
			evalCase{q: "How many orders did we get on " + p.en + " last month?", want: val("order_count", platW(p.key), lastMonth)},
			evalCase{q: p.zh + "上个月的订单数", want: val("order_count", platW(p.key), lastMonth)},
			evalCase{q: "Average order value on " + p.en + " in the last 30 days", want: val("avg_order_value", platW(p.key), last30)},
			evalCase{q: p.zh + "近30天的客单价", want: val("avg_order_value", platW(p.key), last30)},
			evalCase{q: "Refund rate on " + p.en + " last month", want: val("refund_rate", platW(p.key), lastMonth)},
			evalCase{q: p.zh + "上个月的退款率", want: val("refund_rate", platW(p.key), lastMonth)},
			evalCase{q: "Which shop sold the most on " + p.en + " in October?", want: rank("gmv", "shop", platW(p.key), october, false)},
			evalCase{q: p.zh + "10月哪个店铺卖得最多", want: rank("gmv", "shop", platW(p.key), october, false)},
			evalCase{q: "Revenue excluding " + p.en + " in Q3", want: val("gmv", notPlat(p.key), q3)},
			evalCase{q: "不含" + p.zh + "第三季度的销售额", want: val("gmv", notPlat(p.key), q3)},
			evalCase{q: "Buyers on " + p.en + " in the last 90 days", want: val("buyers", platW(p.key), last90)},
			evalCase{q: p.zh + "近90天的买家数", want: val("buyers", platW(p.key), last90)},
		)
	}
	cats := []struct{ en, zh, label string }{
		{"T-Shirt", "T恤", "T恤 T-Shirt"}, {"Dress", "连衣裙", "连衣裙 Dress"}, {"Phone", "手机", "手机 Phone"},
		{"Lipstick", "口红", "口红 Lipstick"}, {"Coffee", "咖啡", "咖啡 Coffee"}, {"Cookware", "厨具", "厨具 Cookware"},
	}
	for _, c := range cats {
		cs = append(cs,
			evalCase{q: "How many " + c.en + " units did we sell last month?", want: val("units_sold", catW(c.label), lastMonth)},
			evalCase{q: "上个月" + c.zh + "卖了多少件", want: val("units_sold", catW(c.label), lastMonth)},
			evalCase{q: "Sales of the " + c.en + " category in October", want: val("line_amount", catW(c.label), october)},
			evalCase{q: c.zh + "类目10月的销售额", want: val("line_amount", catW(c.label), october)},
			evalCase{q: "Best selling " + c.en + " product last month", want: rank("line_amount", "goods", catW(c.label), lastMonth, false)},
			evalCase{q: "上个月卖得最好的" + c.zh + "商品", want: rank("line_amount", "goods", catW(c.label), lastMonth, false)},
		)
	}
	return cs
}

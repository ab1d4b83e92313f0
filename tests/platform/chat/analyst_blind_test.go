//go:build platform

package chat

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// blindCases are questions written before reading the grammar's code, in the phrasing
// merchants use (the shapes of issue 25, worded the way WrenAI's and Vanna's sample
// questions, Spider 2.0's retail tasks and the Falcon Chinese NL2SQL benchmark word them),
// half in English and half in Chinese. Their first run is recorded in the README and in
// services/chat/agent/AGENTS.md; the suite reports their score apart.
//
// Conventions of the gold answers: "last week" / 上周 is the calendar week before this one
// (Monday to Sunday); "the past N days" ends yesterday; sales of a category are the line
// amount of its goods; "Electronics", 数码 and the like are top-level categories (the gold
// joins the leaf category to its parent); growth rankings are by percentage change.
func blindCases(g *gold) []evalCase {
	today := g.today
	monthStart := time.Date(today.Year(), today.Month(), 1, 0, 0, 0, 0, time.UTC)
	qStart := time.Date(today.Year(), time.Month((int(today.Month())-1)/3*3+1), 1, 0, 0, 0, 0, time.UTC)
	monday := today.AddDate(0, 0, -((int(today.Weekday()) + 6) % 7))
	month := func(m time.Month) span {
		y := today.Year()
		if m > today.Month() {
			y--
		}
		s := time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
		return span{s, s.AddDate(0, 1, 0)}
	}
	var (
		lastWeek  = span{monday.AddDate(0, 0, -7), monday}
		last7     = span{today.AddDate(0, 0, -7), today}
		last14    = span{today.AddDate(0, 0, -14), today}
		thisMonth = span{monthStart, today.AddDate(0, 0, 1)}
		lastMonth = span{monthStart.AddDate(0, -1, 0), monthStart}
		prevMonth = span{monthStart.AddDate(0, -2, 0), monthStart.AddDate(0, -1, 0)}
		thisQ     = span{qStart, today.AddDate(0, 0, 1)}
		lastQ     = span{qStart.AddDate(0, -3, 0), qStart}
		q3        = span{time.Date(today.Year(), 7, 1, 0, 0, 0, 0, time.UTC), time.Date(today.Year(), 10, 1, 0, 0, 0, 0, time.UTC)}
		june      = month(time.June)
		july      = month(time.July)
		august    = month(time.August)
		september = month(time.September)
		october   = month(time.October)
		november  = month(time.November)
	)
	const (
		trend   = "潮流服饰旗舰店 Trend Apparel Flagship"
		home    = "家居生活旗舰店 Home Living Flagship"
		digital = "数码京东自营店 Digital JD Store"
		beauty  = "美妆个护专营店 Beauty Specialty Store"
		deals   = "好物拼团店 Daily Deals Group Store"
		coffee  = "咖啡 Coffee"
	)
	shopsAll := []string{trend, home, digital, beauty, deals}
	shopW := func(names ...string) []where { return []where{{dim: "shop", values: names}} }
	platW := func(p ...string) []where { return []where{{dim: "platform", values: p}} }
	catW := func(c ...string) []where { return []where{{dim: "category", values: c}} }
	rootW := func(c ...string) []where { return []where{{dim: "root", values: c}} }
	notShop := func(names ...string) []where { return []where{{dim: "shop", values: names, exclude: true}} }
	notPlat := func(p ...string) []where { return []where{{dim: "platform", values: p, exclude: true}} }
	notRoot := func(c ...string) []where { return []where{{dim: "root", values: c, exclude: true}} }

	val, two, rank, topN, shares := g.val, g.two, g.rank, g.topN, g.shares
	shareOf := func(metric, dim, label string, p span) func() []string {
		return func() []string {
			total, part := 0.0, 0.0
			for _, m := range g.rows(metric, dim, nil, p.s, p.e) {
				total += m.value
				if m.label == label {
					part = m.value
				}
			}
			return []string{fmt.Sprintf("%.1f%%", part/total*100)}
		}
	}
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
	driver := func(metric, dim string, ws []where, a, b span) func() []string {
		return func() []string {
			cur, prev := g.rows(metric, dim, ws, a.s, a.e), g.rows(metric, dim, ws, b.s, b.e)
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
	series := func(metric string, ws []where, spans ...span) func() []string {
		return func() []string {
			var out []string
			for _, m := range spans {
				out = append(out, g.value(metric, ws, m.s, m.e))
			}
			return out
		}
	}
	days := func(p span) []span {
		var out []span
		for d := p.s; d.Before(p.e); d = d.AddDate(0, 0, 1) {
			out = append(out, span{d, d.AddDate(0, 0, 1)})
		}
		return out
	}
	listing := func(metric, dim string, p span, threshold float64) func() []string {
		return func() []string {
			var out []string
			for _, m := range g.rows(metric, dim, nil, p.s, p.e) {
				if m.value > threshold {
					out = append(out, m.label)
				}
			}
			if len(out) == 0 {
				out = append(out, "0 ")
			}
			return out
		}
	}
	// the leader of each shop by the metric over dim
	perShop := func(metric, dim string, p span) func() []string {
		return func() []string {
			var out []string
			for _, s := range shopsAll {
				if r := g.rows(metric, dim, shopW(s), p.s, p.e); len(r) > 0 {
					out = append(out, r[0].label)
				}
			}
			return out
		}
	}
	clarify := func(words ...string) func() []string { return func() []string { return words } }

	return []evalCase{
		// the verbs merchants use for sales
		{q: "What did we make last week?", want: val("gmv", nil, lastWeek)},
		{q: "How much money did we bring in during October?", want: val("gmv", nil, october)},
		{q: "Total turnover for the past 14 days", want: val("gmv", nil, last14)},
		{q: "What are our sales month to date?", want: val("gmv", nil, thisMonth)},
		{q: "上周卖了多少", want: val("gmv", nil, lastWeek)},
		{q: "10月份一共成交了多少金额", want: val("gmv", nil, october)},
		{q: "过去两周的营业额", want: val("gmv", nil, last14)},
		{q: "这个月到目前为止的销售额", want: val("gmv", nil, thisMonth)},
		// named quarters, this quarter against the last
		{q: "Revenue in the third quarter", want: val("gmv", nil, q3)},
		{q: "How many units did we move in Q3 2026?", want: val("units_sold", nil, q3)},
		{q: "Q4 so far vs Q3: orders", want: two("order_count", nil, thisQ, lastQ)},
		{q: "How does this quarter's average order value compare with last quarter?", want: two("avg_order_value", nil, thisQ, lastQ)},
		{q: "2026年第三季度的销售额", want: val("gmv", nil, q3)},
		{q: "三季度卖了多少件", want: val("units_sold", nil, q3)},
		{q: "这个季度跟上个季度比，订单量怎么样", want: two("order_count", nil, thisQ, lastQ)},
		{q: "Q3的客单价是多少", want: val("avg_order_value", nil, q3)},
		// the lowest
		{q: "Which product category had the smallest revenue in September?", want: rank("line_amount", "category", nil, september, true)},
		{q: "What was our weakest platform in terms of GMV last quarter?", want: rank("gmv", "platform", nil, lastQ, true)},
		{q: "Which shop had the fewest buyers last month?", want: rank("buyers", "shop", nil, lastMonth, true)},
		{q: "Lowest average order value by shop this quarter", want: rank("avg_order_value", "shop", nil, thisQ, true)},
		{q: "9月份销售额最少的类目", want: rank("line_amount", "category", nil, september, true)},
		{q: "上季度GMV最低的是哪个平台", want: rank("gmv", "platform", nil, lastQ, true)},
		{q: "上个月买家最少的店铺", want: rank("buyers", "shop", nil, lastMonth, true)},
		{q: "本季度客单价最低的店", want: rank("avg_order_value", "shop", nil, thisQ, true)},
		// filters: partial names, top-level categories, several members
		{q: "How much did Trend Apparel sell in September?", want: val("gmv", shopW(trend), september)},
		{q: "Electronics sales last month", want: val("line_amount", rootW("数码 Electronics"), lastMonth)},
		{q: "How many orders did the beauty shop get last week?", want: val("order_count", shopW(beauty), lastWeek)},
		{q: "Revenue from Tmall and JD combined in October", want: val("gmv", platW("tmall", "jd"), october)},
		{q: "How many coffee units did we sell in Q3?", want: val("units_sold", catW(coffee), q3)},
		{q: "数码类上个月的销售额", want: val("line_amount", rootW("数码 Electronics"), lastMonth)},
		{q: "天猫和京东10月一共卖了多少", want: val("gmv", platW("tmall", "jd"), october)},
		{q: "美妆个护店上周的订单数", want: val("order_count", shopW(beauty), lastWeek)},
		{q: "三季度咖啡卖了多少件", want: val("units_sold", catW(coffee), q3)},
		{q: "拼多多9月的客单价", want: val("avg_order_value", platW("pdd"), september)},
		// exclusions
		{q: "Sales last quarter, leaving out Pinduoduo", want: val("gmv", notPlat("pdd"), lastQ)},
		{q: "Orders in September for every shop but Digital JD Store", want: val("order_count", notShop(digital), september)},
		{q: "Units sold last month not counting the Virtual category", want: val("units_sold", notRoot("虚拟 Virtual"), lastMonth)},
		{q: "Revenue this month excluding Beauty Specialty Store and Daily Deals Group Store", want: val("gmv", notShop(beauty, deals), thisMonth)},
		{q: "上季度除去拼多多的销售额", want: val("gmv", notPlat("pdd"), lastQ)},
		{q: "9月除了数码京东自营店，其他店铺的订单数", want: val("order_count", notShop(digital), september)},
		{q: "上个月不算虚拟类目的销量", want: val("units_sold", notRoot("虚拟 Virtual"), lastMonth)},
		{q: "本月剔除美妆个护专营店和好物拼团店后的销售额", want: val("gmv", notShop(beauty, deals), thisMonth)},
		// series over several months, and by day
		{q: "Monthly revenue from July to October", want: series("gmv", nil, july, august, september, october)},
		{q: "Month-by-month order count since June", want: series("order_count", nil, june, july, august, september, october, november)},
		{q: "Units sold per month in Q3", want: series("units_sold", nil, july, august, september)},
		{q: "Daily sales over the past 7 days", want: series("gmv", nil, days(last7)...)},
		{q: "7月到10月每个月的销售额", want: series("gmv", nil, july, august, september, october)},
		{q: "从6月开始每月的订单量", want: series("order_count", nil, june, july, august, september, october, november)},
		{q: "三季度各月销量", want: series("units_sold", nil, july, august, september)},
		{q: "最近7天每天的订单数", want: series("order_count", nil, days(last7)...)},
		// breakdowns by category
		{q: "Break down last month's sales by category", want: topN("line_amount", "category", nil, lastMonth, 3)},
		{q: "Revenue per top-level category in October", want: topN("line_amount", "root", nil, october, 6)},
		{q: "How many units did each category sell this quarter?", want: topN("units_sold", "category", nil, thisQ, 3)},
		{q: "上个月按类目拆分的销售额", want: topN("line_amount", "category", nil, lastMonth, 3)},
		{q: "10月各一级类目的销售额", want: topN("line_amount", "root", nil, october, 6)},
		{q: "本季度每个类目卖了多少件", want: topN("units_sold", "category", nil, thisQ, 3)},
		// shares
		{q: "How is revenue split across platforms this quarter?", want: shares("gmv", "platform", nil, thisQ)},
		{q: "Percentage of orders from each platform in September", want: shares("order_count", "platform", nil, september)},
		{q: "What portion of units sold did JD account for last month?", want: shareOf("units_sold", "platform", "jd", lastMonth)},
		{q: "本季度销售额在各平台的分布", want: shares("gmv", "platform", nil, thisQ)},
		{q: "9月各平台订单量占比是多少", want: shares("order_count", "platform", nil, september)},
		{q: "上个月京东的销量占比", want: shareOf("units_sold", "platform", "jd", lastMonth)},
		// growth ranked by a dimension
		{q: "Which shop grew its revenue the most in October compared with September?", want: growth("gmv", "shop", october, september, false)},
		{q: "Which product category saw the biggest percentage drop in units last month?", want: growth("units_sold", "category", lastMonth, prevMonth, true)},
		{q: "Which platform's orders grew fastest this quarter versus last quarter?", want: growth("order_count", "platform", thisQ, lastQ, false)},
		{q: "10月相比9月，哪个店铺销售额增长最多", want: growth("gmv", "shop", october, september, false)},
		{q: "上个月哪个类目销量跌幅最大", want: growth("units_sold", "category", lastMonth, prevMonth, true)},
		{q: "本季度比上季度，哪个平台订单增长最快", want: growth("order_count", "platform", thisQ, lastQ, false)},
		// refunds, refund rate, cancellations
		{q: "How much money did we refund in September?", want: val("refund_amount", nil, september)},
		{q: "What percentage of orders got refunded last quarter?", want: val("refund_rate", nil, lastQ)},
		{q: "Cancellation count for Home Living Flagship this month", want: val("cancelled_orders", shopW(home), thisMonth)},
		{q: "Which platform has the lowest refund rate this quarter?", want: rank("refund_rate", "platform", nil, thisQ, true)},
		{q: "9月退了多少钱", want: val("refund_amount", nil, september)},
		{q: "上季度的退货率", want: val("refund_rate", nil, lastQ)},
		{q: "家居生活旗舰店本月取消了几单", want: val("cancelled_orders", shopW(home), thisMonth)},
		{q: "本季度哪个平台退款率最低", want: rank("refund_rate", "platform", nil, thisQ, true)},
		// why did it change
		{q: "What caused the change in revenue in October?", want: driver("gmv", "shop", nil, october, september)},
		{q: "Which categories drove the change in sales in September?", want: driver("line_amount", "category", nil, september, august)},
		{q: "Why did JD orders change last month?", want: driver("order_count", "shop", platW("jd"), lastMonth, prevMonth)},
		{q: "10月销售额变化的原因", want: driver("gmv", "shop", nil, october, september)},
		{q: "9月哪些类目带动了销售额的变化", want: driver("line_amount", "category", nil, september, august)},
		{q: "上个月京东订单数为什么变化", want: driver("order_count", "shop", platW("jd"), lastMonth, prevMonth)},
		// follow-ups in the same conversation
		{q: "What about Tmall only?", follow: []string{"How many orders did we get in September?"}, want: val("order_count", platW("tmall"), september)},
		{q: "and the month before?", follow: []string{"Revenue by shop last month"}, want: topN("gmv", "shop", nil, prevMonth, 3)},
		{q: "switch to units sold", follow: []string{"Sales on JD in October"}, want: val("units_sold", platW("jd"), october)},
		{q: "now by platform", follow: []string{"Top 3 shops by GMV in Q3"}, want: topN("gmv", "platform", nil, q3, 3)},
		{q: "exclude Pinduoduo", follow: []string{"What was revenue last month?"}, want: val("gmv", notPlat("pdd"), lastMonth)},
		{q: "compare with September", follow: []string{"GMV in October"}, want: two("gmv", nil, october, september)},
		{q: "天猫呢？", follow: []string{"9月的订单数是多少"}, want: val("order_count", platW("tmall"), september)},
		{q: "那前一个月呢", follow: []string{"上个月各店铺的销售额"}, want: topN("gmv", "shop", nil, prevMonth, 3)},
		{q: "换成销量", follow: []string{"京东10月的销售额"}, want: val("units_sold", platW("jd"), october)},
		{q: "按平台看", follow: []string{"三季度GMV前三的店铺"}, want: topN("gmv", "platform", nil, q3, 3)},
		{q: "去掉拼多多", follow: []string{"上个月的销售额"}, want: val("gmv", notPlat("pdd"), lastMonth)},
		{q: "和9月比呢", follow: []string{"10月的GMV"}, want: two("gmv", nil, october, september)},
		// ambiguous: one question back with the choices
		{q: "What's our best product?", want: clarify("?", "GMV")},
		{q: "Which platform performs worst?", want: clarify("?", "GMV")},
		{q: "Sales of Home last month", want: clarify("?", "Home Living Flagship", "家居 Home")},
		{q: "哪个产品最好", want: clarify("？", "销售额")},
		{q: "哪个平台表现最差", want: clarify("？", "销售额")},
		{q: "上个月家居卖了多少", want: clarify("？", "家居生活旗舰店", "家居 Home")},
		// rankings within groups, listings by a condition
		{q: "Best-selling product in each shop last month by sales", want: perShop("line_amount", "goods", lastMonth)},
		{q: "Which shops had more than 600 orders in October?", want: listing("order_count", "shop", october, 600)},
		{q: "上个月每个店铺销售额最高的商品", want: perShop("line_amount", "goods", lastMonth)},
		{q: "10月订单数超过600的店铺", want: listing("order_count", "shop", october, 600)},
	}
}

package provider

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/shopmind/shopmind/internal/analytics/catalog"
)

// Offline writes SQL for common questions without a model, deterministically: a measure
// (orders, GMV, units sold, discounts, average order value, goods, shops, the values the
// browser extension collected when the store has diy_crx_metrics), optionally
// grouped (by shop, platform, status, day, month), over a period (today, yesterday, last N
// days, this or last month, this year), optionally the top N. It answers English and
// Chinese keywords; a question it cannot map gets an error listing what it understands.
// The SQL names only catalog tables and columns and carries no tenant or row filter (the
// executor adds them).
type Offline struct {
	// Now gives the current time (periods are relative to it, UTC); nil: time.Now.
	Now func() time.Time
}

type measure struct {
	words []string
	table string
	expr  string
	alias string
	label string
}

var measures = []measure{
	// The values the browser extension collects (the diy table diy_crx_metrics), when the
	// store has it.
	{[]string{"collected", "extension metric", "采集"}, "diy_crx_metrics", "SUM(value)", "value", "collected values"},
	{[]string{"average order", "aov", "avg order", "客单价"}, "basic_orders", "AVG(paid_amount)", "avg_order_value", "average order value"},
	{[]string{"gmv", "revenue", "sales", "turnover", "paid amount", "销售额", "成交额", "营业额"}, "basic_orders", "SUM(paid_amount)", "gmv", "GMV"},
	{[]string{"units", "items sold", "quantity", "件数", "销量"}, "basic_orders", "SUM(item_count)", "units", "units sold"},
	{[]string{"discount", "优惠", "折扣"}, "basic_orders", "SUM(discount_amount)", "discounts", "discounts"},
	{[]string{"goods", "products", "product", "sku", "商品"}, "basic_goods", "COUNT(*)", "goods", "goods"},
	{[]string{"shops", "stores", "店铺数"}, "basic_shops", "COUNT(*)", "shops", "shops"},
	{[]string{"order", "订单"}, "basic_orders", "COUNT(*)", "orders", "orders"},
}

type grouping struct {
	words  []string
	column string // catalog column; "" for time buckets
	bucket string // day or month
	label  string
}

var groupings = []grouping{
	{words: []string{"by shop", "per shop", "each shop", "every shop", "各店铺", "每个店铺", "按店铺"}, column: "shop_id", label: "by shop"},
	{words: []string{"by platform", "per platform", "各平台", "按平台"}, column: "platform", label: "by platform"},
	{words: []string{"by status", "per status", "按状态"}, column: "status", label: "by status"},
	{words: []string{"by category", "per category", "按类目"}, column: "category_id", label: "by category"},
	{words: []string{"by metric", "per metric", "each metric", "按指标"}, column: "metric_key", label: "by metric"},
	{words: []string{"by day", "daily", "per day", "each day", "每天", "每日", "按天"}, bucket: "day", label: "by day"},
	{words: []string{"by month", "monthly", "per month", "每月", "按月"}, bucket: "month", label: "by month"},
}

var (
	lastDaysRe = regexp.MustCompile(`(?:last|past)\s+(\d{1,3})\s+days?|最近\s*(\d{1,3})\s*天|近\s*(\d{1,3})\s*天`)
	topRe      = regexp.MustCompile(`top\s+(\d{1,3})|前\s*(\d{1,3})`)
)

func hasAny(q string, words []string) bool {
	for _, w := range words {
		if strings.Contains(q, w) {
			return true
		}
	}
	return false
}

// WriteSQL implements SQLWriter.
func (o Offline) WriteSQL(_ context.Context, question, engine string, cat *catalog.Catalog) (string, string, error) {
	q := strings.ToLower(question)
	var m *measure
	for i := range measures {
		if hasAny(q, measures[i].words) {
			m = &measures[i]
			break
		}
	}
	if m == nil {
		return "", "", fmt.Errorf("the offline analyst cannot map this question to the data; ask about orders, GMV, units sold, discounts, average order value, goods, shops or collected values, optionally by shop, platform, status, metric, day or month, over today, yesterday, the last N days, this or last month")
	}
	t := cat.Table(m.table)
	if t == nil {
		return "", "", fmt.Errorf("table %s is not in the catalog", m.table)
	}
	var g *grouping
	for i := range groupings {
		if hasAny(q, groupings[i].words) {
			if c := groupings[i].column; c != "" && t.Column(c) == nil {
				continue
			}
			g = &groupings[i]
			break
		}
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	from, to, period := periodOf(q, now().UTC())
	var sel, group []string
	explanation := m.label
	if g != nil {
		key := g.column
		if g.bucket != "" {
			key = bucketExpr(engine, t.TimeColumn, g.bucket)
			sel = append(sel, key+" AS "+g.bucket)
			group = append(group, key)
		} else {
			sel = append(sel, key)
			group = append(group, key)
		}
		explanation += " " + g.label
	}
	sel = append(sel, m.expr+" AS "+m.alias)
	sql := "SELECT " + strings.Join(sel, ", ") + " FROM " + t.Name
	if !from.IsZero() && t.TimeColumn != "" {
		sql += " WHERE " + t.TimeColumn + " >= " + timeLit(engine, from) + " AND " + t.TimeColumn + " < " + timeLit(engine, to)
		explanation += " " + period
	}
	if len(group) > 0 {
		sql += " GROUP BY " + strings.Join(group, ", ")
	}
	top := 0
	if mt := topRe.FindStringSubmatch(q); mt != nil {
		top, _ = strconv.Atoi(mt[1] + mt[2])
	}
	switch {
	case top > 0 && len(group) > 0:
		sql += fmt.Sprintf(" ORDER BY %s DESC LIMIT %d", m.alias, top)
		explanation = fmt.Sprintf("top %d %s", top, explanation)
	case g != nil && g.bucket != "":
		sql += " ORDER BY " + g.bucket
	case len(group) > 0:
		sql += " ORDER BY " + m.alias + " DESC"
	}
	return sql, explanation, nil
}

// periodOf finds the period a question names: [from, to) in UTC, and its label.
func periodOf(q string, now time.Time) (time.Time, time.Time, string) {
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	if m := lastDaysRe.FindStringSubmatch(q); m != nil {
		n, _ := strconv.Atoi(m[1] + m[2] + m[3])
		if n > 0 && n <= 366 {
			return day.AddDate(0, 0, 1-n), day.AddDate(0, 0, 1), fmt.Sprintf("over the last %d days", n)
		}
	}
	switch {
	case hasAny(q, []string{"yesterday", "昨天", "昨日"}):
		return day.AddDate(0, 0, -1), day, "yesterday"
	case hasAny(q, []string{"today", "今天", "今日"}):
		return day, day.AddDate(0, 0, 1), "today"
	case hasAny(q, []string{"last month", "上个月", "上月"}):
		return month.AddDate(0, -1, 0), month, "last month"
	case hasAny(q, []string{"this month", "本月", "这个月"}):
		return month, month.AddDate(0, 1, 0), "this month"
	case hasAny(q, []string{"this year", "今年"}):
		y := time.Date(now.Year(), 1, 1, 0, 0, 0, 0, time.UTC)
		return y, y.AddDate(1, 0, 0), "this year"
	case hasAny(q, []string{"last week", "past week", "上周"}):
		return day.AddDate(0, 0, -6), day.AddDate(0, 0, 1), "over the last 7 days"
	}
	return time.Time{}, time.Time{}, ""
}

func timeLit(engine string, t time.Time) string {
	s := t.Format("2006-01-02 15:04:05")
	if engine == "clickhouse" {
		return "toDateTime('" + s + "')"
	}
	return "TIMESTAMP '" + s + "'"
}

func bucketExpr(engine, col, bucket string) string {
	if engine == "clickhouse" {
		if bucket == "month" {
			return "toStartOfMonth(" + col + ")"
		}
		return "toDate(" + col + ")"
	}
	return "date_trunc('" + bucket + "', " + col + ")"
}

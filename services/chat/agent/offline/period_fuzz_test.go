package offline

import (
	"slices"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/agent/agenttest"
	"github.com/shopmind/shopmind/services/chat/agent/period"
)

// periodSeeds are period phrases and questions from the tests and the README, English and
// Chinese, with a few broken ones.
var periodSeeds = []string{
	"上个月", "上月各类目的销售额", "last 7 days", "What was GMV by shop last 7 days?", "2024-01-01 to 2024-02-01",
	"GMV from 2026-11-01 to 2026-11-10", "2026年10月各店铺订单量", "2026-10 的订单数", "最近30天每天的销售额", "最近三十天",
	"前7天的销售额", "最近一周的订单", "过去两个星期", "最近三个月", "近一百二十天", "昨天各店铺的成交额", "前天", "今天的销售额",
	"本周", "上周", "本月客单价", "去年", "今年以来", "3月的订单数", "十二月份", "GMV in 2025", "2025年度", "December GMV",
	"in may", "sales for sept. 2024", "this week", "last week", "past week", "this month", "month to date", "past month",
	"last month", "this year", "ytd", "last year", "day before yesterday", "yesterday", "today", "last two weeks",
	"trailing 3 months", "last 0 days", "last 9999 days", "最近0天", "2024-02-30", "2024-02-01 to 2024-01-01", "2024-13",
	"2024年2月29日至2024年3月1日", "ＧＭＶ　ｂｙ　ｓｈｏｐ　昨天", "what's the weather like", "", "0000-01-01", "9999-12-31",
	"top 5 goods by units sold last month", "销售额最高的前五个店铺 最近7天", "最近九十九百天", "\xff\xfe上个月",
}

// FuzzParsePeriod checks period.Parse and ParseQuestion on any text and any day between
// 1970 and 2200: a period found is [Start, End) of whole UTC days with Start < End, its
// comparison period ends by its start, the span is a non-empty range of the text (whole
// runes), relative periods end by tomorrow, and no period found is the 30-day default.
func FuzzParsePeriod(f *testing.F) {
	for _, s := range periodSeeds {
		f.Add(s, agenttest.Now.Unix())
	}
	f.Add("最近7天", int64(0))
	f.Add("this year", int64(-1))
	metrics := agent.MetricInfos(agenttest.DemoMetricDefs())
	var names []string
	for _, m := range metrics {
		names = append(names, m.Name)
	}
	f.Fuzz(func(t *testing.T, text string, unix int64) {
		const span = 230 * 365 * 24 * 3600 // 1970 to about 2200
		now := time.Unix(int64(uint64(unix)%span), int64(uint64(unix)%1e9)).In(time.FixedZone("x", 8*3600))
		today := period.Day(now)

		p, sp, ok := period.Parse(text, now)
		checkPeriod(t, text, p, today)
		if ok {
			if sp[0] < 0 || sp[0] >= sp[1] || sp[1] > len(text) {
				t.Fatalf("%q: span %v", text, sp)
			}
			if utf8.ValidString(text) && !utf8.ValidString(text[sp[0]:sp[1]]) {
				t.Fatalf("%q: span %v splits a rune", text, sp)
			}
		} else if sp != [2]int{} || p != period.DaysBefore(today, period.DefaultDays) {
			t.Fatalf("%q: nothing found, but %v %+v", text, sp, p)
		}

		q := ParseQuestion(text, now, metrics, nil)
		checkPeriod(t, text, q.Period, today)
		if !q.PeriodGiven && q.Period != period.DaysBefore(today, period.DefaultDays) {
			t.Fatalf("%q: no period given, but %+v", text, q.Period)
		}
		if q.TopN < 0 || q.TopN > maxTopN {
			t.Fatalf("%q: top %d", text, q.TopN)
		}
		for i, m := range q.Metrics {
			if !slices.Contains(names, m) || slices.Contains(q.Metrics[:i], m) {
				t.Fatalf("%q: metrics %v", text, q.Metrics)
			}
		}
		if q.Dimension != "" && !slices.Contains(allDims, q.Dimension) {
			t.Fatalf("%q: dimension %q", text, q.Dimension)
		}
		if !slices.Contains([]string{"", "day", "week", "month"}, q.Granularity) {
			t.Fatalf("%q: granularity %q", text, q.Granularity)
		}
		if !utf8.ValidString(q.Rest) {
			t.Fatalf("%q: rest %q", text, q.Rest)
		}
	})
}

var periodKinds = []string{"day", "days", "wtd", "week", "mtd", "month", "months", "ytd", "year", "range"}

func checkPeriod(t *testing.T, text string, p period.Period, today time.Time) {
	t.Helper()
	for _, x := range []time.Time{p.Start, p.End} {
		if x.Location() != time.UTC || !x.Equal(period.Day(x)) {
			t.Fatalf("%q: %+v is not whole UTC days", text, p)
		}
	}
	if !p.Start.Before(p.End) || p.Days() < 1 || !slices.Contains(periodKinds, p.Kind) {
		t.Fatalf("%q: period %+v", text, p)
	}
	switch p.Kind {
	case "days", "wtd", "week", "mtd", "months", "ytd":
		if p.End.After(today.AddDate(0, 0, 1)) {
			t.Fatalf("%q: relative period %+v ends after tomorrow (today %s)", text, p, today)
		}
	}
	prev := p.Previous()
	if !prev.Start.Before(prev.End) || prev.End.After(p.Start) {
		t.Fatalf("%q: %+v compares with %+v", text, p, prev)
	}
	_, _, _ = p.Range(), p.Describe(true), p.Describe(false)
}

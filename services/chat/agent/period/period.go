// Package period is the chat agents' periods: a Period is whole UTC days [Start, End) with
// the kind of name it was given (which decides the comparison period), and Parse finds the
// period a question names (English and Chinese phrases, dates, months, "last N days"...).
package period

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Period is an analysed time range [Start, End) of whole UTC days.
type Period struct {
	Start, End time.Time
	// Kind says how the period was named, which decides the comparison period: day, days
	// (a window of N days), wtd, week, mtd, month, months, ytd, year, range.
	Kind string
}

// Days is the period's length in days.
func (p Period) Days() int { return int(p.End.Sub(p.Start).Hours() / 24) }

// LastDay is the period's last (inclusive) day.
func (p Period) LastDay() time.Time { return p.End.AddDate(0, 0, -1) }

// Previous is the comparison period: the previous calendar month of a calendar month, the
// previous year of a year, the same days one month (one year) earlier for month-to-date
// (year-to-date), and otherwise the window of the same length just before.
func (p Period) Previous() Period {
	switch p.Kind {
	case "month":
		s := p.Start.AddDate(0, -1, 0)
		return Period{Start: s, End: p.Start, Kind: "month"}
	case "year":
		return Period{Start: p.Start.AddDate(-1, 0, 0), End: p.Start, Kind: "year"}
	case "quarter":
		return Period{Start: p.Start.AddDate(0, -3, 0), End: p.Start, Kind: "quarter"}
	case "half":
		return Period{Start: p.Start.AddDate(0, -6, 0), End: p.Start, Kind: "half"}
	case "qtd":
		s := p.Start.AddDate(0, -3, 0)
		e := s.AddDate(0, 0, p.Days())
		if e.After(p.Start) {
			e = p.Start
		}
		return Period{Start: s, End: e, Kind: "range"}
	case "mtd":
		s := p.Start.AddDate(0, -1, 0)
		e := s.AddDate(0, 0, p.Days())
		if e.After(p.Start) {
			e = p.Start
		}
		return Period{Start: s, End: e, Kind: "range"}
	case "ytd":
		s := p.Start.AddDate(-1, 0, 0)
		e := s.AddDate(0, 0, p.Days())
		if e.After(p.Start) {
			e = p.Start
		}
		return Period{Start: s, End: e, Kind: "range"}
	}
	d := p.End.Sub(p.Start)
	return Period{Start: p.Start.Add(-d), End: p.Start, Kind: p.Kind}
}

// YearAgo is the same days one year earlier (year over year, 同比).
func (p Period) YearAgo() Period {
	return Period{Start: p.Start.AddDate(-1, 0, 0), End: p.End.AddDate(-1, 0, 0), Kind: p.Kind}
}

// Range writes the period as dates: "2026-10-01 – 2026-10-31", or one date.
func (p Period) Range() string {
	if p.Days() == 1 {
		return p.Start.Format(time.DateOnly)
	}
	return p.Start.Format(time.DateOnly) + " – " + p.LastDay().Format(time.DateOnly)
}

// Describe names the period for the narrative, in English or Chinese.
func (p Period) Describe(zh bool) string {
	switch p.Kind {
	case "month":
		if zh {
			return fmt.Sprintf("%d年%d月", p.Start.Year(), int(p.Start.Month()))
		}
		return p.Start.Format("January 2006")
	case "year":
		if zh {
			return fmt.Sprintf("%d年", p.Start.Year())
		}
		return strconv.Itoa(p.Start.Year())
	case "quarter":
		q := (int(p.Start.Month())-1)/3 + 1
		if zh {
			return fmt.Sprintf("%d年第%d季度", p.Start.Year(), q)
		}
		return fmt.Sprintf("Q%d %d", q, p.Start.Year())
	case "half":
		h := (int(p.Start.Month())-1)/6 + 1
		if zh {
			return fmt.Sprintf("%d年%s", p.Start.Year(), map[int]string{1: "上半年", 2: "下半年"}[h])
		}
		return fmt.Sprintf("H%d %d", h, p.Start.Year())
	}
	return p.Range()
}

// Day is the UTC day of t (midnight UTC).
func Day(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// MonthStart is the first day of month m of year y.
func MonthStart(y int, m time.Month) time.Time { return time.Date(y, m, 1, 0, 0, 0, 0, time.UTC) }

func monthPeriod(y int, m time.Month) Period {
	s := MonthStart(y, m)
	return Period{Start: s, End: s.AddDate(0, 1, 0), Kind: "month"}
}

// DaysBefore is the window of the n whole days before today.
func DaysBefore(today time.Time, n int) Period {
	return Period{Start: today.AddDate(0, 0, -n), End: today, Kind: "days"}
}

// numbers written in words or Chinese numerals
var enNumbers = map[string]int{"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
	"nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "twenty": 20,
	"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "ninety": 90, "a": 1}

// NumberRE and ChineseNumberRE match a number (one capture group) as ParseNumber reads it:
// digits or English number words, digits or Chinese numerals.
const (
	NumberRE        = `(\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|twenty|thirty|forty|fifty|sixty|ninety)`
	ChineseNumberRE = `(\d+|[零一二两三四五六七八九十百]+)`
)

// ParseNumber reads digits, English number words and Chinese numerals up to 999.
func ParseNumber(s string) (int, bool) {
	s = strings.TrimSpace(s)
	if n, err := strconv.Atoi(s); err == nil {
		return n, true
	}
	if n, ok := enNumbers[s]; ok {
		return n, true
	}
	digits := map[rune]int{'零': 0, '一': 1, '二': 2, '两': 2, '三': 3, '四': 4, '五': 5, '六': 6, '七': 7, '八': 8, '九': 9}
	total, cur := 0, 0
	seen := false
	for _, r := range s {
		switch {
		case r == '百':
			if cur == 0 {
				cur = 1
			}
			total += cur * 100
			cur = 0
		case r == '十':
			if cur == 0 {
				cur = 1
			}
			total += cur * 10
			cur = 0
		default:
			d, ok := digits[r]
			if !ok {
				return 0, false
			}
			cur = d
		}
		seen = true
	}
	return total + cur, seen
}

var monthNames = map[string]time.Month{
	"january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7, "august": 8,
	"september": 9, "october": 10, "november": 11, "december": 12,
	"jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9, "oct": 10, "nov": 11, "dec": 12,
}

const monthNameRE = `(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)`

type periodRule struct {
	re    *regexp.Regexp
	build func(m []string, today time.Time) (Period, bool)
}

func mustDate(y, m, d string) (time.Time, bool) {
	yy, _ := strconv.Atoi(y)
	mm, _ := strconv.Atoi(m)
	dd, _ := strconv.Atoi(d)
	t := time.Date(yy, time.Month(mm), dd, 0, 0, 0, 0, time.UTC)
	if mm < 1 || mm > 12 || dd < 1 || t.Day() != dd {
		return time.Time{}, false
	}
	return t, true
}

// recentMonth is the most recent month m (this year's, or last year's when m is later).
func recentMonth(m time.Month, today time.Time) Period {
	y := today.Year()
	if m > today.Month() {
		y--
	}
	return monthPeriod(y, m)
}

func fixed(build func(today time.Time) Period) func([]string, time.Time) (Period, bool) {
	return func(_ []string, today time.Time) (Period, bool) { return build(today), true }
}

// QuarterStart is the first day of today's quarter.
func QuarterStart(today time.Time) time.Time {
	return MonthStart(today.Year(), time.Month((int(today.Month())-1)/3*3+1))
}

// WeekStart is the Monday of today's ISO week.
func WeekStart(today time.Time) time.Time {
	wd := (int(today.Weekday()) + 6) % 7 // Monday 0
	return today.AddDate(0, 0, -wd)
}

// periodRules are tried in order; the first that matches names the period. They run on
// lowercased text.
var periodRules = []periodRule{
	{regexp.MustCompile(`\b(?:this|current)\s+quarter\b|\bquarter to date\b|\bqtd\b|本季度|这个季度|本季|这季度|当季`), fixed(func(t time.Time) Period {
		return Period{Start: QuarterStart(t), End: t.AddDate(0, 0, 1), Kind: "qtd"}
	})},
	{regexp.MustCompile(`\b(?:last|previous|prior)\s+quarter\b|上个?季度|上一季度|上季`), fixed(func(t time.Time) Period {
		s := QuarterStart(t).AddDate(0, -3, 0)
		return Period{Start: s, End: s.AddDate(0, 3, 0), Kind: "quarter"}
	})},
	{regexp.MustCompile(`(?:(\d{4})\s*年?\s*)?(?:\bq([1-4])\b|第?([1-4一二三四])\s*季度?)(?:\s*(?:of\s+)?(\d{4}))?`), func(m []string, today time.Time) (Period, bool) {
		qs := m[2]
		if qs == "" {
			qs = m[3]
		}
		if m[2] == "" && !strings.Contains(m[0], "季") {
			return Period{}, false
		}
		q, ok := ParseNumber(qs)
		if !ok || q < 1 || q > 4 {
			return Period{}, false
		}
		y := today.Year()
		switch {
		case m[1] != "":
			y, _ = strconv.Atoi(m[1])
		case m[4] != "":
			y, _ = strconv.Atoi(m[4])
		default:
			if time.Date(y, time.Month(3*q-2), 1, 0, 0, 0, 0, time.UTC).After(today) {
				y--
			}
		}
		s := time.Date(y, time.Month(3*q-2), 1, 0, 0, 0, 0, time.UTC)
		return Period{Start: s, End: s.AddDate(0, 3, 0), Kind: "quarter"}, true
	}},
	// "the third quarter", "3rd quarter of 2026"
	{regexp.MustCompile(`\b(first|second|third|fourth|1st|2nd|3rd|4th)\s+quarter\b(?:\s+(?:of\s+)?(\d{4}))?`), func(m []string, today time.Time) (Period, bool) {
		q := map[string]int{"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4}[m[1]]
		y := today.Year()
		if m[2] != "" {
			y, _ = strconv.Atoi(m[2])
		} else if time.Date(y, time.Month(3*q-2), 1, 0, 0, 0, 0, time.UTC).After(today) {
			y--
		}
		s := time.Date(y, time.Month(3*q-2), 1, 0, 0, 0, 0, time.UTC)
		return Period{Start: s, End: s.AddDate(0, 3, 0), Kind: "quarter"}, true
	}},
	{regexp.MustCompile(`(?:(\d{4})\s*年?|(今年|去年))?\s*(上半年|下半年)|\b(first|second)\s+half(?:\s+of\s+(?:(\d{4})|(this|last)\s+year))?\b|\bh([12])(?:\s+(\d{4}))?\b`), func(m []string, today time.Time) (Period, bool) {
		y := today.Year()
		switch {
		case m[1] != "":
			y, _ = strconv.Atoi(m[1])
		case m[5] != "":
			y, _ = strconv.Atoi(m[5])
		case m[8] != "":
			y, _ = strconv.Atoi(m[8])
		case m[2] == "去年" || m[6] == "last":
			y--
		}
		h := 1
		if m[3] == "下半年" || m[4] == "second" || m[7] == "2" {
			h = 2
		}
		s := time.Date(y, time.Month(6*h-5), 1, 0, 0, 0, 0, time.UTC)
		if s.After(today) {
			s = s.AddDate(-1, 0, 0)
		}
		e := s.AddDate(0, 6, 0)
		if e.After(today.AddDate(0, 0, 1)) {
			e = today.AddDate(0, 0, 1)
		}
		return Period{Start: s, End: e, Kind: "half"}, true
	}},
	{regexp.MustCompile(`(?:(\d{4})\s*年|(今年|去年))?\s*(\d{1,2}|[一二三四五六七八九十]+)\s*月份?\s*(?:到|至|-|~|～|—)\s*(\d{1,2}|[一二三四五六七八九十]+)\s*月份?|\bfrom\s+` + monthNameRE + `\s+(?:to|until|through)\s+` + monthNameRE + `\b`), func(m []string, today time.Time) (Period, bool) {
		var a, b int
		if m[5] != "" {
			a, b = int(monthNames[m[5]]), int(monthNames[m[6]])
		} else {
			var ok1, ok2 bool
			a, ok1 = ParseNumber(m[3])
			b, ok2 = ParseNumber(m[4])
			if !ok1 || !ok2 {
				return Period{}, false
			}
		}
		if a < 1 || a > 12 || b < a || b > 12 {
			return Period{}, false
		}
		y := today.Year()
		if m[1] != "" {
			y, _ = strconv.Atoi(m[1])
		} else if m[2] == "去年" || time.Month(a) > today.Month() {
			y--
		}
		s := MonthStart(y, time.Month(a))
		return Period{Start: s, End: MonthStart(y, time.Month(b)).AddDate(0, 1, 0), Kind: "range"}, true
	}},
	{regexp.MustCompile(`今年以来|年初至今|今年到现在|since the start of the year|since january`), fixed(func(t time.Time) Period {
		return Period{Start: time.Date(t.Year(), 1, 1, 0, 0, 0, 0, time.UTC), End: t.AddDate(0, 0, 1), Kind: "ytd"}
	})},
	// "since June", "从6月开始", "6月以来": from the month's first day to today
	{regexp.MustCompile(`\bsince\s+(?:the\s+(?:start|beginning)\s+of\s+)?` + monthNameRE + `\b|(?:从|自)\s*(\d{1,2}|[一二三四五六七八九十]+)\s*月份?\s*(?:初\s*)?(?:开始|起|以来|至今|到现在)|(?:^|\D)(\d{1,2}|[一二三四五六七八九十]+)\s*月份?\s*(?:以来|至今|到现在)`), func(m []string, today time.Time) (Period, bool) {
		var mon time.Month
		switch {
		case m[1] != "":
			mon = monthNames[m[1]]
		default:
			s := m[2]
			if s == "" {
				s = m[3]
			}
			n, ok := ParseNumber(s)
			if !ok || n < 1 || n > 12 {
				return Period{}, false
			}
			mon = time.Month(n)
		}
		return Period{Start: recentMonth(mon, today).Start, End: today.AddDate(0, 0, 1), Kind: "range"}, true
	}},
	{regexp.MustCompile(`(\d{4})[-/.年](\d{1,2})[-/.月](\d{1,2})日?\s*(?:to|until|through|and|-|~|～|至|到|—|–)\s*(\d{4})[-/.年](\d{1,2})[-/.月](\d{1,2})日?`),
		func(m []string, _ time.Time) (Period, bool) {
			s, ok1 := mustDate(m[1], m[2], m[3])
			e, ok2 := mustDate(m[4], m[5], m[6])
			if !ok1 || !ok2 || e.Before(s) {
				return Period{}, false
			}
			return Period{Start: s, End: e.AddDate(0, 0, 1), Kind: "range"}, true
		}},
	{regexp.MustCompile(`(\d{4})[-/.年](\d{1,2})[-/.月](\d{1,2})日?`), func(m []string, _ time.Time) (Period, bool) {
		s, ok := mustDate(m[1], m[2], m[3])
		return Period{Start: s, End: s.AddDate(0, 0, 1), Kind: "day"}, ok
	}},
	{regexp.MustCompile(`(\d{4})(?:[-/.]|年)(\d{1,2})(?:月份?)?(?:\D|$)`), func(m []string, _ time.Time) (Period, bool) {
		y, _ := strconv.Atoi(m[1])
		mm, _ := strconv.Atoi(m[2])
		if mm < 1 || mm > 12 {
			return Period{}, false
		}
		return monthPeriod(y, time.Month(mm)), true
	}},
	{regexp.MustCompile(`\b` + monthNameRE + `\.?,?\s+(\d{4})\b`), func(m []string, _ time.Time) (Period, bool) {
		y, _ := strconv.Atoi(m[2])
		return monthPeriod(y, monthNames[m[1]]), true
	}},
	{regexp.MustCompile(`\b(?:last|past|previous|recent|trailing)\s+` + NumberRE + `\s*days?\b`), func(m []string, today time.Time) (Period, bool) {
		n, ok := ParseNumber(m[1])
		return DaysBefore(today, n), ok && n > 0 && n <= 3660
	}},
	{regexp.MustCompile(`(?:最近|近|过去|前)\s*` + ChineseNumberRE + `\s*(?:天|日)`), func(m []string, today time.Time) (Period, bool) {
		n, ok := ParseNumber(m[1])
		return DaysBefore(today, n), ok && n > 0 && n <= 3660
	}},
	{regexp.MustCompile(`\b(?:last|past|previous|recent|trailing)\s+` + NumberRE + `\s*weeks?\b`), func(m []string, today time.Time) (Period, bool) {
		n, ok := ParseNumber(m[1])
		return DaysBefore(today, 7*n), ok && n > 0 && n <= 520
	}},
	{regexp.MustCompile(`(?:最近|近|过去)\s*` + ChineseNumberRE + `\s*(?:周|个?星期|个?礼拜)`), func(m []string, today time.Time) (Period, bool) {
		n, ok := ParseNumber(m[1])
		return DaysBefore(today, 7*n), ok && n > 0 && n <= 520
	}},
	{regexp.MustCompile(`\b(?:last|past|previous|recent|trailing)\s+` + NumberRE + `\s*months?\b`), func(m []string, today time.Time) (Period, bool) {
		n, ok := ParseNumber(m[1])
		return Period{Start: today.AddDate(0, -n, 0), End: today, Kind: "months"}, ok && n > 0 && n <= 120
	}},
	{regexp.MustCompile(`(?:最近|近|过去)\s*` + ChineseNumberRE + `\s*个?月`), func(m []string, today time.Time) (Period, bool) {
		n, ok := ParseNumber(m[1])
		return Period{Start: today.AddDate(0, -n, 0), End: today, Kind: "months"}, ok && n > 0 && n <= 120
	}},
	{regexp.MustCompile(`\bday before yesterday\b|前天`), fixed(func(t time.Time) Period {
		return Period{Start: t.AddDate(0, 0, -2), End: t.AddDate(0, 0, -1), Kind: "day"}
	})},
	{regexp.MustCompile(`\byesterday\b|昨天|昨日`), fixed(func(t time.Time) Period {
		return Period{Start: t.AddDate(0, 0, -1), End: t, Kind: "day"}
	})},
	{regexp.MustCompile(`\btoday\b|今天|今日`), fixed(func(t time.Time) Period {
		return Period{Start: t, End: t.AddDate(0, 0, 1), Kind: "day"}
	})},
	{regexp.MustCompile(`\b(?:past|recent)\s+week\b`), fixed(func(t time.Time) Period { return DaysBefore(t, 7) })},
	{regexp.MustCompile(`\b(?:this|current)\s+week\b|\bweek to date\b|\bwtd\b|本周|这周|这个星期|本星期|这星期`), fixed(func(t time.Time) Period {
		return Period{Start: WeekStart(t), End: t.AddDate(0, 0, 1), Kind: "wtd"}
	})},
	{regexp.MustCompile(`\b(?:last|previous|prior)\s+week\b|上周|上星期|上个星期|上一周|上个礼拜|上礼拜`), fixed(func(t time.Time) Period {
		s := WeekStart(t).AddDate(0, 0, -7)
		return Period{Start: s, End: s.AddDate(0, 0, 7), Kind: "week"}
	})},
	{regexp.MustCompile(`\b(?:past|recent)\s+month\b`), fixed(func(t time.Time) Period {
		return Period{Start: t.AddDate(0, -1, 0), End: t, Kind: "months"}
	})},
	{regexp.MustCompile(`\b(?:this|current)\s+month\b|\bmonth to date\b|\bmtd\b|本月|这个月|当月|这月`), fixed(func(t time.Time) Period {
		return Period{Start: MonthStart(t.Year(), t.Month()), End: t.AddDate(0, 0, 1), Kind: "mtd"}
	})},
	{regexp.MustCompile(`\b(?:last|previous|prior)\s+month\b|上个月|上一个月|上一月|上月`), fixed(func(t time.Time) Period {
		s := MonthStart(t.Year(), t.Month()).AddDate(0, -1, 0)
		return monthPeriod(s.Year(), s.Month())
	})},
	{regexp.MustCompile(`\b(?:this|current)\s+year\b|\byear to date\b|\bytd\b|今年|本年|今年以来`), fixed(func(t time.Time) Period {
		return Period{Start: time.Date(t.Year(), 1, 1, 0, 0, 0, 0, time.UTC), End: t.AddDate(0, 0, 1), Kind: "ytd"}
	})},
	{regexp.MustCompile(`\b(?:last|previous|prior)\s+year\b|去年|上一年|上年`), fixed(func(t time.Time) Period {
		s := time.Date(t.Year()-1, 1, 1, 0, 0, 0, 0, time.UTC)
		return Period{Start: s, End: s.AddDate(1, 0, 0), Kind: "year"}
	})},
	{regexp.MustCompile(`(?:^|\D)(\d{1,2}|[一二三四五六七八九十]+)\s*月份?`), func(m []string, today time.Time) (Period, bool) {
		n, ok := ParseNumber(m[1])
		if !ok || n < 1 || n > 12 {
			return Period{}, false
		}
		return recentMonth(time.Month(n), today), true
	}},
	{regexp.MustCompile(`\b(?:in|for|during|of)\s+` + monthNameRE + `\b|\b(january|february|march|april|june|july|august|september|october|november|december)\b`),
		func(m []string, today time.Time) (Period, bool) {
			name := m[1]
			if name == "" {
				name = m[2]
			}
			return recentMonth(monthNames[name], today), true
		}},
	{regexp.MustCompile(`(?:^|\D)(20\d{2})\s*(?:年度?|\b)`), func(m []string, _ time.Time) (Period, bool) {
		y, _ := strconv.Atoi(m[1])
		s := time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC)
		return Period{Start: s, End: s.AddDate(1, 0, 0), Kind: "year"}, true
	}},
}

// ruleHints are, per rule of periodRules (same order), words one of which the text must
// hold for the rule to be tried ("#" stands for any digit): a cheap test before the
// regular expression, which keeps Parse fast on long questions.
var ruleHints = [][]string{
	{"quarter", "qtd", "季"}, {"quarter", "季"}, {"q", "季"}, {"quarter"}, {"半年", "half", "h1", "h2"}, {"月", "from"},
	{"今年", "年初", "since"}, {"since", "以来", "开始", "起", "至今", "到现在"}, {"#"}, {"#"}, {"#"}, {"#"},
	{"day"}, {"天", "日"}, {"week"}, {"周", "星期", "礼拜"}, {"month"}, {"月"},
	{"yesterday", "前天"}, {"yesterday", "昨"}, {"today", "今"}, {"week"}, {"week", "wtd", "周", "星期"},
	{"week", "周", "星期", "礼拜"}, {"month"}, {"month", "mtd", "月"}, {"month", "月"}, {"year", "ytd", "年"}, {"year", "年"},
	{"月"}, {"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}, {"#"},
}

func hinted(text string, i int, digits bool) bool {
	if i >= len(ruleHints) {
		return true
	}
	for _, h := range ruleHints[i] {
		if h == "#" && digits || h != "#" && strings.Contains(text, h) {
			return true
		}
	}
	return false
}

// DefaultDays is the window analysed when a question names no period.
const DefaultDays = 30

// Parse finds the period named in lowercased text; it returns the matched byte span
// so callers can mask it.
func Parse(text string, now time.Time) (Period, [2]int, bool) {
	today := Day(now)
	digits := strings.ContainsAny(text, "0123456789")
	for i, r := range periodRules {
		if !hinted(text, i, digits) {
			continue
		}
		for _, loc := range r.re.FindAllStringSubmatchIndex(text, -1) {
			m := make([]string, len(loc)/2)
			for i := range m {
				if loc[2*i] >= 0 {
					m[i] = text[loc[2*i]:loc[2*i+1]]
				}
			}
			if p, ok := r.build(m, today); ok {
				return p, [2]int{loc[0], loc[1]}, true
			}
		}
	}
	return DaysBefore(today, DefaultDays), [2]int{}, false
}

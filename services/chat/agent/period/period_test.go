package period

import (
	"testing"
	"time"
)

// d is the UTC day written s (YYYY-MM-DD).
func d(s string) time.Time {
	t, _ := mustDate(s[0:4], s[5:7], s[8:10])
	return t
}

func TestPeriods(t *testing.T) {
	p := monthPeriod(2026, 3)
	if prev := p.Previous(); !prev.Start.Equal(d("2026-02-01")) || !prev.End.Equal(d("2026-03-01")) {
		t.Fatalf("previous month %v", prev)
	}
	w := DaysBefore(d("2026-11-22"), 7)
	if prev := w.Previous(); !prev.Start.Equal(d("2026-11-08")) || !prev.End.Equal(d("2026-11-15")) {
		t.Fatalf("previous window %v", prev)
	}
	mtd := Period{Start: d("2026-03-01"), End: d("2026-03-31"), Kind: "mtd"}
	if prev := mtd.Previous(); !prev.Start.Equal(d("2026-02-01")) || !prev.End.Equal(d("2026-03-01")) {
		t.Fatalf("previous mtd clamps to the month: %v", prev)
	}
	for s, want := range map[string]int{"7": 7, "七": 7, "十": 10, "三十": 30, "十五": 15, "两": 2, "一百二十": 120, "five": 5} {
		if n, ok := ParseNumber(s); !ok || n != want {
			t.Errorf("%s: %d", s, n)
		}
	}
	if p.Describe(true) != "2026年3月" || p.Describe(false) != "March 2026" || w.Range() != "2026-11-15 – 2026-11-21" {
		t.Fatal(p.Describe(true), p.Describe(false), w.Range())
	}
}

func TestRuleHintsFollowTheRules(t *testing.T) {
	if len(ruleHints) != len(periodRules) {
		t.Fatalf("%d hints for %d rules", len(ruleHints), len(periodRules))
	}
}

// English ordinal quarters and "since <month>" (从6月开始, 6月以来) are periods.
func TestOrdinalQuarterAndSince(t *testing.T) {
	now := d("2026-11-28")
	for text, want := range map[string][2]string{
		"revenue in the third quarter":          {"2026-07-01", "2026-10-01"},
		"orders in the 2nd quarter of 2025":     {"2025-04-01", "2025-07-01"},
		"sales in the fourth quarter":           {"2026-10-01", "2027-01-01"},
		"month-by-month order count since june": {"2026-06-01", "2026-11-29"},
		"从6月开始每月的订单量":                           {"2026-06-01", "2026-11-29"},
		"九月以来的销售额":                              {"2026-09-01", "2026-11-29"},
		"since the start of august":             {"2026-08-01", "2026-11-29"},
	} {
		p, _, ok := Parse(text, now)
		if !ok || !p.Start.Equal(d(want[0])) || !p.End.Equal(d(want[1])) {
			t.Errorf("%q: %v (%v)", text, p, ok)
		}
	}
}

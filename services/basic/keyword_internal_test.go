package basic

import (
	"fmt"
	"strings"
	"testing"
)

func TestBoundedCount(t *testing.T) {
	for _, c := range []struct {
		n, capN int64
		want    goodsCount
	}{
		{0, 1000, goodsCount{Total: 0}},
		{999, 1000, goodsCount{Total: 999}},
		{1000, 1000, goodsCount{Total: 1000}},
		{1001, 1000, goodsCount{Total: 1000, LowerBound: true}},
		{2001, 2000, goodsCount{Total: 2000, LowerBound: true}},
	} {
		if got := boundedCount(c.n, c.capN); got != c.want {
			t.Errorf("boundedCount(%d, %d) = %+v, want %+v", c.n, c.capN, got, c.want)
		}
	}
}

// The keyword statement's bounds follow the page: the count covers at least the end of the
// page, the sort-index walk 100 entries per row needed (at least 2,000). The keyword is a
// value, never SQL text.
func TestKeywordListingBounds(t *testing.T) {
	for _, c := range []struct {
		p                      page
		capN                   int64
		countLimit, walk, ends string
	}{
		{page{Num: 1, Size: 20}, 1000, "LIMIT 1001)", "LIMIT 2000)", "LIMIT 20),"},
		{page{Num: 5, Size: 20}, 1000, "LIMIT 1001)", "LIMIT 10000)", "LIMIT 100),"},
		{page{Num: 30, Size: 100}, 3000, "LIMIT 3001)", "LIMIT 300000)", "LIMIT 3000),"},
	} {
		w := &sqlWhere{}
		w.add("g.tenant_id = %s", int64(7))
		w.add("g.shop_id = %s", int64(3))
		plan := keywordListing(w, "50%_off", sortKey{Field: "price", Desc: true}, c.p)
		if plan.cap != c.capN {
			t.Errorf("%+v: cap %d, want %d", c.p, plan.cap, c.capN)
		}
		want := []any{int64(7), int64(3), `%50\%\_off%`}
		if fmt.Sprint(w.args) != fmt.Sprint(want) || strings.Contains(plan.sql, "_off") {
			t.Errorf("%+v: args %v, want %v", c.p, w.args, want)
		}
		for _, part := range []string{c.countLimit, c.walk, c.ends, "ORDER BY g.price DESC, g.id DESC", "g.name_search LIKE lower($3)",
			fmt.Sprintf("LIMIT %d OFFSET %d", c.p.Size, c.p.offset())} {
			if !strings.Contains(plan.sql, part) {
				t.Errorf("%+v: statement lacks %q:\n%s", c.p, part, plan.sql)
			}
		}
		if !strings.Contains(plan.count, c.countLimit) || !strings.Contains(plan.count, "g.shop_id = $2 AND g.name_search LIKE lower($3)") {
			t.Errorf("%+v: count %s", c.p, plan.count)
		}
	}
}

package provider

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/shopmind/shopmind/internal/analytics/catalog"
)

func TestParseFilter(t *testing.T) {
	vars := map[string]string{"shop_ids": "(3, 4)", "tenant_id": "7"}
	for _, tc := range []struct {
		expr string
		col  string
		want []int64
	}{
		{"analytics.*.shop_id IN {{ shop_ids }}", "shop_id", []int64{3, 4}},
		{"analytics.*.i_tenant_id = {{tenant_id}}", "i_tenant_id", []int64{7}},
		{"analytics.*.shop_id in (1, 2)", "shop_id", []int64{1, 2}},
		{"db.basic_orders.i_tenant_id = 9", "i_tenant_id", []int64{9}},
	} {
		f, err := parseFilter(tc.expr)
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		got, err := f.values(vars)
		if err != nil || f.column != tc.col || len(got) != len(tc.want) || got[0] != tc.want[0] {
			t.Errorf("%s: %v %v %v", tc.expr, f, got, err)
		}
	}
	for _, bad := range []string{"shop_id IN (1)", "a.*.platform IN ('x')", "a.*.shop_id = (1, 2)", "a.*.shop_id IN (1) OR 1=1", "a.*.shop_id IN (-1)"} {
		if _, err := parseFilter(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	f, _ := parseFilter("a.*.shop_id IN {{ shop_ids }}")
	for _, v := range []map[string]string{{}, {"shop_ids": "1 OR 1=1"}, {"shop_ids": "()"}} {
		if _, err := f.values(v); err == nil {
			t.Errorf("variables %v accepted", v)
		}
	}
}

func TestOfflineWriter(t *testing.T) {
	w := Offline{Now: func() time.Time { return time.Date(2026, 11, 24, 15, 0, 0, 0, time.UTC) }}
	cat := catalog.Base()
	for _, tc := range []struct {
		q, engine string
		want      string
	}{
		{"GMV by shop over the last 7 days", "postgresql",
			"SELECT shop_id, SUM(paid_amount) AS gmv FROM basic_orders WHERE ordered_at >= TIMESTAMP '2026-11-18 00:00:00' AND ordered_at < TIMESTAMP '2026-11-25 00:00:00' GROUP BY shop_id ORDER BY gmv DESC"},
		{"how many orders yesterday", "clickhouse",
			"SELECT COUNT(*) AS orders FROM basic_orders WHERE ordered_at >= toDateTime('2026-11-23 00:00:00') AND ordered_at < toDateTime('2026-11-24 00:00:00')"},
		{"top 3 shops by platform", "postgresql", "SELECT platform, COUNT(*) AS shops FROM basic_shops GROUP BY platform ORDER BY shops DESC LIMIT 3"},
		{"每天的销售额 本月", "postgresql",
			"SELECT date_trunc('day', ordered_at) AS day, SUM(paid_amount) AS gmv FROM basic_orders WHERE ordered_at >= TIMESTAMP '2026-11-01 00:00:00' AND ordered_at < TIMESTAMP '2026-12-01 00:00:00' GROUP BY date_trunc('day', ordered_at) ORDER BY day"},
	} {
		got, _, err := w.WriteSQL(context.Background(), tc.q, tc.engine, cat)
		if err != nil || got != tc.want {
			t.Errorf("%q:\n got %s (%v)\nwant %s", tc.q, got, err, tc.want)
		}
	}
	if _, _, err := w.WriteSQL(context.Background(), "what is the weather", "postgresql", cat); err == nil || !strings.Contains(err.Error(), "ask about") {
		t.Errorf("an unmappable question: %v", err)
	}
}

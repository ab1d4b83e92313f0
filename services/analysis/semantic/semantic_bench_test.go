package semantic

import (
	"testing"
	"time"
)

// BenchmarkCompile measures Compile (validation, planning, SQL text) per query shape and
// dialect. Goal: under 100 us per query.
func BenchmarkCompile(b *testing.B) {
	day90 := func(q *Query) *Query {
		q.Start = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
		q.End = q.Start.AddDate(0, 0, 90)
		return q
	}
	shapes := []struct {
		name string
		q    *Query
	}{
		{"gmv_by_day_90d", day90(query([]string{"gmv"}, nil, "day"))},
		{"top20_goods_by_sales", with(query([]string{"sales"}, []string{"goods"}, ""), func(q *Query) {
			q.Sort = []SortKey{{Field: "sales", Desc: true}}
			q.Limit = 20
		})},
		{"formula_by_shop", query([]string{"aov"}, []string{"shop"}, "")},
		{"two_tables_formula_by_shop_month", query([]string{"gmv", "sales", "margin"}, []string{"shop"}, "month")},
		{"category_platform_week_filtered", with(query([]string{"sales", "units", "margin"}, []string{"category", "platform"}, "week"), func(q *Query) {
			q.Filters = []Condition{{Field: "status", Operator: "in", Value: []any{"paid", "completed"}}, {Field: "basic_goods.is_virtual", Operator: "eq", Value: false}}
		})},
	}
	for _, s := range shapes {
		for _, d := range dialects {
			b.Run(s.name+"/"+d.Name(), func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					if _, err := Compile(s.q, baseCatalog, d); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkParseFormula(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := ParseFormula("(gmv - refunds) / NULLIF_SAFE + order_count * 0.5 - (a / (b + c))"); err == nil {
			b.Fatal("parsed")
		}
		if _, err := ParseFormula("(gmv - refunds) / order_count + order_count * 0.5 - (a / (b + c))"); err != nil {
			b.Fatal(err)
		}
	}
}

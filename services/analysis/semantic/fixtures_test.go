package semantic

import (
	"time"

	"github.com/shopmind/shopmind/internal/analytics/catalog"
)

// The metrics the tests use, by name.
func testMetrics() map[string]*Metric {
	paidStatuses := Condition{Field: "status", Operator: "in", Value: []any{"paid", "shipped", "completed"}}
	ms := []*Metric{
		{ID: 1, Name: "gmv", Type: TypeOrder, Order: &OrderConfig{OrderField: "paid_amount", TimeBasis: "ordered_at", Conditions: []Condition{paidStatuses}}},
		{ID: 2, Name: "order_count", Type: TypeOrder, Order: &OrderConfig{OrderField: "order_id", TimeBasis: "ordered_at", Conditions: []Condition{paidStatuses}}},
		{ID: 3, Name: "all_orders", Type: TypeOrder, Order: &OrderConfig{OrderField: "id", TimeBasis: "ordered_at"}},
		{ID: 4, Name: "buyers", Type: TypeOrder, Order: &OrderConfig{OrderField: "buyer_id", TimeBasis: "ordered_at"}},
		{ID: 5, Name: "paid_gmv", Type: TypeOrder, Order: &OrderConfig{OrderField: "paid_amount", TimeBasis: "paid_at"}},
		{ID: 6, Name: "sales", Type: TypeDerived, Derived: &DerivedConfig{SourceField: "basic_order_items.amount", Aggregation: "sum"}},
		{ID: 7, Name: "units", Type: TypeDerived, Derived: &DerivedConfig{SourceField: "quantity", Aggregation: "sum"}},
		{ID: 8, Name: "cost", Type: TypeDerived, Derived: &DerivedConfig{SourceField: "cost_amount", Aggregation: "sum"}},
		{ID: 9, Name: "lines", Type: TypeDerived, Derived: &DerivedConfig{SourceField: "item_id", Aggregation: "count"}},
		{ID: 10, Name: "avg_line", Type: TypeDerived, Derived: &DerivedConfig{SourceField: "amount", Aggregation: "avg"}},
		{ID: 11, Name: "max_order", Type: TypeDerived, Derived: &DerivedConfig{SourceField: "paid_amount", Aggregation: "max"}},
		{ID: 12, Name: "aov", Type: TypeFormula, Formula: &FormulaConfig{Expression: "gmv / order_count", DependencyIDs: []int64{1, 2}}},
		{ID: 13, Name: "cancel_rate", Type: TypeFormula, Formula: &FormulaConfig{Expression: "(all_orders - order_count) / all_orders", DependencyIDs: []int64{3, 2}}},
		{ID: 14, Name: "margin", Type: TypeFormula, Formula: &FormulaConfig{Expression: "(sales - cost) / sales", DependencyIDs: []int64{6, 8}}},
		{ID: 15, Name: "aov_cents", Type: TypeFormula, Formula: &FormulaConfig{Expression: "aov * 100", DependencyIDs: []int64{12}}},
		{ID: 16, Name: "units_per_order", Type: TypeFormula, Formula: &FormulaConfig{Expression: "units / all_orders", DependencyIDs: []int64{7, 3}}},
		{ID: 17, Name: "goods_count", Type: TypeDerived, Derived: &DerivedConfig{SourceField: "basic_goods.goods_id", Aggregation: "count_distinct"}},
		{ID: 19, Name: "cancelled", Type: TypeOrder, Order: &OrderConfig{OrderField: "order_id", TimeBasis: "ordered_at", Conditions: []Condition{{Field: "status", Operator: "eq", Value: "cancelled"}}}},
		{ID: 18, Name: "shipped_units", Type: TypeDerived, Derived: &DerivedConfig{SourceField: "quantity", Aggregation: "sum", TimeRangeField: "basic_orders.shipped_at"}},
	}
	out := make(map[string]*Metric, len(ms))
	for _, m := range ms {
		out[m.Name] = m
	}
	return out
}

type metricSet map[string]*Metric

func (s metricSet) byName(n string) *Metric { return s[n] }
func (s metricSet) byID(id int64) *Metric {
	for _, m := range s {
		if m.ID == id {
			return m
		}
	}
	return nil
}

var (
	t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 = time.Date(2024, 4, 1, 0, 0, 0, 0, time.UTC)
)

// query builds a query over the test metrics.
func query(names []string, dims []string, gran string) *Query {
	ms := metricSet(testMetrics())
	q := &Query{TenantID: 7, Resolve: ms.byName, Dimensions: dims, Granularity: gran, Start: t0, End: t1}
	for _, n := range names {
		q.Metrics = append(q.Metrics, ms[n])
	}
	return q
}

var baseCatalog = catalog.Base()

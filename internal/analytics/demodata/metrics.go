package demodata

import (
	"google.golang.org/protobuf/types/known/structpb"

	analysisv1 "github.com/shopmind/shopmind/gen/go/shopmind/analysis/v1"
)

// SoldStatuses are the order statuses that count as a sale: paid, shipped and completed.
// Pending, cancelled and refunded orders are not sales.
var SoldStatuses = []string{"paid", "shipped", "completed"}

func statusIn(statuses ...string) *analysisv1.Condition {
	vals := make([]*structpb.Value, len(statuses))
	for i, s := range statuses {
		vals[i] = structpb.NewStringValue(s)
	}
	return &analysisv1.Condition{Field: "status", Operator: "in", Value: structpb.NewListValue(&structpb.ListValue{Values: vals})}
}

// Metrics are the demo tenant's metric definitions over the generated data, those that
// depend on no other metric; Formulas are the ones built on them. StandardMetrics creates
// both in order (the one list other packages reuse).
//
// Sales metrics count sold orders only (SoldStatuses): gmv and order_count through their
// query_condition, and the derived units_sold, line_amount and buyers through the derived
// query_condition on the status column of their own table (order lines carry their order's
// status), so units sold and buyers leave out cancelled, pending and refunded orders and
// line_amount by category adds up to gmv. The refund and cancellation metrics read the
// refunded and cancelled orders, placed in the period by ordered_at like every other metric.
func Metrics() []*analysisv1.Metric {
	sold := statusIn(SoldStatuses...)
	order := func(field string, cond *analysisv1.Condition) *analysisv1.MetricConfig {
		return &analysisv1.MetricConfig{Kind: &analysisv1.MetricConfig_Order{Order: &analysisv1.OrderConfig{
			OrderField: field, TimeBasis: "ordered_at", QueryCondition: []*analysisv1.Condition{cond}}}}
	}
	derived := func(field, agg string, cond *analysisv1.Condition) *analysisv1.MetricConfig {
		return &analysisv1.MetricConfig{Kind: &analysisv1.MetricConfig_Derived{Derived: &analysisv1.DerivedConfig{
			SourceField: field, Aggregation: agg, QueryCondition: []*analysisv1.Condition{cond}}}}
	}
	return []*analysisv1.Metric{
		{Name: "gmv", DisplayName: "GMV", Group: "Sales", Type: "order", Config: order("paid_amount", sold),
			Description: "Paid amount of paid, shipped and completed orders", Synonyms: []string{"销售额", "成交额", "sales", "revenue", "GMV"}},
		{Name: "order_count", DisplayName: "Orders", Group: "Sales", Type: "order", Config: order("order_id", sold),
			Description: "Number of paid, shipped and completed orders", Synonyms: []string{"订单数", "订单量", "orders"}},
		{Name: "units_sold", DisplayName: "Units sold", Group: "Sales", Type: "derived", Config: derived("basic_order_items.quantity", "sum", sold),
			Description: "Units on the lines of paid, shipped and completed orders", Synonyms: []string{"销量", "件数", "units"}},
		{Name: "line_amount", DisplayName: "Line amount", Group: "Goods", Type: "derived", Config: derived("basic_order_items.amount", "sum", sold),
			Description: "Amount of the lines of paid, shipped and completed orders (sales by goods or category)", Synonyms: []string{"商品销售额", "goods sales"}},
		{Name: "buyers", DisplayName: "Buyers", Group: "Customers", Type: "derived", Config: derived("basic_orders.buyer_id", "count_distinct", sold),
			Description: "Distinct buyers of paid, shipped and completed orders", Synonyms: []string{"买家数", "客户数", "customers", "buyers"}},
		{Name: "refunded_orders", DisplayName: "Refunded orders", Group: "After-sales", Type: "order", Config: order("order_id", statusIn("refunded")),
			Description: "Number of orders refunded after payment", Synonyms: []string{"退款订单数", "退款单数", "退款订单", "refunds", "refunded orders"}},
		{Name: "refund_amount", DisplayName: "Refund amount", Group: "After-sales", Type: "order", Config: order("paid_amount", statusIn("refunded")),
			Description: "Paid amount of the refunded orders", Synonyms: []string{"退款金额", "退款额", "refund amount", "amount refunded"}},
		{Name: "cancelled_orders", DisplayName: "Cancelled orders", Group: "After-sales", Type: "order", Config: order("order_id", statusIn("cancelled")),
			Description: "Number of orders cancelled before payment", Synonyms: []string{"取消订单数", "取消订单", "取消单数", "cancellations", "cancelled orders"}},
	}
}

// AverageOrderValue is the demo tenant's formula metric: GMV per order, over the metrics
// gmv and order_count with the given ids.
func AverageOrderValue(gmvID, orderCountID int64) *analysisv1.Metric {
	return &analysisv1.Metric{Name: "avg_order_value", DisplayName: "Average order value", Group: "Sales", Type: "formula",
		Description: "GMV per order", Synonyms: []string{"客单价", "AOV", "average order value"},
		Config: &analysisv1.MetricConfig{Kind: &analysisv1.MetricConfig_Formula{Formula: &analysisv1.FormulaConfig{
			Expression: "gmv / order_count", DependencyIds: []int64{gmvID, orderCountID}}}}}
}

// Formulas are the demo tenant's formula metrics over Metrics, given the ids Metrics got:
// avg_order_value (gmv / order_count) and refund_rate (refunded orders over the orders that
// were paid: sold and refunded).
func Formulas(ids map[string]int64) []*analysisv1.Metric {
	return []*analysisv1.Metric{
		AverageOrderValue(ids["gmv"], ids["order_count"]),
		{Name: "refund_rate", DisplayName: "Refund rate", Group: "After-sales", Type: "formula",
			Description: "Refunded orders over paid orders (sold and refunded), a ratio between 0 and 1",
			Synonyms:    []string{"退款率", "退货率", "refund rate", "return rate"},
			Config: &analysisv1.MetricConfig{Kind: &analysisv1.MetricConfig_Formula{Formula: &analysisv1.FormulaConfig{
				Expression: "refunded_orders / (order_count + refunded_orders)", DependencyIds: []int64{ids["refunded_orders"], ids["order_count"]}}}}},
	}
}

// StandardMetrics creates the standard metric catalog (the demo tenant's, and what a new
// tenant starts from) through create, which stores one definition and returns its id: Metrics
// first, then Formulas with their ids. It returns the definitions created.
func StandardMetrics(create func(*analysisv1.Metric) (int64, error)) ([]*analysisv1.Metric, error) {
	ids := map[string]int64{}
	var out []*analysisv1.Metric
	for _, m := range Metrics() {
		id, err := create(m)
		if err != nil {
			return out, err
		}
		ids[m.GetName()] = id
		out = append(out, m)
	}
	for _, m := range Formulas(ids) {
		if _, err := create(m); err != nil {
			return out, err
		}
		out = append(out, m)
	}
	return out, nil
}

package demodata

import (
	"google.golang.org/protobuf/types/known/structpb"

	analysisv1 "github.com/shopmind/shopmind/gen/go/shopmind/analysis/v1"
)

// Metrics are the demo tenant's metric definitions over the generated data, those that
// depend on no other metric; AverageOrderValue is the formula built on two of them.
func Metrics() []*analysisv1.Metric {
	paid := &analysisv1.Condition{Field: "status", Operator: "in", Value: structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{
		structpb.NewStringValue("paid"), structpb.NewStringValue("shipped"), structpb.NewStringValue("completed")}})}
	order := func(field string) *analysisv1.MetricConfig {
		return &analysisv1.MetricConfig{Kind: &analysisv1.MetricConfig_Order{Order: &analysisv1.OrderConfig{
			OrderField: field, TimeBasis: "ordered_at", QueryCondition: []*analysisv1.Condition{paid}}}}
	}
	derived := func(field, agg string) *analysisv1.MetricConfig {
		return &analysisv1.MetricConfig{Kind: &analysisv1.MetricConfig_Derived{Derived: &analysisv1.DerivedConfig{SourceField: field, Aggregation: agg}}}
	}
	return []*analysisv1.Metric{
		{Name: "gmv", DisplayName: "GMV", Group: "Sales", Type: "order", Config: order("paid_amount"),
			Description: "Paid amount of paid, shipped and completed orders", Synonyms: []string{"销售额", "成交额", "sales", "revenue", "GMV"}},
		{Name: "order_count", DisplayName: "Orders", Group: "Sales", Type: "order", Config: order("order_id"),
			Description: "Number of paid, shipped and completed orders", Synonyms: []string{"订单数", "订单量", "orders"}},
		{Name: "units_sold", DisplayName: "Units sold", Group: "Sales", Type: "derived", Config: derived("basic_order_items.quantity", "sum"),
			Description: "Units on all order lines", Synonyms: []string{"销量", "件数", "units"}},
		{Name: "line_amount", DisplayName: "Line amount", Group: "Goods", Type: "derived", Config: derived("basic_order_items.amount", "sum"),
			Description: "Amount of order lines (by goods or category)", Synonyms: []string{"商品销售额", "goods sales"}},
		{Name: "buyers", DisplayName: "Buyers", Group: "Customers", Type: "derived", Config: derived("basic_orders.buyer_id", "count_distinct"),
			Description: "Distinct buyers", Synonyms: []string{"买家数", "客户数", "customers", "buyers"}},
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

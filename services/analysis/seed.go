package analysis

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/types/known/structpb"

	analysisv1 "github.com/shopmind/shopmind/gen/go/shopmind/analysis/v1"
	"github.com/shopmind/shopmind/internal/analytics/demodata"
	"github.com/shopmind/shopmind/internal/service"
)

// DemoOrders is how many orders `make run` loads into the demo tenant.
const DemoOrders = 20_000

// DemoMetrics are the demo tenant's metric definitions; formulas name their dependencies.
func DemoMetrics() []*analysisv1.Metric {
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

// seed loads the demo tenant's orders and metrics once (SHOPMIND_DEMO_DATA).
func (st *registration) seed(ctx context.Context, deps service.Deps) error {
	var tenantID int64
	err := deps.DB.QueryRow(ctx, "SELECT id FROM tenant.tenants WHERE code = 'demo'").Scan(&tenantID)
	if errors.Is(err, pgx.ErrNoRows) || err != nil {
		deps.Logger.Warn("demo data: tenant demo not found (the tenant service creates it); skipped", "error", err)
		return nil
	}
	var n int
	if err := deps.DB.QueryRow(ctx, "SELECT count(*) FROM analysis.metrics WHERE tenant_id = $1", tenantID).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil // seeded before
	}
	existing, err := demodata.ExistingOrders(ctx, st.store, tenantID)
	if err != nil {
		return err
	}
	loaded := int(existing)
	if existing == 0 { // `shopmind demo-data` may have loaded orders already
		stats, err := demodata.Generate(ctx, st.store.Writer(), demodata.Options{TenantID: tenantID, Orders: DemoOrders, Seed: 1,
			Now: time.Now().UTC().Truncate(24 * time.Hour)})
		if err != nil {
			return err
		}
		loaded = stats.Orders
	}
	ids := map[string]int64{}
	for _, m := range DemoMetrics() {
		rec, err := st.metrics.create(ctx, tenantID, m)
		if err != nil {
			return err
		}
		ids[m.GetName()] = rec.ID
	}
	aov := &analysisv1.Metric{Name: "avg_order_value", DisplayName: "Average order value", Group: "Sales", Type: "formula",
		Description: "GMV per order", Synonyms: []string{"客单价", "AOV", "average order value"},
		Config: &analysisv1.MetricConfig{Kind: &analysisv1.MetricConfig_Formula{Formula: &analysisv1.FormulaConfig{
			Expression: "gmv / order_count", DependencyIds: []int64{ids["gmv"], ids["order_count"]}}}}}
	if _, err := st.metrics.create(ctx, tenantID, aov); err != nil {
		return err
	}
	deps.Logger.Info("demo data loaded", "tenant", "demo", "orders", loaded, "metrics", len(ids)+1)
	return nil
}

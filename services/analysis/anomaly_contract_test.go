package analysis_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	analysisv1 "github.com/shopmind/shopmind/gen/go/shopmind/analysis/v1"
	"github.com/shopmind/shopmind/internal/testutil/stack"
)

// CheckAnomalies over orders; the notify service is not running here, so the anomaly is
// found and answered while its notification fails quietly (notified 0): a failure to notify
// never fails the check.
func TestContractCheckAnomalies(t *testing.T) {
	s := stack.StartServices(t, "analysis")
	ctx := context.Background()
	day := time.Date(2026, 3, 20, 0, 0, 0, 0, time.UTC)
	// 14 days of 10 orders of 100, then a day of 60 orders.
	if _, err := s.DB.Pool.Exec(ctx, `INSERT INTO analytics.basic_orders
		(i_tenant_id, order_id, order_no, shop_id, platform, status, buyer_id, total_amount, discount_amount, paid_amount, item_count, ordered_at)
		SELECT t.id, n, 'N' || n, 1, 'tmall', 'paid', 1, 100, 0, 100, 1,
		       $1::timestamptz - make_interval(days => CASE WHEN n <= 60 THEN 0 ELSE 1 + (n - 61) / 10 END) + interval '1 hour'
		FROM tenant.tenants t, generate_series(1, 200) n WHERE t.code = 'demo'`, day); err != nil {
		t.Fatal(err)
	}
	m := analysisv1.NewMetricServiceClient(s.Conn)
	if _, err := m.CreateMetric(s.Admin, &analysisv1.CreateMetricRequest{Metric: &analysisv1.Metric{Name: "gmv", DisplayName: "GMV", Group: "Sales",
		Type: "derived", Config: &analysisv1.MetricConfig{Kind: &analysisv1.MetricConfig_Derived{Derived: &analysisv1.DerivedConfig{
			SourceField: "basic_orders.paid_amount", Aggregation: "sum"}}}}}); err != nil {
		t.Fatal(err)
	}
	q := analysisv1.NewQueryServiceClient(s.Conn)
	r, err := q.CheckAnomalies(s.Admin, &analysisv1.CheckAnomaliesRequest{MetricNames: []string{"gmv"}, Day: timestamppb.New(day.Add(5 * time.Hour)),
		BaselineDays: proto.Int32(14)})
	if err != nil {
		t.Fatalf("CheckAnomalies: %v", err)
	}
	a := r.GetMetrics()[0]
	if !r.GetDay().AsTime().Equal(day) || a.GetValue() != 6000 || a.GetBaselineMean() != 1000 || a.GetBaselineDays() != 14 ||
		!a.GetAnomaly() || a.GetDirection() != "up" || r.GetNotified() != 0 {
		t.Fatalf("check: %v", r)
	}
	prev, err := q.CheckAnomalies(s.Admin, &analysisv1.CheckAnomaliesRequest{MetricNames: []string{"gmv"}, Day: timestamppb.New(day.AddDate(0, 0, -1)),
		BaselineDays: proto.Int32(7)})
	if err != nil || prev.GetMetrics()[0].GetAnomaly() || prev.GetMetrics()[0].GetValue() != 1000 {
		t.Fatalf("a normal day: %v %v", prev, err)
	}
	for _, bad := range []struct {
		req   *analysisv1.CheckAnomaliesRequest
		field string
	}{
		{&analysisv1.CheckAnomaliesRequest{}, "metric_names"},
		{&analysisv1.CheckAnomaliesRequest{MetricNames: []string{"gmv"}, Threshold: proto.Float64(0.5)}, "threshold"},
		{&analysisv1.CheckAnomaliesRequest{MetricNames: []string{"gmv"}, BaselineDays: proto.Int32(91)}, "baseline_days"},
		{&analysisv1.CheckAnomaliesRequest{MetricNames: []string{"missing"}}, "metric_names[0]"},
	} {
		if _, err := q.CheckAnomalies(s.Admin, bad.req); status.Code(err) != codes.InvalidArgument || !slices.Contains(stack.Violations(err), bad.field) {
			t.Errorf("%v: want InvalidArgument naming %s, got %v (%v)", bad.req, bad.field, err, stack.Violations(err))
		}
	}
}

package analysis_test

import (
	"context"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	analysisv1 "github.com/shopmind/shopmind/gen/go/shopmind/analysis/v1"
	"github.com/shopmind/shopmind/internal/testutil/stack"
)

// Contract tests: the analysis service's RPCs through the generated clients, on the gRPC
// server only (no gateway, no WAF). They assert codes and fields, never timings.

func lineAmount() *analysisv1.Metric {
	return &analysisv1.Metric{Name: "line_amount", DisplayName: "Line amount", Group: "Goods", Type: "derived",
		Config: &analysisv1.MetricConfig{Kind: &analysisv1.MetricConfig_Derived{Derived: &analysisv1.DerivedConfig{
			SourceField: "basic_order_items.amount", Aggregation: "sum"}}}}
}

func TestContractMetrics(t *testing.T) {
	s := stack.StartServices(t, "analysis")
	c := analysisv1.NewMetricServiceClient(s.Conn)

	created, err := c.CreateMetric(s.Admin, &analysisv1.CreateMetricRequest{Metric: lineAmount()})
	if err != nil {
		t.Fatalf("CreateMetric: %v", err)
	}
	m := created.GetMetric()
	if m.GetId() <= 0 || m.GetName() != "line_amount" || m.GetType() != "derived" || m.GetCreatedAt() == nil ||
		m.GetConfig().GetDerived().GetAggregation() != "sum" {
		t.Fatalf("created metric %v", m)
	}
	if _, err := c.CreateMetric(s.Admin, &analysisv1.CreateMetricRequest{Metric: lineAmount()}); status.Code(err) != codes.AlreadyExists {
		t.Fatalf("CreateMetric twice: want AlreadyExists, got %v", err)
	}

	list, err := c.ListMetrics(s.Admin, &analysisv1.ListMetricsRequest{GroupFilter: "Goods"})
	if err != nil || len(list.GetGroups()) != 1 || list.GetGroups()[0].GetGroup() != "Goods" ||
		len(list.GetGroups()[0].GetMetrics()) != 1 {
		t.Fatalf("ListMetrics Goods: %v %v", list, err)
	}

	// 400: the field is named in the BadRequest details.
	bad := lineAmount()
	bad.Name = "Not An Identifier"
	_, err = c.CreateMetric(s.Admin, &analysisv1.CreateMetricRequest{Metric: bad})
	if status.Code(err) != codes.InvalidArgument || !slices.Contains(stack.Violations(err), "metric.name") {
		t.Fatalf("CreateMetric with a bad name: want InvalidArgument naming metric.name, got %v (%v)", err, stack.Violations(err))
	}
	// A well-formed definition the catalog does not know: refused by the service.
	unknown := lineAmount()
	unknown.Name = "nope"
	unknown.GetConfig().GetDerived().SourceField = "basic_order_items.no_such_column"
	if _, err := c.CreateMetric(s.Admin, &analysisv1.CreateMetricRequest{Metric: unknown}); status.Code(err) == codes.OK {
		t.Fatal("CreateMetric over an unknown column succeeded")
	}

	// Only the masked field changes.
	upd, err := c.UpdateMetric(s.Admin, &analysisv1.UpdateMetricRequest{Id: m.GetId(),
		Metric:     &analysisv1.Metric{DisplayName: "Line revenue", Description: "ignored"},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"display_name"}}})
	if err != nil || upd.GetMetric().GetDisplayName() != "Line revenue" || upd.GetMetric().GetDescription() != "" {
		t.Fatalf("UpdateMetric: %v %v", upd, err)
	}

	// 404.
	_, err = c.UpdateMetric(s.Admin, &analysisv1.UpdateMetricRequest{Id: 999999, Metric: &analysisv1.Metric{DisplayName: "x"},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"display_name"}}})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("UpdateMetric of a missing metric: want NotFound, got %v", err)
	}
	del, err := c.DeleteMetric(s.Admin, &analysisv1.DeleteMetricRequest{Id: m.GetId()})
	if err != nil || !del.GetSuccess() {
		t.Fatalf("DeleteMetric: %v %v", del, err)
	}
	if _, err := c.DeleteMetric(s.Admin, &analysisv1.DeleteMetricRequest{Id: m.GetId()}); status.Code(err) != codes.NotFound {
		t.Fatalf("DeleteMetric twice: want NotFound, got %v", err)
	}

	// Auth required.
	if _, err := c.ListMetrics(context.Background(), &analysisv1.ListMetricsRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("ListMetrics without a token: want Unauthenticated, got %v", err)
	}
}

func TestContractCatalogAndQuery(t *testing.T) {
	s := stack.StartServices(t, "analysis")
	q := analysisv1.NewQueryServiceClient(s.Conn)

	cat, err := q.GetCatalog(s.Admin, &analysisv1.GetCatalogRequest{})
	if err != nil || len(cat.GetTables()) == 0 {
		t.Fatalf("GetCatalog: %v %v", cat, err)
	}
	found := false
	for _, tbl := range cat.GetTables() {
		if tbl.GetName() == "basic_order_items" {
			found = slices.ContainsFunc(tbl.GetColumns(), func(c *analysisv1.CatalogColumn) bool { return c.GetName() == "amount" })
		}
	}
	if !found {
		t.Fatalf("GetCatalog has no basic_order_items.amount: %v", cat)
	}

	// 400: the required times are missing, and the details name them.
	_, err = q.PreviewQuery(s.Admin, &analysisv1.PreviewQueryRequest{})
	if status.Code(err) != codes.InvalidArgument || !slices.Contains(stack.Violations(err), "start_time") {
		t.Fatalf("PreviewQuery without times: want InvalidArgument naming start_time, got %v (%v)", err, stack.Violations(err))
	}
	if _, err := q.GetCatalog(context.Background(), &analysisv1.GetCatalogRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("GetCatalog without a token: want Unauthenticated, got %v", err)
	}
}

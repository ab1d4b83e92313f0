package chat_test

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	chatv1 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v1"
	"github.com/shopmind/shopmind/internal/testutil/stack"
	"github.com/shopmind/shopmind/services/chat/promotion"
)

// Promotion plans over gRPC: list, get with executions, status moves (allowed and refused),
// delete with the executions, tenant isolation, bad input naming the field.
func TestContractPromotionPlans(t *testing.T) {
	s := stack.StartServices(t, "chat")
	ctx := context.Background()
	tenant := stack.DemoTenant(t, s.DB)
	st := promotion.NewStore(s.DB.Pool)
	day := func(s string) time.Time { d, _ := time.Parse(time.DateOnly, s); return d }
	mk := func(tenantID, product int64) *promotion.Plan {
		p, err := st.CreatePlan(ctx, &promotion.Plan{TenantID: tenantID, Title: "Promotion: scarf", ProductIDs: []int64{product},
			ProductNames: []string{"Scarf"}, DiscountRate: 0.2, Mechanics: "20% off", StartDate: day("2026-12-01"), EndDate: day("2026-12-14"),
			Metrics: []string{"units_sold"}, AnalysisResult: "units fell 40%", CreatedBy: 1})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	mine, other := mk(tenant, 7), mk(tenant+1000, 7)
	mk(tenant, 8)
	if _, err := st.CreateExecution(ctx, &promotion.Execution{TenantID: tenant, TemplateID: mine.ID, Name: "Double 12", Channel: "taobao",
		StartDate: mine.StartDate, EndDate: mine.EndDate, Strategy: map[string]any{"actions": []any{"banner"}}, CreatedBy: 1}); err != nil {
		t.Fatal(err)
	}
	// another tenant's template cannot carry an execution of this tenant
	if _, err := st.CreateExecution(ctx, &promotion.Execution{TenantID: tenant, TemplateID: other.ID, Name: "x", StartDate: mine.StartDate,
		EndDate: mine.EndDate, Strategy: map[string]any{}, CreatedBy: 1}); err != promotion.ErrNotFound {
		t.Fatalf("execution on another tenant's template: %v", err)
	}

	c := chatv1.NewPromotionServiceClient(s.Conn)
	list, err := c.ListPromotionPlans(s.Admin, &chatv1.ListPromotionPlansRequest{})
	if err != nil || list.GetTotal() != 2 || len(list.GetItems()) != 2 || list.GetItems()[1].GetId() != mine.ID {
		t.Fatalf("ListPromotionPlans: %v %v", list, err)
	}
	// The last page number there is: an empty page, not an overflowed offset.
	last := int32(math.MaxInt32)
	for name, call := range map[string]func() (int, int64, error){
		"plans": func() (int, int64, error) {
			r, err := c.ListPromotionPlans(s.Admin, &chatv1.ListPromotionPlansRequest{PageNum: &last})
			return len(r.GetItems()), r.GetTotal(), err
		},
		"executions": func() (int, int64, error) {
			r, err := c.ListPromotionExecutions(s.Admin, &chatv1.ListPromotionExecutionsRequest{PageNum: &last})
			return len(r.GetItems()), r.GetTotal(), err
		},
	} {
		if n, total, err := call(); err != nil || n != 0 || total == 0 {
			t.Fatalf("%s at page %d: %d items of %d, %v", name, last, n, total, err)
		}
	}
	byProduct, err := c.ListPromotionPlans(s.Admin, &chatv1.ListPromotionPlansRequest{ProductId: &mine.ProductIDs[0]})
	if err != nil || byProduct.GetTotal() != 1 {
		t.Fatalf("by product: %v %v", byProduct, err)
	}
	got, err := c.GetPromotionPlan(s.Admin, &chatv1.GetPromotionPlanRequest{Id: mine.ID})
	if err != nil || got.GetPlan().GetDiscountRate() != 0.2 || got.GetPlan().GetStartDate() != "2026-12-01" || got.GetPlan().GetStatus() != "draft" ||
		len(got.GetExecutions()) != 1 || got.GetExecutions()[0].GetStrategy().GetFields()["actions"] == nil {
		t.Fatalf("GetPromotionPlan: %v %v", got, err)
	}
	// another tenant's plan is not found, not forbidden
	if _, err := c.GetPromotionPlan(s.Admin, &chatv1.GetPromotionPlanRequest{Id: other.ID}); status.Code(err) != codes.NotFound {
		t.Fatalf("another tenant's plan: %v", err)
	}
	if _, err := c.DeletePromotionPlan(s.Admin, &chatv1.DeletePromotionPlanRequest{Id: other.ID}); status.Code(err) != codes.NotFound {
		t.Fatalf("deleting another tenant's plan: %v", err)
	}
	// status moves
	upd, err := c.UpdatePromotionPlanStatus(s.Admin, &chatv1.UpdatePromotionPlanStatusRequest{Id: mine.ID, Status: "approved"})
	if err != nil || upd.GetPlan().GetStatus() != "approved" {
		t.Fatalf("approve: %v %v", upd, err)
	}
	if _, err := c.UpdatePromotionPlanStatus(s.Admin, &chatv1.UpdatePromotionPlanStatusRequest{Id: mine.ID, Status: "completed"}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("approved -> completed: want a refused move, got %v", err)
	}
	exec := got.GetExecutions()[0]
	run, err := c.UpdatePromotionExecutionStatus(s.Admin, &chatv1.UpdatePromotionExecutionStatusRequest{Id: exec.GetId(), Status: "running"})
	if err != nil || run.GetExecution().GetStatus() != "running" {
		t.Fatalf("run: %v %v", run, err)
	}
	execs, err := c.ListPromotionExecutions(s.Admin, &chatv1.ListPromotionExecutionsRequest{TemplateId: &mine.ID, Status: "running"})
	if err != nil || execs.GetTotal() != 1 {
		t.Fatalf("ListPromotionExecutions: %v %v", execs, err)
	}
	// bad input names the field
	for _, call := range []func() error{
		func() error { _, err := c.GetPromotionPlan(s.Admin, &chatv1.GetPromotionPlanRequest{}); return err },
		func() error {
			_, err := c.UpdatePromotionPlanStatus(s.Admin, &chatv1.UpdatePromotionPlanStatusRequest{Id: mine.ID, Status: "draft"})
			return err
		},
	} {
		err := call()
		if status.Code(err) != codes.InvalidArgument || len(stack.Violations(err)) == 0 {
			t.Fatalf("bad input: %v", err)
		}
	}
	size := int32(101)
	if _, err := c.ListPromotionPlans(s.Admin, &chatv1.ListPromotionPlansRequest{PageSize: &size}); !slices.Contains(stack.Violations(err), "page_size") {
		t.Fatalf("page_size 101: %v", err)
	}
	// delete takes the executions along
	del, err := c.DeletePromotionPlan(s.Admin, &chatv1.DeletePromotionPlanRequest{Id: mine.ID})
	if err != nil || del.GetExecutionsDeleted() != 1 {
		t.Fatalf("DeletePromotionPlan: %v %v", del, err)
	}
	if _, err := c.GetPromotionExecution(s.Admin, &chatv1.GetPromotionExecutionRequest{Id: exec.GetId()}); status.Code(err) != codes.NotFound {
		t.Fatalf("execution after its template's deletion: %v", err)
	}
	if _, err := c.ListPromotionPlans(context.Background(), &chatv1.ListPromotionPlansRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("without a token: %v", err)
	}
}

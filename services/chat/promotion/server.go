// PromotionService: the tenant's promotion plans over gRPC (and REST through the gateway).

package promotion

import (
	"context"
	"errors"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	chatv1 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v1"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/listing"
)

// Server implements chatv1.PromotionServiceServer over the store.
type Server struct {
	chatv1.UnimplementedPromotionServiceServer
	store *Store
}

// NewServer returns the service over store.
func NewServer(store *Store) *Server { return &Server{store: store} }

const day = time.DateOnly

// PlanPB is a template in the contract's shape.
func PlanPB(p *Plan) *chatv1.PromotionPlan {
	return &chatv1.PromotionPlan{Id: p.ID, Title: p.Title, Goal: p.Goal, ProductIds: p.ProductIDs, ProductNames: p.ProductNames,
		Mechanics: p.Mechanics, DiscountRate: p.DiscountRate, Budget: p.Budget, StartDate: p.StartDate.Format(day), EndDate: p.EndDate.Format(day),
		Metrics: p.Metrics, AnalysisResult: p.AnalysisResult, Status: p.Status, CreatedBy: p.CreatedBy, ConversationId: p.ConversationID,
		CreatedAt: timestamppb.New(p.CreatedAt), UpdatedAt: timestamppb.New(p.UpdatedAt)}
}

// ExecutionPB is an execution plan in the contract's shape.
func ExecutionPB(e *Execution) *chatv1.PromotionExecution {
	strategy, _ := structpb.NewStruct(e.Strategy)
	return &chatv1.PromotionExecution{Id: e.ID, TemplateId: e.TemplateID, Name: e.Name, Channel: e.Channel, StartDate: e.StartDate.Format(day),
		EndDate: e.EndDate.Format(day), Budget: e.Budget, Strategy: strategy, Status: e.Status, CreatedBy: e.CreatedBy,
		CreatedAt: timestamppb.New(e.CreatedAt), UpdatedAt: timestamppb.New(e.UpdatedAt)}
}

// failure maps the store's errors to the contract's.
func failure(err error, resource string, id int64) error {
	var move *MoveError
	switch {
	case errors.Is(err, ErrNotFound):
		return apperr.NotFound(resource, id)
	case errors.As(err, &move):
		return apperr.New(apperr.KindRule, "status: %s", move.Error())
	}
	return apperr.Internal(err)
}

// ListPromotionPlans implements the RPC.
func (x *Server) ListPromotionPlans(ctx context.Context, req *chatv1.ListPromotionPlansRequest) (*chatv1.ListPromotionPlansResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	p := listing.PageOf(req.PageNum, req.PageSize)
	total, plans, err := x.store.ListPlans(ctx, id.TenantID, PlanFilter{Status: req.GetStatus(), ProductID: req.GetProductId(),
		Limit: int(p.Size), Offset: int(p.Offset())})
	if err != nil {
		return nil, apperr.Internal(err)
	}
	out := &chatv1.ListPromotionPlansResponse{Total: total, PageNum: p.Num, PageSize: p.Size, Items: make([]*chatv1.PromotionPlan, 0, len(plans))}
	for _, p := range plans {
		out.Items = append(out.Items, PlanPB(p))
	}
	return out, nil
}

// GetPromotionPlan implements the RPC.
func (x *Server) GetPromotionPlan(ctx context.Context, req *chatv1.GetPromotionPlanRequest) (*chatv1.GetPromotionPlanResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	p, err := x.store.GetPlan(ctx, id.TenantID, req.GetId())
	if err != nil {
		return nil, failure(err, "promotion plan", req.GetId())
	}
	_, execs, err := x.store.ListExecutions(ctx, id.TenantID, ExecFilter{TemplateID: p.ID, Limit: 1000, Oldest: true})
	if err != nil {
		return nil, apperr.Internal(err)
	}
	out := &chatv1.GetPromotionPlanResponse{Plan: PlanPB(p), Executions: make([]*chatv1.PromotionExecution, 0, len(execs))}
	for _, e := range execs {
		out.Executions = append(out.Executions, ExecutionPB(e))
	}
	return out, nil
}

// UpdatePromotionPlanStatus implements the RPC.
func (x *Server) UpdatePromotionPlanStatus(ctx context.Context, req *chatv1.UpdatePromotionPlanStatusRequest) (*chatv1.UpdatePromotionPlanStatusResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	p, err := x.store.MovePlan(ctx, id.TenantID, req.GetId(), req.GetStatus())
	if err != nil {
		return nil, failure(err, "promotion plan", req.GetId())
	}
	return &chatv1.UpdatePromotionPlanStatusResponse{Plan: PlanPB(p)}, nil
}

// DeletePromotionPlan implements the RPC.
func (x *Server) DeletePromotionPlan(ctx context.Context, req *chatv1.DeletePromotionPlanRequest) (*chatv1.DeletePromotionPlanResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	n, err := x.store.DeletePlan(ctx, id.TenantID, req.GetId())
	if err != nil {
		return nil, failure(err, "promotion plan", req.GetId())
	}
	return &chatv1.DeletePromotionPlanResponse{ExecutionsDeleted: n}, nil
}

// ListPromotionExecutions implements the RPC.
func (x *Server) ListPromotionExecutions(ctx context.Context, req *chatv1.ListPromotionExecutionsRequest) (*chatv1.ListPromotionExecutionsResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	p := listing.PageOf(req.PageNum, req.PageSize)
	total, execs, err := x.store.ListExecutions(ctx, id.TenantID, ExecFilter{TemplateID: req.GetTemplateId(), Status: req.GetStatus(),
		Limit: int(p.Size), Offset: int(p.Offset())})
	if err != nil {
		return nil, apperr.Internal(err)
	}
	out := &chatv1.ListPromotionExecutionsResponse{Total: total, PageNum: p.Num, PageSize: p.Size, Items: make([]*chatv1.PromotionExecution, 0, len(execs))}
	for _, e := range execs {
		out.Items = append(out.Items, ExecutionPB(e))
	}
	return out, nil
}

// GetPromotionExecution implements the RPC.
func (x *Server) GetPromotionExecution(ctx context.Context, req *chatv1.GetPromotionExecutionRequest) (*chatv1.GetPromotionExecutionResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	e, err := x.store.GetExecution(ctx, id.TenantID, req.GetId())
	if err != nil {
		return nil, failure(err, "promotion execution", req.GetId())
	}
	return &chatv1.GetPromotionExecutionResponse{Execution: ExecutionPB(e)}, nil
}

// UpdatePromotionExecutionStatus implements the RPC.
func (x *Server) UpdatePromotionExecutionStatus(ctx context.Context, req *chatv1.UpdatePromotionExecutionStatusRequest) (*chatv1.UpdatePromotionExecutionStatusResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	e, err := x.store.MoveExecution(ctx, id.TenantID, req.GetId(), req.GetStatus())
	if err != nil {
		return nil, failure(err, "promotion execution", req.GetId())
	}
	return &chatv1.UpdatePromotionExecutionStatusResponse{Execution: ExecutionPB(e)}, nil
}

// DeletePromotionExecution implements the RPC.
func (x *Server) DeletePromotionExecution(ctx context.Context, req *chatv1.DeletePromotionExecutionRequest) (*chatv1.DeletePromotionExecutionResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := x.store.DeleteExecution(ctx, id.TenantID, req.GetId()); err != nil {
		return nil, failure(err, "promotion execution", req.GetId())
	}
	return &chatv1.DeletePromotionExecutionResponse{}, nil
}

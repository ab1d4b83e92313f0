package basic

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	basicv1 "github.com/shopmind/shopmind/gen/go/shopmind/basic/v1"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/authn"
)

// goodsServer is GoodsService: the 17 goods-management endpoints.
type goodsServer struct {
	basicv1.UnimplementedGoodsServiceServer
	c *handlerDeps
}

// pushToAnalytics pushes the tenant's queued changes to the analytical store once a write has
// committed (see outbox.go). When the push does not finish within the wait, the answer
// still reports success (the change is committed) with the header x-shopmind-sync:
// pending, and the push completes in the background.
func (c *handlerDeps) pushToAnalytics(ctx context.Context, tenantID int64) {
	if !c.outbox.push(ctx, tenantID) {
		_ = grpc.SetHeader(ctx, metadata.Pairs(syncHeader, "pending"))
	}
}

// pushIfChanged pushes the tenant's changes after a write that changed n rows.
func (c *handlerDeps) pushIfChanged(ctx context.Context, tenantID int64, n int32) {
	if n > 0 {
		c.pushToAnalytics(ctx, tenantID)
	}
}

// syncHeader tells REST (X-Shopmind-Sync) and gRPC callers that a committed change has not
// reached the analytical store yet.
const syncHeader = "x-shopmind-sync"

// goodsResponse reads a goods for a response (404 when gone).
func (c *handlerDeps) goodsResponse(ctx context.Context, tenantID, id int64) (*basicv1.Goods, error) {
	g, err := c.store.goods(ctx, c.pool, tenantID, id)
	if err != nil {
		return nil, err
	}
	if g == nil {
		return nil, apperr.NotFound("goods", id)
	}
	return goodsPB(g), nil
}

func (s *goodsServer) QueryGoods(ctx context.Context, req *basicv1.QueryGoodsRequest) (*basicv1.QueryGoodsResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	sk := defaultGoodsSort
	if req.GetSortBy() != "" {
		sk.Field = req.GetSortBy()
	}
	sk.Desc = req.GetSortOrder() != "asc"
	p := pageOf(req.PageNum, req.PageSize)
	f := goodsFilter{Name: req.GetName(), ItemNo: req.GetItemNo(), ShopID: req.ShopId, CategoryID: req.CategoryId,
		StaffID: req.StaffId, IsVirtual: req.IsVirtual, Status: req.GetStatus(), Platform: req.GetPlatform()}
	items, count, err := s.c.store.listGoods(ctx, id.TenantID, f, sk, p)
	if err != nil {
		return nil, err
	}
	return &basicv1.QueryGoodsResponse{Items: goodsListPB(items), Total: count.Total, TotalIsLowerBound: count.LowerBound, PageNum: p.Num, PageSize: p.Size}, nil
}

func (s *goodsServer) CreateGoods(ctx context.Context, req *basicv1.CreateGoodsRequest) (*basicv1.CreateGoodsResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	g := req.GetGoods()
	in := goodsInput{ShopID: g.GetShopId(), Name: g.GetName(), ItemNo: g.GetItemNo(), CategoryID: g.GetCategoryId(),
		StaffID: g.GetStaffId(), IsVirtual: g.GetIsVirtual(), Status: g.GetStatus(), Price: g.GetPrice(), Cost: g.GetCost(),
		ImageURL: g.GetImageUrl(), DisplayOrder: g.GetDisplayOrder()}
	if in.Status == "" {
		in.Status = statusOffSale
	}
	if err := checkMoney("goods.price", in.Price); err != nil {
		return nil, err
	}
	if err := checkMoney("goods.cost", in.Cost); err != nil {
		return nil, err
	}
	created, err := s.c.store.createGoods(ctx, id.TenantID, in)
	if err != nil {
		return nil, err
	}
	s.c.pushToAnalytics(ctx, id.TenantID)
	return &basicv1.CreateGoodsResponse{Goods: goodsPB(created)}, nil
}

func (s *goodsServer) DeleteGoods(ctx context.Context, req *basicv1.DeleteGoodsRequest) (*basicv1.DeleteGoodsResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	n, err := s.c.store.deleteGoods(ctx, id.TenantID, req.GetIds())
	if err != nil {
		return nil, err
	}
	s.c.pushIfChanged(ctx, id.TenantID, n)
	return &basicv1.DeleteGoodsResponse{Deleted: n}, nil
}

func (s *goodsServer) BatchUpdateGoods(ctx context.Context, req *basicv1.BatchUpdateGoodsRequest) (*basicv1.BatchUpdateGoodsResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	g := req.GetGoods()
	in := goodsInput{CategoryID: g.GetCategoryId(), StaffID: g.GetStaffId(), IsVirtual: g.GetIsVirtual(), Status: g.GetStatus(), Cost: g.GetCost()}
	if err := checkMoney("goods.cost", in.Cost); err != nil {
		return nil, err
	}
	n, err := s.c.store.updateMany(ctx, id.TenantID, req.GetIds(), in, req.GetUpdateMask().GetPaths())
	if err != nil {
		return nil, err
	}
	s.c.pushIfChanged(ctx, id.TenantID, n)
	return &basicv1.BatchUpdateGoodsResponse{Updated: n}, nil
}

func (s *goodsServer) SetGoodsVirtual(ctx context.Context, req *basicv1.SetGoodsVirtualRequest) (*basicv1.SetGoodsVirtualResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	n, err := s.c.store.updateMany(ctx, id.TenantID, req.GetIds(), goodsInput{IsVirtual: req.GetIsVirtual()}, []string{"is_virtual"})
	if err != nil {
		return nil, err
	}
	s.c.pushIfChanged(ctx, id.TenantID, n)
	return &basicv1.SetGoodsVirtualResponse{Updated: n}, nil
}

func (s *goodsServer) UpdateGoods(ctx context.Context, req *basicv1.UpdateGoodsRequest) (*basicv1.UpdateGoodsResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	g := req.GetGoods()
	in := goodsInput{Name: g.GetName(), ItemNo: g.GetItemNo(), CategoryID: g.GetCategoryId(), StaffID: g.GetStaffId(),
		IsVirtual: g.GetIsVirtual(), Status: g.GetStatus(), Price: g.GetPrice(), Cost: g.GetCost(), ImageURL: g.GetImageUrl(),
		DisplayOrder: g.GetDisplayOrder()}
	if err := checkMoney("goods.price", in.Price); err != nil {
		return nil, err
	}
	if err := checkMoney("goods.cost", in.Cost); err != nil {
		return nil, err
	}
	updated, err := s.c.store.updateGoods(ctx, id.TenantID, req.GetId(), in, req.GetUpdateMask().GetPaths())
	if err != nil {
		return nil, err
	}
	s.c.pushToAnalytics(ctx, id.TenantID)
	return &basicv1.UpdateGoodsResponse{Goods: goodsPB(updated)}, nil
}

func (s *goodsServer) ListDisplayGoods(ctx context.Context, req *basicv1.ListDisplayGoodsRequest) (*basicv1.ListDisplayGoodsResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	sh, err := s.c.store.shop(ctx, s.c.pool, id.TenantID, req.GetShopId())
	if err != nil {
		return nil, err
	}
	if sh == nil {
		return nil, apperr.NotFound("shop", req.GetShopId())
	}
	p := pageOf(req.PageNum, req.PageSize)
	items, total, err := s.c.store.displayGoods(ctx, id.TenantID, req.GetShopId(), p)
	if err != nil {
		return nil, err
	}
	return &basicv1.ListDisplayGoodsResponse{Items: goodsListPB(items), Total: total, PageNum: p.Num, PageSize: p.Size}, nil
}

func (s *goodsServer) GetGoods(ctx context.Context, req *basicv1.GetGoodsRequest) (*basicv1.GetGoodsResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	out, err := s.c.goodsResponse(ctx, id.TenantID, req.GetId())
	if err != nil {
		return nil, err
	}
	return &basicv1.GetGoodsResponse{Goods: out}, nil
}

func (s *goodsServer) GetGoodsDetail(ctx context.Context, req *basicv1.GetGoodsDetailRequest) (*basicv1.GetGoodsDetailResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	out, err := s.c.goodsResponse(ctx, id.TenantID, req.GetId())
	if err != nil {
		return nil, err
	}
	skus, err := s.c.store.skus(ctx, s.c.pool, id.TenantID, req.GetId())
	if err != nil {
		return nil, err
	}
	out.Skus = skusPB(skus)
	return &basicv1.GetGoodsDetailResponse{Goods: out}, nil
}

func (s *goodsServer) ImportItemNumbers(ctx context.Context, req *basicv1.ImportItemNumbersRequest) (*basicv1.ImportItemNumbersResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	rows := make([]importRow, len(req.GetRows()))
	for i, r := range req.GetRows() {
		rows[i] = importRow{GoodsID: r.GetGoodsId(), ItemNo: r.GetItemNo()}
	}
	n, errs, err := s.c.store.importItemNumbers(ctx, id.TenantID, rows)
	if err != nil {
		return nil, err
	}
	s.c.pushIfChanged(ctx, id.TenantID, n)
	resp := &basicv1.ImportItemNumbersResponse{Imported: n, Errors: []*basicv1.ImportError{}}
	for _, e := range errs {
		resp.Errors = append(resp.Errors, &basicv1.ImportError{Row: e.Row, Field: e.Field, Message: e.Message})
	}
	s.c.notifyImport(ctx, resp)
	return resp, nil
}

func (s *goodsServer) BatchUpdateGoodsByShop(ctx context.Context, req *basicv1.BatchUpdateGoodsByShopRequest) (*basicv1.BatchUpdateGoodsByShopResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	n, err := s.c.store.updateShopGoods(ctx, id.TenantID, req.GetShopId(), req.StaffId, req.CategoryId)
	if err != nil {
		return nil, err
	}
	s.c.pushIfChanged(ctx, id.TenantID, n)
	return &basicv1.BatchUpdateGoodsByShopResponse{Updated: n}, nil
}

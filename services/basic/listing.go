package basic

import (
	"context"

	"github.com/jackc/pgx/v5"

	basicv1 "github.com/shopmind/shopmind/gen/go/shopmind/basic/v1"
	"github.com/shopmind/shopmind/internal/authn"
)

// dataServer is BasicDataService: the listings of orders, goods, categories and shops.
type dataServer struct {
	basicv1.UnimplementedBasicDataServiceServer
	c *handlerDeps
}

func (s *dataServer) ListGoods(ctx context.Context, req *basicv1.ListGoodsRequest) (*basicv1.ListGoodsResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	sk, err := parseSort(req.GetSort(), goodsSorts, defaultGoodsSort)
	if err != nil {
		return nil, err
	}
	p := pageOf(req.PageNum, req.PageSize)
	f := goodsFilter{Name: req.GetName(), ShopID: req.ShopId, CategoryID: req.CategoryId, StaffID: req.StaffId,
		IsVirtual: req.IsVirtual, Status: req.GetStatus(), Platform: req.GetPlatform()}
	items, count, err := s.c.store.listGoods(ctx, id.TenantID, f, sk, p)
	if err != nil {
		return nil, err
	}
	return &basicv1.ListGoodsResponse{Items: goodsListPB(items), Total: count.Total, TotalIsLowerBound: count.LowerBound, PageNum: p.Num, PageSize: p.Size}, nil
}

var categorySorts = map[string]string{"sort_order": "sort_order", "id": "id", "name": "name", "level": "level"}

func (s *dataServer) ListGoodCategories(ctx context.Context, req *basicv1.ListGoodCategoriesRequest) (*basicv1.ListGoodCategoriesResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	sk, err := parseSort(req.GetSort(), categorySorts, sortKey{Field: "sort_order"})
	if err != nil {
		return nil, err
	}
	p := pageOf(req.PageNum, req.PageSize)
	w := &sqlWhere{}
	w.add("tenant_id = %s", id.TenantID)
	if req.ParentId != nil {
		w.add("parent_id = %s", req.GetParentId())
	}
	if req.GetName() != "" {
		w.add("name ILIKE %s", likePattern(req.GetName()))
	}
	var items []*basicv1.Category
	total, err := s.c.store.page(ctx, "basic.categories", w, sk.orderBy(categorySorts, "id"), p,
		"id, parent_id, name, level, sort_order", func(r pgx.Rows) error {
			var c categoryRecord
			if err := r.Scan(&c.ID, &c.ParentID, &c.Name, &c.Level, &c.SortOrder); err != nil {
				return err
			}
			items = append(items, categoryPB(&c))
			return nil
		})
	if err != nil {
		return nil, err
	}
	if items == nil {
		items = []*basicv1.Category{}
	}
	return &basicv1.ListGoodCategoriesResponse{Items: items, Total: total, PageNum: p.Num, PageSize: p.Size}, nil
}

var shopSorts = map[string]string{"id": "id", "name": "name", "platform": "platform", "created_at": "created_at"}

func (s *dataServer) ListShops(ctx context.Context, req *basicv1.ListShopsRequest) (*basicv1.ListShopsResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	sk, err := parseSort(req.GetSort(), shopSorts, sortKey{Field: "id"})
	if err != nil {
		return nil, err
	}
	p := pageOf(req.PageNum, req.PageSize)
	w := &sqlWhere{}
	w.add("tenant_id = %s", id.TenantID)
	if req.GetPlatform() != "" {
		w.add("platform = %s", req.GetPlatform())
	}
	if req.GetStatus() != "" {
		w.add("status = %s", req.GetStatus())
	}
	if req.GetName() != "" {
		w.add("name ILIKE %s", likePattern(req.GetName()))
	}
	var items []*basicv1.Shop
	total, err := s.c.store.page(ctx, "basic.shops", w, sk.orderBy(shopSorts, "id"), p, shopColumns, func(r pgx.Rows) error {
		sh, err := scanShop(r)
		if err != nil {
			return err
		}
		items = append(items, shopPB(sh))
		return nil
	})
	if err != nil {
		return nil, err
	}
	if items == nil {
		items = []*basicv1.Shop{}
	}
	return &basicv1.ListShopsResponse{Items: items, Total: total, PageNum: p.Num, PageSize: p.Size}, nil
}

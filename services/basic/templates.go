package basic

import (
	"context"

	basicv1 "github.com/shopmind/shopmind/gen/go/shopmind/basic/v1"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/authn"
)

// The link-template RPCs; the templates' SQL and rules are in store_templates.go.

func (s *goodsServer) CreateLinkTemplate(ctx context.Context, req *basicv1.CreateLinkTemplateRequest) (*basicv1.CreateLinkTemplateResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	in := req.GetLinkTemplate()
	t := &templateRecord{Name: in.GetName(), Description: in.GetDescription(), ShopID: in.GetShopId(), GoodsIDs: in.GetGoodsIds(),
		MetricIDs: in.GetMetricIds(), SortOrder: in.GetSortOrder()}
	out, err := s.c.store.createTemplate(ctx, id.TenantID, t)
	if err != nil {
		return nil, err
	}
	return &basicv1.CreateLinkTemplateResponse{LinkTemplate: templatePB(out)}, nil
}

func (s *goodsServer) SortLinkTemplates(ctx context.Context, req *basicv1.SortLinkTemplatesRequest) (*basicv1.SortLinkTemplatesResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, len(req.GetItems()))
	orders := make([]int32, len(req.GetItems()))
	for i, it := range req.GetItems() {
		ids[i], orders[i] = it.GetId(), it.GetSortOrder()
	}
	n, err := s.c.store.sortTemplates(ctx, id.TenantID, ids, orders)
	if err != nil {
		return nil, err
	}
	return &basicv1.SortLinkTemplatesResponse{Updated: n}, nil
}

func (s *goodsServer) UpdateLinkTemplate(ctx context.Context, req *basicv1.UpdateLinkTemplateRequest) (*basicv1.UpdateLinkTemplateResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	out, err := s.c.store.updateTemplate(ctx, id.TenantID, req.GetId(), req.GetLinkTemplate(), req.GetUpdateMask().GetPaths())
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, apperr.NotFound("link template", req.GetId())
	}
	return &basicv1.UpdateLinkTemplateResponse{LinkTemplate: templatePB(out)}, nil
}

func (s *goodsServer) ListLinkTemplates(ctx context.Context, req *basicv1.ListLinkTemplatesRequest) (*basicv1.ListLinkTemplatesResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	p := pageOf(req.PageNum, req.PageSize)
	items, total, err := s.c.store.listTemplates(ctx, id.TenantID, req.ShopId, req.GetName(), p)
	if err != nil {
		return nil, err
	}
	resp := &basicv1.ListLinkTemplatesResponse{Items: []*basicv1.LinkTemplate{}, Total: total, PageNum: p.Num, PageSize: p.Size}
	for _, t := range items {
		resp.Items = append(resp.Items, templatePB(t))
	}
	return resp, nil
}

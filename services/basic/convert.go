package basic

import (
	"google.golang.org/protobuf/types/known/timestamppb"

	basicv1 "github.com/shopmind/shopmind/gen/go/shopmind/basic/v1"
)

func goodsPB(g *goodsRecord) *basicv1.Goods {
	return &basicv1.Goods{Id: g.ID, ShopId: g.ShopID, ShopName: g.ShopName, Platform: g.Platform,
		PlatformGoodsId: g.PlatformGoodsID, Name: g.Name, ItemNo: g.ItemNo, CategoryId: g.CategoryID,
		CategoryName: g.CategoryName, StaffId: g.StaffID, StaffName: g.StaffName, IsVirtual: g.IsVirtual,
		Status: g.Status, Price: money(g.Price), Cost: money(g.Cost), ImageUrl: g.ImageURL, DisplayOrder: g.DisplayOrder,
		Skus: []*basicv1.Sku{}, CreatedAt: timestamppb.New(g.CreatedAt), UpdatedAt: timestamppb.New(g.UpdatedAt)}
}

func goodsListPB(items []*goodsRecord) []*basicv1.Goods {
	out := make([]*basicv1.Goods, 0, len(items))
	for _, g := range items {
		out = append(out, goodsPB(g))
	}
	return out
}

func skusPB(skus []skuRecord) []*basicv1.Sku {
	out := make([]*basicv1.Sku, 0, len(skus))
	for _, k := range skus {
		out = append(out, &basicv1.Sku{Id: k.ID, PlatformSkuId: k.PlatformSkuID, Spec: k.Spec, Price: money(k.Price),
			Stock: k.Stock, ItemNo: k.ItemNo})
	}
	return out
}

func shopPB(s *shopRecord) *basicv1.Shop {
	return &basicv1.Shop{Id: s.ID, Name: s.Name, Platform: s.Platform, PlatformShopId: s.PlatformShopID, Status: s.Status,
		CreatedAt: timestamppb.New(s.CreatedAt)}
}

func categoryPB(c *categoryRecord) *basicv1.Category {
	return &basicv1.Category{Id: c.ID, ParentId: c.ParentID, Name: c.Name, Level: c.Level, SortOrder: c.SortOrder}
}

func templatePB(t *templateRecord) *basicv1.LinkTemplate {
	goods := t.GoodsIDs
	if goods == nil {
		goods = []int64{}
	}
	metrics := t.MetricIDs
	if metrics == nil {
		metrics = []int64{}
	}
	return &basicv1.LinkTemplate{Id: t.ID, Name: t.Name, Description: t.Description, ShopId: t.ShopID, GoodsIds: goods,
		MetricIds: metrics, SortOrder: t.SortOrder, CreatedAt: timestamppb.New(t.CreatedAt), UpdatedAt: timestamppb.New(t.UpdatedAt)}
}

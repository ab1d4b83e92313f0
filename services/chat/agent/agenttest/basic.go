package agenttest

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	basicv1 "github.com/shopmind/shopmind/gen/go/shopmind/basic/v1"
	"github.com/shopmind/shopmind/internal/authn"
)

// FakeBasic is a small basic data service per tenant (the caller's, from the context):
// goods, shops and categories with paging and the sorts the agents use; Edit, AddShop and
// Delete change a tenant's data as a sync, an import or an edit would.
type FakeBasic struct {
	mu      sync.Mutex
	tenants map[int64]*BasicData
	clock   time.Time
	// Calls counts the calls.
	Calls int
	// Fail, when set, answers every call with it.
	Fail error
}

// BasicData is one tenant's basic data.
type BasicData struct {
	Goods      []*basicv1.Goods
	Shops      []*basicv1.Shop
	Categories []*basicv1.Category
}

// NewFakeBasic returns the fake with tenant 42 holding the fake orders' shops, categories
// (under two top-level categories) and goods (with item numbers and staff), and tenant 7
// holding other goods.
func NewFakeBasic() *FakeBasic {
	f := &FakeBasic{tenants: map[int64]*BasicData{}, clock: Now}
	d := &BasicData{}
	for i, n := range fakeShops[1:] {
		d.Shops = append(d.Shops, &basicv1.Shop{Id: int64(i + 1), Name: n, Platform: "taobao", PlatformShopId: "tb-" + n, Status: "active"})
	}
	d.Categories = []*basicv1.Category{{Id: 10, Name: "服装 Apparel", Level: 1}, {Id: 20, Name: "鞋包配饰 Shoes and accessories", Level: 1}}
	parents := []int64{0, 10, 10, 20, 20}
	for i, n := range fakeCategories[1:] {
		d.Categories = append(d.Categories, &basicv1.Category{Id: int64(i + 1), ParentId: parents[i+1], Name: n, Level: 2})
	}
	staff := []string{"", "Li Na", "Wang Wei"}
	for i, g := range fakeGoods[1:] {
		id := int64(i + 1)
		d.Goods = append(d.Goods, &basicv1.Goods{Id: id, ShopId: 1 + id%3, ShopName: fakeShops[1+id%3], Platform: "taobao", Name: g.name,
			ItemNo: "SM-" + strings.ToUpper(g.name[:2]) + "-" + string(rune('0'+id)), CategoryId: int64(g.category), CategoryName: fakeCategories[g.category],
			StaffId: 100 + id%2, StaffName: staff[1+id%2], Status: "on_sale", Price: g.price, UpdatedAt: timestamppb.New(Now.Add(-time.Duration(id) * time.Hour))})
	}
	f.tenants[42] = d
	f.tenants[7] = &BasicData{Shops: []*basicv1.Shop{{Id: 900, Name: "Other Tenant Shop", Platform: "jd", Status: "active"}},
		Goods: []*basicv1.Goods{{Id: 901, ShopId: 900, ShopName: "Other Tenant Shop", Name: "Silk dress deluxe", ItemNo: "OT-1", Status: "on_sale", UpdatedAt: timestamppb.New(Now)}}}
	return f
}

func (f *FakeBasic) data(ctx context.Context) (*BasicData, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Calls++
	if f.Fail != nil {
		return nil, f.Fail
	}
	id := authn.FromContext(ctx)
	if id == nil {
		return nil, status.Error(codes.Unauthenticated, "no caller")
	}
	d := f.tenants[id.TenantID]
	if d == nil {
		d = &BasicData{}
	}
	return &BasicData{Goods: clone(d.Goods), Shops: clone(d.Shops), Categories: clone(d.Categories)}, nil
}

func clone[T proto.Message](in []T) []T {
	out := make([]T, len(in))
	for i, m := range in {
		out[i] = proto.Clone(m).(T)
	}
	return out
}

func pageOf[T any](items []T, num, size *int32) []T {
	n, s := int(1), int(10)
	if num != nil {
		n = int(*num)
	}
	if size != nil {
		s = int(*size)
	}
	from := (n - 1) * s
	if from >= len(items) {
		return nil
	}
	return items[from:min(from+s, len(items))]
}

// ListGoods lists the tenant's goods not deleted, sorted by id or by updated_at.
func (f *FakeBasic) ListGoods(ctx context.Context, req *basicv1.ListGoodsRequest) (*basicv1.ListGoodsResponse, error) {
	d, err := f.data(ctx)
	if err != nil {
		return nil, err
	}
	var goods []*basicv1.Goods
	for _, g := range d.Goods {
		if g.GetStatus() != "deleted" {
			goods = append(goods, g)
		}
	}
	if strings.HasPrefix(req.GetSort(), "updated_at") {
		sort.SliceStable(goods, func(i, j int) bool { return goods[i].GetUpdatedAt().AsTime().After(goods[j].GetUpdatedAt().AsTime()) })
	}
	return &basicv1.ListGoodsResponse{Items: pageOf(goods, req.PageNum, req.PageSize), Total: int64(len(goods)), PageNum: req.GetPageNum()}, nil
}

// ListShops lists the tenant's shops.
func (f *FakeBasic) ListShops(ctx context.Context, req *basicv1.ListShopsRequest) (*basicv1.ListShopsResponse, error) {
	d, err := f.data(ctx)
	if err != nil {
		return nil, err
	}
	return &basicv1.ListShopsResponse{Items: pageOf(d.Shops, req.PageNum, req.PageSize), Total: int64(len(d.Shops)), PageNum: req.GetPageNum()}, nil
}

// ListGoodCategories lists the tenant's categories.
func (f *FakeBasic) ListGoodCategories(ctx context.Context, req *basicv1.ListGoodCategoriesRequest) (*basicv1.ListGoodCategoriesResponse, error) {
	d, err := f.data(ctx)
	if err != nil {
		return nil, err
	}
	return &basicv1.ListGoodCategoriesResponse{Items: pageOf(d.Categories, req.PageNum, req.PageSize), Total: int64(len(d.Categories)), PageNum: req.GetPageNum()}, nil
}

// Edit changes a goods of the tenant (as an edit, a sync or an import would: updated_at
// moves on).
func (f *FakeBasic) Edit(tenant, goodsID int64, change func(*basicv1.Goods)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.clock = f.clock.Add(time.Minute)
	for _, g := range f.tenants[tenant].Goods {
		if g.GetId() == goodsID {
			change(g)
			g.UpdatedAt = timestamppb.New(f.clock)
		}
	}
}

// AddShop adds a shop to the tenant.
func (f *FakeBasic) AddShop(tenant int64, s *basicv1.Shop) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tenants[tenant].Shops = append(f.tenants[tenant].Shops, s)
}

// ListOrders lists tenant 42's fake orders (FakeAnalytics' orders, their lines' goods being
// the fake goods) in the time range, newest first; other tenants have none.
func (f *FakeBasic) ListOrders(ctx context.Context, req *basicv1.ListOrdersRequest) (*basicv1.ListOrdersResponse, error) {
	if _, err := f.data(ctx); err != nil {
		return nil, err
	}
	var out []*basicv1.Order
	if authn.FromContext(ctx).TenantID == 42 {
		orders := fakeData()
		for i := len(orders) - 1; i >= 0; i-- {
			o := orders[i]
			if req.GetStartTime() != nil && o.day.Before(req.GetStartTime().AsTime()) || req.GetEndTime() != nil && !o.day.Before(req.GetEndTime().AsTime()) {
				continue
			}
			po := &basicv1.Order{Id: int64(o.id), ShopId: int64(o.shop), Status: o.status, PaidAmount: o.paid, OrderedAt: timestamppb.New(o.day)}
			for _, l := range o.lines {
				po.Lines = append(po.Lines, &basicv1.OrderLine{GoodsId: int64(l.goods), GoodsName: fakeGoods[l.goods].name, Quantity: int32(l.qty), Amount: l.amount})
			}
			out = append(out, po)
		}
	}
	return &basicv1.ListOrdersResponse{Items: pageOf(out, req.PageNum, req.PageSize), Total: int64(len(out)), PageNum: req.GetPageNum()}, nil
}

// GoodsOf is basic's GetGoods over the fake: the caller's tenant's goods only (NotFound
// otherwise, as the basic service answers).
func GoodsOf(f *FakeBasic) interface {
	GetGoods(ctx context.Context, req *basicv1.GetGoodsRequest) (*basicv1.GetGoodsResponse, error)
} {
	return fakeGoodsGetter{f}
}

type fakeGoodsGetter struct{ f *FakeBasic }

func (g fakeGoodsGetter) GetGoods(ctx context.Context, req *basicv1.GetGoodsRequest) (*basicv1.GetGoodsResponse, error) {
	d, err := g.f.data(ctx)
	if err != nil {
		return nil, err
	}
	for _, gd := range d.Goods {
		if gd.GetId() == req.GetId() && gd.GetStatus() != "deleted" {
			return &basicv1.GetGoodsResponse{Goods: gd}, nil
		}
	}
	return nil, status.Errorf(codes.NotFound, "goods %d not found", req.GetId())
}

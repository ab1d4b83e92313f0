package basic_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	basicv1 "github.com/shopmind/shopmind/gen/go/shopmind/basic/v1"
	"github.com/shopmind/shopmind/internal/testutil/stack"
)

// Contract tests: the basic service's RPCs through the generated clients, on the gRPC
// server only (no gateway, no WAF). They assert codes and fields, never timings.

// contractShop inserts a shop of the demo tenant (shops come from platform authorization,
// which has no RPC).
func contractShop(t *testing.T, s *stack.Services) int64 {
	t.Helper()
	return stack.AddShop(t, s.DB, stack.DemoTenant(t, s.DB), "Trend Store", "tmall", "tm-1")
}

func TestContractGoods(t *testing.T) {
	s := stack.StartServices(t, "basic")
	c := basicv1.NewGoodsServiceClient(s.Conn)
	shop := contractShop(t, s)

	created, err := c.CreateGoods(s.Admin, &basicv1.CreateGoodsRequest{Goods: &basicv1.Goods{ShopId: shop, Name: "Linen Dress",
		ItemNo: "LD-1", Status: "on_sale", Price: 199.9, Id: 999}})
	if err != nil {
		t.Fatalf("CreateGoods: %v", err)
	}
	g := created.GetGoods()
	if g.GetId() <= 0 || g.GetId() == 999 || g.GetShopName() != "Trend Store" || g.GetPlatform() != "tmall" ||
		g.GetStatus() != "on_sale" || g.GetPrice() != 199.9 {
		t.Fatalf("created goods %v", g)
	}
	got, err := c.GetGoods(s.Admin, &basicv1.GetGoodsRequest{Id: g.GetId()})
	if err != nil || got.GetGoods().GetName() != "Linen Dress" || got.GetGoods().GetItemNo() != "LD-1" {
		t.Fatalf("GetGoods: %v %v", got, err)
	}
	list, err := c.QueryGoods(s.Admin, &basicv1.QueryGoodsRequest{ShopId: &shop})
	if err != nil || list.GetTotal() != 1 || len(list.GetItems()) != 1 || list.GetItems()[0].GetId() != g.GetId() {
		t.Fatalf("QueryGoods: %v %v", list, err)
	}
	if _, err := c.CreateGoods(s.Admin, &basicv1.CreateGoodsRequest{Goods: &basicv1.Goods{ShopId: shop, Name: "x", ItemNo: "LD-1"}}); status.Code(err) != codes.AlreadyExists {
		t.Fatalf("CreateGoods with a used item number: want AlreadyExists, got %v", err)
	}

	// 400: the field is named in the BadRequest details.
	for _, bad := range []struct {
		name  string
		call  func() error
		field string
	}{
		{"id 0", func() error { _, err := c.GetGoods(s.Admin, &basicv1.GetGoodsRequest{}); return err }, "id"},
		{"negative price", func() error {
			_, err := c.CreateGoods(s.Admin, &basicv1.CreateGoodsRequest{Goods: &basicv1.Goods{ShopId: shop, Name: "x", Price: -1}})
			return err
		}, "goods.price"},
		{"sort up", func() error { _, err := c.QueryGoods(s.Admin, &basicv1.QueryGoodsRequest{SortOrder: "up"}); return err }, "sort_order"},
		{"no ids", func() error { _, err := c.DeleteGoods(s.Admin, &basicv1.DeleteGoodsRequest{}); return err }, "ids"},
	} {
		if err := bad.call(); status.Code(err) != codes.InvalidArgument || !slices.Contains(stack.Violations(err), bad.field) {
			t.Errorf("%s: want InvalidArgument naming %s, got %v (%v)", bad.name, bad.field, err, stack.Violations(err))
		}
	}

	// 404.
	if _, err := c.GetGoods(s.Admin, &basicv1.GetGoodsRequest{Id: 987654}); status.Code(err) != codes.NotFound {
		t.Fatalf("GetGoods of missing goods: want NotFound, got %v", err)
	}
	del, err := c.DeleteGoods(s.Admin, &basicv1.DeleteGoodsRequest{Ids: []int64{g.GetId()}})
	if err != nil || del.GetDeleted() != 1 {
		t.Fatalf("DeleteGoods: %v %v", del, err)
	}
	// Deleted goods stay readable with status deleted, and refuse changes.
	if got, err := c.GetGoods(s.Admin, &basicv1.GetGoodsRequest{Id: g.GetId()}); err != nil || got.GetGoods().GetStatus() != "deleted" {
		t.Fatalf("GetGoods of deleted goods: want status deleted, got %v %v", got, err)
	}
	_, err = c.UpdateGoods(s.Admin, &basicv1.UpdateGoodsRequest{Id: g.GetId(), Goods: &basicv1.Goods{Name: "x"},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"name"}}})
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("UpdateGoods of deleted goods: want FailedPrecondition, got %v", err)
	}

	// Auth required.
	if _, err := c.QueryGoods(context.Background(), &basicv1.QueryGoodsRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("QueryGoods without a token: want Unauthenticated, got %v", err)
	}
}

func TestContractBasicData(t *testing.T) {
	s := stack.StartServices(t, "basic")
	c := basicv1.NewBasicDataServiceClient(s.Conn)
	contractShop(t, s)

	shops, err := c.ListShops(s.Admin, &basicv1.ListShopsRequest{})
	if err != nil || len(shops.GetItems()) != 1 || shops.GetItems()[0].GetName() != "Trend Store" {
		t.Fatalf("ListShops: %v %v", shops, err)
	}
	orders, err := c.ListOrders(s.Admin, &basicv1.ListOrdersRequest{})
	if err != nil || orders.GetTotal() != 0 || len(orders.GetItems()) != 0 {
		t.Fatalf("ListOrders of a tenant without orders: %v %v", orders, err)
	}
	end := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	_, err = c.ListOrders(s.Admin, &basicv1.ListOrdersRequest{StartTime: timestamppb.New(end.AddDate(0, 1, 0)), EndTime: timestamppb.New(end)})
	if st := status.Convert(err); st.Code() != codes.InvalidArgument {
		t.Fatalf("ListOrders with start after end: want InvalidArgument, got %v", err)
	}
	if _, err := c.ListShops(context.Background(), &basicv1.ListShopsRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("ListShops without a token: want Unauthenticated, got %v", err)
	}
}

package basic_test

import (
	"context"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	basicv1 "github.com/shopmind/shopmind/gen/go/shopmind/basic/v1"
	"github.com/shopmind/shopmind/internal/testutil/stack"
)

// ResolveShops (internal) answers only the caller's tenant's shops, by id and platform id.
func TestContractResolveShops(t *testing.T) {
	s := stack.StartServices(t, "basic")
	mine := contractShop(t, s) // platform shop id tm-1
	var theirs int64
	if err := s.DB.Pool.QueryRow(context.Background(), `WITH t AS (INSERT INTO tenant.tenants (code, name) VALUES ('other', 'other') RETURNING id)
		INSERT INTO basic.shops (tenant_id, name, platform, platform_shop_id, status) SELECT id, 'Theirs', 'jd', 'jd-9', 'active' FROM t RETURNING id`).Scan(&theirs); err != nil {
		t.Fatal(err)
	}
	c := basicv1.NewShopDirectoryServiceClient(s.Conn)
	r, err := c.ResolveShops(s.Admin, &basicv1.ResolveShopsRequest{ShopIds: []int64{mine, theirs, 987654}, PlatformShopIds: []string{"jd-9", "tm-1"}})
	if err != nil || len(r.GetShops()) != 1 || r.GetShops()[0].GetId() != mine || r.GetShops()[0].GetPlatformShopId() != "tm-1" {
		t.Fatalf("ResolveShops: %v %v", r, err)
	}
	byPID, err := c.ResolveShops(s.Admin, &basicv1.ResolveShopsRequest{PlatformShopIds: []string{"tm-1"}})
	if err != nil || len(byPID.GetShops()) != 1 || byPID.GetShops()[0].GetId() != mine {
		t.Fatalf("by platform id: %v %v", byPID, err)
	}
	if _, err := c.ResolveShops(s.Admin, &basicv1.ResolveShopsRequest{}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("nothing asked: %v", err)
	}
	if _, err := c.ResolveShops(s.Admin, &basicv1.ResolveShopsRequest{ShopIds: []int64{0}}); status.Code(err) != codes.InvalidArgument ||
		!slices.Contains(stack.Violations(err), "shop_ids[0]") {
		t.Fatalf("id 0: %v %v", err, stack.Violations(err))
	}
	if _, err := c.ResolveShops(context.Background(), &basicv1.ResolveShopsRequest{ShopIds: []int64{mine}}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("no token: %v", err)
	}
}

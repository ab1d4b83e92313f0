package basic

import (
	"context"

	basicv1 "github.com/shopmind/shopmind/gen/go/shopmind/basic/v1"
	"github.com/shopmind/shopmind/internal/authn"
)

// shopDirServer is ShopDirectoryService: shop lookups for other services (the extension
// backend checks the shops of its uploads here), always within the caller's tenant.
type shopDirServer struct {
	basicv1.UnimplementedShopDirectoryServiceServer
	c *handlerDeps
}

func (s *shopDirServer) ResolveShops(ctx context.Context, req *basicv1.ResolveShopsRequest) (*basicv1.ResolveShopsResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	ids, pids := req.GetShopIds(), req.GetPlatformShopIds()
	if ids == nil {
		ids = []int64{}
	}
	if pids == nil {
		pids = []string{}
	}
	rows, err := s.c.pool.Query(ctx, "SELECT "+shopColumns+` FROM basic.shops
		WHERE tenant_id = $1 AND (id = ANY($2) OR platform_shop_id = ANY($3)) ORDER BY id`, id.TenantID, ids, pids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := &basicv1.ResolveShopsResponse{Shops: []*basicv1.Shop{}}
	for rows.Next() {
		sh, err := scanShop(rows)
		if err != nil {
			return nil, err
		}
		out.Shops = append(out.Shops, shopPB(sh))
	}
	return out, rows.Err()
}

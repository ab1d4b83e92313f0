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
	shops, err := s.c.store.resolveShops(ctx, id.TenantID, req.GetShopIds(), req.GetPlatformShopIds())
	if err != nil {
		return nil, err
	}
	out := &basicv1.ResolveShopsResponse{Shops: make([]*basicv1.Shop, 0, len(shops))}
	for _, sh := range shops {
		out.Shops = append(out.Shops, shopPB(sh))
	}
	return out, nil
}

// Package basic is the Basic data service: orders, goods, categories, shops, goods management, link templates, partner and platform sync.
//
// Not built yet: every RPC of its contract is registered and answers an honest 501
// "not implemented" until the issue that builds this service lands.
package basic

import (
	"context"

	"google.golang.org/grpc"

	"github.com/shopmind/shopmind/gateway"
	basicv1 "github.com/shopmind/shopmind/gen/go/shopmind/basic/v1"
	"github.com/shopmind/shopmind/internal/service"
)

// Service describes the basic service to the binary.
func Service() service.Def {
	return service.Def{
		Name: "basic",
		Register: func(_ context.Context, s grpc.ServiceRegistrar, _ service.Deps) error {
			basicv1.RegisterBasicDataServiceServer(s, basicv1.UnimplementedBasicDataServiceServer{})
			basicv1.RegisterGoodsServiceServer(s, basicv1.UnimplementedGoodsServiceServer{})
			return nil
		},
		Gateway: gateway.Routes(basicv1.RegisterBasicDataServiceHandler, basicv1.RegisterGoodsServiceHandler),
	}
}

// Package crx is the Browser extension backend: configuration, metric and ad-hoc uploads, error log, version check.
//
// Not built yet: every RPC of its contract is registered and answers an honest 501
// "not implemented" until the issue that builds this service lands.
package crx

import (
	"context"

	"google.golang.org/grpc"

	crxv1 "github.com/shopmind/shopmind/gen/go/shopmind/crx/v1"
	"github.com/shopmind/shopmind/internal/restapi"
	"github.com/shopmind/shopmind/internal/service"
)

// Service describes the crx service to the binary.
func Service() service.Def {
	return service.Def{
		Name: "crx",
		Register: func(_ context.Context, s grpc.ServiceRegistrar, _ service.Deps) error {
			crxv1.RegisterExtensionServiceServer(s, crxv1.UnimplementedExtensionServiceServer{})
			return nil
		},
		Gateway: restapi.Routes(restapi.Route(crxv1.RegisterExtensionServiceHandlerClient, crxv1.NewExtensionServiceClient)),
	}
}

// Package system is the System administration service: the administrator-path permission check.
//
// Not built yet: every RPC of its contract is registered and answers an honest 501
// "not implemented" until the issue that builds this service lands.
package system

import (
	"context"

	"google.golang.org/grpc"

	systemv1 "github.com/shopmind/shopmind/gen/go/shopmind/system/v1"
	"github.com/shopmind/shopmind/internal/service"
)

// Service describes the system service to the binary.
func Service() service.Def {
	return service.Def{
		Name: "system",
		Register: func(_ context.Context, s grpc.ServiceRegistrar, _ service.Deps) error {
			systemv1.RegisterSystemServiceServer(s, systemv1.UnimplementedSystemServiceServer{})
			return nil
		},
		Gateway: nil,
	}
}

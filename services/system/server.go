// Package system is the system administration service: it decides whether a user may call
// an administrator path (a path segment containing "-m"). The decision rests on the user's
// administrator flag, read from the tenant service's AuthService with the caller's token,
// and, for the paths of operator RPCs (managing tenants), on the platform-operator flag.
package system

import (
	"context"

	"google.golang.org/grpc"

	systemv1 "github.com/shopmind/shopmind/gen/go/shopmind/system/v1"
	tenantv1 "github.com/shopmind/shopmind/gen/go/shopmind/tenant/v1"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/service"
)

// Service describes the system service to the binary.
func Service() service.Def {
	return service.Def{
		Name: "system",
		Register: func(_ context.Context, s grpc.ServiceRegistrar, deps service.Deps) error {
			systemv1.RegisterSystemServiceServer(s, &server{dial: deps.Dial})
			return nil
		},
	}
}

type server struct {
	systemv1.UnimplementedSystemServiceServer
	dial func(target string) (grpc.ClientConnInterface, error)
}

func (s *server) CheckAdminPermission(ctx context.Context, req *systemv1.CheckAdminPermissionRequest) (*systemv1.CheckAdminPermissionResponse, error) {
	if _, err := authn.Caller(ctx); err != nil {
		return nil, err
	}
	if !authn.IsAdminPath(req.GetPath()) {
		return &systemv1.CheckAdminPermissionResponse{Allowed: true, Reason: "not an administrator path"}, nil
	}
	conn, err := s.dial("tenant")
	if err != nil {
		return nil, err
	}
	perms, err := tenantv1.NewAuthServiceClient(conn).GetUserPermissions(authn.Outgoing(ctx),
		&tenantv1.GetUserPermissionsRequest{UserId: req.GetUserId(), TenantId: req.GetTenantId()})
	if err != nil {
		return nil, err
	}
	if !perms.GetIsAdmin() {
		return &systemv1.CheckAdminPermissionResponse{Allowed: false, Reason: "administrator path: administrators only"}, nil
	}
	// Managing tenants (an operator RPC's path) is for platform operators, not for the
	// administrators of an ordinary tenant.
	if _, rule, ok := authn.RouteFor(req.GetMethod(), req.GetPath()); ok && rule.Operator && !perms.GetIsPlatformOperator() {
		return &systemv1.CheckAdminPermissionResponse{Allowed: false, Reason: "administrator path: platform operators only"}, nil
	}
	return &systemv1.CheckAdminPermissionResponse{Allowed: true}, nil
}

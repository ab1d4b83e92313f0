// Package tenant is the Tenant and auth service: login with captcha, token pairs, users, orgs, roles, menus, favorites, and the internal AuthService.
//
// Not built yet: every RPC of its contract is registered and answers an honest 501
// "not implemented" until the issue that builds this service lands.
package tenant

import (
	"context"

	"google.golang.org/grpc"

	"github.com/shopmind/shopmind/gateway"
	tenantv1 "github.com/shopmind/shopmind/gen/go/shopmind/tenant/v1"
	"github.com/shopmind/shopmind/internal/service"
)

// Service describes the tenant service to the binary.
func Service() service.Def {
	return service.Def{
		Name: "tenant",
		Register: func(_ context.Context, s grpc.ServiceRegistrar, _ service.Deps) error {
			tenantv1.RegisterTenantAuthServiceServer(s, tenantv1.UnimplementedTenantAuthServiceServer{})
			tenantv1.RegisterTenantServiceServer(s, tenantv1.UnimplementedTenantServiceServer{})
			tenantv1.RegisterAuthServiceServer(s, tenantv1.UnimplementedAuthServiceServer{})
			return nil
		},
		Gateway: gateway.Routes(tenantv1.RegisterTenantAuthServiceHandler, tenantv1.RegisterTenantServiceHandler),
	}
}

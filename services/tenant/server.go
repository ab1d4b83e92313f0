// Package tenant is the tenant and auth service: login with captcha and brute-force
// protection, access/refresh token pairs with rotation and reuse detection, logout
// revocation, the current user's info, menus, init data and favorites, users,
// organisations and roles, and the internal AuthService other services call.
package tenant

import (
	"context"
	"embed"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	tenantv1 "github.com/shopmind/shopmind/gen/go/shopmind/tenant/v1"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/postgres"
	"github.com/shopmind/shopmind/internal/restapi"
	"github.com/shopmind/shopmind/internal/service"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

func migrations() *postgres.Migrations {
	return postgres.Embedded("tenant", migrationFiles)
}

// Service describes the tenant service to the binary.
func Service() service.Def {
	return service.Def{
		Name:       "tenant",
		Migrations: migrations(),
		Register:   register,
		Gateway: restapi.Routes(restapi.Route(tenantv1.RegisterTenantAuthServiceHandlerClient, tenantv1.NewTenantAuthServiceClient),
			restapi.Route(tenantv1.RegisterTenantServiceHandlerClient, tenantv1.NewTenantServiceClient),
			restapi.Route(tenantv1.RegisterTenantAdminServiceHandlerClient, tenantv1.NewTenantAdminServiceClient),
			restapi.Route(tenantv1.RegisterPlatformServiceHandlerClient, tenantv1.NewPlatformServiceClient)),
	}
}

func register(ctx context.Context, s grpc.ServiceRegistrar, deps service.Deps) error {
	st := &store{pool: deps.DB}
	a, err := newAuth(st, deps.Auth.Tokens, deps.Auth.Revocations, deps.Config, deps.Logger)
	if err != nil {
		return err
	}
	ends := sessions{rev: deps.Auth.Revocations, accessTTL: deps.Config.Auth.AccessTTL}
	dir := &directory{store: st, perms: deps.Permissions, sessions: ends, bcryptCost: deps.Config.Auth.BcryptCost}
	// This process holds the tenant tables: permission and operator checks read them directly.
	deps.Permissions.Source = dir
	deps.Auth.Operators = dir
	if err := bootstrap(ctx, st, deps.Config, deps.Logger); err != nil {
		return err
	}
	env := deps.Config.Auth.Environment
	tenantv1.RegisterTenantAuthServiceServer(s, &authServer{auth: a, dir: dir, defaultEnv: env})
	tenantv1.RegisterTenantServiceServer(s, &managementServer{dir: dir})
	tenantv1.RegisterAuthServiceServer(s, &internalServer{auth: a, dir: dir, defaultEnv: env})
	tenantv1.RegisterTenantAdminServiceServer(s, &adminServer{dir: dir})
	tenantv1.RegisterPlatformServiceServer(s, &platformServer{platform: &Platform{DB: st.pool, Revocations: deps.Auth.Revocations,
		AccessTTL: deps.Config.Auth.AccessTTL, BcryptCost: deps.Config.Auth.BcryptCost}})
	return nil
}

// environment is the request's environment (x-env from the gateway) or the process's own.
func environment(ctx context.Context, def string) string {
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get(authn.EnvHeader); len(v) > 0 && authn.ValidEnvironment(v[0]) {
			return v[0]
		}
	}
	return def
}

// loginPath tells the tenant path from the alternate /api/v1/auth/login (captcha mode
// `always` applies to the tenant path only).
func loginPath(ctx context.Context) bool {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get("x-http-path"); len(v) > 0 { // set by the gateway
		return v[0] != "/api/v1/auth/login"
	}
	return true
}

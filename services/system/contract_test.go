package system_test

import (
	"context"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	systemv1 "github.com/shopmind/shopmind/gen/go/shopmind/system/v1"
	tenantv1 "github.com/shopmind/shopmind/gen/go/shopmind/tenant/v1"
	"github.com/shopmind/shopmind/internal/config"
	"github.com/shopmind/shopmind/internal/testutil/stack"
)

// Contract tests: the system service's RPC through the generated client, on the gRPC
// server only (no gateway), with the tenant service it asks. Codes and fields, never
// timings.

func TestContractCheckAdminPermission(t *testing.T) {
	s := stack.StartServices(t, "system")
	c := systemv1.NewSystemServiceClient(s.Conn)
	me := func(ctx context.Context) *tenantv1.UserInfo {
		t.Helper()
		info, err := tenantv1.NewTenantAuthServiceClient(s.Conn).GetInfo(ctx, &tenantv1.GetInfoRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return info.GetUser()
	}
	admin := me(s.Admin)
	analystCtx := stack.WithToken(context.Background(), s.Login(t, "demo", "analyst", config.DevAnalystPassword))
	analyst := me(analystCtx)
	check := func(ctx context.Context, u *tenantv1.UserInfo, path string) (*systemv1.CheckAdminPermissionResponse, error) {
		return c.CheckAdminPermission(ctx, &systemv1.CheckAdminPermissionRequest{UserId: u.GetId(),
			TenantId: u.GetTenant().GetId(), Method: "GET", Path: path})
	}

	for _, tc := range []struct {
		name    string
		ctx     context.Context
		user    *tenantv1.UserInfo
		path    string
		allowed bool
	}{
		{"admin path, administrator", s.Admin, admin, "/tenant/api/v1/tenant-m/users", true},
		{"admin path, analyst", analystCtx, analyst, "/tenant/api/v1/tenant-m/users", false},
		{"ordinary path, analyst", analystCtx, analyst, "/tenant/api/v1/tenant/users", true},
	} {
		resp, err := check(tc.ctx, tc.user, tc.path)
		if err != nil || resp.GetAllowed() != tc.allowed {
			t.Errorf("%s: want allowed=%v, got %v %v", tc.name, tc.allowed, resp, err)
		}
		if !tc.allowed && resp.GetReason() == "" {
			t.Errorf("%s: a refusal without a reason", tc.name)
		}
	}

	// Managing tenants is for platform operators: an ordinary tenant's administrator is
	// refused the operator paths; once their tenant is an operator tenant (what
	// `shopmind tenant create --operator` makes), allowed.
	operatorPath := func(method string) bool {
		t.Helper()
		resp, err := c.CheckAdminPermission(s.Admin, &systemv1.CheckAdminPermissionRequest{UserId: admin.GetId(),
			TenantId: admin.GetTenant().GetId(), Method: method, Path: "/api/v1/system-m/tenants"})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetAllowed()
	}
	if operatorPath("GET") || operatorPath("POST") {
		t.Error("a tenant administrator may use the operator paths")
	}
	if _, err := s.DB.Pool.Exec(context.Background(), "UPDATE tenant.tenants SET is_operator = true WHERE code = 'demo'"); err != nil {
		t.Fatal(err)
	}
	if !operatorPath("GET") {
		t.Error("an operator tenant's administrator is refused the operator paths")
	}

	// 400: the field is named in the BadRequest details.
	_, err := check(s.Admin, admin, "no-leading-slash")
	if status.Code(err) != codes.InvalidArgument || !slices.Contains(stack.Violations(err), "path") {
		t.Fatalf("a relative path: want InvalidArgument naming path, got %v (%v)", err, stack.Violations(err))
	}
	_, err = c.CheckAdminPermission(s.Admin, &systemv1.CheckAdminPermissionRequest{TenantId: admin.GetTenant().GetId(), Method: "GET", Path: "/x-m/y"})
	if status.Code(err) != codes.InvalidArgument || !slices.Contains(stack.Violations(err), "user_id") {
		t.Fatalf("user_id 0: want InvalidArgument naming user_id, got %v (%v)", err, stack.Violations(err))
	}

	// 404: a user the tenant service does not know.
	_, err = check(s.Admin, &tenantv1.UserInfo{Id: 987654, Tenant: admin.GetTenant()}, "/tenant/api/v1/tenant-m/users")
	if status.Code(err) != codes.NotFound {
		t.Fatalf("an unknown user: want NotFound, got %v", err)
	}

	// Auth required.
	if _, err := check(context.Background(), admin, "/tenant/api/v1/tenant-m/users"); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("without a token: want Unauthenticated, got %v", err)
	}
}

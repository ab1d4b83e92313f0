package tenant_test

import (
	"context"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	tenantv1 "github.com/shopmind/shopmind/gen/go/shopmind/tenant/v1"
	"github.com/shopmind/shopmind/internal/testutil/stack"
)

// Contract tests: the tenant service's RPCs through the generated clients, on the gRPC
// server only (no gateway). They assert codes and fields, never timings.

func TestContractAuth(t *testing.T) {
	s := stack.StartServices(t, "tenant")
	auth := tenantv1.NewTenantAuthServiceClient(s.Conn)

	info, err := auth.GetInfo(s.Admin, &tenantv1.GetInfoRequest{})
	if err != nil {
		t.Fatalf("GetInfo: %v", err)
	}
	if u := info.GetUser(); u.GetUsername() != "admin" || u.GetTenant().GetCode() != "demo" || u.GetId() <= 0 {
		t.Fatalf("GetInfo user %v", u)
	}
	menus, err := auth.GetMenus(s.Admin, &tenantv1.GetMenusRequest{})
	if err != nil || len(menus.GetMenus()) == 0 {
		t.Fatalf("GetMenus: %d menus, %v", len(menus.GetMenus()), err)
	}

	// Auth required: no token, a token that is not one.
	if _, err := auth.GetInfo(context.Background(), &tenantv1.GetInfoRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("GetInfo without a token: want Unauthenticated, got %v", err)
	}
	if _, err := auth.GetInfo(stack.WithToken(context.Background(), "not-a-jwt"), &tenantv1.GetInfoRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("GetInfo with a bad token: want Unauthenticated, got %v", err)
	}

	// A wrong password is refused; a malformed tenant code names the field.
	_, err = auth.Login(context.Background(), &tenantv1.LoginRequest{TenantCode: "demo", Username: "admin", Password: "wrong-password"})
	if status.Code(err) != codes.Unauthenticated {
		t.Fatalf("Login with a wrong password: want Unauthenticated, got %v", err)
	}
	_, err = auth.Login(context.Background(), &tenantv1.LoginRequest{TenantCode: "no such tenant", Username: "admin", Password: "x"})
	if status.Code(err) != codes.InvalidArgument || !slices.Contains(stack.Violations(err), "tenant_code") {
		t.Fatalf("Login with a malformed tenant code: want InvalidArgument naming tenant_code, got %v (%v)", err, stack.Violations(err))
	}
}

func TestContractRoles(t *testing.T) {
	s := stack.StartServices(t, "tenant")
	c := tenantv1.NewTenantServiceClient(s.Conn)

	created, err := c.CreateRole(s.Admin, &tenantv1.CreateRoleRequest{Code: "ops", Name: "Operations",
		PermissionCodes: []string{"basic:goods:list"}})
	if err != nil {
		t.Fatalf("CreateRole: %v", err)
	}
	r := created.GetRole()
	if r.GetId() <= 0 || r.GetCode() != "ops" || r.GetName() != "Operations" || r.GetStatus() != "enabled" ||
		!slices.Equal(r.GetPermissionCodes(), []string{"basic:goods:list"}) {
		t.Fatalf("created role %v", r)
	}
	if _, err := c.CreateRole(s.Admin, &tenantv1.CreateRoleRequest{Code: "ops", Name: "Again"}); status.Code(err) != codes.AlreadyExists {
		t.Fatalf("CreateRole twice: want AlreadyExists, got %v", err)
	}

	// 400: the field is named in the BadRequest details.
	_, err = c.CreateRole(s.Admin, &tenantv1.CreateRoleRequest{Code: "Bad Code", Name: "X"})
	if status.Code(err) != codes.InvalidArgument || !slices.Contains(stack.Violations(err), "code") {
		t.Fatalf("CreateRole with a bad code: want InvalidArgument naming code, got %v (%v)", err, stack.Violations(err))
	}
	size := int32(101)
	_, err = c.ListUsers(s.Admin, &tenantv1.ListUsersRequest{PageSize: &size})
	if status.Code(err) != codes.InvalidArgument || !slices.Contains(stack.Violations(err), "page_size") {
		t.Fatalf("ListUsers page_size 101: want InvalidArgument naming page_size, got %v (%v)", err, stack.Violations(err))
	}

	// Only the masked field changes.
	upd, err := c.UpdateRole(s.Admin, &tenantv1.UpdateRoleRequest{Id: r.GetId(), Name: "Ops team", Description: "ignored",
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"name"}}})
	if err != nil {
		t.Fatalf("UpdateRole: %v", err)
	}
	if u := upd.GetRole(); u.GetName() != "Ops team" || u.GetDescription() != "" {
		t.Fatalf("updated role %v", u)
	}

	// 404.
	_, err = c.UpdateRole(s.Admin, &tenantv1.UpdateRoleRequest{Id: 999999, Name: "x", UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"name"}}})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("UpdateRole of a missing role: want NotFound, got %v", err)
	}
	del, err := c.DeleteRole(s.Admin, &tenantv1.DeleteRoleRequest{Id: r.GetId()})
	if err != nil || !del.GetDeleted() {
		t.Fatalf("DeleteRole: %v %v", del, err)
	}
	if _, err := c.DeleteRole(s.Admin, &tenantv1.DeleteRoleRequest{Id: r.GetId()}); status.Code(err) != codes.NotFound {
		t.Fatalf("DeleteRole twice: want NotFound, got %v", err)
	}

	users, err := c.ListUsers(s.Admin, &tenantv1.ListUsersRequest{})
	if err != nil || users.GetTotal() < 1 {
		t.Fatalf("ListUsers: %v %v", users, err)
	}
	if _, err := c.ListUsers(context.Background(), &tenantv1.ListUsersRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("ListUsers without a token: want Unauthenticated, got %v", err)
	}
}

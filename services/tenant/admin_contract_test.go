package tenant_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	tenantv1 "github.com/shopmind/shopmind/gen/go/shopmind/tenant/v1"
	"github.com/shopmind/shopmind/internal/config"
	"github.com/shopmind/shopmind/internal/testutil/stack"
	"github.com/shopmind/shopmind/services/tenant"
)

// Contract tests of administration (admin.proto, ChangePassword): the RPCs through the
// generated clients on the gRPC server only. Codes, fields and what is stored; no timings.

const (
	userPassword = "Li-Wei-Pass-2040"
	opsPassword  = "Ops-Operator-2040"
)

// wantCode fails unless err has the gRPC code (and, for InvalidArgument, names field).
func wantCode(t *testing.T, what string, err error, code codes.Code, field string) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("%s: want %v, got %v", what, code, err)
	}
	if field != "" && !slices.Contains(stack.Violations(err), field) {
		t.Fatalf("%s: want a violation naming %s, got %v (%v)", what, field, stack.Violations(err), err)
	}
}

// scalar runs a one-value query on the test database.
func scalar[T any](t *testing.T, s *stack.Services, query string, args ...any) T {
	t.Helper()
	var v T
	if err := s.DB.Pool.QueryRow(context.Background(), query, args...).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func count(t *testing.T, s *stack.Services, query string, args ...any) int {
	t.Helper()
	return scalar[int](t, s, query, args...)
}

func idOf(t *testing.T, s *stack.Services, query string, args ...any) int64 {
	t.Helper()
	return scalar[int64](t, s, query, args...)
}

func mask(paths ...string) *fieldmaskpb.FieldMask { return &fieldmaskpb.FieldMask{Paths: paths} }

// otherTenant creates tenant acme (its own org and roles) and returns its admin's context.
func otherTenant(t *testing.T, s *stack.Services) context.Context {
	t.Helper()
	if _, err := tenant.CreateTenant(context.Background(), s.DB.Pool, tenant.NewTenant{Code: "acme", Name: "Acme",
		AdminUsername: "admin", AdminPassword: "Acme-Admin-2040"}, 4); err != nil {
		t.Fatal(err)
	}
	return stack.WithToken(context.Background(), s.Login(t, "acme", "admin", "Acme-Admin-2040"))
}

func TestContractAdminUsers(t *testing.T) {
	s := stack.StartServices(t, "tenant")
	c := tenantv1.NewTenantAdminServiceClient(s.Conn)
	auth := tenantv1.NewTenantAuthServiceClient(s.Conn)
	acme := otherTenant(t, s)
	ops := idOf(t, s, "SELECT o.id FROM tenant.orgs o JOIN tenant.tenants t ON t.id = o.tenant_id WHERE t.code = 'demo' AND o.code = 'ops'")
	analystRole := idOf(t, s, "SELECT r.id FROM tenant.roles r JOIN tenant.tenants t ON t.id = r.tenant_id WHERE t.code = 'demo' AND r.code = 'analyst'")
	acmeOrg := idOf(t, s, "SELECT o.id FROM tenant.orgs o JOIN tenant.tenants t ON t.id = o.tenant_id WHERE t.code = 'acme'")
	acmeRole := idOf(t, s, "SELECT r.id FROM tenant.roles r JOIN tenant.tenants t ON t.id = r.tenant_id WHERE t.code = 'acme' AND r.code = 'analyst'")
	users := func(name string) int {
		return count(t, s, "SELECT count(*) FROM tenant.users WHERE username = $1", name)
	}

	// Create: organisation and role assigned, the user logs in with them.
	created, err := c.CreateUser(s.Admin, &tenantv1.CreateUserRequest{Username: "li.wei", Password: userPassword,
		Nickname: "Li Wei", Email: "li.wei@example.com", OrgId: ops, RoleIds: []int64{analystRole}})
	if err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	u := created.GetUser()
	if u.GetOrgId() != ops || !slices.Equal(u.GetRoleIds(), []int64{analystRole}) || u.GetStatus() != "enabled" || u.GetIsAdmin() {
		t.Fatalf("created user %v", u)
	}
	liCtx := stack.WithToken(context.Background(), s.Login(t, "demo", "li.wei", userPassword))
	info, err := auth.GetInfo(liCtx, &tenantv1.GetInfoRequest{})
	if err != nil || !slices.Contains(info.GetUser().GetPermissions(), "basic:goods:list") || info.GetUser().GetOrg().GetId() != ops {
		t.Fatalf("the new user's info: %v %v", info, err)
	}

	// Bad inputs: nothing stored.
	for _, tc := range []struct {
		name  string
		req   *tenantv1.CreateUserRequest
		code  codes.Code
		field string
	}{
		{"no username", &tenantv1.CreateUserRequest{Password: userPassword}, codes.InvalidArgument, "username"},
		{"weak password", &tenantv1.CreateUserRequest{Username: "weak", Password: "admin123"}, codes.InvalidArgument, "password"},
		{"password is the username", &tenantv1.CreateUserRequest{Username: "Weak.User-2040", Password: "Weak.User-2040"}, codes.InvalidArgument, "password"},
		{"bad email", &tenantv1.CreateUserRequest{Username: "weak", Password: userPassword, Email: "not-an-email"}, codes.InvalidArgument, "email"},
		{"another tenant's org", &tenantv1.CreateUserRequest{Username: "weak", Password: userPassword, OrgId: acmeOrg}, codes.InvalidArgument, "org_id"},
		{"another tenant's role", &tenantv1.CreateUserRequest{Username: "weak", Password: userPassword, RoleIds: []int64{analystRole, acmeRole}}, codes.InvalidArgument, "role_ids"},
		{"duplicate role", &tenantv1.CreateUserRequest{Username: "weak", Password: userPassword, RoleIds: []int64{analystRole, analystRole}}, codes.InvalidArgument, "role_ids"},
		{"duplicate username", &tenantv1.CreateUserRequest{Username: "li.wei", Password: userPassword}, codes.AlreadyExists, ""},
	} {
		_, err := c.CreateUser(s.Admin, tc.req)
		wantCode(t, tc.name, err, tc.code, tc.field)
	}
	if n := users("weak") + users("Weak.User-2040"); n != 0 || users("li.wei") != 1 {
		t.Fatalf("refused creations stored %d users", n)
	}

	// Only administrators; another tenant's administrator cannot see demo's users.
	analystCtx := stack.WithToken(context.Background(), s.Login(t, "demo", "analyst", config.DevAnalystPassword))
	_, err = c.CreateUser(analystCtx, &tenantv1.CreateUserRequest{Username: "sneaky", Password: userPassword})
	wantCode(t, "CreateUser by an analyst", err, codes.PermissionDenied, "")
	_, err = c.UpdateUser(acme, &tenantv1.UpdateUserRequest{Id: u.GetId(), Status: "disabled", UpdateMask: mask("status")})
	wantCode(t, "UpdateUser of another tenant's user", err, codes.NotFound, "")
	_, err = c.ResetUserPassword(acme, &tenantv1.ResetUserPasswordRequest{Id: u.GetId(), Password: "Taken-Over-2040"})
	wantCode(t, "ResetUserPassword of another tenant's user", err, codes.NotFound, "")
	_, err = c.DeleteUsers(acme, &tenantv1.DeleteUsersRequest{Ids: []int64{u.GetId()}})
	wantCode(t, "DeleteUsers of another tenant's user", err, codes.NotFound, "")
	if users("li.wei") != 1 {
		t.Fatal("another tenant's administrator changed a demo user")
	}

	// Update: roles cleared, organisation removed; a bad mask or another tenant's org names the field.
	upd, err := c.UpdateUser(s.Admin, &tenantv1.UpdateUserRequest{Id: u.GetId(), Nickname: "Wei", RoleIds: []int64{}, OrgId: 0,
		UpdateMask: mask("nickname", "role_ids", "org_id")})
	if err != nil || upd.GetUser().GetNickname() != "Wei" || len(upd.GetUser().GetRoleIds()) != 0 || upd.GetUser().GetOrgId() != 0 {
		t.Fatalf("UpdateUser: %v %v", upd, err)
	}
	_, err = c.UpdateUser(s.Admin, &tenantv1.UpdateUserRequest{Id: u.GetId(), OrgId: acmeOrg, UpdateMask: mask("org_id")})
	wantCode(t, "UpdateUser to another tenant's org", err, codes.InvalidArgument, "org_id")
	_, err = c.UpdateUser(s.Admin, &tenantv1.UpdateUserRequest{Id: u.GetId(), UpdateMask: mask("password")})
	wantCode(t, "UpdateUser naming password", err, codes.InvalidArgument, "update_mask")
	_, err = c.UpdateUser(s.Admin, &tenantv1.UpdateUserRequest{Id: 987654, Nickname: "x", UpdateMask: mask("nickname")})
	wantCode(t, "UpdateUser of an unknown user", err, codes.NotFound, "")

	// Disable: the user's token stops working and the user cannot log in; enable again.
	if _, err := c.UpdateUser(s.Admin, &tenantv1.UpdateUserRequest{Id: u.GetId(), Status: "disabled", UpdateMask: mask("status")}); err != nil {
		t.Fatal(err)
	}
	_, err = auth.GetInfo(liCtx, &tenantv1.GetInfoRequest{})
	wantCode(t, "a disabled user's token", err, codes.Unauthenticated, "")
	_, err = auth.Login(context.Background(), &tenantv1.LoginRequest{TenantCode: "demo", Username: "li.wei", Password: userPassword})
	if err == nil {
		t.Fatal("a disabled user logged in")
	}
	if _, err := c.UpdateUser(s.Admin, &tenantv1.UpdateUserRequest{Id: u.GetId(), Status: "enabled", UpdateMask: mask("status")}); err != nil {
		t.Fatal(err)
	}
	liCtx = stack.WithToken(context.Background(), s.Login(t, "demo", "li.wei", userPassword))

	// Administrators cannot lock themselves out.
	admin, err := auth.GetInfo(s.Admin, &tenantv1.GetInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	adminID := admin.GetUser().GetId()
	_, err = c.UpdateUser(s.Admin, &tenantv1.UpdateUserRequest{Id: adminID, Status: "disabled", UpdateMask: mask("status")})
	wantCode(t, "disabling oneself", err, codes.FailedPrecondition, "")
	_, err = c.UpdateUser(s.Admin, &tenantv1.UpdateUserRequest{Id: adminID, IsAdmin: false, UpdateMask: mask("is_admin")})
	wantCode(t, "dropping one's own administrator flag", err, codes.FailedPrecondition, "")

	// Reset password: sessions end, the old password stops working.
	_, err = c.ResetUserPassword(s.Admin, &tenantv1.ResetUserPasswordRequest{Id: u.GetId(), Password: "short"})
	wantCode(t, "a weak reset password", err, codes.InvalidArgument, "password")
	reset, err := c.ResetUserPassword(s.Admin, &tenantv1.ResetUserPasswordRequest{Id: u.GetId(), Password: "Li-Wei-Reset-2041"})
	if err != nil || reset.GetSessionsEnded() < 1 {
		t.Fatalf("ResetUserPassword: %v %v", reset, err)
	}
	_, err = auth.GetInfo(liCtx, &tenantv1.GetInfoRequest{})
	wantCode(t, "a token from before the reset", err, codes.Unauthenticated, "")
	_, err = auth.Login(context.Background(), &tenantv1.LoginRequest{TenantCode: "demo", Username: "li.wei", Password: userPassword})
	wantCode(t, "the old password", err, codes.Unauthenticated, "")
	s.Login(t, "demo", "li.wei", "Li-Wei-Reset-2041")

	// Delete: 101 ids, an unknown id among known ones (nothing deleted), oneself, then success.
	many := make([]int64, 101)
	for i := range many {
		many[i] = int64(i + 1)
	}
	_, err = c.DeleteUsers(s.Admin, &tenantv1.DeleteUsersRequest{Ids: many})
	wantCode(t, "101 ids", err, codes.InvalidArgument, "ids")
	_, err = c.DeleteUsers(s.Admin, &tenantv1.DeleteUsersRequest{})
	wantCode(t, "no ids", err, codes.InvalidArgument, "ids")
	_, err = c.DeleteUsers(s.Admin, &tenantv1.DeleteUsersRequest{Ids: []int64{u.GetId(), 987654}})
	wantCode(t, "an unknown id among known ones", err, codes.NotFound, "")
	_, err = c.DeleteUsers(s.Admin, &tenantv1.DeleteUsersRequest{Ids: []int64{u.GetId(), adminID}})
	wantCode(t, "deleting oneself", err, codes.FailedPrecondition, "")
	if users("li.wei") != 1 {
		t.Fatal("a refused delete deleted the user")
	}
	del, err := c.DeleteUsers(s.Admin, &tenantv1.DeleteUsersRequest{Ids: []int64{u.GetId()}})
	if err != nil || del.GetDeleted() != 1 || users("li.wei") != 0 {
		t.Fatalf("DeleteUsers: %v %v", del, err)
	}
}

func TestContractAdminOrgs(t *testing.T) {
	s := stack.StartServices(t, "tenant")
	c := tenantv1.NewTenantAdminServiceClient(s.Conn)
	acme := otherTenant(t, s)
	acmeOrg := idOf(t, s, "SELECT o.id FROM tenant.orgs o JOIN tenant.tenants t ON t.id = o.tenant_id WHERE t.code = 'acme'")

	top, err := c.CreateOrg(s.Admin, &tenantv1.CreateOrgRequest{Name: "Sales", Code: "sales"})
	if err != nil || top.GetOrg().GetParentId() != 0 || top.GetOrg().GetStatus() != "enabled" {
		t.Fatalf("CreateOrg: %v %v", top, err)
	}
	topID := top.GetOrg().GetId()
	child, err := c.CreateOrg(s.Admin, &tenantv1.CreateOrgRequest{Name: "Sales East", ParentId: topID})
	if err != nil || child.GetOrg().GetParentId() != topID || child.GetOrg().GetCode() == "" {
		t.Fatalf("CreateOrg child: %v %v", child, err)
	}
	childID := child.GetOrg().GetId()
	grand, err := c.CreateOrg(s.Admin, &tenantv1.CreateOrgRequest{Name: "Sales East 1", ParentId: childID})
	if err != nil {
		t.Fatal(err)
	}
	orgs := func() int { return count(t, s, "SELECT count(*) FROM tenant.orgs") }
	before := orgs()

	// Bad inputs: nothing stored.
	_, err = c.CreateOrg(s.Admin, &tenantv1.CreateOrgRequest{Code: "noname"})
	wantCode(t, "no name", err, codes.InvalidArgument, "name")
	_, err = c.CreateOrg(s.Admin, &tenantv1.CreateOrgRequest{Name: "X", ParentId: acmeOrg})
	wantCode(t, "another tenant's parent", err, codes.InvalidArgument, "parent_id")
	_, err = c.CreateOrg(s.Admin, &tenantv1.CreateOrgRequest{Name: "X", Code: "sales"})
	wantCode(t, "a duplicate code", err, codes.AlreadyExists, "")
	_, err = c.CreateOrg(s.Admin, &tenantv1.CreateOrgRequest{Name: "X", Code: "Bad Code"})
	wantCode(t, "a malformed code", err, codes.InvalidArgument, "code")
	if orgs() != before {
		t.Fatal("a refused creation stored an organization")
	}

	// Moves: cycles refused, a legal move done.
	_, err = c.UpdateOrg(s.Admin, &tenantv1.UpdateOrgRequest{Id: topID, ParentId: grand.GetOrg().GetId(), UpdateMask: mask("parent_id")})
	wantCode(t, "a move under a descendant", err, codes.FailedPrecondition, "")
	_, err = c.UpdateOrg(s.Admin, &tenantv1.UpdateOrgRequest{Id: topID, ParentId: topID, UpdateMask: mask("parent_id")})
	wantCode(t, "a move under itself", err, codes.FailedPrecondition, "")
	_, err = c.UpdateOrg(s.Admin, &tenantv1.UpdateOrgRequest{Id: topID, ParentId: acmeOrg, UpdateMask: mask("parent_id")})
	wantCode(t, "a move under another tenant's org", err, codes.InvalidArgument, "parent_id")
	_, err = c.UpdateOrg(acme, &tenantv1.UpdateOrgRequest{Id: topID, Name: "Mine", UpdateMask: mask("name")})
	wantCode(t, "another tenant's administrator", err, codes.NotFound, "")
	moved, err := c.UpdateOrg(s.Admin, &tenantv1.UpdateOrgRequest{Id: grand.GetOrg().GetId(), ParentId: 0, Name: "Sales North",
		UpdateMask: mask("parent_id", "name")})
	if err != nil || moved.GetOrg().GetParentId() != 0 || moved.GetOrg().GetName() != "Sales North" {
		t.Fatalf("a move to the top: %v %v", moved, err)
	}
	if p := idOf(t, s, "SELECT coalesce(parent_id, 0) FROM tenant.orgs WHERE id = $1", topID); p != 0 {
		t.Fatalf("a refused move changed the parent to %d", p)
	}

	// Delete: refused with sub-organisations or users, done when empty.
	_, err = c.DeleteOrg(s.Admin, &tenantv1.DeleteOrgRequest{Id: topID})
	wantCode(t, "deleting an org with a sub-organization", err, codes.FailedPrecondition, "")
	if _, err := tenantv1.NewTenantAdminServiceClient(s.Conn).CreateUser(s.Admin, &tenantv1.CreateUserRequest{
		Username: "east", Password: userPassword, OrgId: childID}); err != nil {
		t.Fatal(err)
	}
	_, err = c.DeleteOrg(s.Admin, &tenantv1.DeleteOrgRequest{Id: childID})
	wantCode(t, "deleting an org with a user", err, codes.FailedPrecondition, "")
	_, err = c.DeleteOrg(acme, &tenantv1.DeleteOrgRequest{Id: moved.GetOrg().GetId()})
	wantCode(t, "deleting another tenant's org", err, codes.NotFound, "")
	if _, err := c.DeleteOrg(s.Admin, &tenantv1.DeleteOrgRequest{Id: moved.GetOrg().GetId()}); err != nil {
		t.Fatalf("DeleteOrg: %v", err)
	}
	_, err = c.DeleteOrg(s.Admin, &tenantv1.DeleteOrgRequest{Id: moved.GetOrg().GetId()})
	wantCode(t, "deleting it again", err, codes.NotFound, "")
}

func TestContractChangePassword(t *testing.T) {
	s := stack.StartServices(t, "tenant")
	auth := tenantv1.NewTenantAuthServiceClient(s.Conn)
	token := s.Login(t, "demo", "analyst", config.DevAnalystPassword)
	other := s.Login(t, "demo", "analyst", config.DevAnalystPassword) // a second session
	ctx := stack.WithToken(context.Background(), token)

	for _, tc := range []struct {
		name             string
		current, newPass string
		code             codes.Code
		field            string
	}{
		{"no current password", "", "An-New-Pass-2040", codes.InvalidArgument, "current_password"},
		{"wrong current password", "wrong-password", "An-New-Pass-2040", codes.InvalidArgument, "current_password"},
		{"weak new password", config.DevAnalystPassword, "password123", codes.InvalidArgument, "new_password"},
		{"new is the username", config.DevAnalystPassword, "Analyst", codes.InvalidArgument, "new_password"},
	} {
		_, err := auth.ChangePassword(ctx, &tenantv1.ChangePasswordRequest{CurrentPassword: tc.current, NewPassword: tc.newPass})
		wantCode(t, tc.name, err, tc.code, tc.field)
	}
	_, err := auth.ChangePassword(context.Background(), &tenantv1.ChangePasswordRequest{CurrentPassword: "x", NewPassword: "y"})
	wantCode(t, "without a token", err, codes.Unauthenticated, "")
	s.Login(t, "demo", "analyst", config.DevAnalystPassword) // refused attempts changed nothing

	resp, err := auth.ChangePassword(ctx, &tenantv1.ChangePasswordRequest{CurrentPassword: config.DevAnalystPassword, NewPassword: "An-New-Pass-2040"})
	if err != nil || resp.GetAccessToken() == "" || resp.GetRefreshToken() == "" {
		t.Fatalf("ChangePassword: %v %v", resp, err)
	}
	for name, tok := range map[string]string{"this session": token, "another session": other} {
		_, err := auth.GetInfo(stack.WithToken(context.Background(), tok), &tenantv1.GetInfoRequest{})
		wantCode(t, name+" after the change", err, codes.Unauthenticated, "")
	}
	if _, err := auth.GetInfo(stack.WithToken(context.Background(), resp.GetAccessToken()), &tenantv1.GetInfoRequest{}); err != nil {
		t.Fatalf("the new token: %v", err)
	}
	_, err = auth.Login(context.Background(), &tenantv1.LoginRequest{TenantCode: "demo", Username: "analyst", Password: config.DevAnalystPassword})
	wantCode(t, "the old password", err, codes.Unauthenticated, "")
	s.Login(t, "demo", "analyst", "An-New-Pass-2040")
}

func TestContractPlatform(t *testing.T) {
	s := stack.StartServices(t, "tenant")
	p := tenantv1.NewPlatformServiceClient(s.Conn)
	auth := tenantv1.NewTenantAuthServiceClient(s.Conn)

	// Secure by default: no operator tenant, so nobody may manage tenants.
	_, err := p.ListTenants(s.Admin, &tenantv1.ListTenantsRequest{})
	wantCode(t, "a tenant administrator lists tenants", err, codes.PermissionDenied, "")
	_, err = p.CreateTenant(s.Admin, &tenantv1.CreateTenantRequest{Code: "x", Name: "X", AdminUsername: "admin", AdminPassword: "Xx-Admin-2040"})
	wantCode(t, "a tenant administrator creates a tenant", err, codes.PermissionDenied, "")

	if _, err := tenant.CreateTenant(context.Background(), s.DB.Pool, tenant.NewTenant{Code: "ops", Name: "Platform operations",
		AdminUsername: "root", AdminPassword: opsPassword, Operator: true}, 4); err != nil {
		t.Fatal(err)
	}
	op := stack.WithToken(context.Background(), s.Login(t, "ops", "root", opsPassword))

	created, err := p.CreateTenant(op, &tenantv1.CreateTenantRequest{Code: "acme", Name: " Acme Ltd ", AdminUsername: "boss", AdminPassword: "Acme-Boss-2040"})
	if err != nil || created.GetTenant().GetCode() != "acme" || created.GetTenant().GetName() != "Acme Ltd" ||
		created.GetTenant().GetIsOperator() || created.GetAdminUserId() == 0 || created.GetTenant().GetUserCount() != 1 {
		t.Fatalf("CreateTenant: %v %v", created, err)
	}
	acmeID := created.GetTenant().GetId()
	for _, tc := range []struct {
		name  string
		req   *tenantv1.CreateTenantRequest
		code  codes.Code
		field string
	}{
		{"taken code", &tenantv1.CreateTenantRequest{Code: "acme", Name: "Again", AdminUsername: "boss", AdminPassword: "Acme-Boss-2040"}, codes.AlreadyExists, ""},
		{"malformed code", &tenantv1.CreateTenantRequest{Code: "ac me", Name: "A", AdminUsername: "boss", AdminPassword: "Acme-Boss-2040"}, codes.InvalidArgument, "code"},
		{"no name", &tenantv1.CreateTenantRequest{Code: "beta", AdminUsername: "boss", AdminPassword: "Acme-Boss-2040"}, codes.InvalidArgument, "name"},
		{"weak password", &tenantv1.CreateTenantRequest{Code: "beta", Name: "Beta", AdminUsername: "boss", AdminPassword: "changeme123"}, codes.InvalidArgument, "admin_password"},
		{"no administrator", &tenantv1.CreateTenantRequest{Code: "beta", Name: "Beta", AdminPassword: "Acme-Boss-2040"}, codes.InvalidArgument, "admin_username"},
	} {
		_, err := p.CreateTenant(op, tc.req)
		wantCode(t, tc.name, err, tc.code, tc.field)
	}
	if n := count(t, s, "SELECT count(*) FROM tenant.tenants WHERE code = 'beta'"); n != 0 {
		t.Fatal("a refused creation stored a tenant")
	}

	list, err := p.ListTenants(op, &tenantv1.ListTenantsRequest{})
	if err != nil || list.GetTotal() != 3 || len(list.GetItems()) != 3 {
		t.Fatalf("ListTenants: %v %v", list, err)
	}
	page, err := p.ListTenants(op, &tenantv1.ListTenantsRequest{Query: "ACM", PageSize: ptr(int32(1))})
	if err != nil || page.GetTotal() != 1 || page.GetItems()[0].GetCode() != "acme" {
		t.Fatalf("ListTenants filtered: %v %v", page, err)
	}
	_, err = p.ListTenants(op, &tenantv1.ListTenantsRequest{PageSize: ptr(int32(101))})
	wantCode(t, "page_size 101", err, codes.InvalidArgument, "page_size")

	// The new tenant's administrator is no operator.
	boss := stack.WithToken(context.Background(), s.Login(t, "acme", "boss", "Acme-Boss-2040"))
	_, err = p.ListTenants(boss, &tenantv1.ListTenantsRequest{})
	wantCode(t, "the new tenant's administrator lists tenants", err, codes.PermissionDenied, "")
	_, err = p.DisableTenant(boss, &tenantv1.DisableTenantRequest{Id: acmeID})
	wantCode(t, "a tenant administrator disables a tenant", err, codes.PermissionDenied, "")

	// Disable: the tenant's sessions end and its users cannot log in; enable lets them in again.
	dis, err := p.DisableTenant(op, &tenantv1.DisableTenantRequest{Id: acmeID})
	if err != nil || dis.GetTenant().GetStatus() != "disabled" || dis.GetSessionsEnded() < 1 {
		t.Fatalf("DisableTenant: %v %v", dis, err)
	}
	_, err = auth.GetInfo(boss, &tenantv1.GetInfoRequest{})
	wantCode(t, "a disabled tenant's token", err, codes.Unauthenticated, "")
	_, err = auth.Login(context.Background(), &tenantv1.LoginRequest{TenantCode: "acme", Username: "boss", Password: "Acme-Boss-2040"})
	if err == nil {
		t.Fatal("a disabled tenant's user logged in")
	}
	if _, err := p.DisableTenant(op, &tenantv1.DisableTenantRequest{Id: acmeID}); err != nil {
		t.Fatalf("disabling twice: %v", err)
	}
	if en, err := p.EnableTenant(op, &tenantv1.EnableTenantRequest{Id: acmeID}); err != nil || en.GetTenant().GetStatus() != "enabled" {
		t.Fatalf("EnableTenant: %v %v", en, err)
	}
	s.Login(t, "acme", "boss", "Acme-Boss-2040")

	// The operators' own tenant cannot be disabled through the API; unknown and bad ids.
	opsID := idOf(t, s, "SELECT id FROM tenant.tenants WHERE code = 'ops'")
	_, err = p.DisableTenant(op, &tenantv1.DisableTenantRequest{Id: opsID})
	wantCode(t, "disabling the operator tenant", err, codes.FailedPrecondition, "")
	_, err = p.DisableTenant(op, &tenantv1.DisableTenantRequest{Id: 987654})
	wantCode(t, "an unknown tenant", err, codes.NotFound, "")
	_, err = p.EnableTenant(op, &tenantv1.EnableTenantRequest{})
	wantCode(t, "id 0", err, codes.InvalidArgument, "id")
}

func ptr[T any](v T) *T { return &v }

// TestContractConcurrentMovesNeverCycle moves two sibling organisations under each other at
// the same time, again and again: one move of each pair wins, the other is refused (422), and
// the tree never holds a cycle.
func TestContractConcurrentMovesNeverCycle(t *testing.T) {
	s := stack.StartServices(t, "tenant")
	c := tenantv1.NewTenantAdminServiceClient(s.Conn)
	for round := range 10 {
		var ids [2]int64
		for i := range ids {
			o, err := c.CreateOrg(s.Admin, &tenantv1.CreateOrgRequest{Name: fmt.Sprintf("r%d-%d", round, i)})
			if err != nil {
				t.Fatal(err)
			}
			ids[i] = o.GetOrg().GetId()
		}
		errs := make(chan error, 2)
		for i := range ids {
			go func() {
				_, err := c.UpdateOrg(s.Admin, &tenantv1.UpdateOrgRequest{Id: ids[i], ParentId: ids[1-i], UpdateMask: mask("parent_id")})
				errs <- err
			}()
		}
		refused := 0
		for range ids {
			switch err := <-errs; status.Code(err) {
			case codes.OK:
			case codes.FailedPrecondition:
				refused++
			default:
				t.Fatalf("round %d: %v", round, err)
			}
		}
		cycles := count(t, s, `SELECT count(*) FROM tenant.orgs a JOIN tenant.orgs b ON a.parent_id = b.id AND b.parent_id = a.id`)
		if refused != 1 || cycles != 0 {
			t.Fatalf("round %d: %d moves refused, %d cycles", round, refused, cycles)
		}
	}
}

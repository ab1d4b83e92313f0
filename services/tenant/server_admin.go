package tenant

import (
	"context"
	"strings"

	"google.golang.org/protobuf/types/known/timestamppb"

	tenantv1 "github.com/shopmind/shopmind/gen/go/shopmind/tenant/v1"
	"github.com/shopmind/shopmind/internal/authn"
)

// adminServer is TenantAdminService: a tenant administrator's users and organisations. The
// interceptor has checked the access rule (administrators only) before any handler runs.
type adminServer struct {
	tenantv1.UnimplementedTenantAdminServiceServer
	dir *directory
}

func (s *adminServer) CreateUser(ctx context.Context, req *tenantv1.CreateUserRequest) (*tenantv1.CreateUserResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	u, err := s.dir.createUser(ctx, id.TenantID, userInput{Username: req.GetUsername(), Password: req.GetPassword(),
		Nickname: req.GetNickname(), Email: req.GetEmail(), Phone: req.GetPhone(), Status: req.GetStatus(),
		OrgID: req.GetOrgId(), RoleIDs: req.GetRoleIds(), IsAdmin: req.GetIsAdmin()})
	if err != nil {
		return nil, err
	}
	return &tenantv1.CreateUserResponse{User: userPB(u)}, nil
}

func (s *adminServer) UpdateUser(ctx context.Context, req *tenantv1.UpdateUserRequest) (*tenantv1.UpdateUserResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	u, err := s.dir.updateUser(ctx, id, req.GetId(), userInput{Nickname: req.GetNickname(), Email: req.GetEmail(),
		Phone: req.GetPhone(), Status: req.GetStatus(), OrgID: req.GetOrgId(), RoleIDs: req.GetRoleIds(),
		IsAdmin: req.GetIsAdmin(), Mask: req.GetUpdateMask().GetPaths()})
	if err != nil {
		return nil, err
	}
	return &tenantv1.UpdateUserResponse{User: userPB(u)}, nil
}

func (s *adminServer) DeleteUsers(ctx context.Context, req *tenantv1.DeleteUsersRequest) (*tenantv1.DeleteUsersResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	n, err := s.dir.deleteUsers(ctx, id, req.GetIds())
	if err != nil {
		return nil, err
	}
	return &tenantv1.DeleteUsersResponse{Deleted: int32(n)}, nil
}

func (s *adminServer) ResetUserPassword(ctx context.Context, req *tenantv1.ResetUserPasswordRequest) (*tenantv1.ResetUserPasswordResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	n, err := s.dir.setPassword(ctx, id.TenantID, req.GetId(), req.GetPassword(), "password", nil)
	if err != nil {
		return nil, err
	}
	return &tenantv1.ResetUserPasswordResponse{SessionsEnded: int32(n)}, nil
}

func (s *adminServer) CreateOrg(ctx context.Context, req *tenantv1.CreateOrgRequest) (*tenantv1.CreateOrgResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	o, err := s.dir.createOrg(ctx, id.TenantID, orgInput{Name: req.GetName(), Code: req.GetCode(), Status: req.GetStatus(),
		SortOrder: req.GetSortOrder(), ParentID: req.GetParentId()})
	if err != nil {
		return nil, err
	}
	return &tenantv1.CreateOrgResponse{Org: orgPB(o)}, nil
}

func (s *adminServer) UpdateOrg(ctx context.Context, req *tenantv1.UpdateOrgRequest) (*tenantv1.UpdateOrgResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	o, err := s.dir.updateOrg(ctx, id.TenantID, req.GetId(), orgInput{Name: req.GetName(), Code: req.GetCode(),
		Status: req.GetStatus(), SortOrder: req.GetSortOrder(), ParentID: req.GetParentId(), Mask: req.GetUpdateMask().GetPaths()})
	if err != nil {
		return nil, err
	}
	return &tenantv1.UpdateOrgResponse{Org: orgPB(o)}, nil
}

func (s *adminServer) DeleteOrg(ctx context.Context, req *tenantv1.DeleteOrgRequest) (*tenantv1.DeleteOrgResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.dir.deleteOrg(ctx, id.TenantID, req.GetId()); err != nil {
		return nil, err
	}
	return &tenantv1.DeleteOrgResponse{Deleted: true}, nil
}

func orgPB(o *orgRecord) *tenantv1.Org {
	return &tenantv1.Org{Id: o.ID, ParentId: o.ParentID, Name: o.Name, Code: o.Code, Status: o.Status, SortOrder: o.SortOrder}
}

// platformServer is PlatformService: platform operators manage tenants. The interceptor has
// checked the access rule (operators only, through directory.IsOperator).
type platformServer struct {
	tenantv1.UnimplementedPlatformServiceServer
	platform *Platform
}

func tenantPB(t *TenantInfo) *tenantv1.Tenant {
	return &tenantv1.Tenant{Id: t.ID, Code: t.Code, Name: t.Name, Status: t.Status, IsOperator: t.IsOperator,
		UserCount: t.UserCount, CreatedAt: timestamppb.New(t.CreatedAt), UpdatedAt: timestamppb.New(t.UpdatedAt)}
}

func (s *platformServer) CreateTenant(ctx context.Context, req *tenantv1.CreateTenantRequest) (*tenantv1.CreateTenantResponse, error) {
	t, adminID, err := s.platform.Create(ctx, NewTenant{Code: req.GetCode(), Name: strings.TrimSpace(req.GetName()),
		AdminUsername: req.GetAdminUsername(), AdminPassword: req.GetAdminPassword()})
	if err != nil {
		return nil, err
	}
	return &tenantv1.CreateTenantResponse{Tenant: tenantPB(t), AdminUserId: adminID}, nil
}

func (s *platformServer) ListTenants(ctx context.Context, req *tenantv1.ListTenantsRequest) (*tenantv1.ListTenantsResponse, error) {
	pageNum, pageSize := paging(req.PageNum, req.PageSize)
	items, total, err := s.platform.List(ctx, TenantFilter{Status: req.GetStatus(), Query: req.GetQuery()},
		int(pageSize), int(pageNum-1)*int(pageSize))
	if err != nil {
		return nil, err
	}
	resp := &tenantv1.ListTenantsResponse{Items: []*tenantv1.Tenant{}, Total: total, PageNum: pageNum, PageSize: pageSize}
	for _, t := range items {
		resp.Items = append(resp.Items, tenantPB(t))
	}
	return resp, nil
}

func (s *platformServer) DisableTenant(ctx context.Context, req *tenantv1.DisableTenantRequest) (*tenantv1.DisableTenantResponse, error) {
	t, n, err := s.platform.SetStatus(ctx, req.GetId(), "disabled", false)
	if err != nil {
		return nil, err
	}
	return &tenantv1.DisableTenantResponse{Tenant: tenantPB(t), SessionsEnded: int32(n)}, nil
}

func (s *platformServer) EnableTenant(ctx context.Context, req *tenantv1.EnableTenantRequest) (*tenantv1.EnableTenantResponse, error) {
	t, _, err := s.platform.SetStatus(ctx, req.GetId(), "enabled", false)
	if err != nil {
		return nil, err
	}
	return &tenantv1.EnableTenantResponse{Tenant: tenantPB(t)}, nil
}

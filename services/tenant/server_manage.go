package tenant

import (
	"context"

	tenantv1 "github.com/shopmind/shopmind/gen/go/shopmind/tenant/v1"
	"github.com/shopmind/shopmind/internal/authn"
)

// Pagination defaults of the spec.
const (
	defaultPageNum  = 1
	defaultPageSize = 10
)

// paging is the page number and size asked for, with the spec's defaults for those unset.
func paging(num, size *int32) (int32, int32) {
	pageNum, pageSize := int32(defaultPageNum), int32(defaultPageSize)
	if num != nil {
		pageNum = *num
	}
	if size != nil {
		pageSize = *size
	}
	return pageNum, pageSize
}

// managementServer is TenantService: users, organisations, roles of the caller's tenant.
type managementServer struct {
	tenantv1.UnimplementedTenantServiceServer
	dir *directory
}

func (s *managementServer) ListUsers(ctx context.Context, req *tenantv1.ListUsersRequest) (*tenantv1.ListUsersResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	num, size := req.PageNum, req.PageSize // page and limit are their synonyms
	if num == nil {
		num = req.Page
	}
	if size == nil {
		size = req.Limit
	}
	pageNum, pageSize := paging(num, size)
	users, total, err := s.dir.store.listUsers(ctx, id.TenantID,
		userFilter{Username: req.GetUsername(), Status: req.GetStatus(), OrgID: req.GetOrgId()},
		int(pageSize), int(pageNum-1)*int(pageSize))
	if err != nil {
		return nil, err
	}
	resp := &tenantv1.ListUsersResponse{Total: total, PageNum: pageNum, PageSize: pageSize, Items: []*tenantv1.User{}}
	for _, u := range users {
		resp.Items = append(resp.Items, userPB(u))
	}
	return resp, nil
}

func (s *managementServer) ListOrgs(ctx context.Context, req *tenantv1.ListOrgsRequest) (*tenantv1.ListOrgsResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	tree, err := s.dir.orgTree(ctx, id.TenantID, req.GetStatus(), req.GetName())
	if err != nil {
		return nil, err
	}
	return &tenantv1.ListOrgsResponse{Items: orgsPB(tree)}, nil
}

func (s *managementServer) CreateRole(ctx context.Context, req *tenantv1.CreateRoleRequest) (*tenantv1.CreateRoleResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	r, err := s.dir.createRole(ctx, id.TenantID, roleInput{Code: req.GetCode(), Name: req.GetName(), Description: req.GetDescription(),
		Status: req.GetStatus(), Permissions: req.GetPermissionCodes(), MenuIDs: req.GetMenuIds()})
	if err != nil {
		return nil, err
	}
	return &tenantv1.CreateRoleResponse{Role: rolePB(r)}, nil
}

func (s *managementServer) UpdateRole(ctx context.Context, req *tenantv1.UpdateRoleRequest) (*tenantv1.UpdateRoleResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	r, err := s.dir.updateRole(ctx, id.TenantID, req.GetId(), roleInput{Name: req.GetName(), Description: req.GetDescription(),
		Status: req.GetStatus(), Permissions: req.GetPermissionCodes(), MenuIDs: req.GetMenuIds(), Mask: req.GetUpdateMask().GetPaths()})
	if err != nil {
		return nil, err
	}
	return &tenantv1.UpdateRoleResponse{Role: rolePB(r)}, nil
}

func (s *managementServer) DeleteRole(ctx context.Context, req *tenantv1.DeleteRoleRequest) (*tenantv1.DeleteRoleResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.dir.deleteRole(ctx, id.TenantID, req.GetId(), req.GetForce()); err != nil {
		return nil, err
	}
	return &tenantv1.DeleteRoleResponse{Deleted: true}, nil
}

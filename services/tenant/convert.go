package tenant

import (
	"google.golang.org/protobuf/types/known/timestamppb"

	tenantv1 "github.com/shopmind/shopmind/gen/go/shopmind/tenant/v1"
	"github.com/shopmind/shopmind/internal/authn"
)

// identityOf is the identity a freshly issued pair stands for.
func identityOf(p authn.Pair, u *userRecord) *authn.Identity {
	return &authn.Identity{UserID: u.ID, Username: u.Username, TenantID: u.TenantID, RoleIDs: u.RoleIDs,
		IsAdmin: u.IsAdmin, TokenID: p.AccessID, Family: p.Family, Token: p.Access}
}

func userInfo(cu *currentUser) *tenantv1.UserInfo {
	u := cu.User
	info := &tenantv1.UserInfo{Id: u.ID, Username: u.Username, Nickname: u.Nickname,
		Tenant:      &tenantv1.TenantSummary{Id: u.TenantID, Code: u.TenantCode, Name: u.TenantName},
		Permissions: cu.Permissions, IsAdmin: u.IsAdmin}
	if u.OrgID != nil {
		info.Org = &tenantv1.OrgSummary{Id: *u.OrgID, Name: u.OrgName}
	}
	for _, r := range cu.Roles {
		info.Roles = append(info.Roles, &tenantv1.RoleSummary{Id: r.ID, Code: r.Code, Name: r.Name})
	}
	return info
}

func userPB(u *userRecord) *tenantv1.User {
	out := &tenantv1.User{Id: u.ID, TenantId: u.TenantID, Username: u.Username, Nickname: u.Nickname, Email: u.Email,
		Phone: u.Phone, OrgName: u.OrgName, RoleIds: u.RoleIDs, Status: u.Status, IsAdmin: u.IsAdmin,
		CreatedAt: timestamppb.New(u.CreatedAt), UpdatedAt: timestamppb.New(u.UpdatedAt)}
	if u.OrgID != nil {
		out.OrgId = *u.OrgID
	}
	if u.LastLoginAt != nil {
		out.LastLoginAt = timestamppb.New(*u.LastLoginAt)
	}
	return out
}

func menusPB(nodes []*menuNode) []*tenantv1.Menu {
	out := make([]*tenantv1.Menu, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, &tenantv1.Menu{Id: n.ID, ParentId: n.ParentID, Name: n.Name, Title: n.Title, Path: n.Path,
			Component: n.Component, Icon: n.Icon, Type: n.Type, Permission: n.Permission, SortOrder: n.SortOrder,
			Hidden: n.Hidden, Children: menusPB(n.Children)})
	}
	return out
}

func orgsPB(nodes []*orgNode) []*tenantv1.Org {
	out := make([]*tenantv1.Org, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, &tenantv1.Org{Id: n.ID, ParentId: n.ParentID, Name: n.Name, Code: n.Code, Status: n.Status,
			SortOrder: n.SortOrder, Children: orgsPB(n.Children)})
	}
	return out
}

func favoritesPB(favs []favoriteRecord) []*tenantv1.Favorite {
	out := make([]*tenantv1.Favorite, 0, len(favs))
	for _, f := range favs {
		out = append(out, &tenantv1.Favorite{Type: f.Type, TargetKey: f.TargetKey, Title: f.Title, Path: f.Path, SortOrder: f.SortOrder})
	}
	return out
}

func rolePB(r *roleRecord) *tenantv1.Role {
	return &tenantv1.Role{Id: r.ID, TenantId: r.TenantID, Code: r.Code, Name: r.Name, Description: r.Desc, Status: r.Status,
		PermissionCodes: r.Permissions, MenuIds: r.MenuIDs, CreatedAt: timestamppb.New(r.CreatedAt), UpdatedAt: timestamppb.New(r.UpdatedAt)}
}

package tenant

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	tenantv1 "github.com/shopmind/shopmind/gen/go/shopmind/tenant/v1"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/authn"
)

// authServer is TenantAuthService: the current user's session endpoints.
type authServer struct {
	tenantv1.UnimplementedTenantAuthServiceServer
	auth       *auth
	dir        *directory
	defaultEnv string
}

func (s *authServer) Login(ctx context.Context, req *tenantv1.LoginRequest) (*tenantv1.LoginResponse, error) {
	res, err := s.auth.login(ctx, loginInput{TenantCode: req.GetTenantCode(), Username: req.GetUsername(),
		Password: req.GetPassword(), CaptchaID: req.GetCaptchaId(), CaptchaCode: req.GetCaptchaCode(),
		TenantPath: loginPath(ctx), Audience: environment(ctx, s.defaultEnv)})
	if err != nil {
		return nil, err
	}
	id := identityOf(res.Pair, res.User)
	cu, err := s.dir.current(ctx, id)
	if err != nil {
		return nil, err
	}
	return &tenantv1.LoginResponse{AccessToken: res.Pair.Access, TokenType: "Bearer",
		ExpiresIn: seconds(res.Pair.AccessExpires), RefreshToken: res.Pair.Refresh,
		RefreshExpiresIn: seconds(res.Pair.RefreshExpires), User: userInfo(cu)}, nil
}

func (s *authServer) Logout(ctx context.Context, _ *tenantv1.LogoutRequest) (*tenantv1.LogoutResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	return &tenantv1.LogoutResponse{}, s.auth.logout(ctx, id)
}

func (s *authServer) GetInfo(ctx context.Context, _ *tenantv1.GetInfoRequest) (*tenantv1.GetInfoResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	cu, err := s.dir.current(ctx, id)
	if err != nil {
		return nil, err
	}
	return &tenantv1.GetInfoResponse{User: userInfo(cu)}, nil
}

func (s *authServer) GetMenus(ctx context.Context, _ *tenantv1.GetMenusRequest) (*tenantv1.GetMenusResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	tree, err := s.dir.menuTree(ctx, id)
	if err != nil {
		return nil, err
	}
	return &tenantv1.GetMenusResponse{Menus: menusPB(tree)}, nil
}

func (s *authServer) Refresh(ctx context.Context, req *tenantv1.RefreshRequest) (*tenantv1.RefreshResponse, error) {
	pair, err := s.auth.refresh(ctx, req.GetRefreshToken(), environment(ctx, s.defaultEnv))
	if err != nil {
		return nil, err
	}
	return &tenantv1.RefreshResponse{AccessToken: pair.Access, TokenType: "Bearer", ExpiresIn: seconds(pair.AccessExpires),
		RefreshToken: pair.Refresh, RefreshExpiresIn: seconds(pair.RefreshExpires)}, nil
}

func (s *authServer) GetCaptcha(ctx context.Context, _ *tenantv1.GetCaptchaRequest) (*tenantv1.GetCaptchaResponse, error) {
	id, image, ttl, err := s.auth.captcha(ctx)
	if err != nil {
		return nil, err
	}
	return &tenantv1.GetCaptchaResponse{CaptchaId: id, Image: image, ExpiresIn: int32(ttl / time.Second)}, nil
}

func (s *authServer) GetInit(ctx context.Context, _ *tenantv1.GetInitRequest) (*tenantv1.GetInitResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	cu, err := s.dir.current(ctx, id)
	if err != nil {
		return nil, err
	}
	tree, err := s.dir.menuTree(ctx, id)
	if err != nil {
		return nil, err
	}
	favs, err := s.dir.store.favorites(ctx, id.UserID)
	if err != nil {
		return nil, err
	}
	return &tenantv1.GetInitResponse{User: userInfo(cu), Menus: menusPB(tree), Permissions: cu.Permissions, Favorites: favoritesPB(favs)}, nil
}

func (s *authServer) SetFavorites(ctx context.Context, req *tenantv1.SetFavoritesRequest) (*tenantv1.SetFavoritesResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	favs := make([]favoriteRecord, len(req.GetFavorites()))
	for i, f := range req.GetFavorites() {
		favs[i] = favoriteRecord{Type: f.GetType(), TargetKey: f.GetTargetKey(), Title: f.GetTitle(), Path: f.GetPath(), SortOrder: f.GetSortOrder()}
	}
	if err := s.dir.store.replaceFavorites(ctx, id.UserID, favs); err != nil {
		return nil, err
	}
	saved, err := s.dir.store.favorites(ctx, id.UserID)
	if err != nil {
		return nil, err
	}
	return &tenantv1.SetFavoritesResponse{Favorites: favoritesPB(saved)}, nil
}

func (s *authServer) ChangePassword(ctx context.Context, req *tenantv1.ChangePasswordRequest) (*tenantv1.ChangePasswordResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	pair, err := s.auth.changePassword(ctx, s.dir, id, req.GetCurrentPassword(), req.GetNewPassword())
	if err != nil {
		return nil, err
	}
	return &tenantv1.ChangePasswordResponse{AccessToken: pair.Access, TokenType: "Bearer", ExpiresIn: seconds(pair.AccessExpires),
		RefreshToken: pair.Refresh, RefreshExpiresIn: seconds(pair.RefreshExpires)}, nil
}

func (s *authServer) GetFavorites(ctx context.Context, _ *tenantv1.GetFavoritesRequest) (*tenantv1.GetFavoritesResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	favs, err := s.dir.store.favorites(ctx, id.UserID)
	if err != nil {
		return nil, err
	}
	return &tenantv1.GetFavoritesResponse{Favorites: favoritesPB(favs)}, nil
}

// internalServer is the internal AuthService.
type internalServer struct {
	tenantv1.UnimplementedAuthServiceServer
	auth       *auth
	dir        *directory
	defaultEnv string
}

func (s *internalServer) VerifyToken(ctx context.Context, req *tenantv1.VerifyTokenRequest) (*tenantv1.VerifyTokenResponse, error) {
	aud := req.GetAudience()
	if aud == "" {
		aud = environment(ctx, s.defaultEnv)
	}
	claims, err := s.auth.tokens.Verify(req.GetToken(), aud, authn.TypeAccess)
	if err != nil {
		return nil, apperr.New(apperr.KindUnauthenticated, "invalid or expired token")
	}
	if s.auth.revocations.Revoked(claims.ID, claims.Family) {
		return nil, apperr.New(apperr.KindUnauthenticated, "token has been revoked")
	}
	return &tenantv1.VerifyTokenResponse{Claims: &tenantv1.UserClaims{UserId: claims.UserID, Username: claims.Username,
		TenantId: claims.TenantID, RoleIds: claims.RoleIDs, OrgId: claims.OrgID, IsAdmin: claims.IsAdmin,
		ExpiresAt: timestamppb.New(claims.ExpiresAt.Time), TokenId: claims.ID, Audience: aud,
		IssuedAt: timestamppb.New(claims.IssuedAt.Time)}}, nil
}

// mayInspect allows a caller to ask about themself, or an administrator about their tenant.
func mayInspect(id *authn.Identity, tenantID, userID int64) error {
	if id.TenantID != tenantID {
		return apperr.NotFound("user", userID) // another tenant's users do not exist for the caller
	}
	if id.UserID != userID && !id.IsAdmin {
		return apperr.New(apperr.KindForbidden, "only administrators may inspect other users")
	}
	return nil
}

func (s *internalServer) GetUserPermissions(ctx context.Context, req *tenantv1.GetUserPermissionsRequest) (*tenantv1.GetUserPermissionsResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := mayInspect(id, req.GetTenantId(), req.GetUserId()); err != nil {
		return nil, err
	}
	g, err := s.dir.store.permissionsOf(ctx, req.GetTenantId(), req.GetUserId())
	if err != nil {
		return nil, err
	}
	return &tenantv1.GetUserPermissionsResponse{PermissionCodes: g.Codes, RoleIds: g.RoleIDs, IsAdmin: g.IsAdmin,
		IsPlatformOperator: g.Operator}, nil
}

func (s *internalServer) CheckPermission(ctx context.Context, req *tenantv1.CheckPermissionRequest) (*tenantv1.CheckPermissionResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := mayInspect(id, req.GetTenantId(), req.GetUserId()); err != nil {
		return nil, err
	}
	target := &authn.Identity{TenantID: req.GetTenantId(), UserID: req.GetUserId()}
	allowed, reason, err := checkRoute(ctx, s.dir, target, req.GetMethod(), req.GetPath())
	if err != nil {
		return nil, err
	}
	return &tenantv1.CheckPermissionResponse{Allowed: allowed, Reason: reason}, nil
}

func (s *internalServer) RefreshToken(ctx context.Context, req *tenantv1.RefreshTokenRequest) (*tenantv1.RefreshTokenResponse, error) {
	pair, err := s.auth.refresh(ctx, req.GetRefreshToken(), environment(ctx, s.defaultEnv))
	if err != nil {
		return nil, err
	}
	return &tenantv1.RefreshTokenResponse{AccessToken: pair.Access, TokenType: "Bearer", ExpiresIn: seconds(pair.AccessExpires),
		RefreshToken: pair.Refresh, RefreshExpiresIn: seconds(pair.RefreshExpires)}, nil
}

func (s *internalServer) InvalidateToken(ctx context.Context, req *tenantv1.InvalidateTokenRequest) (*tenantv1.InvalidateTokenResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	aud := environment(ctx, s.defaultEnv)
	claims, err := s.auth.tokens.Verify(req.GetToken(), aud, authn.TypeAccess)
	kind := authn.KindToken
	if err != nil {
		if claims, err = s.auth.tokens.Verify(req.GetToken(), aud, authn.TypeRefresh); err != nil {
			return nil, apperr.Invalid("token", "token.valid", "not a valid token of this environment")
		}
		kind = authn.KindFamily // a refresh token: its whole family goes
	}
	if err := mayInspect(id, claims.TenantID, claims.UserID); err != nil {
		return nil, err
	}
	if s.auth.revocations.Revoked(claims.ID, claims.Family) {
		return &tenantv1.InvalidateTokenResponse{Invalidated: false}, nil
	}
	if kind == authn.KindFamily {
		err = s.auth.revokeFamily(ctx, claims.Family)
	} else {
		err = s.auth.revocations.Revoke(ctx, authn.KindToken, claims.ID, claims.ExpiresAt.Time)
	}
	if err != nil {
		return nil, err
	}
	return &tenantv1.InvalidateTokenResponse{Invalidated: true}, nil
}

func seconds(t time.Time) int32 { return int32(time.Until(t).Round(time.Second) / time.Second) }

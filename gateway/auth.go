package gateway

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/shopmind/shopmind/gateway/realtime"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/authn"
)

// DefaultPublicRoutes are the routes the edge lets through without a token: login, captcha,
// refresh, health, the extension's version check and its download. SHOPMIND_AUTH_PUBLIC_ROUTES replaces
// the list. Backends still enforce their own access rules.
var DefaultPublicRoutes = []string{
	"POST /api/v1/tenant/auth/login", "POST /api/v1/auth/login",
	"GET /api/v1/tenant/auth/captcha",
	"POST /api/v1/tenant/auth/refresh", "POST /api/v1/auth/refresh",
	"GET /api/v1/health/health", "GET /api/v1/nl2sql/health", "GET /api/v1/data/crx/ver",
	PublicFiles[0],
}

// PublicFiles are the public routes that serve a file rather than an API operation (so the
// OpenAPI documents do not list them): the browser extension's package, which a user
// downloads before signing in (services/crx, internal/crxbundle).
var PublicFiles = []string{"GET /api/v1/data/crx/download/shopmind-extension.zip"}

// AdminCheck asks the system service whether the caller may use an administrator path,
// and why not when not (the refusal's message; empty: a generic one).
type AdminCheck func(ctx context.Context, id *authn.Identity, method, path string) (allowed bool, reason string, err error)

// EdgeAuth authenticates at the edge: the bearer token is verified locally (signature,
// expiry, audience = the request's environment) and checked against the revocation list,
// with no per-request call; administrator paths ("-m") are checked through the system
// service. The verified identity goes to backends as x-user-id, x-tenant-id, x-username,
// x-is-admin and x-role-ids metadata, next to the token (backends verify it again).
type EdgeAuth struct {
	Tokens      *authn.Tokens
	Revocations *authn.Revocations
	// Public lists "METHOD /path" routes (a segment "*" matches any one segment).
	Public     []string
	AdminCheck AdminCheck
}

func (e *EdgeAuth) public(method, path string) bool {
	for _, route := range e.Public {
		m, p, ok := strings.Cut(route, " ")
		if ok && m == method && pathMatches(p, path) {
			return true
		}
	}
	return false
}

// pathMatches compares a route pattern with a path segment by segment, "*" matching any one
// segment (without splitting either: it runs for every public route on every request).
func pathMatches(pattern, path string) bool {
	pattern, path = strings.Trim(pattern, "/"), strings.Trim(path, "/")
	for {
		want, restPattern, morePattern := strings.Cut(pattern, "/")
		got, restPath, morePath := strings.Cut(path, "/")
		if want != "*" && want != got || morePattern != morePath {
			return false
		}
		if !morePattern {
			return true
		}
		pattern, path = restPattern, restPath
	}
}

// Middleware is the Options.Authenticate hook.
func (e *EdgeAuth) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e.public(r.Method, r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		raw := authn.BearerToken(r.Header.Values("Authorization"))
		if raw == "" {
			// A browser's WebSocket cannot send Authorization: the token comes as an
			// offered subprotocol "bearer.<token>" (package realtime), and goes on to the
			// backends as the Authorization header.
			if raw = realtime.Bearer(r); raw != "" {
				r.Header.Set("Authorization", "Bearer "+raw)
			}
		}
		if raw == "" {
			WriteError(w, r, apperr.KindUnauthenticated, "missing bearer token")
			return
		}
		claims, err := e.Tokens.Verify(raw, EnvironmentFrom(r.Context()), authn.TypeAccess)
		if err != nil {
			WriteError(w, r, apperr.KindUnauthenticated, "invalid or expired token")
			return
		}
		if e.Revocations.Revoked(claims.ID, claims.Family) {
			WriteError(w, r, apperr.KindUnauthenticated, "token has been revoked")
			return
		}
		id := claims.Identity(raw)
		ctx := r.Context()
		SetAccessIdentity(ctx, id.TenantID, id.UserID)
		if info := infoFrom(ctx); info != nil {
			info.identity = id // read by IdentityMetadata; no context copy per request
		} else {
			ctx = authn.WithIdentity(ctx, id)
			r = r.WithContext(ctx)
		}
		if authn.IsAdminPath(r.URL.Path) {
			allowed, reason, err := e.AdminCheck(authn.WithIdentity(ctx, id), id, r.Method, r.URL.Path)
			if err != nil {
				WriteErr(w, r, err)
				return
			}
			if !allowed {
				if reason == "" {
					reason = "administrator path: administrators only"
				}
				WriteError(w, r, apperr.KindForbidden, reason)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// IdentityMetadata is the Options.Metadata hook: the verified identity, if any.
func IdentityMetadata(ctx context.Context) []string {
	id := identityFrom(ctx)
	if id == nil {
		return nil
	}
	roles := make([]byte, 0, 8*len(id.RoleIDs))
	for i, rid := range id.RoleIDs {
		if i > 0 {
			roles = append(roles, ',')
		}
		roles = strconv.AppendInt(roles, rid, 10)
	}
	return append(make([]string, 0, 10), "x-user-id", strconv.FormatInt(id.UserID, 10), "x-tenant-id", strconv.FormatInt(id.TenantID, 10),
		"x-username", id.Username, "x-is-admin", strconv.FormatBool(id.IsAdmin), "x-role-ids", string(roles))
}

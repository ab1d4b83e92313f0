// Package authn is ShopMind's shared authentication: JWT access/refresh tokens (HS256,
// golang-jwt/v5 with the algorithm pinned), the revocation list every process keeps in memory
// (loaded from PostgreSQL and kept current with LISTEN/NOTIFY), and the gRPC interceptor that
// every service runs: it verifies the forwarded token, checks revocation and the RPC's
// declared access rule, and puts the identity in the context.
package authn

import (
	"context"
	"slices"

	"github.com/shopmind/shopmind/internal/apperr"
)

// Environments a token audience may name.
var Environments = []string{"dev", "local", "test"}

// ValidEnvironment reports whether env is a known environment.
func ValidEnvironment(env string) bool { return slices.Contains(Environments, env) }

// Identity is the verified caller.
type Identity struct {
	UserID   int64
	Username string
	TenantID int64
	RoleIDs  []int64
	OrgID    int64
	IsAdmin  bool
	// TokenID and Family identify the access token and its refresh family.
	TokenID string
	Family  string
	// Audience is the environment the token was issued for.
	Audience string
	// Token is the raw access token, forwarded on calls to other services.
	Token string
}

type identityKey struct{}

// WithIdentity stores the identity in ctx.
func WithIdentity(ctx context.Context, id *Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// FromContext returns the verified identity, or nil for public calls.
func FromContext(ctx context.Context) *Identity {
	id, _ := ctx.Value(identityKey{}).(*Identity)
	return id
}

// Caller returns the verified identity of an RPC's caller, or a 401 (missing bearer token)
// when ctx carries none. The interceptor guarantees one on non-public RPCs; handlers call
// Caller rather than FromContext so that a missing identity is an answer, never a nil.
func Caller(ctx context.Context) (*Identity, error) {
	id := FromContext(ctx)
	if id == nil {
		return nil, apperr.New(apperr.KindUnauthenticated, "missing bearer token")
	}
	return id, nil
}

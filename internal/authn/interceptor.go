package authn

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/grpcserver"
)

// EnvHeader is the metadata key naming the request's environment (set by the gateway);
// the token's audience must equal it.
const EnvHeader = "x-env"

// PermissionSource answers which permission codes a caller holds.
type PermissionSource interface {
	Permissions(ctx context.Context, id *Identity) (map[string]bool, error)
}

// OperatorSource tells whether a caller is a platform operator (an enabled administrator of
// an operator tenant). Only the tenant service, which owns the tenants, can answer.
type OperatorSource interface {
	IsOperator(ctx context.Context, id *Identity) (bool, error)
}

// Authenticator is the shared authentication and authorization step of every gRPC server.
type Authenticator struct {
	Tokens      *Tokens
	Revocations *Revocations
	// Permissions resolves permission codes for RPCs that declare one (nil: only
	// administrators pass such RPCs).
	Permissions PermissionSource
	// DefaultEnv is the environment of calls that name none (the process's own).
	DefaultEnv string
	// Operators answers for RPCs whose rule is Operator (nil: such RPCs refuse everyone);
	// the tenant service sets it in the process that hosts it.
	Operators OperatorSource
}

// Errors clients see; deliberately terse.
var (
	errNoToken = apperr.New(apperr.KindUnauthenticated, "missing bearer token")
	errBadTok  = apperr.New(apperr.KindUnauthenticated, "invalid or expired token")
	errRevoked = apperr.New(apperr.KindUnauthenticated, "token has been revoked")
	errEnv     = apperr.New(apperr.KindUnauthenticated, "unknown environment")
)

// Authenticate verifies the caller of fullMethod and returns the context carrying the identity.
func (a *Authenticator) Authenticate(ctx context.Context, fullMethod string) (context.Context, error) {
	rule := RuleFor(fullMethod)
	if rule.Public {
		return ctx, nil
	}
	env := a.DefaultEnv
	if v := metadata.ValueFromIncomingContext(ctx, EnvHeader); len(v) > 0 && v[0] != "" {
		env = v[0]
	}
	if !ValidEnvironment(env) {
		return nil, errEnv
	}
	raw := BearerToken(metadata.ValueFromIncomingContext(ctx, "authorization"))
	if raw == "" {
		return nil, errNoToken
	}
	claims, err := a.Tokens.Verify(raw, env, TypeAccess)
	if err != nil {
		return nil, errBadTok
	}
	if a.Revocations.Revoked(claims.ID, claims.Family) {
		return nil, errRevoked
	}
	id := claims.Identity(raw)
	if rule.Admin && !id.IsAdmin {
		return nil, apperr.New(apperr.KindForbidden, "administrators only")
	}
	if rule.Operator {
		if err := a.checkOperator(ctx, id); err != nil {
			return nil, err
		}
	}
	if rule.Permission != "" && !id.IsAdmin {
		if a.Permissions == nil {
			return nil, apperr.New(apperr.KindForbidden, "missing permission %s", rule.Permission)
		}
		perms, err := a.Permissions.Permissions(ctx, id)
		if err != nil {
			return nil, sourceError(err)
		}
		if !perms[rule.Permission] {
			return nil, apperr.New(apperr.KindForbidden, "missing permission %s", rule.Permission)
		}
	}
	return WithIdentity(ctx, id), nil
}

// errNotOperator is the refusal of an operator RPC.
var errNotOperator = apperr.New(apperr.KindForbidden, "platform operators only")

func (a *Authenticator) checkOperator(ctx context.Context, id *Identity) error {
	if a.Operators == nil {
		return errNotOperator
	}
	ok, err := a.Operators.IsOperator(ctx, id)
	if err != nil {
		return sourceError(err)
	}
	if !ok {
		return errNotOperator
	}
	return nil
}

// sourceError passes on an answer of a permission or operator source (a 403 for a disabled
// user, say) and hides anything else behind a 500.
func sourceError(err error) error {
	var appErr *apperr.Error
	if errors.As(err, &appErr) {
		return appErr
	}
	return apperr.Internal(err)
}

// BearerToken extracts the token of an "Authorization: Bearer <token>" value.
func BearerToken(values []string) string {
	if len(values) != 1 {
		return ""
	}
	scheme, token, ok := strings.Cut(values[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// Unary is the unary interceptor.
func (a *Authenticator) Unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	ctx, err := a.Authenticate(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

// Stream is the stream interceptor.
func (a *Authenticator) Stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx, err := a.Authenticate(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	return handler(srv, &grpcserver.ContextStream{ServerStream: ss, Ctx: ctx})
}

// CachedPermissions memoises a PermissionSource per user for a short time, so permission
// checks cost a map lookup; role changes take effect within the TTL.
type CachedPermissions struct {
	Source PermissionSource
	TTL    time.Duration

	mu      sync.Mutex
	entries map[[2]int64]cachedPerms
}

type cachedPerms struct {
	perms map[string]bool
	until time.Time
}

// Permissions implements PermissionSource.
func (c *CachedPermissions) Permissions(ctx context.Context, id *Identity) (map[string]bool, error) {
	key := [2]int64{id.TenantID, id.UserID}
	now := time.Now()
	c.mu.Lock()
	if e, ok := c.entries[key]; ok && now.Before(e.until) {
		c.mu.Unlock()
		return e.perms, nil
	}
	c.mu.Unlock()
	perms, err := c.Source.Permissions(ctx, id)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.entries == nil || len(c.entries) > 100_000 {
		c.entries = map[[2]int64]cachedPerms{}
	}
	c.entries[key] = cachedPerms{perms: perms, until: now.Add(c.TTL)}
	c.mu.Unlock()
	return perms, nil
}

// Invalidate forgets every cached entry (after a role change in this process).
func (c *CachedPermissions) Invalidate() {
	c.mu.Lock()
	c.entries = nil
	c.mu.Unlock()
}

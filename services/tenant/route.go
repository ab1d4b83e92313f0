package tenant

import (
	"context"

	"github.com/shopmind/shopmind/internal/authn"
)

// checkRoute decides whether the user may call method+path: the RPC's declared access rule
// against the user's permissions; administrator paths ("-m") need an administrator, and
// operator RPCs a platform operator.
func checkRoute(ctx context.Context, dir *directory, target *authn.Identity, method, path string) (bool, string, error) {
	perms, isAdmin, err := dir.grants(ctx, target)
	if err != nil {
		return false, "", err
	}
	_, rule, ok := authn.RouteFor(method, path)
	if ok && rule.Operator {
		operator, err := dir.IsOperator(ctx, target)
		if err != nil || operator {
			return operator, "", err
		}
		return false, "platform operators only", nil
	}
	if authn.IsAdminPath(path) {
		if isAdmin {
			return true, "", nil
		}
		return false, "administrator path", nil
	}
	switch {
	case !ok:
		return false, "no such route", nil
	case rule.Public, isAdmin:
		return true, "", nil
	case rule.Admin:
		return false, "administrators only", nil
	case rule.Permission == "" || perms[rule.Permission]:
		return true, "", nil
	default:
		return false, "missing permission " + rule.Permission, nil
	}
}

package authn

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	tenantv1 "github.com/shopmind/shopmind/gen/go/shopmind/tenant/v1"
)

// RemotePermissions asks the tenant service's AuthService, forwarding the caller's own
// token, so a service in another process needs no access to the tenant tables.
type RemotePermissions struct {
	// Conn returns the connection to the tenant target.
	Conn func() (grpc.ClientConnInterface, error)
}

// Permissions implements PermissionSource.
func (r *RemotePermissions) Permissions(ctx context.Context, id *Identity) (map[string]bool, error) {
	conn, err := r.Conn()
	if err != nil {
		return nil, err
	}
	ctx = metadata.NewOutgoingContext(ctx, metadata.Pairs("authorization", "Bearer "+id.Token, EnvHeader, id.Audience))
	resp, err := tenantv1.NewAuthServiceClient(conn).GetUserPermissions(ctx,
		&tenantv1.GetUserPermissionsRequest{UserId: id.UserID, TenantId: id.TenantID})
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(resp.GetPermissionCodes()))
	for _, c := range resp.GetPermissionCodes() {
		out[c] = true
	}
	if resp.GetIsAdmin() {
		for c := range Permissions() {
			out[c] = true
		}
	}
	return out, nil
}

// Outgoing returns ctx with the caller's token and environment attached, for calls to other
// services on the caller's behalf.
func Outgoing(ctx context.Context) context.Context {
	id := FromContext(ctx)
	if id == nil {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+id.Token, EnvHeader, id.Audience)
}

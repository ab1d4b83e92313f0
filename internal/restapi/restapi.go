// Package restapi is what a service contributes to the HTTP edge, in terms both sides may
// import: services describe their REST routes, event streams and real-time topics here, the
// gateway serves them. It keeps the dependency one way: services and the gateway import
// internal/ and gen/, never each other.
package restapi

import (
	"context"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
)

// Registration attaches one service's REST handlers to the mux, calling the backend over conn
// (a network connection, or the in-process channel of a target hosted by the same process).
type Registration func(ctx context.Context, mux *runtime.ServeMux, conn grpc.ClientConnInterface) error

// Routes combines the Route of each of a target's services into one Registration.
func Routes(regs ...Registration) Registration {
	return func(ctx context.Context, mux *runtime.ServeMux, conn grpc.ClientConnInterface) error {
		for _, reg := range regs {
			if err := reg(ctx, mux, conn); err != nil {
				return err
			}
		}
		return nil
	}
}

// Route is one service's Registration from its generated Register...HandlerClient and
// New...Client functions. (The generated Register...Handler takes a *grpc.ClientConn only,
// which would rule out the in-process channel.)
func Route[C any](register func(context.Context, *runtime.ServeMux, C) error, newClient func(grpc.ClientConnInterface) C) Registration {
	return func(ctx context.Context, mux *runtime.ServeMux, conn grpc.ClientConnInterface) error {
		return register(ctx, mux, newClient(conn))
	}
}

package gateway

import (
	"context"
	"net/http"

	"github.com/shopmind/shopmind/gateway/realtime"
)

// registerRealtime serves the WebSocket channel (package realtime) on an environment's mux
// when its backends have topics.
func (g *Gateway) registerRealtime(ctx context.Context, e *environment) error {
	routes := map[string]realtime.Route{}
	for _, b := range e.backends {
		conn := g.withMetadata(e.name, b.Conn)
		for _, t := range b.Topics {
			routes[t.Kind] = realtime.Route{Topic: t, Conn: conn}
		}
	}
	if len(routes) == 0 {
		return nil
	}
	g.streaming[http.MethodGet+" "+realtime.Path] = true
	h := realtime.Handler(ctx, realtime.Options{Routes: routes, Mux: e.mux, Heartbeat: g.opts.RealtimeHeartbeat,
		OriginAllowed: originMatcher(g.opts.Edge.CORSAllowedOrigins), WriteError: g.envelopes.writeKind})
	return e.mux.HandlePath(http.MethodGet, realtime.Path, func(w http.ResponseWriter, r *http.Request, _ map[string]string) { h(w, r) })
}

package gateway

import (
	"context"
	"net/http"
	"regexp"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/shopmind/shopmind/internal/restapi"
)

// muxMiddleware runs inside each environment's mux once a route matched: it answers routing
// probes, records the route template for the access log and metrics, and bounds the gRPC
// call with the upstream timeout (a slower backend gets the 504 envelope). Server-streaming
// routes (the chat's SSE) are bounded by the client's connection instead. A client's
// Grpc-Timeout header can only shorten the deadline.
func (g *Gateway) muxMiddleware(next runtime.HandlerFunc) runtime.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, params map[string]string) {
		ctx := r.Context()
		if res, ok := ctx.Value(probeKey{}).(*probeResult); ok {
			res.matched = true
			return
		}
		route := routeUnmatched
		if pat, ok := runtime.HTTPPattern(ctx); ok {
			route = pat.String()
		}
		if info := infoFrom(ctx); info != nil {
			info.route = route
		}
		if !g.streaming[r.Method+" "+route] {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, g.upstreamTimeout)
			defer cancel()
			r = r.WithContext(ctx)
		}
		next(w, r, params)
	}
}

// templateVar matches a bare path variable {name}, which grpc-gateway prints as {name=*}.
var templateVar = regexp.MustCompile(`\{([^}=]+)\}`)

// streamingRoutes lists "METHOD template" of every server-streaming RPC's REST binding, in
// the form runtime.Pattern.String() prints, from the proto descriptors linked into the binary.
func streamingRoutes() map[string]bool {
	out := map[string]bool{}
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		svcs := fd.Services()
		for i := 0; i < svcs.Len(); i++ {
			methods := svcs.Get(i).Methods()
			for j := 0; j < methods.Len(); j++ {
				m := methods.Get(j)
				if !m.IsStreamingServer() {
					continue
				}
				rule, _ := proto.GetExtension(m.Options(), annotations.E_Http).(*annotations.HttpRule)
				for _, b := range httpBindings(rule) {
					out[b] = true
				}
			}
		}
		return true
	})
	return out
}

// httpBindings returns "METHOD template" of a rule and its additional bindings.
func httpBindings(rule *annotations.HttpRule) []string {
	if rule == nil {
		return nil
	}
	var out []string
	method, path, _ := restapi.HTTPPattern(rule)
	if c := rule.GetCustom(); c != nil {
		method, path = c.GetKind(), c.GetPath()
	}
	if path != "" {
		out = append(out, method+" "+templateVar.ReplaceAllString(path, "{$1=*}"))
	}
	for _, b := range rule.GetAdditionalBindings() {
		out = append(out, httpBindings(b)...)
	}
	return out
}

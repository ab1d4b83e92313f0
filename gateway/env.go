package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc/metadata"

	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/config"
	"github.com/shopmind/shopmind/internal/logging"
)

// EnvHeader chooses the environment of a request whose URL carries no environment prefix.
const EnvHeader = "X-Env"

// envMetadataKey carries the environment to the backends, which use it as the required token
// audience. Only the gateway sets it; it never comes from a client header.
const envMetadataKey = "x-env"

type envKey struct{}

// EnvironmentFrom returns the environment (dev, local, test) the gateway routed the request
// to, or dev outside a routed request.
func EnvironmentFrom(ctx context.Context) string {
	if info := infoFrom(ctx); info != nil {
		return info.env
	}
	if env, ok := ctx.Value(envKey{}).(string); ok {
		return env
	}
	return config.DefaultEnvironment
}

// environment is one backend pool: its own grpc-gateway mux over its own connections.
type environment struct {
	name     string
	mux      *runtime.ServeMux
	backends []Backend
}

// routeEnvironment picks the environment (URL prefix /local, /test, ... or the X-Env header,
// dev by default), strips the environment and service prefixes, negotiates the API version
// from Accept, and hands the rewritten request on with the environment in its context.
func (g *Gateway) routeEnvironment(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u := *r.URL // never rewrite the caller's URL (the access log keeps the original)
		env := ""
		for _, name := range g.envOrder {
			if name == config.DefaultEnvironment {
				continue
			}
			if rest, ok := cutPathPrefix(u.Path, "/"+name); ok {
				env = name
				u.Path = rest
				if u.RawPath != "" {
					u.RawPath, _ = cutPathPrefix(u.RawPath, "/"+name)
				}
				break
			}
		}
		values := r.Header.Values(EnvHeader)
		if len(values) > 0 {
			h := strings.ToLower(strings.TrimSpace(values[0]))
			switch {
			case len(values) > 1:
				g.env.writeKind(w, r, apperr.KindInvalid, "X-Env: give the header once")
				return
			case g.envs[h] == nil:
				g.env.writeKind(w, r, apperr.KindInvalid, fmt.Sprintf("X-Env: unknown environment %q (known: %s)",
					values[0], strings.Join(g.envOrder, ", ")))
				return
			case env != "" && h != env:
				g.env.writeKind(w, r, apperr.KindInvalid, fmt.Sprintf("X-Env: %q conflicts with the URL prefix /%s", h, env))
				return
			}
			env = h
		}
		if env == "" {
			env = config.DefaultEnvironment
		}
		stripServicePrefix(&u)
		// The request is observe's own copy: the environment goes into its record and the URL
		// is replaced in place (one Request copy per request is enough).
		if info := infoFrom(r.Context()); info != nil {
			info.env = env
		} else {
			r = r.WithContext(context.WithValue(r.Context(), envKey{}, env))
		}
		r.URL = &u
		if len(values) > 0 { // chosen: it goes no further (backends get x-env from the gateway)
			r.Header = r.Header.Clone()
			r.Header.Del(EnvHeader)
		}
		if !g.negotiateVersion(w, r, g.envs[env].mux) {
			return
		}
		next.ServeHTTP(w, r)
	})
}

// cutPathPrefix removes prefix when it is a whole leading path segment.
func cutPathPrefix(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix)
	if !ok || (rest != "" && rest[0] != '/') {
		return path, false
	}
	if rest == "" {
		rest = "/"
	}
	return rest, true
}

// servicePrefixes are the spec's gateway prefixes; /tenant/api/v1/tenant/x reaches the
// backend as /api/v1/tenant/x.
var servicePrefixes = []string{"/tenant", "/analysis", "/basic", "/notify"}

// stripServicePrefix rewrites /tenant/api/... to /api/... (and the other service prefixes).
func stripServicePrefix(u *url.URL) {
	for _, p := range servicePrefixes {
		if rest, ok := strings.CutPrefix(u.Path, p); ok && strings.HasPrefix(rest, "/api/") {
			u.Path = rest
			if u.RawPath != "" {
				u.RawPath = strings.TrimPrefix(u.RawPath, p)
			}
			return
		}
	}
}

// metadataFor is the mux's metadata annotator of one environment: x-env and x-request-id
// (the id observe accepted or assigned) from the gateway, then the Metadata hook's pairs. One
// map is built per call; grpc-gateway joins it with the forwarded headers.
func (g *Gateway) metadataFor(env string) func(context.Context, *http.Request) metadata.MD {
	return func(ctx context.Context, r *http.Request) metadata.MD {
		md := make(metadata.MD, 10)
		if g.opts.Metadata != nil {
			g.opts.Metadata(r, md)
		}
		md[envMetadataKey] = []string{env}
		if id := logging.RequestID(ctx); id != "" {
			md[logging.RequestIDHeader] = []string{id}
		} else {
			delete(md, logging.RequestIDHeader)
		}
		return md
	}
}

package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/logging"
)

// EnvHeader chooses the environment of a request whose URL carries no environment prefix.
const EnvHeader = "X-Env"

// envMetadataKey carries the environment to the backends, which use it as the required token
// audience. Only the gateway sets it; it never comes from a client header.
const envMetadataKey = "x-env"

// pathMetadataKey carries the backend path of the REST request (the tenant service tells its
// two login routes apart by it).
const pathMetadataKey = "x-http-path"

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
	return DefaultEnvironment
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
			if name == DefaultEnvironment {
				continue
			}
			if rest, ok := cutPathPrefix(u.Path, "/"+name); ok {
				env = name
				setPathSuffix(&u, rest)
				break
			}
		}
		values := r.Header.Values(EnvHeader)
		if len(values) > 0 {
			h := strings.ToLower(strings.TrimSpace(values[0]))
			switch {
			case len(values) > 1:
				g.envelopes.writeKind(w, r, apperr.KindInvalid, "X-Env: give the header once")
				return
			case g.environments[h] == nil:
				g.envelopes.writeKind(w, r, apperr.KindInvalid, fmt.Sprintf("X-Env: unknown environment %q (known: %s)",
					values[0], strings.Join(g.envOrder, ", ")))
				return
			case env != "" && h != env:
				g.envelopes.writeKind(w, r, apperr.KindInvalid, fmt.Sprintf("X-Env: %q conflicts with the URL prefix /%s", h, env))
				return
			}
			env = h
		}
		if env == "" {
			env = DefaultEnvironment
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
		if !g.negotiateVersion(w, r, g.environments[env].mux) {
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
			setPathSuffix(u, rest)
			return
		}
	}
}

// setPathSuffix sets u.Path to rest, a suffix of it (or "/" for all of it), and cuts RawPath
// at the same decoded offset. Cutting RawPath by the prefix's text broke it when the client
// escaped the prefix or the slash after it (/%6cocal/..., /tenant%2Fapi/...): RawPath then no
// longer encoded Path, or did without its leading slash, and EscapedPath (x-http-path, the
// partner proxies) used it.
func setPathSuffix(u *url.URL, rest string) {
	if u.RawPath != "" {
		cut := len(u.Path)
		if strings.HasSuffix(u.Path, rest) {
			cut -= len(rest)
		}
		raw, i := u.RawPath, 0
		for ; cut > 0 && i < len(raw); cut-- { // one decoded byte per step
			if raw[i] == '%' {
				i += 2
			}
			i++
		}
		raw = raw[min(i, len(raw)):]
		if len(raw) >= 3 && raw[0] == '%' && strings.EqualFold(raw[:3], "%2f") {
			raw = "/" + raw[3:] // the escaped slash now starts the path
		}
		if p, err := url.PathUnescape(raw); err != nil || p != rest {
			raw = "" // EscapedPath falls back to encoding Path
		}
		u.RawPath = raw
	}
	u.Path = rest
}

// metadataConn adds the gateway's metadata to every call on a backend connection: x-env (the
// environment the connection belongs to), x-request-id (the id observe accepted or assigned),
// x-http-path (the backend path the request was routed to) and the Metadata hook's pairs
// (the verified identity). It adds them to the outgoing
// metadata grpc-gateway built from the allow-listed headers, without copying it (the
// generated handlers call the connection with that context).
type metadataConn struct {
	grpc.ClientConnInterface
	env  string
	hook func(context.Context) []string
}

func (g *Gateway) withMetadata(env string, conn grpc.ClientConnInterface) grpc.ClientConnInterface {
	return &metadataConn{ClientConnInterface: conn, env: env, hook: g.opts.Metadata}
}

func (c *metadataConn) outgoing(ctx context.Context) context.Context {
	var hooked []string
	if c.hook != nil {
		hooked = c.hook(ctx)
	}
	kv := make([]string, 0, 6+len(hooked))
	kv = append(kv, envMetadataKey, c.env)
	if id := logging.RequestID(ctx); id != "" {
		kv = append(kv, logging.RequestIDHeader, id)
	}
	if info := infoFrom(ctx); info != nil && info.backendPath != "" {
		kv = append(kv, pathMetadataKey, info.backendPath)
	}
	for i := 0; i+1 < len(hooked); i += 2 {
		switch k := strings.ToLower(hooked[i]); k {
		case envMetadataKey, logging.RequestIDHeader, pathMetadataKey: // the gateway's own
		default:
			kv = append(kv, k, hooked[i+1])
		}
	}
	return metadata.AppendToOutgoingContext(ctx, kv...)
}

// Invoke adds the metadata to a unary call.
func (c *metadataConn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	return c.ClientConnInterface.Invoke(c.outgoing(ctx), method, args, reply, opts...)
}

// NewStream adds the metadata to a stream (and reports a server stream's early failure
// from Header, see earlyStatusStream).
func (c *metadataConn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return openStream(c.outgoing(ctx), c.ClientConnInterface, desc, method, opts...)
}

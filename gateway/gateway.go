// Package gateway is ShopMind's HTTP edge: CORS, rate limiting, environment routing (dev,
// local, test), the spec's service-prefix strip, Accept-header version negotiation, REST to
// gRPC transcoding with grpc-gateway, partner pass-through, TLS, and the {code, message,
// data} envelope on every answer. Health, readiness and Prometheus metrics live here too.
// EDGE.md describes the behaviour and its configuration; New (gateway.go) builds the chain.
//
// The web application firewall is not here: it lives in internal/waf (the engine in
// internal/waf/crs). The gateway only takes it as a hook (Options.WAF) and answers its
// verdicts with envelopes (waf.go), so it does not depend on Coraza.
package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/logging"
	"github.com/shopmind/shopmind/internal/restapi"
)

// Backend is a gRPC backend the gateway forwards to.
type Backend struct {
	// Target is the service name (tenant, analysis, ...).
	Target string
	// Conn is the client connection to the backend: a *grpc.ClientConn, or the in-process
	// channel of grpcserver.Server.InProcess when this process hosts the target.
	Conn grpc.ClientConnInterface
	// Register attaches the service's REST routes.
	Register restapi.Registration
	// Streams are the backend's server-streaming RPCs served as server-sent events (sse.go).
	Streams []restapi.Stream
	// Topics are the backend's topics on the WebSocket channel (package realtime).
	Topics []restapi.Topic
	// Uploads are the backend's file upload routes (upload.go).
	Uploads []restapi.Upload
}

// Options configure the gateway.
type Options struct {
	Logger   *slog.Logger
	Registry *prometheus.Registry
	// Backends are the default (dev) environment's backends.
	Backends []Backend
	// EnvBackends are the other environments' backends, each environment with its own
	// connections; an environment missing here reaches Backends.
	EnvBackends   map[string][]Backend
	AlwaysHTTP200 bool
	MaxBodyBytes  int64
	// Edge configures environments, rate limiting, CORS, partners and timeouts. Its zero value
	// works: default environments and CORS origins, default timeouts, no rate limiting.
	Edge EdgeConfig
	// WAF wraps the chain after CORS and before rate limiting (nil: no WAF). See WAF (waf.go).
	WAF func(http.Handler) http.Handler
	// Authenticate wraps the chain after environment routing and path rewriting, before the
	// mux and the partner proxies (nil: no edge authentication). It sees the rewritten
	// backend path and EnvironmentFrom(ctx); it may reject with WriteError and record the
	// caller with SetAccessIdentity. CORS preflights never reach it.
	Authenticate func(http.Handler) http.Handler
	// Metadata returns gRPC metadata pairs (key, value, key, value...; keys in lower case)
	// added to every call to a backend, from the request's context (nil: none). It cannot
	// set x-env or x-request-id.
	Metadata func(ctx context.Context) []string
	// Documentation serves the API's documents and reference page (internal/apidocs) for GET
	// and HEAD requests to the paths DocumentationPaths accepts, without a token, before
	// CORS, the WAF and rate limiting, like /healthz (nil: not served).
	Documentation http.Handler
	// DocumentationPaths reports whether a path is Documentation's.
	DocumentationPaths func(path string) bool
	// Console serves the web console (internal/console) for the GET and HEAD requests that
	// are neither health, metrics nor documentation nor an API path (IsAPIPath), before CORS,
	// the WAF and rate limiting; it answers its index page for paths it does not know (nil:
	// not served, those paths reach the API's 404).
	Console http.Handler
	// SSEKeepAlive is the interval of keep-alive comments on idle event streams
	// (0: DefaultSSEKeepAlive). See sse.go.
	SSEKeepAlive time.Duration
	// RealtimeHeartbeat is the interval of heartbeat frames on the WebSocket channel
	// (0: realtime.DefaultHeartbeat). See package realtime.
	RealtimeHeartbeat time.Duration
}

// forwardedHeaders are the only client headers passed to backends as gRPC metadata
// (grpc-gateway itself always forwards Authorization). Identity headers and x-env are
// deliberately absent: only the gateway may set them.
// (X-Request-Id reaches them as x-request-id too, but checked: see metadataFor.)
var forwardedHeaders = map[string]string{
	"Accept-Language": "accept-language",
	"Grpc-Timeout":    "grpc-timeout",
}

// Gateway is the HTTP handler of the edge.
type Gateway struct {
	opts            Options
	envelopes       envelopeWriter
	handler         http.Handler
	metrics         *httpMetrics
	environments    map[string]*environment
	envOrder        []string
	trusted         []netip.Prefix
	limiter         *rateLimiter
	partners        map[string]*partnerProxy
	upstreamTimeout time.Duration
	streaming       map[string]bool // "METHOD template" of the routes without upstream timeout
	streamHeaders   []string        // the event streams' naming headers, for CORS
	uploads         []uploadRoute   // file upload routes (upload.go)
}

// New builds the gateway: one grpc-gateway mux per environment with every backend's routes,
// and the edge chain EDGE.md describes: request id -> access log and metrics ->
// (panic guard, body limit) -> CORS -> WAF -> rate limit -> environment routing, path
// rewrite and version negotiation -> authentication -> the environment's mux or a partner
// proxy. Health, readiness and metrics sit before CORS and are never rate limited. The
// limiter's sweeper stops with ctx.
func New(ctx context.Context, opts Options) (*Gateway, error) {
	if opts.Registry == nil {
		opts.Registry = prometheus.NewRegistry()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	edge := opts.Edge
	g := &Gateway{opts: opts, envelopes: envelopeWriter{always200: opts.AlwaysHTTP200},
		trusted: edge.TrustedProxies, upstreamTimeout: edge.UpstreamTimeout, streaming: streamingRoutes()}
	if g.upstreamTimeout <= 0 {
		g.upstreamTimeout = DefaultUpstreamTimeout
	}
	g.metrics = newHTTPMetrics(opts.Registry)
	g.environments = map[string]*environment{}
	for _, name := range edge.EnvironmentNames() {
		backends := opts.Backends
		if b, ok := opts.EnvBackends[name]; ok && name != DefaultEnvironment {
			backends = b
		}
		e := &environment{name: name, backends: backends, mux: g.newMux(name)}
		for _, b := range backends {
			if err := b.Register(ctx, e.mux, g.withMetadata(name, b.Conn)); err != nil {
				return nil, fmt.Errorf("environment %s, %s routes: %w", name, b.Target, err)
			}
		}
		g.registerUploads(backends)
		if err := g.registerStreams(e); err != nil { // the SSE bridge (sse.go)
			return nil, fmt.Errorf("environment %s, streams: %w", name, err)
		}
		if err := g.registerRealtime(ctx, e); err != nil { // the WebSocket channel (package realtime)
			return nil, fmt.Errorf("environment %s, real-time channel: %w", name, err)
		}
		g.environments[name] = e
		g.envOrder = append(g.envOrder, name)
	}
	if g.environments[DefaultEnvironment] == nil {
		return nil, fmt.Errorf("environments %v lack %s", g.envOrder, DefaultEnvironment)
	}
	if edge.RateLimitRPS > 0 {
		burst, maxKeys := edge.RateLimitBurst, edge.RateLimitMaxKeys
		if burst <= 0 {
			burst = DefaultRateLimitBurst
		}
		if maxKeys <= 0 {
			maxKeys = DefaultRateLimitMaxKeys
		}
		g.limiter = newRateLimiter(edge.RateLimitRPS, burst, maxKeys)
		go g.limiter.run(ctx)
	}
	g.partners = newPartnerProxies(edge, g.envelopes, opts.Logger)
	if corsWildcardWithCredentials(edge) {
		opts.Logger.Warn("SHOPMIND_CORS_ALLOWED_ORIGINS is * with credentials allowed: every web site can make credentialed requests; list the origins instead")
	}

	var api http.Handler = http.HandlerFunc(g.dispatch)
	if opts.Authenticate != nil {
		api = opts.Authenticate(api)
	}
	api = g.routeEnvironment(api)
	api = g.rateLimit(api)
	if opts.WAF != nil {
		api = g.wafExceptUploadBodies(opts.WAF, api)
	}
	api = g.limitBody(api)
	api = newCORS(edge, g.streamHeaders)(api)

	metricsHandler := promhttp.HandlerFor(opts.Registry, promhttp.HandlerOpts{})
	root := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			var h http.HandlerFunc
			switch r.URL.Path {
			case "/healthz":
				h = g.healthz
			case "/readyz":
				h = g.readyz
			case "/metrics":
				h = metricsHandler.ServeHTTP
			}
			route := r.URL.Path
			if h == nil && opts.Documentation != nil && opts.DocumentationPaths(r.URL.Path) {
				// one metrics label for all of them: any path under /docs/ is served (404 or
				// not), and a label per path would grow the metrics without end
				h, route = opts.Documentation.ServeHTTP, "documentation"
			}
			if h == nil && opts.Console != nil && !g.IsAPIPath(r.URL.Path) {
				h, route = opts.Console.ServeHTTP, "console" // one label, as for documentation
			}
			if h != nil {
				infoFrom(r.Context()).route = route
				h(w, r)
				return
			}
		}
		api.ServeHTTP(w, r)
	})
	g.handler = g.observe(g.recoverPanics(root))
	return g, nil
}

// newMux builds one environment's grpc-gateway mux: envelope marshalling and errors, only
// allow-listed client headers forwarded, x-env and the Metadata hook's pairs added.
// answeredHeaders are the gRPC response headers the gateway passes to REST clients.
var answeredHeaders = map[string]string{
	// basic's writes: "pending" when the change is committed but not yet in the analytical
	// store (it follows within seconds).
	"x-shopmind-sync": "X-Shopmind-Sync",
}

func (g *Gateway) newMux(env string) *runtime.ServeMux {
	return runtime.NewServeMux(
		runtime.WithMarshalerOption(runtime.MIMEWildcard, newEnvelopeMarshaler()),
		runtime.WithErrorHandler(g.envelopes.errorHandler),
		runtime.WithRoutingErrorHandler(g.envelopes.routingErrorHandler),
		runtime.WithIncomingHeaderMatcher(func(key string) (string, bool) {
			v, ok := forwardedHeaders[key]
			return v, ok
		}),
		// Only the headers the contract documents leave the gateway (no Grpc-Metadata-*).
		runtime.WithOutgoingHeaderMatcher(func(key string) (string, bool) {
			v, ok := answeredHeaders[key]
			return v, ok
		}),
		runtime.WithMiddlewares(g.muxMiddleware),
		runtime.WithDisablePathLengthFallback(),
		runtime.WithDisableHTTPMethodOverride(),
	)
}

// IsAPIPath reports whether path belongs to the API rather than the console: /api and
// /api-<partner> paths, every /<prefix>/api/... path (the service prefixes such as
// /tenant/api/..., and mistyped ones such as /shop/api/...), and every path under an
// environment prefix (/test/...). The console never answers those, so a mistyped API path
// gets the API's 404 envelope, never the page.
func (g *Gateway) IsAPIPath(path string) bool {
	first, rest, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	if first == "api" || strings.HasPrefix(first, "api-") || g.environments[first] != nil {
		return true
	}
	second, _, _ := strings.Cut(rest, "/")
	return second == "api"
}

// ServeHTTP implements http.Handler.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) { g.handler.ServeHTTP(w, r) }

// limitBody answers 413 for a declared body above MaxBodyBytes and caps undeclared ones.
func (g *Gateway) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.opts.MaxBodyBytes > 0 && !g.isUpload(r) {
			if r.ContentLength > g.opts.MaxBodyBytes {
				g.envelopes.writeKind(w, r, apperr.KindTooLarge, "request body too large")
				return
			}
			if r.Body != nil {
				r.Body = http.MaxBytesReader(w, r.Body, g.opts.MaxBodyBytes)
			}
		}
		next.ServeHTTP(w, r)
	})
}

// dispatch is the end of the chain: a partner pass-through or the environment's mux.
func (g *Gateway) dispatch(w http.ResponseWriter, r *http.Request) {
	if p := g.partnerFor(r.URL.Path); p != nil {
		p.ServeHTTP(w, r)
		return
	}
	if info := infoFrom(r.Context()); info != nil {
		// Rewritten and version-negotiated: x-http-path. Escaped, since gRPC metadata
		// carries printable ASCII only (a client's raw bytes would fail the call).
		info.backendPath = r.URL.EscapedPath()
	}
	g.environments[EnvironmentFrom(r.Context())].mux.ServeHTTP(w, r)
}

func (g *Gateway) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				g.opts.Logger.ErrorContext(r.Context(), "panic in gateway", "panic", p, "request_id", logging.RequestID(r.Context()))
				g.envelopes.writeKind(w, r, apperr.KindInternal, "internal server error")
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// healthz is liveness: the process serves HTTP.
func (g *Gateway) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, `{"code":0,"message":"ok","data":{"status":"ok"}}`)
}

// readyz is readiness: every backend of every environment answers its gRPC health check as
// SERVING.
func (g *Gateway) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	checked := map[grpc.ClientConnInterface]bool{}
	for _, name := range g.envOrder {
		for _, b := range g.environments[name].backends {
			if checked[b.Conn] {
				continue
			}
			checked[b.Conn] = true
			resp, err := healthpb.NewHealthClient(b.Conn).Check(ctx, &healthpb.HealthCheckRequest{})
			if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
				msg := "backend " + b.Target + " of environment " + name + " is not serving"
				if err != nil {
					msg += ": " + err.Error()
				}
				g.envelopes.write(w, r, apperr.Envelope{Code: 503, Message: msg})
				return
			}
		}
	}
	writeJSON(w, http.StatusOK, `{"code":0,"message":"ready","data":{"status":"ready"}}`)
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

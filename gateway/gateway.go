// Package gateway is ShopMind's HTTP edge: it strips the spec's service prefixes, transcodes
// REST to gRPC with grpc-gateway, and answers everything in the {code, message, data}
// envelope. Health, readiness and Prometheus metrics live here too.
package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/logging"
)

// Registration attaches one service's REST handlers to the mux, calling the backend over conn.
type Registration func(ctx context.Context, mux *runtime.ServeMux, conn *grpc.ClientConn) error

// Backend is a gRPC backend the gateway forwards to.
type Backend struct {
	// Target is the service name (tenant, analysis, ...).
	Target string
	// Conn is the client connection to the backend.
	Conn *grpc.ClientConn
	// Register attaches the service's REST routes.
	Register Registration
}

// Options configure the gateway.
type Options struct {
	Logger        *slog.Logger
	Registry      *prometheus.Registry
	Backends      []Backend
	AlwaysHTTP200 bool
	MaxBodyBytes  int64
}

// servicePrefixes are the spec's gateway prefixes; /tenant/api/v1/tenant/x reaches the
// backend as /api/v1/tenant/x.
var servicePrefixes = []string{"/tenant", "/analysis", "/basic", "/notify"}

// forwardedHeaders are the only client headers passed to backends as gRPC metadata
// (grpc-gateway itself always forwards Authorization). Identity headers are deliberately
// absent: only the gateway's authentication may set them.
var forwardedHeaders = map[string]string{
	"X-Request-Id":    logging.RequestIDHeader,
	"Accept-Language": "accept-language",
	"Grpc-Timeout":    "grpc-timeout",
}

// Gateway is the HTTP handler of the edge.
type Gateway struct {
	opts    Options
	mux     *runtime.ServeMux
	env     envelopeWriter
	handler http.Handler
	metrics *httpMetrics
}

// New builds the gateway and registers every backend's routes.
func New(ctx context.Context, opts Options) (*Gateway, error) {
	if opts.Registry == nil {
		opts.Registry = prometheus.NewRegistry()
	}
	g := &Gateway{opts: opts, env: envelopeWriter{always200: opts.AlwaysHTTP200}}
	g.metrics = newHTTPMetrics(opts.Registry)
	g.mux = runtime.NewServeMux(
		runtime.WithMarshalerOption(runtime.MIMEWildcard, newEnvelopeMarshaler()),
		runtime.WithErrorHandler(g.env.errorHandler),
		runtime.WithRoutingErrorHandler(g.env.routingErrorHandler),
		runtime.WithIncomingHeaderMatcher(func(key string) (string, bool) {
			v, ok := forwardedHeaders[key]
			return v, ok
		}),
		runtime.WithOutgoingHeaderMatcher(func(string) (string, bool) { return "", false }),
		runtime.WithDisablePathLengthFallback(),
		runtime.WithDisableHTTPMethodOverride(),
	)
	for _, b := range opts.Backends {
		if err := b.Register(ctx, g.mux, b.Conn); err != nil {
			return nil, err
		}
	}
	root := http.NewServeMux()
	root.HandleFunc("GET /healthz", g.healthz)
	root.HandleFunc("GET /readyz", g.readyz)
	root.Handle("GET /metrics", promhttp.HandlerFor(opts.Registry, promhttp.HandlerOpts{}))
	root.Handle("/", g.api())
	g.handler = g.observe(g.recoverPanics(root))
	return g, nil
}

// ServeHTTP implements http.Handler.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) { g.handler.ServeHTTP(w, r) }

// api is the transcoding chain: body limit, prefix strip, grpc-gateway mux.
func (g *Gateway) api() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > g.opts.MaxBodyBytes {
			g.env.writeKind(w, r, apperr.KindTooLarge, "request body too large")
			return
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, g.opts.MaxBodyBytes)
		}
		stripServicePrefix(r)
		g.mux.ServeHTTP(w, r)
	})
}

// stripServicePrefix rewrites /tenant/api/... to /api/... (and the other service prefixes).
func stripServicePrefix(r *http.Request) {
	for _, p := range servicePrefixes {
		if rest, ok := strings.CutPrefix(r.URL.Path, p); ok && strings.HasPrefix(rest, "/api/") {
			r.URL.Path = rest
			if r.URL.RawPath != "" {
				r.URL.RawPath = strings.TrimPrefix(r.URL.RawPath, p)
			}
			return
		}
	}
}

func (g *Gateway) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				g.opts.Logger.ErrorContext(r.Context(), "panic in gateway", "panic", p, "request_id", logging.RequestID(r.Context()))
				g.env.writeKind(w, r, apperr.KindInternal, "internal server error")
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// healthz is liveness: the process serves HTTP.
func (g *Gateway) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, `{"code":0,"message":"ok","data":{"status":"ok"}}`)
}

// readyz is readiness: every backend answers its gRPC health check as SERVING.
func (g *Gateway) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	checked := map[*grpc.ClientConn]bool{}
	for _, b := range g.opts.Backends {
		if checked[b.Conn] {
			continue
		}
		checked[b.Conn] = true
		resp, err := healthpb.NewHealthClient(b.Conn).Check(ctx, &healthpb.HealthCheckRequest{})
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			msg := "backend " + b.Target + " is not serving"
			if err != nil {
				msg += ": " + err.Error()
			}
			g.env.write(w, r, apperr.Envelope{Code: 503, Message: msg})
			return
		}
	}
	writeJSON(w, http.StatusOK, `{"code":0,"message":"ready","data":{"status":"ready"}}`)
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// Routes combines generated Register...Handler functions into one Registration.
func Routes(regs ...func(context.Context, *runtime.ServeMux, *grpc.ClientConn) error) Registration {
	return func(ctx context.Context, mux *runtime.ServeMux, conn *grpc.ClientConn) error {
		for _, reg := range regs {
			if err := reg(ctx, mux, conn); err != nil {
				return err
			}
		}
		return nil
	}
}

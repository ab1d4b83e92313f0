package gateway

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/logging"
)

// routeUnmatched is the route label of requests that matched no route template (unknown
// paths, and requests answered before routing: rate limited, blocked, preflight).
const routeUnmatched = "unmatched"

type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shopmind_http_requests_total",
			Help: "HTTP requests, by method, route template, status and envelope code.",
		}, []string{"method", "route", "status", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "shopmind_http_request_duration_seconds", Help: "HTTP request latency, by method and route template.",
			Buckets: prometheus.DefBuckets,
		}, []string{"method", "route"}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.duration)
	}
	return m
}

// requestInfo is the per-request record that observe puts in the context: later stages
// (environment routing, the mux, the authentication hook) fill it in for the access log.
// It is written and read on the request's goroutine only.
type requestInfo struct {
	env       string
	route     string
	code      int // envelope code of an error answer (0: success)
	client    netip.Addr
	tenantID  int64
	userID    int64
	always200 bool
	// identity is the verified caller (EdgeAuth), for the backend metadata.
	identity *authn.Identity
	// backendPath is the path after environment and service prefixes are stripped.
	backendPath string
}

type requestInfoKey struct{}

func infoFrom(ctx context.Context) *requestInfo {
	info, _ := ctx.Value(requestInfoKey{}).(*requestInfo)
	return info
}

// SetAccessIdentity records the authenticated tenant and user of the request for the access
// log. The authentication hook calls it with the request's context once the token is valid.
func SetAccessIdentity(ctx context.Context, tenantID, userID int64) {
	if info := infoFrom(ctx); info != nil {
		info.tenantID, info.userID = tenantID, userID
	}
}

// identityFrom is the verified caller of the request: the one EdgeAuth recorded, or one
// placed in the context with authn.WithIdentity.
func identityFrom(ctx context.Context) *authn.Identity {
	if info := infoFrom(ctx); info != nil && info.identity != nil {
		return info.identity
	}
	return authn.FromContext(ctx)
}

// ClientAddr is the client address the edge uses for rate limiting and the access log: the
// peer, or with a trusted proxy as peer, the first untrusted address of X-Forwarded-For.
// It is invalid outside a gateway request.
func ClientAddr(ctx context.Context) netip.Addr {
	if info := infoFrom(ctx); info != nil {
		return info.client
	}
	return netip.Addr{}
}

// statusRecorder remembers the HTTP status for the access log. It keeps
// Flush working so streamed answers still flush.
type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.wrote {
		s.status, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if !s.wrote {
		s.status, s.wrote = http.StatusOK, true
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if h, ok := s.ResponseWriter.(http.Hijacker); ok {
		return h.Hijack()
	}
	return nil, nil, errors.New("hijack not supported")
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// observe assigns the request id, resolves the client address, then logs and counts every
// request by route template (never the raw path, so the label set stays bounded).
func (g *Gateway) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		// The id reaches backends as x-request-id metadata (metadataFor), from the context.
		id := logging.AcceptOrNewID(r.Header.Get("X-Request-Id"))
		w.Header().Set("X-Request-Id", id)
		info := &requestInfo{env: DefaultEnvironment, route: routeUnmatched,
			client: clientAddr(r, g.trusted), always200: g.opts.AlwaysHTTP200}
		ctx := logging.WithRequestID(r.Context(), id)
		ctx = context.WithValue(ctx, requestInfoKey{}, info)
		r = r.WithContext(ctx)
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		path := r.URL.Path
		next.ServeHTTP(rec, r)
		elapsed := time.Since(start)
		code := info.code
		g.metrics.requests.WithLabelValues(r.Method, info.route, strconv.Itoa(rec.status), strconv.Itoa(code)).Inc()
		g.metrics.duration.WithLabelValues(r.Method, info.route).Observe(elapsed.Seconds())
		remote := ""
		if info.client.IsValid() {
			remote = info.client.String()
		}
		g.opts.Logger.InfoContext(ctx, "http", "method", r.Method, "path", path, "route", info.route,
			"status", rec.status, "code", code, "duration", elapsed, "env", info.env,
			"tenant_id", info.tenantID, "user_id", info.userID, "request_id", id, "remote", remote)
	})
}

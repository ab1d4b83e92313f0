package gateway

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shopmind/shopmind/internal/logging"
)

type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shopmind_http_requests_total", Help: "HTTP requests, by method, status and envelope code.",
		}, []string{"method", "status", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "shopmind_http_request_duration_seconds", Help: "HTTP request latency.", Buckets: prometheus.DefBuckets,
		}, []string{"method"}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.duration)
	}
	return m
}

// statusRecorder remembers the HTTP status and envelope code for the access log. It keeps
// Flush working so streamed answers still flush.
type statusRecorder struct {
	http.ResponseWriter
	status       int
	envelopeCode int
	wrote        bool
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

// observe assigns the request id, then logs and counts every request.
func (g *Gateway) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := logging.AcceptOrNewID(r.Header.Get("X-Request-Id"))
		r.Header.Set("X-Request-Id", id)
		w.Header().Set("X-Request-Id", id)
		ctx := logging.WithRequestID(r.Context(), id)
		r = r.WithContext(ctx)
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		path := r.URL.Path
		next.ServeHTTP(rec, r)
		elapsed := time.Since(start)
		code := rec.envelopeCode
		g.metrics.requests.WithLabelValues(r.Method, strconv.Itoa(rec.status), strconv.Itoa(code)).Inc()
		g.metrics.duration.WithLabelValues(r.Method).Observe(elapsed.Seconds())
		g.opts.Logger.InfoContext(ctx, "http", "method", r.Method, "path", path, "status", rec.status,
			"code", code, "duration", elapsed, "request_id", id)
	})
}

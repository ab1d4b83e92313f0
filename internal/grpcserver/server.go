// Package grpcserver builds the gRPC server every target uses: one interceptor chain
// (request id and log, recovery, error mapping, validation), grpc.health.v1 and reflection.
package grpcserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/inputcheck"
	"github.com/shopmind/shopmind/internal/logging"
)

// Server is a gRPC server with its health service, and an in-process channel to the same
// services through the same interceptor chain.
type Server struct {
	*grpc.Server
	Health *health.Server
	inproc *inProcess

	connsMu sync.Mutex
	conns   map[grpc.ClientConnInterface]*inProcessConn // by streams connection
}

// RegisterService registers a service on the network server and on the in-process channel.
func (s *Server) RegisterService(desc *grpc.ServiceDesc, impl any) {
	s.Server.RegisterService(desc, impl)
	s.inproc.RegisterService(desc, impl)
}

// InProcess is a client connection to this server's services whose unary calls run in the
// process, on the caller's goroutine (inprocess.go), and whose server-streaming calls run
// in the process on a goroutine of their own (inprocess_stream.go): the messages are copied
// rather than encoded, with no HTTP/2 framing and no loopback socket, but every call still
// runs the whole server interceptor chain (request id and log, recovery, error mapping,
// authentication, validation) and sees the caller's outgoing metadata as incoming metadata,
// deadline and cancellation included. Client-streaming and bidirectional calls (none in
// ShopMind) go over streams, a network connection to this server. The gateway and the
// services use it for the targets the process hosts; it halves the REST edge's cost per
// request (README, Benchmarks).
func (s *Server) InProcess(streams grpc.ClientConnInterface) grpc.ClientConnInterface {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	// One connection per streams connection, so callers that compare connections (the
	// gateway's readiness check) see one backend.
	if c, ok := s.conns[streams]; ok {
		return c
	}
	if s.conns == nil {
		s.conns = map[grpc.ClientConnInterface]*inProcessConn{}
	}
	c := &inProcessConn{inProcess: s.inproc, streams: streams}
	s.conns[streams] = c
	return c
}

// Options tune the server.
type Options struct {
	Logger   *slog.Logger
	Registry prometheus.Registerer
	// Extra interceptors run after error mapping and before validation, in order
	// (authentication comes here, so an anonymous caller learns nothing from validation).
	Unary  []grpc.UnaryServerInterceptor
	Stream []grpc.StreamServerInterceptor
}

// New builds the server. Interceptor order: request id + access log + metrics, panic
// recovery, error mapping, opts.Unary/Stream (authentication), validation.
func New(opts Options) (*Server, error) {
	v, err := newValidator()
	if err != nil {
		return nil, fmt.Errorf("protovalidate: %w", err)
	}
	m := newMetrics(opts.Registry)
	obs := &observer{log: opts.Logger, metrics: m}
	unary := append(append([]grpc.UnaryServerInterceptor{obs.unary, recoverUnary(opts.Logger), mapErrorsUnary(opts.Logger)}, opts.Unary...), v.unary)
	stream := append(append([]grpc.StreamServerInterceptor{obs.stream, recoverStream(opts.Logger), mapErrorsStream(opts.Logger)}, opts.Stream...), v.stream)
	srv := &Server{Server: grpc.NewServer(grpc.ChainUnaryInterceptor(unary...), grpc.ChainStreamInterceptor(stream...),
		grpc.ForceServerCodecV2(inputcheck.Codec())), // undecodable requests become 400s (inputcheck)
		Health: health.NewServer(),
		inproc: &inProcess{methods: map[string]inProcessMethod{}, streamMethods: map[string]inProcessStreamMethod{},
			interceptor: chainUnary(unary), streamInterceptor: chainStream(stream)}}
	srv.inproc.base, srv.inproc.stopStreams = context.WithCancel(context.Background())
	healthpb.RegisterHealthServer(srv, srv.Health)
	reflection.Register(srv.Server)
	return srv, nil
}

// chainUnary runs interceptors in order, as grpc.ChainUnaryInterceptor does for the network
// server (grpc-go does not export its chaining).
func chainUnary(ics []grpc.UnaryServerInterceptor) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		return unaryFrom(ics, 0, info, handler)(ctx, req)
	}
}

func unaryFrom(ics []grpc.UnaryServerInterceptor, i int, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) grpc.UnaryHandler {
	if i == len(ics) {
		return handler
	}
	return func(ctx context.Context, req any) (any, error) {
		return ics[i](ctx, req, info, unaryFrom(ics, i+1, info, handler))
	}
}

// chainStream runs stream interceptors in order, as grpc.ChainStreamInterceptor does.
func chainStream(ics []grpc.StreamServerInterceptor) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		return streamFrom(ics, 0, info, handler)(srv, ss)
	}
}

func streamFrom(ics []grpc.StreamServerInterceptor, i int, info *grpc.StreamServerInfo, handler grpc.StreamHandler) grpc.StreamHandler {
	if i == len(ics) {
		return handler
	}
	return func(srv any, ss grpc.ServerStream) error {
		return ics[i](srv, ss, info, streamFrom(ics, i+1, info, handler))
	}
}

// MarkServing sets every registered service (and the overall "") to SERVING.
func (s *Server) MarkServing() {
	for name := range s.GetServiceInfo() {
		s.Health.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
	}
	s.Health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
}

// Stop drains in-flight RPCs until ctx ends, then stops hard.
func (s *Server) Stop(ctx context.Context) {
	s.Health.Shutdown()
	done := make(chan struct{})
	go func() { s.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		s.Server.Stop()
	}
	// In-process streams run while the network ones drain, then end as a closed transport
	// would end theirs.
	s.inproc.stopStreams()
}

type metrics struct {
	handled  *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		handled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shopmind_grpc_server_handled_total", Help: "RPCs completed, by method and code.",
		}, []string{"method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "shopmind_grpc_server_duration_seconds", Help: "RPC latency.", Buckets: prometheus.DefBuckets,
		}, []string{"method"}),
	}
	if reg != nil {
		reg.MustRegister(m.handled, m.duration)
	}
	return m
}

type observer struct {
	log     *slog.Logger
	metrics *metrics
}

func requestContext(ctx context.Context) context.Context {
	var supplied string
	// ValueFromIncomingContext reads one key without copying the whole metadata.
	if v := metadata.ValueFromIncomingContext(ctx, logging.RequestIDHeader); len(v) > 0 {
		supplied = v[0]
	}
	return logging.WithRequestID(ctx, logging.AcceptOrNewID(supplied))
}

func (o *observer) done(ctx context.Context, method string, start time.Time, err error) {
	code := status.Code(err)
	elapsed := time.Since(start)
	o.metrics.handled.WithLabelValues(method, code.String()).Inc()
	o.metrics.duration.WithLabelValues(method).Observe(elapsed.Seconds())
	level := slog.LevelInfo
	if code == codes.Internal || code == codes.Unknown {
		level = slog.LevelError
	}
	o.log.LogAttrs(ctx, level, "rpc", slog.String("method", method), slog.String("code", code.String()),
		slog.Duration("duration", elapsed), slog.String("request_id", logging.RequestID(ctx)))
}

func (o *observer) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	start := time.Now()
	ctx = requestContext(ctx)
	resp, err := handler(ctx, req)
	o.done(ctx, info.FullMethod, start, err)
	return resp, err
}

func (o *observer) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	start := time.Now()
	ctx := requestContext(ss.Context())
	err := handler(srv, &ContextStream{ServerStream: ss, Ctx: ctx})
	o.done(ctx, info.FullMethod, start, err)
	return err
}

// ContextStream replaces a stream's context (interceptors use it to add values).
type ContextStream struct {
	grpc.ServerStream
	Ctx context.Context
}

// Context returns the replaced context.
func (s *ContextStream) Context() context.Context { return s.Ctx }

func panicError(log *slog.Logger, ctx context.Context, method string, p any) error {
	log.ErrorContext(ctx, "panic in handler", "method", method, "panic", fmt.Sprint(p),
		"stack", string(debug.Stack()), "request_id", logging.RequestID(ctx))
	return apperr.Internal(fmt.Errorf("panic: %v", p))
}

func recoverUnary(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if p := recover(); p != nil {
				resp, err = nil, panicError(log, ctx, info.FullMethod, p)
			}
		}()
		return handler(ctx, req)
	}
}

func recoverStream(log *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = panicError(log, ss.Context(), info.FullMethod, p)
			}
		}()
		return handler(srv, ss)
	}
}

// mapError is the service edge of the error mapping: typed errors keep their class, context
// errors become 408/504, anything else is logged and becomes a generic 500.
func mapError(log *slog.Logger, ctx context.Context, method string, err error) error {
	if err == nil {
		return nil
	}
	var appErr *apperr.Error
	if errors.As(err, &appErr) {
		if appErr.Kind == apperr.KindInternal && appErr.Cause != nil {
			if dbErr := databaseError(appErr.Cause); dbErr != nil {
				log.WarnContext(ctx, "database failure", "method", method, "error", appErr.Cause.Error(), "request_id", logging.RequestID(ctx))
				return dbErr.GRPCStatus().Err()
			}
		}
		if appErr.Kind == apperr.KindInternal {
			log.ErrorContext(ctx, "internal error", "method", method, "error", err.Error(), "request_id", logging.RequestID(ctx))
		}
		return appErr.GRPCStatus().Err()
	}
	if st, ok := status.FromError(err); ok {
		if st.Code() == codes.Unimplemented && st.Message() != "" {
			// grpc-go's Unimplemented stubs: keep the code, say it plainly.
			return apperr.NotImplemented(method).GRPCStatus().Err()
		}
		return err
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return apperr.New(apperr.KindTimeout, "deadline exceeded").GRPCStatus().Err()
	case errors.Is(err, context.Canceled):
		return apperr.New(apperr.KindRequestTimeout, "request canceled").GRPCStatus().Err()
	}
	if dbErr := databaseError(err); dbErr != nil {
		log.WarnContext(ctx, "database failure", "method", method, "error", err.Error(), "request_id", logging.RequestID(ctx))
		return dbErr.GRPCStatus().Err()
	}
	log.ErrorContext(ctx, "internal error", "method", method, "error", err.Error(), "request_id", logging.RequestID(ctx))
	return apperr.Internal(err).GRPCStatus().Err()
}

func mapErrorsUnary(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		return resp, mapError(log, ctx, info.FullMethod, err)
	}
}

func mapErrorsStream(log *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		return mapError(log, ss.Context(), info.FullMethod, handler(srv, ss))
	}
}

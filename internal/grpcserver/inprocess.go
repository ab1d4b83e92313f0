package grpcserver

import (
	"context"
	"fmt"
	"net"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// inProcess holds the unary methods of the registered services, for calls from the same
// process (Server.InProcess).
type inProcess struct {
	mu                sync.RWMutex
	methods           map[string]inProcessMethod       // by full method name, "/pkg.Service/Method"
	streamMethods     map[string]inProcessStreamMethod // server-streaming ones (inprocess_stream.go)
	interceptor       grpc.UnaryServerInterceptor
	streamInterceptor grpc.StreamServerInterceptor
	// base ends every in-process stream when the server stops (Server.Stop).
	base        context.Context
	stopStreams context.CancelFunc
}

type inProcessMethod struct {
	impl    any
	handler func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error)
}

// RegisterService records the unary and server-streaming methods of a service.
func (p *inProcess) RegisterService(desc *grpc.ServiceDesc, impl any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range desc.Methods {
		p.methods["/"+desc.ServiceName+"/"+m.MethodName] = inProcessMethod{impl: impl, handler: m.Handler}
	}
	for _, st := range desc.Streams {
		if st.ServerStreams && !st.ClientStreams {
			name := "/" + desc.ServiceName + "/" + st.StreamName
			p.streamMethods[name] = inProcessStreamMethod{impl: impl, handler: st.Handler,
				info: &grpc.StreamServerInfo{FullMethod: name, IsServerStream: true}}
		}
	}
}

// inProcessConn is the client side: unary and server-streaming calls run in the process,
// other streams go to streams.
type inProcessConn struct {
	*inProcess
	streams grpc.ClientConnInterface
}

// inProcessPeer is the peer address a server sees for in-process calls.
var inProcessPeer = &peer.Peer{Addr: inProcessAddr{}}

type inProcessAddr struct{}

func (inProcessAddr) Network() string { return "inprocess" }
func (inProcessAddr) String() string  { return "inprocess" }

var _ net.Addr = inProcessAddr{}

// Invoke calls a unary method on the caller's goroutine (a goroutine per call, with its
// hand-offs, cost the gateway about a tenth of its throughput). The handler gets the caller's
// deadline, and a call whose deadline passed or that was cancelled fails as over the network
// (DeadlineExceeded, Canceled) even if the handler succeeded; a handler that ignores its
// context delays that answer until it returns, where the network path would answer at the
// deadline. ShopMind's handlers pass their context to every database and backend call.
func (c *inProcessConn) Invoke(ctx context.Context, method string, req, reply any, opts ...grpc.CallOption) (err error) {
	c.mu.RLock()
	m, ok := c.methods[method]
	c.mu.RUnlock()
	if !ok {
		return status.Errorf(codes.Unimplemented, "unknown method %s", method)
	}
	in, ok1 := req.(proto.Message)
	out, ok2 := reply.(proto.Message)
	if !ok1 || !ok2 {
		return status.Errorf(codes.Internal, "in-process call of %s: messages must be protobuf messages", method)
	}
	if ctx.Err() != nil { // as a network client, do not start a call that is already over
		return status.FromContextError(ctx.Err()).Err()
	}
	defer func() {
		if p := recover(); p != nil { // the interceptor chain recovers handlers; this covers the rest
			err = status.Errorf(codes.Internal, "panic in in-process call of %s: %v", method, p)
		}
	}()
	stream := &unaryTransportStream{method: method}
	dec := func(into any) error {
		msg, ok := into.(proto.Message)
		if !ok {
			return status.Errorf(codes.Internal, "in-process call of %s: request type %T", method, into)
		}
		proto.Merge(msg, in) // a copy: neither side sees the other change the message
		return nil
	}
	resp, err := m.handler(m.impl, serverContext(ctx, stream), dec, c.interceptor)
	if ctx.Err() != nil {
		return status.FromContextError(ctx.Err()).Err()
	}
	header, trailer := stream.metadata()
	for _, o := range opts {
		switch o := o.(type) {
		case grpc.HeaderCallOption:
			*o.HeaderAddr = header
		case grpc.TrailerCallOption:
			*o.TrailerAddr = trailer
		case grpc.PeerCallOption:
			*o.PeerAddr = *inProcessPeer
		}
	}
	if err != nil {
		return status.Convert(err).Err()
	}
	msg, ok := resp.(proto.Message)
	if !ok || msg == nil {
		return status.Errorf(codes.Internal, "in-process call of %s: handler returned %T", method, resp)
	}
	proto.Merge(out, msg) // a copy, as above
	return nil
}

// NewStream runs a server-streaming method in the process (inprocess_stream.go) and opens
// any other stream over the network connection.
func (c *inProcessConn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	c.mu.RLock()
	m, ok := c.streamMethods[method]
	c.mu.RUnlock()
	if ok && desc.ServerStreams && !desc.ClientStreams {
		return c.newStream(ctx, m, method, opts)
	}
	if c.streams == nil {
		return nil, status.Errorf(codes.Unimplemented, "streaming method %s is not served in process", method)
	}
	return c.streams.NewStream(ctx, desc, method, opts...)
}

// serverContext is the context a handler sees: the caller's deadline and cancellation, none
// of its values (nothing of the caller's state leaks into the server), the caller's outgoing
// metadata as incoming metadata, the in-process peer and a transport stream for SetHeader
// and SetTrailer.
func serverContext(ctx context.Context, stream grpc.ServerTransportStream) context.Context {
	sctx := context.Context(withoutValues{ctx})
	if md, ok := metadata.FromOutgoingContext(ctx); ok {
		sctx = metadata.NewIncomingContext(sctx, md)
	}
	sctx = peer.NewContext(sctx, inProcessPeer)
	return grpc.NewContextWithServerTransportStream(sctx, stream)
}

// withoutValues keeps a context's deadline and cancellation and hides its values.
type withoutValues struct{ context.Context }

func (withoutValues) Value(any) any { return nil }

// unaryTransportStream collects the headers and trailers a unary handler sets.
type unaryTransportStream struct {
	method string
	mu     sync.Mutex
	header metadata.MD
	trail  metadata.MD
	sent   bool
}

func (s *unaryTransportStream) Method() string { return s.method }

func (s *unaryTransportStream) SetHeader(md metadata.MD) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sent {
		return fmt.Errorf("grpc: headers of %s already sent", s.method)
	}
	s.header = metadata.Join(s.header, md)
	return nil
}

func (s *unaryTransportStream) SendHeader(md metadata.MD) error {
	if err := s.SetHeader(md); err != nil {
		return err
	}
	s.mu.Lock()
	s.sent = true
	s.mu.Unlock()
	return nil
}

func (s *unaryTransportStream) SetTrailer(md metadata.MD) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.trail = metadata.Join(s.trail, md)
	return nil
}

func (s *unaryTransportStream) metadata() (header, trailer metadata.MD) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.header, s.trail
}

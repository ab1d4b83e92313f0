package grpcserver

import (
	"context"
	"fmt"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Server-streaming calls in the process: the handler runs on a goroutine of its own through
// the server's stream interceptor chain, and its messages reach the caller as copies over a
// channel, with no HTTP/2 framing, protobuf encoding or loopback socket. Every chat reply,
// workflow and session follower of the gateway is such a stream; a WebSocket fan-out to
// 1,000 subscribers is 1,000 of them. Client-streaming and bidirectional methods (ShopMind
// has none) go over the network connection.

// inProcessStreamMethod is a server-streaming method of a registered service.
type inProcessStreamMethod struct {
	impl    any
	handler grpc.StreamHandler
	info    *grpc.StreamServerInfo
}

// streamQueue is how many messages a handler may send ahead of the caller reading them.
const streamQueue = 16

// newStream starts m for the caller: the handler sees serverContext's context (the caller's
// deadline, cancellation and metadata), which also ends when the caller stops reading
// (ClientStream's context is done) or the handler returns.
func (c *inProcessConn) newStream(ctx context.Context, m inProcessStreamMethod, method string, opts []grpc.CallOption) (grpc.ClientStream, error) {
	if ctx.Err() != nil {
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	sctx, cancel := context.WithCancel(ctx)
	st := &inProcessStream{method: method, opts: opts, req: make(chan proto.Message, 1),
		msgs: make(chan proto.Message, streamQueue), headerSent: make(chan struct{}), done: make(chan struct{})}
	st.sctx = serverContext(sctx, st)
	// The server's stop ends the handler as closing a network transport would.
	stopped := context.AfterFunc(c.base, cancel)
	go func() {
		defer stopped()
		defer cancel()
		var err error
		func() {
			defer func() {
				if p := recover(); p != nil { // the chain recovers handlers; this covers the rest
					err = status.Errorf(codes.Internal, "panic in in-process stream %s: %v", method, p)
				}
			}()
			err = c.streamInterceptor(m.impl, serverSide{st}, m.info, m.handler)
		}()
		if c.base.Err() != nil && ctx.Err() == nil { // ended by the server's stop, not by the caller
			err = status.Error(codes.Unavailable, "the server is stopping; retry")
		}
		st.finish(err)
	}()
	return clientSide{st, ctx}, nil
}

// inProcessStream is one call: the server side sends into msgs, the client side reads.
type inProcessStream struct {
	method string
	opts   []grpc.CallOption
	sctx   context.Context

	req        chan proto.Message // the one request (server streaming)
	reqTaken   bool               // the server has read it (server side only)
	msgs       chan proto.Message
	headerSent chan struct{}
	done       chan struct{}

	mu           sync.Mutex
	header       metadata.MD
	trailer      metadata.MD
	sent         bool  // headerSent is closed
	trailersOnly bool  // the handler ended before sending a header or a message
	err          error // the handler's status, once done is closed
	optsOnce     sync.Once
}

// sendHeader marks the header sent (once); s.mu must be held.
func (s *inProcessStream) sendHeaderLocked() {
	if !s.sent {
		s.sent = true
		close(s.headerSent)
	}
}

func (s *inProcessStream) sendHeader() {
	s.mu.Lock()
	s.sendHeaderLocked()
	s.mu.Unlock()
}

func (s *inProcessStream) finish(err error) {
	s.mu.Lock()
	if err != nil {
		s.err = status.Convert(err).Err()
	}
	s.trailersOnly = !s.sent
	s.sendHeaderLocked()
	s.mu.Unlock()
	close(s.done)
}

// setCallOptions fills the caller's grpc.Header, grpc.Trailer and grpc.Peer options once the
// call is over, on the caller's goroutine.
func (s *inProcessStream) setCallOptions() {
	s.optsOnce.Do(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, o := range s.opts {
			switch o := o.(type) {
			case grpc.HeaderCallOption:
				*o.HeaderAddr = s.header
			case grpc.TrailerCallOption:
				*o.TrailerAddr = s.trailer
			case grpc.PeerCallOption:
				*o.PeerAddr = *inProcessPeer
			}
		}
	})
}

// The grpc.ServerTransportStream of the handler's context (grpc.SetHeader and friends).

func (s *inProcessStream) Method() string { return s.method }

func (s *inProcessStream) SetHeader(md metadata.MD) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sent {
		return fmt.Errorf("grpc: headers of %s already sent", s.method)
	}
	s.header = metadata.Join(s.header, md)
	return nil
}

func (s *inProcessStream) SendHeader(md metadata.MD) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sent {
		return fmt.Errorf("grpc: headers of %s already sent", s.method)
	}
	s.header = metadata.Join(s.header, md)
	s.sendHeaderLocked()
	return nil
}

func (s *inProcessStream) SetTrailer(md metadata.MD) error {
	s.mu.Lock()
	s.trailer = metadata.Join(s.trailer, md)
	s.mu.Unlock()
	return nil
}

// serverSide is the handler's grpc.ServerStream.
type serverSide struct{ *inProcessStream }

func (s serverSide) SetHeader(md metadata.MD) error  { return s.inProcessStream.SetHeader(md) }
func (s serverSide) SendHeader(md metadata.MD) error { return s.inProcessStream.SendHeader(md) }
func (s serverSide) SetTrailer(md metadata.MD)       { _ = s.inProcessStream.SetTrailer(md) }
func (s serverSide) Context() context.Context        { return s.sctx }

// SendMsg queues a copy of m (the handler may reuse m once SendMsg returns), waiting while
// the caller is behind.
func (s serverSide) SendMsg(m any) error {
	msg, ok := m.(proto.Message)
	if !ok {
		return status.Errorf(codes.Internal, "in-process stream %s: message type %T", s.method, m)
	}
	s.sendHeader()
	select {
	case s.msgs <- proto.Clone(msg):
		return nil
	case <-s.sctx.Done():
		return status.FromContextError(s.sctx.Err()).Err()
	}
}

// RecvMsg gives the handler the caller's one request, then io.EOF.
func (s serverSide) RecvMsg(m any) error {
	if s.reqTaken {
		return io.EOF
	}
	msg, ok := m.(proto.Message)
	if !ok {
		return status.Errorf(codes.Internal, "in-process stream %s: request type %T", s.method, m)
	}
	select {
	case req := <-s.req:
		s.reqTaken = true
		proto.Merge(msg, req)
		return nil
	case <-s.sctx.Done():
		return status.FromContextError(s.sctx.Err()).Err()
	}
}

// clientSide is the caller's grpc.ClientStream.
type clientSide struct {
	*inProcessStream
	ctx context.Context
}

func (c clientSide) Context() context.Context { return c.ctx }

// Header waits for the handler's header (or its first message, or its end): nil, nil when
// the call ended without one (a trailers-only answer), as over the network.
func (c clientSide) Header() (metadata.MD, error) {
	select {
	case <-c.headerSent:
	case <-c.ctx.Done():
		return nil, status.FromContextError(c.ctx.Err()).Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.trailersOnly {
		return nil, nil
	}
	return c.header.Copy(), nil
}

func (c clientSide) Trailer() metadata.MD {
	select {
	case <-c.done:
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.trailer.Copy()
	default:
		return nil
	}
}

func (c clientSide) CloseSend() error { return nil }

// SendMsg hands the request (a copy) to the handler; a server-streaming call sends one.
func (c clientSide) SendMsg(m any) error {
	msg, ok := m.(proto.Message)
	if !ok {
		return status.Errorf(codes.Internal, "in-process stream %s: request type %T", c.method, m)
	}
	select {
	case c.req <- proto.Clone(msg):
		return nil
	default:
		return status.Errorf(codes.Internal, "in-process stream %s: one request only", c.method)
	}
}

// RecvMsg reads the next message into m; io.EOF when the handler returned nil, its status
// when it failed, the context's when the caller gave up.
func (c clientSide) RecvMsg(m any) error {
	out, ok := m.(proto.Message)
	if !ok {
		return status.Errorf(codes.Internal, "in-process stream %s: message type %T", c.method, m)
	}
	take := func(msg proto.Message) error {
		proto.Reset(out)
		proto.Merge(out, msg)
		return nil
	}
	select {
	case msg := <-c.msgs:
		return take(msg)
	default:
	}
	select {
	case msg := <-c.msgs:
		return take(msg)
	case <-c.done:
		select { // sent before the handler returned
		case msg := <-c.msgs:
			return take(msg)
		default:
		}
		c.setCallOptions()
		if c.err != nil {
			return c.err
		}
		return io.EOF
	case <-c.ctx.Done():
		return status.FromContextError(c.ctx.Err()).Err()
	}
}

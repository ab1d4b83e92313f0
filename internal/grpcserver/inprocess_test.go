package grpcserver_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	notifyv1 "github.com/shopmind/shopmind/gen/go/shopmind/notify/v1"
	"github.com/shopmind/shopmind/internal/grpcserver"
)

// probeNotify records what an in-process handler sees and answers by the request's type.
type probeNotify struct {
	notifyv1.UnimplementedNotifyServiceServer
	shared *notifyv1.ListCollectedResponse // returned as is for type "shared"
	seen   chan observed
}

type observed struct {
	userID, requestID []string
	peer              string
	callerValue       any
}

type callerKey struct{}

func (p *probeNotify) ListCollected(ctx context.Context, req *notifyv1.ListCollectedRequest) (*notifyv1.ListCollectedResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	pr, _ := peer.FromContext(ctx)
	p.seen <- observed{userID: md.Get("x-user-id"), requestID: md.Get("x-request-id"), peer: pr.Addr.String(), callerValue: ctx.Value(callerKey{})}
	switch req.GetType() {
	case "panic":
		panic("handler bug")
	case "slow": // ignores its context on purpose
		time.Sleep(400 * time.Millisecond)
	case "shared":
		return p.shared, nil
	case "mutate":
		req.Type = "changed by the server"
	}
	_ = grpc.SetHeader(ctx, metadata.Pairs("x-conversation-id", "c-1"))
	grpc.SetTrailer(ctx, metadata.Pairs("x-trailer", "t-1"))
	return &notifyv1.ListCollectedResponse{Total: 42, PageSize: req.GetPageSize()}, nil
}

// startInProcess runs the server with an extra interceptor that counts calls, and returns the
// in-process connection.
func startInProcess(t *testing.T, impl notifyv1.NotifyServiceServer, calls *int) (grpc.ClientConnInterface, *grpc.ClientConn) {
	t.Helper()
	count := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		*calls++
		return handler(ctx, req)
	}
	srv, conn := serve(t, grpcserver.Options{Logger: slog.New(slog.DiscardHandler), Unary: []grpc.UnaryServerInterceptor{count}}, impl)
	return srv.InProcess(conn), conn
}

func TestInProcessCallRunsTheServerChain(t *testing.T) {
	probe := &probeNotify{seen: make(chan observed, 1)}
	calls := 0
	cc, _ := startInProcess(t, probe, &calls)
	client := notifyv1.NewNotifyServiceClient(cc)

	ctx := context.WithValue(context.Background(), callerKey{}, "caller state")
	ctx = metadata.AppendToOutgoingContext(ctx, "x-user-id", "7", "x-request-id", "req-1")
	var header, trailer metadata.MD
	var p peer.Peer
	resp, err := client.ListCollected(ctx, &notifyv1.ListCollectedRequest{PageSize: proto.Int32(20)},
		grpc.Header(&header), grpc.Trailer(&trailer), grpc.Peer(&p))
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetTotal() != 42 || resp.GetPageSize() != 20 {
		t.Fatalf("response %v", resp)
	}
	seen := <-probe.seen
	if len(seen.userID) != 1 || seen.userID[0] != "7" || len(seen.requestID) != 1 || seen.requestID[0] != "req-1" {
		t.Fatalf("incoming metadata: %+v", seen)
	}
	if seen.callerValue != nil {
		t.Fatalf("the caller's context values reached the server: %v", seen.callerValue)
	}
	if seen.peer != "inprocess" || p.Addr == nil || p.Addr.String() != "inprocess" {
		t.Fatalf("peer: server %q, caller %v", seen.peer, p.Addr)
	}
	if got := header.Get("x-conversation-id"); len(got) != 1 || got[0] != "c-1" {
		t.Fatalf("header %v", header)
	}
	if got := trailer.Get("x-trailer"); len(got) != 1 || got[0] != "t-1" {
		t.Fatalf("trailer %v", trailer)
	}
	if calls != 1 {
		t.Fatalf("the extra interceptor ran %d times", calls)
	}

	// Validation is part of the chain: page_size 101 never reaches the handler.
	_, err = client.ListCollected(context.Background(), &notifyv1.ListCollectedRequest{PageSize: proto.Int32(101)})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("page_size 101: %v", err)
	}
	select {
	case s := <-probe.seen:
		t.Fatalf("the handler saw an invalid request: %+v", s)
	default:
	}
}

func TestInProcessCallFailures(t *testing.T) {
	probe := &probeNotify{seen: make(chan observed, 10)}
	calls := 0
	cc, _ := startInProcess(t, probe, &calls)
	client := notifyv1.NewNotifyServiceClient(cc)

	// A panic is recovered by the chain into a generic internal error.
	_, err := client.ListCollected(context.Background(), &notifyv1.ListCollectedRequest{Type: "panic"})
	if st := status.Convert(err); st.Code() != codes.Internal || st.Message() == "" {
		t.Fatalf("panic: %v", err)
	}

	// A handler that outlives the caller's deadline (even one that ignores its context and
	// succeeds) answers DeadlineExceeded, as over the network.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = client.ListCollected(ctx, &notifyv1.ListCollectedRequest{Type: "slow"})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("slow handler: %v", err)
	}
	// A cancelled caller gets Canceled.
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if _, err = client.ListCollected(cctx, &notifyv1.ListCollectedRequest{}); status.Code(err) != codes.Canceled {
		t.Fatalf("cancelled caller: %v", err)
	}

	// An unknown method is unimplemented, as over the network.
	err = cc.Invoke(context.Background(), "/shopmind.notify.v1.NotifyService/NoSuchMethod", &notifyv1.ListCollectedRequest{}, &notifyv1.ListCollectedResponse{})
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("unknown method: %v", err)
	}
}

// Messages are copied both ways: neither side sees the other change them.
func TestInProcessCallCopiesMessages(t *testing.T) {
	shared := &notifyv1.ListCollectedResponse{Total: 1, Items: []*notifyv1.Notification{{Title: "kept"}}}
	probe := &probeNotify{seen: make(chan observed, 10), shared: shared}
	calls := 0
	cc, _ := startInProcess(t, probe, &calls)
	client := notifyv1.NewNotifyServiceClient(cc)

	req := &notifyv1.ListCollectedRequest{Type: "mutate"}
	if _, err := client.ListCollected(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if req.GetType() != "mutate" {
		t.Fatalf("the server's change reached the caller's request: %q", req.GetType())
	}
	resp, err := client.ListCollected(context.Background(), &notifyv1.ListCollectedRequest{Type: "shared"})
	if err != nil {
		t.Fatal(err)
	}
	resp.Items[0].Title = "changed by the caller"
	if shared.Items[0].GetTitle() != "kept" {
		t.Fatal("the caller's change reached the server's message")
	}
}

// Server-streaming calls run in the process through the server's stream interceptor chain:
// the handler sees the caller's metadata, a refusal of the chain is the call's status, the
// caller's cancellation ends the handler's context, and the unary check still runs in process.
func TestInProcessStreams(t *testing.T) {
	var streams atomic.Int32
	gate := func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		streams.Add(1)
		if md, _ := metadata.FromIncomingContext(ss.Context()); len(md.Get("x-deny")) > 0 {
			return status.Error(codes.PermissionDenied, "denied by the chain")
		}
		if p, _ := peer.FromContext(ss.Context()); p.Addr.String() != "inprocess" {
			return status.Errorf(codes.Internal, "peer %v", p.Addr)
		}
		return handler(srv, ss)
	}
	srv, conn := serve(t, grpcserver.Options{Logger: slog.New(slog.DiscardHandler), Stream: []grpc.StreamServerInterceptor{gate}}, &probeNotify{})
	cc := srv.InProcess(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	watch, err := healthpb.NewHealthClient(cc).Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := watch.Recv()
	if err != nil || first.GetStatus() != healthpb.HealthCheckResponse_SERVING || streams.Load() != 1 {
		t.Fatalf("health watch: %v %v, %d streams through the chain", first, err, streams.Load())
	}
	if _, err := watch.Header(); err != nil {
		t.Fatalf("header after the first message: %v", err)
	}
	cancel() // the handler blocks until its context ends
	if _, err := watch.Recv(); status.Code(err) != codes.Canceled {
		t.Fatalf("after cancel: %v", err)
	}

	denied, err := healthpb.NewHealthClient(cc).Watch(metadata.AppendToOutgoingContext(context.Background(), "x-deny", "1"), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if md, err := denied.Header(); err != nil || md != nil {
		t.Fatalf("a stream refused before any message: header %v %v, want nil (trailers only)", md, err)
	}
	if _, err := denied.Recv(); status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "denied by the chain") {
		t.Fatalf("refused stream: %v", err)
	}
	// The unary health check runs in process too.
	resp, err := healthpb.NewHealthClient(cc).Check(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health check: %v %v", resp, err)
	}

	// Stopping the server ends an in-process stream whose caller is still reading, as
	// closing a network transport would.
	open, err := healthpb.NewHealthClient(cc).Watch(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := open.Recv(); err != nil {
		t.Fatal(err)
	}
	stopCtx, stopNow := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer stopNow()
	srv.Stop(stopCtx)
	for {
		if _, err = open.Recv(); err != nil {
			break // the health server's last status first, then the end
		}
	}
	if code := status.Code(err); code != codes.Unavailable { // retryable, as from a closed transport
		t.Fatalf("after Stop: %v", err)
	}
}

package grpcserver_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	notifyv1 "github.com/shopmind/shopmind/gen/go/shopmind/notify/v1"
	"github.com/shopmind/shopmind/internal/grpcserver"
	"github.com/shopmind/shopmind/internal/testutil"
)

type slowNotify struct {
	notifyv1.UnimplementedNotifyServiceServer
	started chan struct{}
}

func (s *slowNotify) ListCollected(ctx context.Context, _ *notifyv1.ListCollectedRequest) (*notifyv1.ListCollectedResponse, error) {
	close(s.started)
	time.Sleep(300 * time.Millisecond)
	return &notifyv1.ListCollectedResponse{Total: 42}, nil
}

func start(t *testing.T, impl notifyv1.NotifyServiceServer) (*grpcserver.Server, notifyv1.NotifyServiceClient) {
	t.Helper()
	srv, conn := serve(t, grpcserver.Options{Logger: slog.New(slog.DiscardHandler)}, impl)
	return srv, notifyv1.NewNotifyServiceClient(conn)
}

// serve runs a server with impl on a loopback port and returns it with a connection to it.
func serve(t *testing.T, opts grpcserver.Options, impl notifyv1.NotifyServiceServer) (*grpcserver.Server, *grpc.ClientConn) {
	t.Helper()
	srv, err := grpcserver.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	notifyv1.RegisterNotifyServiceServer(srv, impl)
	srv.MarkServing()
	conn := testutil.ServeGRPC(t, srv.Serve, srv.Server.Stop)
	return srv, conn
}

// Stop lets an in-flight RPC finish before the server goes away.
func TestStopDrainsInFlightRPCs(t *testing.T) {
	impl := &slowNotify{started: make(chan struct{})}
	srv, client := start(t, impl)
	result := make(chan error, 1)
	go func() {
		resp, err := client.ListCollected(context.Background(), &notifyv1.ListCollectedRequest{})
		if err == nil && resp.GetTotal() != 42 {
			err = status.Error(codes.Internal, "wrong answer")
		}
		result <- err
	}()
	<-impl.started
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Stop(ctx)
	if err := <-result; err != nil {
		t.Fatalf("in-flight RPC failed during graceful stop: %v", err)
	}
}

// Unimplemented RPCs say so plainly, with the method name.
func TestUnimplementedIsHonest(t *testing.T) {
	_, client := start(t, notifyv1.UnimplementedNotifyServiceServer{})
	_, err := client.ListCollected(context.Background(), &notifyv1.ListCollectedRequest{})
	st := status.Convert(err)
	if st.Code() != codes.Unimplemented || st.Message() != "not implemented: /shopmind.notify.v1.NotifyService/ListCollected" {
		t.Fatalf("got %v", st)
	}
}

package notifyclient

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	notifyv1 "github.com/shopmind/shopmind/gen/go/shopmind/notify/v1"
	"github.com/shopmind/shopmind/internal/authn"
)

// fakeNotify records what Publish received, or fails / hangs.
type fakeNotify struct {
	notifyv1.UnimplementedNotifyPublisherServiceServer
	got   chan *notifyv1.PublishRequest
	auth  chan string
	fail  bool
	block bool
}

func (f *fakeNotify) Publish(ctx context.Context, req *notifyv1.PublishRequest) (*notifyv1.PublishResponse, error) {
	if f.block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if f.fail {
		return nil, status.Error(codes.Unavailable, "down")
	}
	md, _ := metadata.FromIncomingContext(ctx)
	f.auth <- strings.Join(md.Get("authorization"), ",") + "|" + strings.Join(md.Get(authn.EnvHeader), ",")
	f.got <- req
	return &notifyv1.PublishResponse{Id: 1}, nil
}

func serve(t *testing.T, f *fakeNotify) func(string) (grpc.ClientConnInterface, error) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	notifyv1.RegisterNotifyPublisherServiceServer(srv, f)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return func(target string) (grpc.ClientConnInterface, error) {
		if target != Target {
			return nil, errors.New("unexpected target " + target)
		}
		return conn, nil
	}
}

func caller() context.Context {
	return authn.WithIdentity(context.Background(), &authn.Identity{UserID: 5, TenantID: 2, Token: "tok-5", Audience: "test"})
}

func TestPublishForwardsTheCallerAndClips(t *testing.T) {
	f := &fakeNotify{got: make(chan *notifyv1.PublishRequest, 1), auth: make(chan string, 1)}
	p := New(serve(t, f), nil)
	// The producer's own context is already cancelled: the notification still goes out.
	ctx, cancel := context.WithCancel(caller())
	cancel()
	if !p.Publish(ctx, Notification{Type: "sync_result", Level: LevelInfo, Title: strings.Repeat("t", 300), Content: "c",
		Source: "basic.sync", ShopID: 3, UserID: 5, DedupKey: "k"}) {
		t.Fatal("Publish reported failure")
	}
	req := <-f.got
	if got := <-f.auth; got != "Bearer tok-5|test" {
		t.Fatalf("forwarded %q", got)
	}
	if len([]rune(req.GetTitle())) != 256 || req.GetShopId() != 3 || req.GetUserId() != 5 || req.GetDedupKey() != "k" || req.GetType() != "sync_result" {
		t.Fatalf("request %v", req)
	}
}

func TestPublishNeverFailsTheProducer(t *testing.T) {
	n := Notification{Type: "x", Level: LevelInfo, Title: "t", Source: "s"}
	var nilPub *Publisher
	if nilPub.Publish(caller(), n) {
		t.Fatal("nil publisher published")
	}
	down := New(func(string) (grpc.ClientConnInterface, error) { return nil, errors.New("no route") }, nil)
	if down.Publish(caller(), n) {
		t.Fatal("unreachable notify reported success")
	}
	if New(serve(t, &fakeNotify{fail: true}), nil).Publish(caller(), n) {
		t.Fatal("failing notify reported success")
	}
	if New(serve(t, &fakeNotify{}), nil).Publish(context.Background(), n) {
		t.Fatal("published without a caller")
	}
	slow := New(serve(t, &fakeNotify{block: true}), nil)
	slow.Timeout = 50 * time.Millisecond
	if slow.Publish(caller(), n) {
		t.Fatal("a hanging notify reported success")
	}
}

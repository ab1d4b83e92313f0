package discovery

import (
	"context"
	"io"
	"log/slog"
	"net"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	systemv1 "github.com/shopmind/shopmind/gen/go/shopmind/system/v1"
	"github.com/shopmind/shopmind/internal/testutil"
	"github.com/shopmind/shopmind/internal/testutil/etcdtest"
)

const testTTL = 2 * time.Second

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// startEtcd starts an embedded etcd (etcdtest.Start) and returns a discovery config
// pointing at it, and a stop function that the test's cleanup also calls.
func startEtcd(t *testing.T) (func(), Config) {
	t.Helper()
	stop, endpoint := etcdtest.Start(t)
	return stop, Config{Endpoints: []string{endpoint}, Env: "test", LeaseTTL: testTTL, DialTimeout: 2 * time.Second}
}

func newClient(t *testing.T, cfg Config) *clientv3.Client {
	t.Helper()
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// fakeSystem answers CheckAdminPermission with its own name in reason.
type fakeSystem struct {
	systemv1.UnimplementedSystemServiceServer
	name  string
	delay time.Duration
}

func (f *fakeSystem) CheckAdminPermission(ctx context.Context, _ *systemv1.CheckAdminPermissionRequest) (*systemv1.CheckAdminPermissionResponse, error) {
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return &systemv1.CheckAdminPermissionResponse{Allowed: true, Reason: f.name}, nil
}

// backend is one "process" hosting the system target: a gRPC server, its own etcd client
// and its registration.
type backend struct {
	name   string
	addr   string
	srv    *grpc.Server
	client *clientv3.Client
	reg    *Registration
}

func startBackend(t *testing.T, cfg Config, target, name string, delay time.Duration) *backend {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	systemv1.RegisterSystemServiceServer(srv, &fakeSystem{name: name, delay: delay})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	b := &backend{name: name, addr: lis.Addr().String(), srv: srv, client: newClient(t, cfg)}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if b.reg, err = Register(ctx, cfg, b.client, target, b.addr, quiet); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		_ = b.reg.Close(ctx)
	})
	return b
}

// crash stops the backend as a killed process would: the server goes away and its etcd
// client with it, without deregistering, so its key lives until the lease expires.
func (b *backend) crash() {
	b.srv.Stop()
	_ = b.client.Close()
}

func call(c systemv1.SystemServiceClient, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	resp, err := c.CheckAdminPermission(ctx, &systemv1.CheckAdminPermissionRequest{
		UserId: 1, TenantId: 1, Method: "GET", Path: "/api/v1/x-m"})
	if err != nil {
		return "", err
	}
	return resp.GetReason(), nil
}

// round makes n calls and counts the answers per backend; err is the first failure.
func round(c systemv1.SystemServiceClient, n int) (map[string]int, error) {
	seen := map[string]int{}
	var first error
	for range n {
		who, err := call(c, 2*time.Second)
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		seen[who]++
	}
	return seen, first
}

func keysUnder(t *testing.T, c *clientv3.Client, prefix string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, prefix+"/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, kv := range resp.Kvs {
		keys = append(keys, string(kv.Key))
	}
	return keys
}

// TestFailover runs two instances of one target, balances over both, crashes one and
// checks that it disappears within the lease TTL, then stops etcd and checks that the
// survivor keeps answering.
func TestFailover(t *testing.T) {
	stopEtcd, cfg := startEtcd(t)
	const target = "system"
	a := startBackend(t, cfg, target, "a", 0)
	b := startBackend(t, cfg, target, "b", 0)

	gw := newClient(t, cfg)
	builder := NewResolverBuilder(gw, quiet)
	conn, err := dialWith(cfg, builder, target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	client := systemv1.NewSystemServiceClient(conn)

	// Round robin: once both instances are known and connected, 20 calls reach both.
	var seen map[string]int
	testutil.Eventually(t, 5*time.Second, "both instances answer", func() bool {
		seen, _ = round(client, 20)
		return seen["a"] > 0 && seen["b"] > 0
	})
	if seen, err := round(client, 20); err != nil || seen["a"] != 10 || seen["b"] != 10 {
		t.Fatalf("20 calls over two instances: %v, error %v; want 10 each", seen, err)
	}

	// Crash a: no deregistration, the lease must expire.
	a.crash()
	crashed := time.Now()
	prefix := cfg.Prefix(target)
	testutil.Eventually(t, testTTL+3*time.Second, "crashed instance dropped by the resolver", func() bool {
		addrs, _ := builder.LastKnown(prefix)
		return slices.Equal(addrs, []string{b.addr})
	})
	t.Logf("crashed instance dropped after %v (lease TTL %v)", time.Since(crashed).Round(time.Millisecond), testTTL)
	if keys := keysUnder(t, gw, prefix); !slices.Equal(keys, []string{b.reg.Key()}) {
		t.Fatalf("keys after lease expiry: %v, want [%s]", keys, b.reg.Key())
	}
	if seen, err := round(client, 20); err != nil || seen["b"] != 20 {
		t.Fatalf("after expiry: %v, error %v; want 20 answers from b", seen, err)
	}

	// etcd unreachable: the survivor stays known and keeps answering, while etcd shuts down
	// (its graceful stop waits for open watch streams) and for a while after it is gone.
	stopped := make(chan struct{})
	go func() { defer close(stopped); stopEtcd() }()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if seen, err := round(client, 5); err != nil || seen["b"] != 5 {
			t.Fatalf("with etcd stopping or stopped: %v, error %v; want every call answered by b", seen, err)
		}
		select {
		case <-stopped:
			stopped = nil // keep going for a little while with etcd fully gone
			deadline = time.Now().Add(1500 * time.Millisecond)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if stopped != nil {
		t.Fatal("embedded etcd did not stop within 30s")
	}
	if addrs, _ := builder.LastKnown(prefix); !slices.Equal(addrs, []string{b.addr}) {
		t.Fatalf("last known endpoints with etcd stopped: %v, want [%s]", addrs, b.addr)
	}
}

// TestDialNoEndpoints: a target nobody registered fails fast with Unavailable (503), not
// with a deadline (504).
func TestDialNoEndpoints(t *testing.T) {
	_, cfg := startEtcd(t)
	conn, err := Dial(context.Background(), cfg, newClient(t, cfg), "nobody", quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	_, err = call(systemv1.NewSystemServiceClient(conn), 5*time.Second)
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("call to a target without endpoints: %v, want Unavailable", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Unavailable took %v; want a fast failure", d)
	}
}

// TestDialEtcdDown: etcd unreachable and nothing known yet: Unavailable after the etcd
// dial timeout, not a hang until the call's deadline.
func TestDialEtcdDown(t *testing.T) {
	cfg := Config{Endpoints: []string{etcdtest.FreeAddr(t)}, Env: "test", LeaseTTL: testTTL, DialTimeout: 300 * time.Millisecond}
	conn, err := Dial(context.Background(), cfg, newClient(t, cfg), "system", quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	_, err = call(systemv1.NewSystemServiceClient(conn), 5*time.Second)
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("call with etcd down: %v, want Unavailable", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Unavailable took %v; want about the etcd dial timeout", d)
	}
}

// TestBackendUnreachableAndSlow: a registered address nobody listens on gives Unavailable
// (503); an instance slower than the caller's deadline gives DeadlineExceeded (504).
func TestBackendUnreachableAndSlow(t *testing.T) {
	_, cfg := startEtcd(t)
	reg := newClient(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	dead, err := Register(ctx, cfg, reg, "dead", etcdtest.FreeAddr(t), quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close(ctx)
	startBackend(t, cfg, "slow", "slow", 5*time.Second)
	gw := newClient(t, cfg)

	conn, err := Dial(ctx, cfg, gw, "dead", quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := call(systemv1.NewSystemServiceClient(conn), 3*time.Second); status.Code(err) != codes.Unavailable {
		t.Fatalf("call to an unreachable instance: %v, want Unavailable", err)
	}

	slow, err := Dial(ctx, cfg, gw, "slow", quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	if _, err := call(systemv1.NewSystemServiceClient(slow), 300*time.Millisecond); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("call to a slow instance: %v, want DeadlineExceeded", err)
	}
}

// TestRegistrationLifecycle: Close deletes the key at once; a lost lease is replaced.
func TestRegistrationLifecycle(t *testing.T) {
	_, cfg := startEtcd(t)
	c := newClient(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reg, err := Register(ctx, cfg, c, "order", "10.0.0.7:9090", quiet)
	if err != nil {
		t.Fatal(err)
	}
	prefix := cfg.Prefix("order")
	if want := "shopmind/test/services/order/10.0.0.7:9090"; reg.Key() != want {
		t.Fatalf("key %q, want %q", reg.Key(), want)
	}
	if keys := keysUnder(t, c, prefix); !slices.Equal(keys, []string{reg.Key()}) {
		t.Fatalf("keys after Register: %v", keys)
	}

	// The lease disappears behind our back (as when etcd loses its data): registered again.
	reg.mu.Lock()
	lost := reg.lease
	reg.mu.Unlock()
	if _, err := c.Revoke(ctx, lost); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "registered again under a new lease", func() bool {
		reg.mu.Lock()
		defer reg.mu.Unlock()
		return reg.lease != lost && slices.Equal(keysUnder(t, c, prefix), []string{reg.Key()})
	})

	if err := reg.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if keys := keysUnder(t, c, prefix); len(keys) != 0 {
		t.Fatalf("keys after Close: %v, want none", keys)
	}
	if err := reg.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

//go:build platform

package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/discovery"
	"github.com/shopmind/shopmind/internal/testutil"
	"github.com/shopmind/shopmind/internal/testutil/etcdtest"
	"github.com/shopmind/shopmind/internal/testutil/pgtest"
	"github.com/shopmind/shopmind/internal/testutil/stack"
)

// Discovery test settings: a short lease so that a dead backend disappears quickly, and an
// upstream timeout short enough to exercise the 504 without waiting long.
const (
	discoveryTTL      = 2 * time.Second
	discoveryUpstream = time.Second
	// backendTargets are every service target: one "process" hosting all of them, twice.
	backendTargets = "tenant,system,analysis,basic,notify,chat,nl2sql,crx"
	infoPath       = "/tenant/api/v1/tenant/auth/info"
)

// TestDiscoveryMicroservices runs the platform in microservices mode against an embedded
// etcd: two backend processes hosting every service target and a gateway process, all
// in process, sharing one database. Between the gateway and each backend sits a loopback
// TCP proxy (the backend's advertised address) that counts the gRPC calls reaching that
// backend and can cut it off or slow it down; each backend also reaches etcd through a
// proxy of its own, so that a crash can be simulated: the backend stops answering and
// stops renewing its lease without deregistering, exactly what a killed process does.
// The gateway learns the proxies' addresses only from etcd (its static addresses point
// nowhere near them), so any call they count was resolved through etcd.
//
// Proven, in order: every target registers both backends under a lease of the configured
// TTL; an environment without instances answers a 503 envelope at once; the gateway
// balances round robin over both backends; a crashed backend's keys disappear within the
// lease TTL while every request keeps succeeding on the other; a new backend joins the
// rotation, and a gracefully stopped one deregisters at once with no failed request; a
// backend slower than the upstream timeout yields a 504 envelope; with etcd stopped the
// gateway keeps serving from the last known endpoints beyond the lease TTL; with every
// backend gone it answers a 503 envelope without waiting for the upstream timeout.
func TestDiscoveryMicroservices(t *testing.T) {
	began := time.Now()
	logf := func(format string, args ...any) { // prefixed with the time since the test began
		t.Helper()
		t.Logf("[%5.2fs] "+format, append([]any{time.Since(began).Seconds()}, args...)...)
	}
	stopEtcd, etcdURL := startEtcd(t)
	watch := etcdClient(t, etcdURL)
	db := stack.NewDatabase(t)

	a := startDiscoveredBackend(t, db, etcdURL)
	b := startDiscoveredBackend(t, db, etcdURL)
	for _, target := range strings.Split(backendTargets, ",") {
		got := registered(t, watch, target)
		if !slices.Equal(got, sortedAddrs(a, b)) {
			t.Fatalf("%s: registered %v, want both backends %v", target, got, sortedAddrs(a, b))
		}
	}
	checkLeases(t, watch, "tenant")
	gEtcd := newTCPProxy(t) // the gateway's way to etcd
	gEtcd.setTarget(strings.TrimPrefix(etcdURL, "http://"))
	g := stack.StartTargets(t, db, app.TargetGateway, func(c *app.Config) {
		c.Discovery = discovery.Config{Endpoints: []string{"http://" + gEtcd.addr()}, Env: discovery.DefaultEnv,
			LeaseTTL: discoveryTTL, DialTimeout: time.Second, EnvPools: map[string]string{"local": "local"}}
		c.Edge.UpstreamTimeout = discoveryUpstream
	})
	logf("etcd, database, two backends and the gateway up")

	// The edge environment test has no pool of its own: dev's instances serve it.
	if r := g.Do(t, "POST", "/test/tenant/api/v1/tenant/auth/login", `{"tenant_code":"demo","username":"admin","password":"x"}`); r.Status == 503 || r.Status/100 == 2 {
		t.Fatalf("environment test, served by dev's pool: want the login's refusal, got HTTP %d %s", r.Status, r.Body)
	}
	// The edge environment local is mapped to the etcd pool local, where nothing registered,
	// so a call there fails fast with the 503 envelope instead of hanging to a 504.
	start := time.Now()
	r := g.Do(t, "POST", "/local/tenant/api/v1/tenant/auth/login", `{"tenant_code":"demo","username":"admin","password":"x"}`)
	if env := decodeEnvelope(t, r); r.Status != 503 || env.Code != 503 || time.Since(start) >= discoveryUpstream {
		t.Fatalf("environment without instances: want a prompt 503 envelope, got HTTP %d %s after %v", r.Status, r.Body, time.Since(start))
	}

	token := g.Admin(t).Access
	info := func() stack.Response { return g.Do(t, "GET", infoPath, "", stack.Bearer(token)...) }
	mustInfo := func(phase string) {
		t.Helper()
		if r := info(); r.Status != 200 || decodeEnvelope(t, r).Code != 0 {
			t.Fatalf("%s: GET %s: HTTP %d %s", phase, infoPath, r.Status, r.Body)
		}
	}

	// Round robin: once the gateway is connected to both, calls alternate between them.
	testutil.Eventually(t, 5*time.Second, "both backends receive calls", func() bool {
		mustInfo("warm-up")
		return a.grpc.calls.Load() > 0 && b.grpc.calls.Load() > 0
	})
	const n = 20
	a0, b0 := a.grpc.calls.Load(), b.grpc.calls.Load()
	for range n {
		mustInfo("round robin")
	}
	da, db2 := a.grpc.calls.Load()-a0, b.grpc.calls.Load()-b0
	if da+db2 != n || da < n/2-1 || db2 < n/2-1 {
		t.Fatalf("round robin: %d requests reached A %d times and B %d times", n, da, db2)
	}
	logf("round robin: %d requests, A %d calls, B %d calls", n, da, db2)

	// Crash A: its connections drop and its lease is no longer renewed; it never deregisters.
	crashed := time.Now()
	a.grpc.kill()
	a.etcd.kill()
	aStopped := make(chan struct{})
	go func() { defer close(aStopped); a.st.Stop() }() // the dying process goes away meanwhile
	b0 = b.grpc.calls.Load()
	served := 0
	anyRegistered := func(addr string) bool { // under any target
		for _, target := range strings.Split(backendTargets, ",") {
			if slices.Contains(registered(t, watch, target), addr) {
				return true
			}
		}
		return false
	}
	for anyRegistered(a.grpc.addr()) { // one lease per target: they expire one by one
		if time.Since(crashed) > discoveryTTL+time.Second {
			t.Fatalf("crashed backend still registered %v after the kill (lease TTL %v)", time.Since(crashed), discoveryTTL)
		}
		mustInfo("after A crashed")
		served++
		time.Sleep(10 * time.Millisecond)
	}
	gone := time.Since(crashed)
	for range 5 {
		mustInfo("after A expired")
		served++
	}
	if got := b.grpc.calls.Load() - b0; got != int64(served) {
		t.Fatalf("after A crashed: %d requests served, B saw %d calls", served, got)
	}
	for _, target := range strings.Split(backendTargets, ",") {
		if got := registered(t, watch, target); !slices.Equal(got, []string{b.grpc.addr()}) {
			t.Fatalf("%s after A's lease expired: registered %v, want only B %s", target, got, b.grpc.addr())
		}
	}
	logf("crash: A's keys expired %v after the kill (TTL %v); %d requests meanwhile, all served by B",
		gone.Round(time.Millisecond), discoveryTTL, served)
	<-aStopped

	// A replacement joins the rotation; then B stops gracefully and deregisters at once.
	a2 := startDiscoveredBackend(t, db, etcdURL)
	testutil.Eventually(t, 5*time.Second, "the new backend receives calls", func() bool {
		mustInfo("A' joining")
		return a2.grpc.calls.Load() > 0
	})
	start = time.Now()
	b.st.Stop()
	stopped := time.Since(start)
	for _, target := range strings.Split(backendTargets, ",") {
		if got := registered(t, watch, target); !slices.Equal(got, []string{a2.grpc.addr()}) {
			t.Fatalf("%s right after B stopped: registered %v, want only A' %s", target, got, a2.grpc.addr())
		}
	}
	a0, b0 = a2.grpc.calls.Load(), b.grpc.calls.Load()
	for range 10 {
		mustInfo("after B stopped")
	}
	if da, db2 := a2.grpc.calls.Load()-a0, b.grpc.calls.Load()-b0; da != 10 || db2 != 0 {
		t.Fatalf("after B stopped: A' saw %d calls, B %d, want 10 and 0", da, db2)
	}
	logf("graceful stop: B deregistered and stopped in %v; 10 requests, all served by A'", stopped.Round(time.Millisecond))

	// A backend slower than the upstream timeout: the 504 envelope, at the timeout.
	a2.grpc.delay.Store(int64(discoveryUpstream + 500*time.Millisecond))
	start = time.Now()
	r = info()
	took := time.Since(start)
	a2.grpc.delay.Store(0)
	if env := decodeEnvelope(t, r); r.Status != 504 || env.Code != 504 || took < discoveryUpstream || took > discoveryUpstream+time.Second {
		t.Fatalf("slow backend: want a 504 envelope after %v, got HTTP %d %s after %v", discoveryUpstream, r.Status, r.Body, took)
	}
	logf("slow backend: 504 envelope after %v (upstream timeout %v)", took.Round(time.Millisecond), discoveryUpstream)
	testutil.Eventually(t, 5*time.Second, "A' answers again once it is fast", func() bool {
		r := info()
		return r.Status == 200 && decodeEnvelope(t, r).Code == 0
	})
	logf("A' fast again")

	// etcd goes away: the gateway keeps routing to the last known endpoints, beyond the TTL.
	// Every client connection is cut first (the server's Close otherwise waits up to its
	// request timeout, 7s, for the open watch streams), then the server itself stops.
	gEtcd.kill()
	a2.etcd.kill()
	_ = watch.Close()
	stopEtcd()
	logf("etcd stopped")
	start, served = time.Now(), 0
	for time.Since(start) < discoveryTTL+time.Second {
		mustInfo("etcd stopped")
		served++
		time.Sleep(20 * time.Millisecond)
	}
	logf("etcd down: %d requests over %v, all served from the last known endpoints", served, time.Since(start).Round(time.Millisecond))

	// Every backend gone, its address refusing connections (the gateway still believes in
	// A', etcd being down): the 503 envelope, promptly, not a 504 after the upstream timeout.
	var last stack.Response
	var lastTook time.Duration
	a2.st.Stop()
	a2.grpc.kill()
	logf("A' stopped")
	testutil.Eventually(t, 5*time.Second, "a failure once every backend is gone", func() bool {
		r := info() // succeeds while the gateway has not yet noticed, 503 after
		if r.Status != 200 && r.Status != 503 {
			t.Fatalf("every backend gone: want 503, got HTTP %d %s", r.Status, r.Body)
		}
		return r.Status == 503
	})
	for range 3 {
		start := time.Now()
		r := info()
		took := time.Since(start)
		if env := decodeEnvelope(t, r); r.Status != 503 || env.Code != 503 || took >= discoveryUpstream {
			t.Fatalf("every backend gone: want a prompt 503 envelope, got HTTP %d %s after %v", r.Status, r.Body, took)
		}
		if took > lastTook {
			lastTook, last = took, r
		}
	}
	logf("every backend gone: 503 envelopes in at most %v: %s", lastTook.Round(time.Microsecond), last.Body)
}

// discoveredBackend is one backend process: every service target, registered in etcd at
// the address of grpc, a proxy to its gRPC listener, and talking to etcd through etcd.
type discoveredBackend struct {
	st   *stack.Stack
	grpc *tcpProxy
	etcd *tcpProxy
}

func startDiscoveredBackend(t *testing.T, db *pgtest.Database, etcdURL string) *discoveredBackend {
	t.Helper()
	u, err := url.Parse(etcdURL)
	if err != nil {
		t.Fatal(err)
	}
	b := &discoveredBackend{grpc: newTCPProxy(t), etcd: newTCPProxy(t)}
	b.etcd.setTarget(u.Host)
	b.st = stack.StartTargets(t, db, backendTargets, func(c *app.Config) {
		c.Discovery = discovery.Config{Endpoints: []string{"http://" + b.etcd.addr()}, Env: discovery.DefaultEnv,
			LeaseTTL: discoveryTTL, DialTimeout: 500 * time.Millisecond, AdvertiseAddr: b.grpc.addr()}
		c.ShutdownTimeout = time.Second // bounds a stop while etcd is unreachable
	})
	b.grpc.setTarget(b.st.GRPCAddr)
	return b
}

func sortedAddrs(bs ...*discoveredBackend) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.grpc.addr())
	}
	slices.Sort(out)
	return out
}

// registered lists the addresses registered for target in the dev environment, sorted.
func registered(t *testing.T, c *clientv3.Client, target string) []string {
	t.Helper()
	prefix := discovery.Config{}.Prefix(target) + "/"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatalf("etcd get %s: %v", prefix, err)
	}
	var out []string
	for _, kv := range resp.Kvs {
		var v struct{ Addr string }
		if err := json.Unmarshal(kv.Value, &v); err != nil || strings.TrimPrefix(string(kv.Key), prefix) != v.Addr {
			t.Fatalf("malformed registration %s = %s", kv.Key, kv.Value)
		}
		out = append(out, v.Addr)
	}
	slices.Sort(out)
	return out
}

// checkLeases checks that every registration of target sits on a lease of the configured TTL.
func checkLeases(t *testing.T, c *clientv3.Client, target string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, discovery.Config{}.Prefix(target)+"/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		if kv.Lease == 0 {
			t.Fatalf("%s is not under a lease", kv.Key)
		}
		ttl, err := c.TimeToLive(ctx, clientv3.LeaseID(kv.Lease))
		if err != nil || ttl.GrantedTTL != int64(discoveryTTL/time.Second) {
			t.Fatalf("%s: lease %v, want a TTL of %v (%v)", kv.Key, ttl, discoveryTTL, err)
		}
	}
}

// startEtcd starts an embedded etcd (etcdtest.Start).
func startEtcd(t *testing.T) (func(), string) { return etcdtest.Start(t) }

func etcdClient(t *testing.T, endpoint string) *clientv3.Client {
	t.Helper()
	c, err := discovery.NewClient(discovery.Config{Endpoints: []string{endpoint}, DialTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// tcpProxy forwards loopback connections to a target set once it is known. It counts the
// HTTP/2 HEADERS frames the clients send (one per gRPC call), can delay what the target
// sends back (a slow backend), and can be killed: every connection dropped, the port closed.
type tcpProxy struct {
	ln     net.Listener
	ready  chan struct{}
	target string
	calls  atomic.Int64
	delay  atomic.Int64 // time.Duration added before each chunk the target sends back

	mu    sync.Mutex
	dead  bool
	conns map[net.Conn]struct{}
}

func newTCPProxy(t *testing.T) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, ready: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	go p.accept()
	t.Cleanup(p.kill)
	return p
}

func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

// setTarget sets the address to forward to; connections accepted before wait for it.
func (p *tcpProxy) setTarget(addr string) {
	p.target = addr
	close(p.ready)
}

// kill drops every connection and closes the port, like a process that died.
func (p *tcpProxy) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead {
		return
	}
	p.dead = true
	_ = p.ln.Close()
	for c := range p.conns {
		_ = c.Close()
	}
}

func (p *tcpProxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead {
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *tcpProxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
		_ = c.Close()
	}
}

func (p *tcpProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.serve(c)
	}
}

func (p *tcpProxy) serve(c net.Conn) {
	select {
	case <-p.ready:
	case <-time.After(10 * time.Second):
		_ = c.Close()
		return
	}
	up, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil {
		_ = c.Close()
		return
	}
	if !p.track(c, up) {
		_ = c.Close()
		_ = up.Close()
		return
	}
	defer p.untrack(c, up)
	frames, pw := io.Pipe()
	go p.countHeaders(frames)
	done := make(chan struct{}, 2)
	go func() { // client -> target, through the frame counter
		_, _ = io.Copy(up, io.TeeReader(c, pw))
		_ = pw.Close()
		done <- struct{}{}
	}()
	go func() { // target -> client, delayed on demand
		buf := make([]byte, 32<<10)
		for {
			n, err := up.Read(buf)
			if n > 0 {
				if d := time.Duration(p.delay.Load()); d > 0 {
					time.Sleep(d)
				}
				if _, werr := c.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		done <- struct{}{}
	}()
	<-done // either side ending ends both
}

// countHeaders parses the client's HTTP/2 stream (preface, then 9-byte frame headers) and
// counts HEADERS frames; it drains whatever it cannot parse so the copy never blocks.
func (p *tcpProxy) countHeaders(r *io.PipeReader) {
	defer func() { _, _ = io.Copy(io.Discard, r) }()
	br := bufio.NewReader(r)
	if _, err := io.CopyN(io.Discard, br, 24); err != nil { // "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
		return
	}
	var hdr [9]byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return
		}
		if hdr[3] == 0x1 { // HEADERS: a new call (gRPC clients send no trailers)
			p.calls.Add(1)
		}
		length := int64(hdr[0])<<16 | int64(hdr[1])<<8 | int64(hdr[2])
		if _, err := io.CopyN(io.Discard, br, length); err != nil {
			return
		}
	}
}

func decodeEnvelope(t *testing.T, r stack.Response) envelope {
	t.Helper()
	var env envelope
	if err := json.Unmarshal(r.Body, &env); err != nil {
		t.Fatalf("HTTP %d: not an envelope: %q", r.Status, r.Body)
	}
	return env
}

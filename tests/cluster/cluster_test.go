//go:build platform

// Package cluster runs ShopMind as an operator does in microservices mode: Debian's
// etcd-server and one `shopmind serve` process per target (two gateways, two tenant
// replicas, one process for each other service), each on its own ports, finding each other
// only through etcd, on one PostgreSQL database. deploy/README.md describes the same cluster
// (and `make run-cluster` starts it); the figures this test logs are in its "Replicas and
// faults" section.
package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shopmind/shopmind/internal/discovery"
	"github.com/shopmind/shopmind/internal/testutil"
	"github.com/shopmind/shopmind/internal/testutil/proc"
	"github.com/shopmind/shopmind/internal/testutil/stack"
	"github.com/shopmind/shopmind/internal/testutil/tier"
)

func TestMain(m *testing.M) { proc.Main(m) }

const (
	// jwtSecret is the one secret every process shares (a process of a split platform
	// refuses to start without one).
	jwtSecret = "cluster-test-jwt-secret-0123456789abcdef"
	// leaseTTL is short so that a killed replica leaves etcd quickly.
	leaseTTL = 3 * time.Second
	// etcdOutage is how long etcd stays stopped (the 30 s).
	etcdOutage = 30 * time.Second
	// startTimeout bounds one process's start (registration in etcd or /readyz).
	startTimeout = 60 * time.Second
	stopTimeout  = 20 * time.Second
	// loadWorkers is the load generator's concurrency: at most this many requests are in
	// flight at any moment, hence at most this many can be lost with a killed replica.
	loadWorkers = 4
	// loadPause is each worker's pause between requests (the machine is shared).
	loadPause = 2 * time.Millisecond
	infoPath  = "/tenant/api/v1/tenant/auth/info"
	goodsPath = "/basic/api/v1/basic/goods?page_num=1&page_size=5"
)

// serviceTargets are the processes besides the gateways and the second tenant replica, in
// start order (services.All's).
var serviceTargets = []string{"tenant-1", "system", "analysis", "basic", "notify", "chat", "nl2sql", "nl2sql-provider", "crx"}

// etcdServer is Debian's etcd (the etcd-server package's /usr/bin/etcd), one member.
type etcdServer struct {
	bin, dir, client, peer string
	p                      *proc.Process
}

func startEtcd(t *testing.T) *etcdServer {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		t.Fatalf("etcd not found on PATH: install Debian's etcd-server (scripts/etcd.sh, run by `make deps`): %v", err)
	}
	ports := proc.FreePorts(t, 2)
	e := &etcdServer{bin: bin, dir: filepath.Join(t.TempDir(), "etcd"), client: "http://" + ports[0], peer: "http://" + ports[1]}
	e.start(t)
	return e
}

func (e *etcdServer) start(t *testing.T) {
	t.Helper()
	cmd := exec.Command(e.bin, "--name", "cluster-test", "--data-dir", e.dir,
		"--listen-client-urls", e.client, "--advertise-client-urls", e.client,
		"--listen-peer-urls", e.peer, "--initial-advertise-peer-urls", e.peer,
		"--initial-cluster", "cluster-test="+e.peer, "--logger", "zap", "--log-level", "error")
	e.p = proc.Start(t, "etcd", cmd)
	waitFor(t, "etcd healthy", startTimeout, e.p, func() bool {
		resp, err := http.Get(e.client + "/health")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == 200 && strings.Contains(string(b), `"health":"true"`)
	})
}

// node is one shopmind process.
type node struct {
	name, target   string
	httpAddr, grpc string // empty when the target has none
	p              *proc.Process
}

type cluster struct {
	t     *testing.T
	bin   string
	db    string
	etcd  *etcdServer
	watch *clientv3.Client
	nodes map[string]*node
	// nl2sqlProvider is where the built-in NL2SQL provider listens and the bridge calls it.
	nl2sqlProvider string
	start          time.Time
}

func (c *cluster) logf(format string, args ...any) {
	c.t.Helper()
	c.t.Logf("[%6.2fs] "+format, append([]any{time.Since(c.start).Seconds()}, args...)...)
}

// env is a process's configuration: what deploy/README.md tells an operator to set.
func (c *cluster) env(n *node) []string {
	vars := []string{
		"SHOPMIND_DATABASE_URL=" + c.db, "SHOPMIND_JWT_SECRET=" + jwtSecret,
		"SHOPMIND_ETCD_ENDPOINTS=" + c.etcd.client, "SHOPMIND_ETCD_LEASE_TTL=" + leaseTTL.String(),
		"SHOPMIND_ETCD_DIAL_TIMEOUT=1s", "SHOPMIND_DEMO_DATA=true", "SHOPMIND_ADMIN_PASSWORD=" + stack.AdminPassword,
		"SHOPMIND_CAPTCHA_MODE=off", "SHOPMIND_BCRYPT_COST=4", "SHOPMIND_RATE_LIMIT_RPS=0",
		"SHOPMIND_DATABASE_MAX_CONNS=4", "SHOPMIND_SHUTDOWN_TIMEOUT=10s", "SHOPMIND_LOG_LEVEL=warn",
		"SHOPMIND_NL2SQL_PROVIDER_ADDR=" + c.nl2sqlProvider,
	}
	if n.grpc != "" {
		vars = append(vars, "SHOPMIND_GRPC_ADDR="+n.grpc)
	}
	if n.httpAddr != "" {
		vars = append(vars, "SHOPMIND_HTTP_ADDR="+n.httpAddr)
	}
	return proc.Env(vars...)
}

// add prepares a process for target on fresh ports and starts it.
func (c *cluster) add(name, target string) *node {
	c.t.Helper()
	ports := proc.FreePorts(c.t, 2)
	n := &node{name: name, target: target, grpc: ports[0]}
	if target == "gateway" {
		n.grpc, n.httpAddr = "", ports[1]
	}
	c.nodes[name] = n
	c.run(n)
	return n
}

// run (re)starts n's process on its ports, without waiting.
func (c *cluster) run(n *node) {
	cmd := exec.Command(c.bin, "serve", "--target="+n.target)
	cmd.Env = c.env(n)
	n.p = proc.Start(c.t, n.name, cmd)
}

// ready waits until n serves: a service process is registered in etcd, a gateway answers
// /readyz 200 (every backend it needs serves).
func (c *cluster) ready(n *node) {
	c.t.Helper()
	if n.target == "gateway" {
		waitFor(c.t, n.name+" /readyz 200", startTimeout, n.p, func() bool { return get(n.httpAddr, "/readyz") == 200 })
		return
	}
	waitFor(c.t, n.name+" registered in etcd", startTimeout, n.p, func() bool { return c.registered(n) })
}

// key is n's registration: shopmind/dev/services/<target>/<host:port>.
func (n *node) key() string { return "shopmind/dev/services/" + n.target + "/" + n.grpc }

func (c *cluster) registered(n *node) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	resp, err := c.watch.Get(ctx, n.key())
	return err == nil && len(resp.Kvs) == 1
}

func (c *cluster) lease(n *node) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	resp, err := c.watch.Get(ctx, n.key())
	if err != nil || len(resp.Kvs) == 0 {
		return 0
	}
	return resp.Kvs[0].Lease
}

// rss lists each process's resident memory (VmRSS), for deploy/README.md's figures.
func (c *cluster) rss() string {
	var parts []string
	for _, n := range c.nodes {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", n.p.Cmd.Process.Pid))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				parts = append(parts, n.name+" "+strings.TrimSpace(v))
			}
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

func get(addr, path string) int {
	client := &http.Client{Timeout: 3 * time.Second}
	resp, err := client.Get("http://" + addr + path)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// waitFor polls cond every 50 ms until it holds; it fails t, with p's output, when p exits
// or within passes first.
func waitFor(t *testing.T, what string, within time.Duration, p *proc.Process, cond func() bool) time.Duration {
	t.Helper()
	began := time.Now()
	for !cond() {
		if p != nil && !p.Running() {
			t.Fatalf("%s: %s exited (%v); output:\n%s", what, p.Name, p.Err(), p.Output)
		}
		if time.Since(began) > within {
			out := ""
			if p != nil {
				out = p.Output.String()
			}
			t.Fatalf("%s: not within %v; output:\n%s", what, within, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(began)
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	tier.Needs(t, "Debian's etcd-server, PostgreSQL and the built binary")
	c := &cluster{t: t, bin: proc.Binary(t), nodes: map[string]*node{}, start: time.Now(), nl2sqlProvider: proc.FreePorts(t, 1)[0]}
	c.db = stack.NewDatabase(t).URL
	c.etcd = startEtcd(t)
	var err error
	c.watch, err = discovery.NewClient(discovery.Config{Endpoints: []string{c.etcd.client}, DialTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.watch.Close() })
	c.logf("etcd %s and database up", c.etcd.client)
	// One after the other in the order of the service list, as `all` starts them: the demo
	// seeds depend on it (tenant creates the demo tenant, analysis generates its data, basic
	// imports its goods from there). The second tenant replica comes last.
	for _, target := range serviceTargets {
		c.ready(c.add(target, strings.TrimSuffix(target, "-1")))
	}
	c.ready(c.add("tenant-2", "tenant"))
	c.logf("%d service processes registered", len(serviceTargets)+1)
	for _, name := range []string{"gateway-1", "gateway-2"} {
		c.add(name, "gateway")
	}
	c.ready(c.nodes["gateway-1"])
	c.ready(c.nodes["gateway-2"])
	c.logf("both gateways ready")
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range c.nodes {
				t.Logf("---- %s output:\n%s", n.name, tail(n.p.Output.String(), 40))
			}
		}
	})
	return c
}

func tail(s string, lines int) string {
	l := strings.Split(s, "\n")
	return strings.Join(l[max(0, len(l)-lines):], "\n")
}

// gateway is a Stack over a gateway process, for the platform tests' request helpers.
func (c *cluster) gateway(name string) *stack.Stack {
	return &stack.Stack{BaseURL: "http://" + c.nodes[name].httpAddr, HTTP: &http.Client{Timeout: 30 * time.Second}}
}

// acceptance runs the landed services' REST acceptance through gateway gw with token:
// info, goods, an analysis preview and a chat stream (whose offline analyst calls the
// analysis process through etcd).
func acceptance(t *testing.T, gw *stack.Stack, token string) {
	t.Helper()
	ok := func(method, path, body, wantIn string) testutil.Envelope {
		t.Helper()
		r := gw.Do(t, method, path, body, stack.Bearer(token)...)
		env := testutil.DecodeEnvelope(t, method+" "+path, r.Status, r.Body)
		if r.Status != 200 || env.Code != 0 || !strings.Contains(string(env.Data), wantIn) {
			t.Fatalf("%s %s via %s: HTTP %d %s (want code 0 with %q)", method, path, gw.BaseURL, r.Status, r.Body, wantIn)
		}
		return env
	}
	ok("GET", infoPath, "", `"admin"`)
	ok("GET", goodsPath, "", `"items":[{`)
	end := time.Now().UTC().Truncate(24 * time.Hour)
	ok("POST", "/api/v1/anls/query/preview", fmt.Sprintf(`{"metric_names":["gmv"],"dimensions":["shop"],"start_time":"%s","end_time":"%s"}`,
		end.AddDate(0, 0, -30).Format(time.RFC3339), end.Format(time.RFC3339)), `"rows":[[`)
	// The NL2SQL bridge reaches the built-in provider, another process, and its key is accepted.
	ok("GET", "/api/v1/nl2sql/health", "", `"api_key_valid":true`)
	chat(t, gw, token)
}

// chat sends one message and reads its event stream to [DONE]: text chunks, no error event.
func chat(t *testing.T, gw *stack.Stack, token string) {
	t.Helper()
	req, _ := http.NewRequest("POST", gw.BaseURL+"/api/v2/chat/message", strings.NewReader(`{"message":"What were sales last week?"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := gw.HTTP.Do(req)
	if err != nil {
		t.Fatalf("chat via %s: %v", gw.BaseURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("chat via %s: HTTP %d %s %s", gw.BaseURL, resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	events, done, err := testutil.SSEData(resp.Body)
	var text strings.Builder
	for _, data := range events {
		var ev struct {
			Type    string `json:"type"`
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("chat via %s: event %q: %v", gw.BaseURL, data, err)
		}
		if ev.Type == "error" {
			t.Fatalf("chat via %s: error event %s", gw.BaseURL, data)
		}
		for _, ch := range ev.Choices {
			text.WriteString(ch.Delta.Content)
		}
	}
	if !done || text.Len() == 0 {
		t.Fatalf("chat via %s: done=%v, text %q (%v)", gw.BaseURL, done, text.String(), err)
	}
}

// result is one request of the load generator.
type result struct {
	gateway    string
	began, end time.Time
	status     int
	err        error
}

// load is a bounded load generator: loadWorkers workers, each sending one request at a
// time (info and goods in turn, through the gateways in turn, pause between requests)
// until stop is called, which returns every result.
type load struct {
	stop func() []result
}

func startLoad(t *testing.T, token string, pause time.Duration, gateways ...*stack.Stack) *load {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var (
		mu      sync.Mutex
		results []result
		wg      sync.WaitGroup
		seq     atomic.Int64
	)
	client := &http.Client{Timeout: 10 * time.Second}
	for range loadWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := seq.Add(1)
				gw := gateways[int(i)%len(gateways)]
				path := infoPath
				if i%2 == 0 {
					path = goodsPath
				}
				req, _ := http.NewRequest("GET", gw.BaseURL+path, nil)
				req.Header.Set("Authorization", "Bearer "+token)
				r := result{gateway: gw.BaseURL, began: time.Now()}
				resp, err := client.Do(req)
				if err == nil {
					var env testutil.Envelope
					b, rerr := io.ReadAll(resp.Body)
					_ = resp.Body.Close()
					r.status = resp.StatusCode
					switch {
					case rerr != nil:
						err = rerr
					case json.Unmarshal(b, &env) != nil || env.Code != 0:
						err = fmt.Errorf("HTTP %d %s", resp.StatusCode, b)
					}
				}
				r.err, r.end = err, time.Now()
				mu.Lock()
				results = append(results, r)
				mu.Unlock()
				select {
				case <-ctx.Done():
				case <-time.After(pause):
				}
			}
		}()
	}
	return &load{stop: func() []result {
		cancel()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(results)
	}}
}

func failed(rs []result) []result {
	var out []result
	for _, r := range rs {
		if r.err != nil {
			out = append(out, r)
		}
	}
	return out
}

// TestCluster starts the cluster, runs the acceptance through either gateway, then the
// faults under load, in order:
//
//  1. SIGKILL of a tenant replica: only requests in flight on it at that moment fail (at
//     most one per load worker, each begun before the kill); every later request succeeds on
//     the survivor; the dead replica's key leaves etcd within its lease.
//  2. SIGTERM of a tenant replica: it deregisters and drains; not one request fails.
//  3. etcd stopped for 30 s: every process keeps serving (the acceptance passes through both
//     gateways mid-outage, the load loses nothing); when etcd returns every service process
//     is registered again.
//     Then etcd is replaced by an empty member: every process registers again, and a
//     replica that joins afterwards is reached through both gateways.
//  4. SIGKILL of a gateway: the other answers the acceptance and the load.
func TestCluster(t *testing.T) {
	c := startCluster(t)
	gw1, gw2 := c.gateway("gateway-1"), c.gateway("gateway-2")

	// A token issued through one gateway (by one tenant replica) works through the other:
	// every process verifies with the shared secret.
	token := gw1.Admin(t).Access
	acceptance(t, gw1, token)
	acceptance(t, gw2, token)
	c.logf("acceptance passed through both gateways")
	c.logf("resident memory after the acceptance: %s", c.rss())

	// Shared state: a logout through one gateway (one tenant replica revokes the token in
	// PostgreSQL) is refused by every process, the other gateway included.
	other := gw2.Admin(t).Access
	if r := gw1.Do(t, "POST", "/tenant/api/v1/tenant/auth/logout", `{}`, stack.Bearer(other)...); r.Status != 200 {
		t.Fatalf("logout: HTTP %d %s", r.Status, r.Body)
	}
	took := waitFor(t, "the revoked token refused through gateway-2", 10*time.Second, nil, func() bool {
		return gw2.Do(t, "GET", infoPath, "", stack.Bearer(other)...).Status == 401
	})
	c.logf("logout through gateway-1: the token refused through gateway-2 after %v", took.Round(time.Millisecond))

	// 1. A replica killed mid-load.
	t1, t2 := c.nodes["tenant-1"], c.nodes["tenant-2"]
	l := startLoad(t, token, loadPause, gw1, gw2)
	time.Sleep(time.Second)
	killed := time.Now()
	t1.p.Kill()
	gone := time.Now() // reaped: its sockets are closed
	time.Sleep(2 * time.Second)
	rs := l.stop()
	lost := failed(rs)
	c.logf("SIGKILL tenant-1 under load: %d requests, %d failed", len(rs), len(lost))
	for _, r := range lost {
		c.logf("  failed: began %v after SIGKILL was sent (the process was gone %v after), %v",
			r.began.Sub(killed).Round(time.Microsecond), gone.Sub(killed).Round(time.Microsecond), r.err)
		if !r.began.Before(gone) {
			t.Errorf("a request begun %v after tenant-1 was gone failed: %v", r.began.Sub(gone), r.err)
		}
	}
	if len(lost) > loadWorkers {
		t.Errorf("%d requests failed; at most %d were in flight", len(lost), loadWorkers)
	}
	waitFor(t, "tenant-1's key gone from etcd", 3*leaseTTL+5*time.Second, nil, func() bool { return !c.registered(t1) })
	c.logf("tenant-1's key left etcd %v after the kill (lease %v)", time.Since(killed).Round(10*time.Millisecond), leaseTTL)
	c.run(t1)
	c.ready(t1)
	c.logf("tenant-1 restarted and registered")

	// 2. A replica stopped with SIGTERM mid-load.
	l = startLoad(t, token, loadPause, gw1, gw2)
	time.Sleep(time.Second)
	t2.p.Stop(t, stopTimeout)
	if c.registered(t2) {
		t.Error("tenant-2 still registered after a graceful stop")
	}
	time.Sleep(time.Second)
	rs = l.stop()
	if lost := failed(rs); len(lost) > 0 {
		t.Errorf("SIGTERM of tenant-2: %d of %d requests failed, first: %v", len(lost), len(rs), lost[0].err)
	}
	c.logf("SIGTERM tenant-2 under load: %d requests, %d failed", len(rs), len(failed(rs)))
	c.run(t2)
	c.ready(t2)

	// 3. etcd stopped for 30 s.
	leases := map[string]int64{}
	for _, n := range c.nodes {
		if n.target != "gateway" {
			leases[n.name] = c.lease(n)
		}
	}
	l = startLoad(t, token, 50*time.Millisecond, gw1, gw2)
	c.etcd.p.Terminate(t, stopTimeout) // etcd exits by the signal
	c.logf("etcd stopped")
	time.Sleep(etcdOutage / 2)
	acceptance(t, gw1, token)
	acceptance(t, gw2, gw2.Admin(t).Access) // a fresh login too
	c.logf("acceptance passed through both gateways with etcd down")
	time.Sleep(etcdOutage / 2)
	c.etcd.start(t)
	c.logf("etcd back")
	var renewed int
	for _, n := range c.nodes {
		if n.target == "gateway" {
			continue
		}
		waitFor(t, n.name+" registered again", 30*time.Second, n.p, func() bool { return c.registered(n) })
		if c.lease(n) != leases[n.name] {
			renewed++
		}
	}
	c.logf("every service process registered again (%d under a new lease)", renewed)
	rs = l.stop()
	if lost := failed(rs); len(lost) > 0 {
		t.Errorf("etcd outage: %d of %d requests failed, first: %v", len(lost), len(rs), lost[0].err)
	}
	c.logf("etcd stopped %v under load: %d requests, %d failed", etcdOutage, len(rs), len(failed(rs)))

	// 3b. etcd replaced by an empty one (its data lost): every process registers again under
	// a new lease, and the gateways follow the new etcd: a tenant replica on a new address
	// joins, the two old ones leave, and both gateways reach the new one.
	c.etcd.p.Terminate(t, stopTimeout)
	if err := os.RemoveAll(c.etcd.dir); err != nil {
		t.Fatal(err)
	}
	replaced := time.Now()
	c.etcd.start(t)
	for _, n := range c.nodes {
		if n.target != "gateway" {
			waitFor(t, n.name+" registered in the new etcd", 30*time.Second, n.p, func() bool { return c.registered(n) })
		}
	}
	c.logf("etcd replaced without data: every service process registered again within %v", time.Since(replaced).Round(10*time.Millisecond))
	t3 := c.add("tenant-3", "tenant")
	c.ready(t3)
	t1.p.Stop(t, stopTimeout)
	t2.p.Stop(t, stopTimeout)
	waitFor(t, "both gateways answer through tenant-3 alone", 30*time.Second, nil, func() bool {
		return gw1.Do(t, "GET", infoPath, "", stack.Bearer(token)...).Status == 200 &&
			gw2.Do(t, "GET", infoPath, "", stack.Bearer(token)...).Status == 200
	})
	acceptance(t, gw1, token)
	acceptance(t, gw2, token)
	c.logf("tenant-3 joined through the new etcd; tenant-1 and tenant-2 stopped; acceptance passed through both gateways")

	// 4. A gateway killed: the other answers.
	l = startLoad(t, token, loadPause, gw2)
	c.nodes["gateway-1"].p.Kill()
	acceptance(t, gw2, token)
	time.Sleep(time.Second)
	rs = l.stop()
	if lost := failed(rs); len(lost) > 0 {
		t.Errorf("gateway-1 killed: %d of %d requests through gateway-2 failed, first: %v", len(lost), len(rs), lost[0].err)
	}
	c.logf("gateway-1 killed: gateway-2 answered %d requests, %d failed", len(rs), len(failed(rs)))
	if get(c.nodes["gateway-2"].httpAddr, "/readyz") != 200 {
		t.Error("gateway-2 not ready after gateway-1 was killed")
	}
}

package discovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/status"
)

// Scheme is the gRPC resolver scheme of etcd targets (etcd:///<prefix>).
const Scheme = "etcd"

// revisionCheckEvery is how often a resolver checks that etcd's revision has not gone back.
const revisionCheckEvery = 5 * time.Second

// roundRobin is the default service config of discovered connections.
const roundRobin = `{"loadBalancingConfig":[{"round_robin":{}}]}`

// Builder is a gRPC resolver for targets etcd:///<prefix>. It reads the keys that
// go.etcd.io/etcd/client/v3/naming/endpoints writes (JSON {"Op":0,"Addr":...} under
// <prefix>/...), so it interoperates with that package and with etcd's own
// naming/resolver, but it differs from the latter where ShopMind needs it to:
//
//   - a prefix with no endpoints produces an empty address list at once, so calls fail
//     fast with codes.Unavailable (a 503 envelope) instead of blocking until their
//     deadline (a 504) as they do when the resolver never reports a state;
//   - when etcd is unreachable it keeps serving the last known endpoints, also across
//     resolver rebuilds (a ClientConn that went idle and wakes up while etcd is down);
//   - a watch that fails (compaction, lost leader, closed) is re-established with a fresh
//     listing instead of silently freezing the endpoint list forever, and so is a watch
//     on an etcd whose revision went back (replaced or restored without its data), noticed
//     within revisionCheckEvery;
//   - building never blocks on etcd.
type Builder struct {
	client  *clientv3.Client
	timeout time.Duration
	log     *slog.Logger

	mu   sync.Mutex
	last map[string][]string // prefix -> last known addresses (sorted)
}

// NewResolverBuilder returns a resolver builder reading endpoints through client. Use it
// with grpc.WithResolvers; Dial does that for you. A nil logger logs to slog.Default().
func NewResolverBuilder(client *clientv3.Client, logger *slog.Logger) *Builder {
	if logger == nil {
		logger = slog.Default()
	}
	return &Builder{client: client, timeout: DefaultDialTimeout, log: logger, last: map[string][]string{}}
}

// Scheme implements resolver.Builder.
func (b *Builder) Scheme() string { return Scheme }

// Build implements resolver.Builder.
func (b *Builder) Build(target resolver.Target, cc resolver.ClientConn, _ resolver.BuildOptions) (resolver.Resolver, error) {
	prefix := strings.Trim(target.Endpoint(), "/")
	if prefix == "" {
		return nil, status.Errorf(codes.InvalidArgument, "discovery: etcd target %q has no key prefix", target.URL.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &etcdResolver{b: b, prefix: prefix, cc: cc, ctx: ctx, cancel: cancel, done: make(chan struct{}),
		log: b.log.With("prefix", prefix)}
	go r.run()
	return r, nil
}

// LastKnown returns the addresses last resolved for prefix (sorted), and whether any
// resolution happened yet.
func (b *Builder) LastKnown(prefix string) ([]string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	addrs, ok := b.last[prefix]
	return slices.Clone(addrs), ok
}

func (b *Builder) remember(prefix string, addrs []string) (changed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	old, ok := b.last[prefix]
	b.last[prefix] = addrs
	return !ok || !slices.Equal(old, addrs)
}

type etcdResolver struct {
	b      *Builder
	prefix string
	cc     resolver.ClientConn
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

// ResolveNow implements resolver.Resolver. The watch pushes every change as it happens, so
// there is nothing to do on demand.
func (r *etcdResolver) ResolveNow(resolver.ResolveNowOptions) {}

// Close implements resolver.Resolver.
func (r *etcdResolver) Close() {
	r.cancel()
	<-r.done
}

// run lists the prefix, pushes the addresses, watches for changes and, whenever listing or
// watching fails, keeps the last pushed addresses and starts over after a backoff.
func (r *etcdResolver) run() {
	defer close(r.done)
	pushed := false
	if addrs, ok := r.b.LastKnown(r.prefix); ok {
		r.push(addrs)
		pushed = true
	}
	backoff := 200 * time.Millisecond
	for {
		rev, cur, err := r.list()
		if err == nil {
			r.push(addrsOf(cur))
			pushed = true
			backoff = 200 * time.Millisecond
			err = r.watch(rev+1, cur)
		}
		if r.ctx.Err() != nil {
			return
		}
		if !pushed {
			// Nothing known yet: fail calls fast (Unavailable) rather than leave them
			// waiting for a first resolution.
			r.cc.ReportError(status.Errorf(codes.Unavailable, "discovery: cannot list %s in etcd: %v", r.prefix, err))
			pushed = true
		}
		r.log.Warn("etcd discovery interrupted; keeping the last known endpoints", "error", err, "retry_in", backoff)
		if !sleep(r.ctx, jitter(backoff)) {
			return
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// list reads every endpoint under the prefix: key -> address.
func (r *etcdResolver) list() (int64, map[string]string, error) {
	ctx, cancel := context.WithTimeout(r.ctx, r.b.timeout)
	defer cancel()
	resp, err := r.b.client.Get(ctx, r.prefix+"/", clientv3.WithPrefix())
	if err != nil {
		return 0, nil, err
	}
	cur := make(map[string]string, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		if addr, ok := r.decode(kv.Key, kv.Value); ok {
			cur[string(kv.Key)] = addr
		}
	}
	return resp.Header.Revision, cur, nil
}

// watch applies changes from revision rev on until the watch fails or r closes.
func (r *etcdResolver) watch(rev int64, cur map[string]string) error {
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(r.ctx))
	defer cancel()
	wch := r.b.client.Watch(ctx, r.prefix+"/", clientv3.WithPrefix(), clientv3.WithRev(rev))
	seen := rev - 1 // the store's revision this resolver has caught up with
	check := time.NewTicker(revisionCheckEvery)
	defer check.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return r.ctx.Err()
		case <-check.C:
			// An etcd that lost its data (replaced, restored from an older snapshot) starts
			// again from a lower revision, and a watch from our revision would wait,
			// silently, for revisions it will not reach for a long time. Noticed here, the
			// caller lists afresh.
			cctx, ccancel := context.WithTimeout(r.ctx, r.b.timeout)
			resp, err := r.b.client.Get(cctx, r.prefix+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
			ccancel()
			if err == nil && resp.Header.Revision < seen {
				return fmt.Errorf("etcd revision went back from %d to %d (etcd replaced or restored)", seen, resp.Header.Revision)
			}
		case wresp, ok := <-wch:
			if !ok {
				return errors.New("watch closed")
			}
			if err := wresp.Err(); err != nil {
				return err
			}
			seen = max(seen, wresp.Header.Revision)
			for _, ev := range wresp.Events {
				key := string(ev.Kv.Key)
				switch ev.Type {
				case clientv3.EventTypePut:
					if addr, ok := r.decode(ev.Kv.Key, ev.Kv.Value); ok {
						cur[key] = addr
					} else {
						delete(cur, key)
					}
				case clientv3.EventTypeDelete:
					delete(cur, key)
				}
			}
			if len(wresp.Events) > 0 {
				r.push(addrsOf(cur))
			}
		}
	}
}

// endpointValue is the stored form of go.etcd.io/etcd/client/v3/naming/endpoints.
type endpointValue struct {
	Op   uint8
	Addr string
}

func (r *etcdResolver) decode(key, value []byte) (string, bool) {
	var v endpointValue
	if err := json.Unmarshal(value, &v); err != nil || v.Op != 0 || v.Addr == "" {
		r.log.Warn("ignoring malformed endpoint in etcd", "key", string(key))
		return "", false
	}
	return v.Addr, true
}

func addrsOf(cur map[string]string) []string {
	addrs := make([]string, 0, len(cur))
	for _, a := range cur {
		addrs = append(addrs, a)
	}
	slices.Sort(addrs)
	return slices.Compact(addrs)
}

// push hands addrs to gRPC. An empty list is pushed too: round_robin then fails calls
// with codes.Unavailable.
func (r *etcdResolver) push(addrs []string) {
	if r.b.remember(r.prefix, addrs) {
		r.log.Info("discovered endpoints", "addrs", addrs)
	}
	eps := make([]resolver.Endpoint, len(addrs))
	for i, a := range addrs {
		eps[i] = resolver.Endpoint{Addresses: []resolver.Address{{Addr: a}}}
	}
	// An error here only means the balancer rejected the state (e.g. no addresses);
	// gRPC already fails calls accordingly.
	_ = r.cc.UpdateState(resolver.State{Endpoints: eps})
}

// Dial returns a lazy, round-robin client connection to every registered instance of
// target (etcd:///shopmind/<env>/services/<target>), with plaintext transport credentials
// unless opts override them. ctx is not used to connect: gRPC connects on first use and
// follows the registrations for the connection's lifetime; it is accepted for symmetry
// with Register. A nil logger logs to slog.Default().
func Dial(_ context.Context, cfg Config, client *clientv3.Client, target string, logger *slog.Logger, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	if client == nil {
		return nil, errors.New("discovery: dial: nil etcd client")
	}
	if target == "" {
		return nil, errors.New("discovery: dial: empty target")
	}
	b := NewResolverBuilder(client, logger)
	b.timeout = cfg.dialTimeout()
	return dialWith(cfg, b, target, opts...)
}

func dialWith(cfg Config, b *Builder, target string, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	all := append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithResolvers(b),
		grpc.WithDefaultServiceConfig(roundRobin),
	}, opts...)
	return grpc.NewClient(cfg.Target(target), all...)
}

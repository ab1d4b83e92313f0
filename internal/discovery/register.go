package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/naming/endpoints"
)

// Registration is one gRPC address registered for a target under a lease that is kept
// alive until Close. If the lease is lost (etcd restarted without its data, or unreachable
// for longer than the TTL) the address is registered again under a new lease as soon as
// etcd answers.
type Registration struct {
	client *clientv3.Client
	em     endpoints.Manager
	cfg    Config
	target string
	key    string
	addr   string
	log    *slog.Logger

	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once

	mu    sync.Mutex
	lease clientv3.LeaseID
}

// Register registers addr as an instance of target under a lease of cfg.LeaseTTL and keeps
// the lease alive in the background. The first registration is synchronous (bounded by ctx
// and cfg.DialTimeout) so that a process that cannot reach etcd fails at start. A nil
// logger logs to slog.Default().
func Register(ctx context.Context, cfg Config, client *clientv3.Client, target, addr string, logger *slog.Logger) (*Registration, error) {
	if client == nil {
		return nil, errors.New("discovery: register: nil etcd client")
	}
	if target == "" || addr == "" {
		return nil, fmt.Errorf("discovery: register: empty target (%q) or address (%q)", target, addr)
	}
	if logger == nil {
		logger = slog.Default()
	}
	prefix := cfg.Prefix(target)
	em, err := endpoints.NewManager(client, prefix)
	if err != nil {
		return nil, fmt.Errorf("discovery: register %s: %w", target, err)
	}
	r := &Registration{
		client: client, em: em, cfg: cfg, target: target, addr: addr,
		key:  prefix + "/" + addr,
		log:  logger.With("target", target, "addr", addr),
		done: make(chan struct{}),
	}
	rctx, cancel := context.WithTimeout(ctx, cfg.dialTimeout())
	defer cancel()
	lease, err := r.register(rctx)
	if err != nil {
		return nil, fmt.Errorf("discovery: register %s at %s: %w", target, addr, err)
	}
	r.lease = lease
	var loopCtx context.Context
	loopCtx, r.cancel = context.WithCancel(context.Background())
	go r.keepAlive(loopCtx, lease)
	r.log.Info("registered in etcd", "key", r.key, "lease_ttl_s", cfg.leaseTTLSeconds())
	return r, nil
}

// Key is the etcd key of the registration.
func (r *Registration) Key() string { return r.key }

// Addr is the registered address.
func (r *Registration) Addr() string { return r.addr }

// register grants a lease and puts the endpoint under it.
func (r *Registration) register(ctx context.Context) (clientv3.LeaseID, error) {
	grant, err := r.client.Grant(ctx, r.cfg.leaseTTLSeconds())
	if err != nil {
		return 0, fmt.Errorf("grant lease: %w", err)
	}
	if err := r.em.AddEndpoint(ctx, r.key, endpoints.Endpoint{Addr: r.addr}, clientv3.WithLease(grant.ID)); err != nil {
		rctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, _ = r.client.Revoke(rctx, grant.ID) // best effort: it would expire anyway
		return 0, fmt.Errorf("put %s: %w", r.key, err)
	}
	return grant.ID, nil
}

// keepAlive keeps the lease alive and registers again whenever the lease is lost, until
// ctx ends (Close) or the etcd client is closed (the process is going away).
func (r *Registration) keepAlive(ctx context.Context, lease clientv3.LeaseID) {
	defer close(r.done)
	for {
		if ch, err := r.client.KeepAlive(ctx, lease); err == nil {
			for range ch { // drain: the channel closes when the lease is lost or ctx ends
			}
		}
		if ctx.Err() != nil || r.client.Ctx().Err() != nil {
			return
		}
		r.log.Warn("etcd keepalive interrupted; resuming the lease or registering again", "lease", int64(lease))
		backoff := 200 * time.Millisecond
		for {
			id, how, err := r.recover(ctx, lease)
			if err == nil {
				lease = id
				r.mu.Lock()
				r.lease = id
				r.mu.Unlock()
				r.log.Info("registered in etcd again", "key", r.key, "lease", int64(id), "how", how)
				break
			}
			if ctx.Err() != nil || r.client.Ctx().Err() != nil {
				return
			}
			r.log.Warn("etcd registration failed; retrying", "error", err, "retry_in", backoff)
			if !sleep(ctx, jitter(backoff)) {
				return
			}
			backoff = min(2*backoff, retryCap)
		}
	}
}

// retryCap bounds the wait between two attempts to reach etcd again (registration, the
// etcd client's reconnection): once etcd is back, a registration is renewed within about
// this long, well within the lease TTL etcd grants restored leases when it restarts.
const retryCap = time.Second

// recover re-establishes the registration after its keepalive stopped. When etcd still has
// the lease (it was unreachable for a while, or restarted with its data: etcd then extends
// every lease by its TTL) the lease is resumed, so the key never disappears and callers see
// no change; when the lease is gone (expired, or etcd lost its data) the address is
// registered anew under a new lease.
func (r *Registration) recover(ctx context.Context, lease clientv3.LeaseID) (clientv3.LeaseID, string, error) {
	rctx, cancel := context.WithTimeout(ctx, r.cfg.dialTimeout())
	defer cancel()
	_, err := r.client.KeepAliveOnce(rctx, lease)
	if err == nil {
		return lease, "lease resumed", nil
	}
	if !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return 0, "", fmt.Errorf("keepalive: %w", err)
	}
	id, err := r.register(rctx)
	return id, "new lease", err
}

// Close deregisters: it stops the keepalive and revokes the lease, which deletes the key at
// once, so resolvers drop this address before the server stops. Call it before stopping the
// gRPC server. If etcd cannot be reached within ctx the key still disappears when the lease
// expires (within cfg.LeaseTTL); the error says so. Close is idempotent.
func (r *Registration) Close(ctx context.Context) error {
	var err error
	r.once.Do(func() {
		r.cancel()
		select {
		case <-r.done:
		case <-ctx.Done():
		}
		r.mu.Lock()
		lease := r.lease
		r.mu.Unlock()
		if r.client.Ctx().Err() != nil {
			err = fmt.Errorf("discovery: deregister %s: etcd client already closed; the key expires with its lease", r.key)
			return
		}
		rctx, cancel := context.WithTimeout(ctx, r.cfg.dialTimeout())
		defer cancel()
		// Revoking deletes every key attached to the lease, atomically; a key that a newer
		// process re-registered at the same address sits on another lease and survives.
		if _, rerr := r.client.Revoke(rctx, lease); rerr != nil {
			err = fmt.Errorf("discovery: deregister %s: revoke lease: %w (the key expires with its lease)", r.key, rerr)
			return
		}
		r.log.Info("deregistered from etcd", "key", r.key)
	})
	return err
}

func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d/2+1)
}

// sleep waits d or until ctx ends; it reports whether the full wait elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

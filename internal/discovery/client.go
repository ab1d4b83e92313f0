package discovery

import (
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

// NewClient opens an etcd client for cfg. It does not wait for etcd: an unreachable etcd
// shows up later, as a failed Register or as a resolver that keeps its last known
// endpoints. The etcd client's own zap logs are discarded; this package logs what matters
// through slog. Close the client after every Registration and ClientConn built on it.
func NewClient(cfg Config) (*clientv3.Client, error) {
	if !cfg.Enabled() {
		return nil, errors.New("discovery: no etcd endpoints configured (SHOPMIND_ETCD_ENDPOINTS)")
	}
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: cfg.dialTimeout(),
		// Detect a dead or partitioned etcd so watches and keepalives move on to another
		// endpoint instead of hanging on a half-open connection.
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 3 * time.Second,
		Logger:               zap.NewNop(),
		// Reconnect at least every retryCap while etcd is away (gRPC's default backoff
		// grows to two minutes): a registration must be renewed soon after etcd returns,
		// before the leases etcd restored expire.
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: retryCap},
		})},
	})
	if err != nil {
		return nil, fmt.Errorf("discovery: etcd client: %w", err)
	}
	return c, nil
}

// Package discovery is ShopMind's etcd service discovery (its settings, SHOPMIND_ETCD_*, are in
// the configuration table of the README).
//
// In microservices mode every process that hosts gRPC services registers its address in
// etcd, once per hosted target, under a lease (Register): the key is
// shopmind/<env>/services/<target>/<host:port>, written with
// go.etcd.io/etcd/client/v3/naming/endpoints, and the lease (Config.LeaseTTL, default 10s)
// is kept alive until Registration.Close, which revokes it. A process that dies stops
// renewing its lease and its key disappears within the TTL. When its keepalive stops (etcd
// unreachable or restarting) a process resumes its lease as soon as etcd answers if etcd
// still has it (a restart with its data extends every lease by its TTL), so the key never
// disappears; if the lease is gone (etcd lost its data) it registers again under a new one.
// The etcd client reconnects at least every second while etcd is away.
//
// Callers (the gateway, and services calling each other) Dial a target: a lazy gRPC client
// connection whose resolver watches etcd:///shopmind/<env>/services/<target> and balances
// round robin over the live instances. When etcd is unreachable the resolver keeps the
// last known endpoints; every 5 s it also checks that etcd's revision has not gone back (an
// etcd replaced without its data, which a resumed watch would wait on silently) and lists
// afresh when it has. A target with no instance fails calls with codes.Unavailable (the
// gateway's 503 envelope); a dead instance is skipped by round robin as soon as its
// connection breaks, and dropped from the list when its lease expires. Deadlines are the
// caller's: a slow instance yields codes.DeadlineExceeded (the gateway's 504 envelope).
//
// The gateway's edge environments (dev, local, test: token audiences and URL prefixes) are
// not etcd environments: every edge environment is served by this process's own pool
// (SHOPMIND_ETCD_ENV) unless SHOPMIND_ETCD_ENV_POOLS maps it to another (Config.PoolOf), so
// a gateway is ready as soon as its own pool serves. deploy/README.md documents the key
// layout and this routing for operators.
//
// Without SHOPMIND_ETCD_ENDPOINTS discovery stays static (SHOPMIND_SERVICE_ADDRS /
// SHOPMIND_GRPC_ADDR) and nothing here is used.
//
// # Configuration
//
//	SHOPMIND_ETCD_ENDPOINTS       comma list of etcd endpoints (host:port or http://host:port); empty = static discovery
//	SHOPMIND_ETCD_ENV             environment in the key prefix (default dev)
//	SHOPMIND_ETCD_LEASE_TTL       registration lease TTL, at least 1s (default 10s)
//	SHOPMIND_ETCD_DIAL_TIMEOUT    etcd connect/request timeout (default 5s)
//	SHOPMIND_GRPC_ADVERTISE_ADDR  host:port registered for this process (default: the gRPC
//	                              listen address, or host name:port when it listens on every interface)
//	SHOPMIND_ETCD_ENV_POOLS       edge-env=etcd-env,...: gateway environments served by another pool
//
// # Wiring (internal/app)
//
// internal/app/config.go: a field of the composed configuration, read in LoadConfig next to
// the other packages' errors:
//
//	// Discovery configures etcd service discovery (internal/discovery); off without endpoints.
//	Discovery discovery.Config
//	...
//	var derrs []string
//	cfg.Discovery, derrs = discovery.ConfigFromEnv(getenv)
//	errs = append(errs, derrs...)
//
// and the five variables are in the README's configuration table.
//
// internal/app/app.go, in Run (imports: internal/discovery and
// clientv3 "go.etcd.io/etcd/client/v3"):
//
// 1. After the database block, open the client when configured:
//
//	var etcd *clientv3.Client
//	if cfg.Discovery.Enabled() {
//		if etcd, err = discovery.NewClient(cfg.Discovery); err != nil {
//			return err
//		}
//		defer etcd.Close() // deferred first, so it runs after the deregistrations
//	}
//
// 2. Route dial through etcd for targets this process does not host; a hosted target keeps
// the loopback to our own listener, as in `all`. Cache the connection under a key that
// cannot collide with an address:
//
//	dial := func(target string) (*grpc.ClientConn, error) {
//		if etcd != nil && !has(target) {
//			return conns.getWith("etcd:"+target, func() (*grpc.ClientConn, error) {
//				return discovery.Dial(ctx, cfg.Discovery, etcd, target, log)
//			})
//		}
//		... static code as today ...
//	}
//
//	// connCache: get(addr) becomes getWith(addr, func() { return grpc.NewClient(addr, insecure) }).
//	func (c *connCache) getWith(key string, open func() (*grpc.ClientConn, error)) (*grpc.ClientConn, error)
//
// 3. Register the hosted services just before the Serve goroutines start (the listener is
// bound, so early callers queue in its backlog), one registration per hosted service, at
// the advertised address:
//
//	var regs []*discovery.Registration
//	defer func() { // failure paths; the normal path closes them in step 4 (Close is idempotent)
//		for _, reg := range regs { _ = reg.Close(context.Background()) }
//	}()
//	if etcd != nil && grpcLis != nil {
//		adv, err := cfg.Discovery.Advertise(grpcLis.Addr().String())
//		if err != nil {
//			return err
//		}
//		for _, s := range selected {
//			reg, err := discovery.Register(ctx, cfg.Discovery, etcd, s.Name, adv, log)
//			if err != nil {
//				return err
//			}
//			regs = append(regs, reg)
//		}
//	}
//
// 4. On shutdown, deregister BEFORE httpSrv.Shutdown and grpcSrv.Stop, so gateways stop
// routing new calls here while in-flight ones finish:
//
//	for _, reg := range regs {
//		if err := reg.Close(shutdownCtx); err != nil {
//			log.Warn("etcd deregister", "error", err)
//		}
//	}
//
// The gateway needs no change: a discovered ClientConn is an ordinary *grpc.ClientConn,
// and its status codes map to envelopes as before (Unavailable 503, DeadlineExceeded 504).
package discovery

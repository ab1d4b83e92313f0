// Package app assembles the one binary: it resolves the requested targets through the
// module map, opens and migrates the database, hosts the selected services on one gRPC
// server, runs the gateway, and shuts everything down gracefully.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/shopmind/shopmind/gateway"
	systemv1 "github.com/shopmind/shopmind/gen/go/shopmind/system/v1"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/config"
	"github.com/shopmind/shopmind/internal/discovery"
	"github.com/shopmind/shopmind/internal/grpcserver"
	"github.com/shopmind/shopmind/internal/inputcheck"
	"github.com/shopmind/shopmind/internal/postgres"
	"github.com/shopmind/shopmind/internal/service"
	"github.com/shopmind/shopmind/internal/waf"
	"github.com/shopmind/shopmind/internal/waf/crs"
)

// Addrs are the addresses the running app listens on (useful with port 0 in tests).
type Addrs struct {
	HTTP string // empty when the gateway is not a target
	GRPC string // empty when no service is a target
}

// Options configure Run.
type Options struct {
	Config  *config.Config
	Logger  *slog.Logger
	Targets string
	// Services are the service definitions the binary knows (services.All()).
	Services []service.Def
	// OnReady is called once every listener is up.
	OnReady func(Addrs)
}

// Run starts the targets and blocks until ctx ends, then shuts down gracefully.
func Run(ctx context.Context, opts Options) error {
	cfg, log := opts.Config, opts.Logger
	names := make([]string, len(opts.Services))
	for i, s := range opts.Services {
		names[i] = s.Name
	}
	modules, err := Resolve(opts.Targets, names)
	if err != nil {
		return err
	}
	has := func(m string) bool { return slices.Contains(modules, m) }
	var selected []service.Def
	for _, s := range opts.Services {
		if has(s.Name) {
			selected = append(selected, s)
		}
	}
	if cfg.JWTSecretGenerated {
		log.Warn("SHOPMIND_JWT_SECRET is not set: using a random secret for this process only; tokens die with it and replicas cannot verify each other's tokens. Set it before any real use.")
	}
	// Bind the ports first: a port in use is the most common start failure, and it should
	// fail at once, naming the variable, before any database work.
	var grpcLis, httpLis net.Listener
	if has(ModuleGRPCServer) {
		if grpcLis, err = listen(cfg.GRPCAddr, "SHOPMIND_GRPC_ADDR"); err != nil {
			return err
		}
		defer grpcLis.Close() // for failure paths; Serve and Stop close it otherwise
	}
	if has(TargetGateway) {
		if httpLis, err = listen(cfg.HTTPAddr, "SHOPMIND_HTTP_ADDR"); err != nil {
			return err
		}
		defer httpLis.Close()
	}
	registry := prometheus.NewRegistry()
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	var pool *pgxpool.Pool
	if has(ModuleDatabase) {
		if pool, err = openDatabase(ctx, cfg, log, selected); err != nil {
			return err
		}
		defer pool.Close()
	}
	// Background work (the revocation listener, the services' loops) runs until Run returns,
	// after the servers have drained, and has stopped before the pool closes.
	background, stopBackground := context.WithCancel(context.WithoutCancel(ctx))

	// One token verifier and one revocation list per process, shared by the gRPC services
	// and the gateway; the list is loaded before anything serves.
	tokens := authn.NewTokens(cfg.JWTSecret, cfg.Auth.AccessTTL, cfg.Auth.RefreshTTL)
	rev := authn.NewRevocations(pool, log)
	defer rev.Wait() // runs before pool.Close, after stopBackground
	defer stopBackground()
	if err := rev.Start(ctx, background); err != nil {
		return fmt.Errorf("revocation list: %w", err)
	}

	var addrs Addrs
	var grpcSrv *grpcserver.Server
	conns := &connCache{conns: map[string]*grpc.ClientConn{}}
	defer conns.closeAll()
	var etcd *clientv3.Client
	if cfg.Discovery.Enabled() {
		if etcd, err = discovery.NewClient(cfg.Discovery); err != nil {
			return fmt.Errorf("etcd: %w", err)
		}
		defer etcd.Close() // deferred before the registrations' Close, so it runs after them
	}
	// dialEnv connects to a target of an environment: our own listener for targets this
	// process hosts, etcd round robin when discovery is on, static addresses otherwise.
	dialEnv := func(env, target string) (grpc.ClientConnInterface, error) {
		if etcd != nil && (!has(target) || env != config.DefaultEnvironment) {
			dcfg := cfg.Discovery
			if env != config.DefaultEnvironment {
				dcfg.Env = env // another edge environment: its own key prefix
			} // the default environment is this process's own, SHOPMIND_ETCD_ENV
			return conns.getWith("etcd:"+dcfg.Env+":"+target, func() (*grpc.ClientConn, error) {
				return discovery.Dial(ctx, dcfg, etcd, target, log, inputcheck.DialOptions()...)
			})
		}
		addr := cfg.EnvAddrOf(env, target)
		if grpcLis != nil && (addr == cfg.GRPCAddr || has(target) && env == config.DefaultEnvironment) {
			// A target this process hosts: loopback to our own listener, and unary calls
			// in process (the same interceptor chain, no encoding or socket).
			loopback, err := conns.get(grpcLis.Addr().String())
			if err != nil || !cfg.InProcessCalls {
				return loopback, err
			}
			return grpcSrv.InProcess(loopback), nil
		}
		return conns.get(addr)
	}
	dial := func(target string) (grpc.ClientConnInterface, error) {
		return dialEnv(config.DefaultEnvironment, target)
	}
	if has(ModuleGRPCServer) {
		addrs.GRPC = grpcLis.Addr().String()
		auth, perms := newAuthenticator(cfg, tokens, rev, dial)
		if grpcSrv, err = grpcserver.New(grpcserver.Options{Logger: log, Registry: registry,
			Unary: []grpc.UnaryServerInterceptor{auth.Unary}, Stream: []grpc.StreamServerInterceptor{auth.Stream}}); err != nil {
			return err
		}
		deps := service.Deps{Config: cfg, Logger: log, DB: pool, Dial: dial, Auth: auth, Permissions: perms}
		for _, s := range selected {
			if err := s.Register(background, grpcSrv, deps); err != nil {
				return fmt.Errorf("start %s: %w", s.Name, err)
			}
			if cfg.DemoData && s.Seed != nil {
				if err := s.Seed(ctx, deps); err != nil {
					return fmt.Errorf("demo data of %s: %w", s.Name, err)
				}
			}
		}
		grpcSrv.MarkServing()
	}

	var httpSrv *http.Server
	if has(TargetGateway) {
		var backends []gateway.Backend
		for _, s := range opts.Services {
			if s.Gateway == nil {
				continue
			}
			conn, err := dial(s.Name)
			if err != nil {
				return err
			}
			backends = append(backends, gateway.Backend{Target: s.Name, Conn: conn, Register: s.Gateway, Streams: s.Streams})
		}
		// Every other environment gets its own connections, to its own addresses
		// (SHOPMIND_<ENV>_SERVICE_ADDRS, by default the same as dev's).
		envBackends := map[string][]gateway.Backend{}
		for _, env := range cfg.Edge.EnvironmentNames() {
			if env == config.DefaultEnvironment {
				continue
			}
			for _, s := range opts.Services {
				if s.Gateway == nil {
					continue
				}
				conn, err := dialEnv(env, s.Name)
				if err != nil {
					return err
				}
				envBackends[env] = append(envBackends[env], gateway.Backend{Target: s.Name, Conn: conn, Register: s.Gateway, Streams: s.Streams})
			}
		}
		var inspect func(*http.Request) waf.Verdict
		if cfg.WAF.Enabled {
			rules, err := crs.New(cfg.WAF, log)
			if err != nil {
				return fmt.Errorf("waf: %w", err)
			}
			inspect = rules.Inspect
		}
		gw, err := gateway.New(ctx, gateway.Options{WAF: gateway.WAF(inspect), Logger: log, Registry: registry, Backends: backends,
			EnvBackends: envBackends, Edge: cfg.Edge, AlwaysHTTP200: cfg.AlwaysHTTP200, MaxBodyBytes: cfg.MaxBodyBytes,
			Authenticate: newEdgeAuth(cfg, tokens, rev, dial).Middleware, Metadata: gateway.IdentityMetadata,
			SSEKeepAlive: cfg.Chat.SSEKeepAlive})
		if err != nil {
			return err
		}
		httpSrv = &http.Server{Handler: gw, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
		if err := gateway.ConfigureServer(httpSrv, cfg.Edge); err != nil { // HTTPS + HTTP/2 when configured
			return err
		}
		addrs.HTTP = httpLis.Addr().String()
	}

	// Announce the hosted services in etcd once the listener is bound.
	var regs []*discovery.Registration
	defer func() { // failure paths; the normal path closes them first thing at shutdown
		for _, reg := range regs {
			_ = reg.Close(context.Background())
		}
	}()
	if etcd != nil && grpcLis != nil {
		adv, err := cfg.Discovery.Advertise(grpcLis.Addr().String())
		if err != nil {
			return err
		}
		for _, s := range selected {
			reg, err := discovery.Register(ctx, cfg.Discovery, etcd, s.Name, adv, log)
			if err != nil {
				return fmt.Errorf("register %s in etcd: %w", s.Name, err)
			}
			regs = append(regs, reg)
		}
	}

	errc := make(chan error, 2)
	if grpcSrv != nil {
		go func() { errc <- grpcSrv.Serve(grpcLis) }()
	}
	if httpSrv != nil {
		go func() {
			if err := gateway.Serve(httpSrv, httpLis); !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
	}
	log.Info("shopmind ready", "targets", opts.Targets, "modules", modules, "http", addrs.HTTP, "grpc", addrs.GRPC)
	if opts.OnReady != nil {
		opts.OnReady(addrs)
	}

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
		log.Error("server failed", "error", runErr)
	}
	// Graceful shutdown: stop accepting, let in-flight requests finish, bounded in time.
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	for _, reg := range regs { // callers stop picking this process while in-flight calls finish
		if err := reg.Close(shutdownCtx); err != nil {
			log.Warn("etcd deregistration", "error", err)
		}
	}
	if httpSrv != nil {
		if err := httpSrv.Shutdown(shutdownCtx); err != nil {
			log.Warn("http shutdown", "error", err)
		}
	}
	if grpcSrv != nil {
		grpcSrv.Stop(shutdownCtx)
	}
	log.Info("shopmind stopped")
	return runErr
}

// listen binds addr; the error names the variable that sets it.
func listen(addr, variable string) (net.Listener, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s (set %s to another address): %w", addr, variable, err)
	}
	return lis, nil
}

func openDatabase(ctx context.Context, cfg *config.Config, log *slog.Logger, selected []service.Def) (*pgxpool.Pool, error) {
	if err := postgres.EnsureDatabase(ctx, cfg.DatabaseURL); err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	pool, err := postgres.Open(ctx, cfg.DatabaseURL, cfg.DatabaseMaxConns)
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	sets := []postgres.Migrations{authn.Migrations()}
	for _, s := range selected {
		if s.Migrations != nil {
			sets = append(sets, *s.Migrations)
		}
	}
	if err := postgres.Migrate(ctx, pool, log, sets...); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// newAuthenticator builds the services' authentication: permission checks go through the
// tenant service (replaced by a direct read when the tenant service runs here).
func newAuthenticator(cfg *config.Config, tokens *authn.Tokens, rev *authn.Revocations,
	dial func(string) (grpc.ClientConnInterface, error)) (*authn.Authenticator, *authn.CachedPermissions) {
	perms := &authn.CachedPermissions{TTL: cfg.Auth.PermissionCacheTTL,
		Source: &authn.RemotePermissions{Conn: func() (grpc.ClientConnInterface, error) { return dial("tenant") }}}
	return &authn.Authenticator{Tokens: tokens, Revocations: rev, Permissions: perms, DefaultEnv: cfg.Auth.Environment}, perms
}

// newEdgeAuth builds the gateway's authentication: local token checks, administrator paths
// through the system service with the caller's token.
func newEdgeAuth(cfg *config.Config, tokens *authn.Tokens, rev *authn.Revocations,
	dial func(string) (grpc.ClientConnInterface, error)) *gateway.EdgeAuth {
	public := cfg.Auth.PublicRoutes
	if public == nil {
		public = gateway.DefaultPublicRoutes
	}
	return &gateway.EdgeAuth{Tokens: tokens, Revocations: rev, Public: public,
		AdminCheck: func(ctx context.Context, id *authn.Identity, method, path string) (bool, error) {
			conn, err := dial("system")
			if err != nil {
				return false, err
			}
			resp, err := systemv1.NewSystemServiceClient(conn).CheckAdminPermission(authn.Outgoing(ctx),
				&systemv1.CheckAdminPermissionRequest{UserId: id.UserID, TenantId: id.TenantID, Method: method, Path: path})
			return resp.GetAllowed(), err
		}}
}

// connCache shares one client connection per backend address.
type connCache struct {
	mu    sync.Mutex
	conns map[string]*grpc.ClientConn
}

func (c *connCache) get(addr string) (*grpc.ClientConn, error) {
	return c.getWith(addr, func() (*grpc.ClientConn, error) {
		return grpc.NewClient(addr, append(inputcheck.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	})
}

// getWith returns the connection cached under key, opening it once.
func (c *connCache) getWith(key string, open func() (*grpc.ClientConn, error)) (*grpc.ClientConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if conn, ok := c.conns[key]; ok {
		return conn, nil
	}
	conn, err := open()
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", key, err)
	}
	c.conns[key] = conn
	return conn, nil
}

func (c *connCache) closeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, conn := range c.conns {
		_ = conn.Close()
	}
}

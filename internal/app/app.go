// Package app assembles the one binary. Run reads as its steps: resolve the targets to
// modules (modules.go: each module an init function and its dependencies), bind the ports,
// init and start the modules in dependency order (database, auth, discovery, the gRPC
// server, the services registering on it, serving, the gateway, the etcd registration),
// wait, and stop them in the reverse order.
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
	"github.com/shopmind/shopmind/internal/apidocs"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/config"
	"github.com/shopmind/shopmind/internal/console"
	"github.com/shopmind/shopmind/internal/discovery"
	"github.com/shopmind/shopmind/internal/grpcserver"
	"github.com/shopmind/shopmind/internal/inputcheck"
	"github.com/shopmind/shopmind/internal/postgres"
	"github.com/shopmind/shopmind/internal/service"
	"github.com/shopmind/shopmind/internal/version"
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
	Config  *Config
	Logger  *slog.Logger
	Targets string
	// Services are the service definitions the binary knows (services.All()).
	Services []service.Def
	// OnReady is called once every listener is up.
	OnReady func(Addrs)
}

// app is the state the modules share while the process runs; each module's init
// function (modules.go) fills in its part.
type app struct {
	ctx      context.Context // Run's context: the start-up's work
	cfg      *Config
	log      *slog.Logger
	opts     Options
	modules  []string      // resolved, in start order
	selected []service.Def // the hosted services, in start order
	registry *prometheus.Registry
	errc     chan error // a server that fails while serving

	grpcLis, httpLis net.Listener
	addrs            Addrs

	pool        *pgxpool.Pool
	tokens      *authn.Tokens
	rev         *authn.Revocations
	conns       *connCache
	etcd        *clientv3.Client
	grpcSrv     *grpcserver.Server
	services    context.Context // the hosted services' background work, until the gRPC server has drained
	auth        *authn.Authenticator
	permissions *authn.CachedPermissions
}

func (a *app) has(m string) bool { return slices.Contains(a.modules, m) }

// Run starts the targets and blocks until ctx ends, then shuts down gracefully.
func Run(ctx context.Context, opts Options) error {
	a, err := newApp(ctx, opts) // resolve the targets
	if err != nil {
		return err
	}
	if err := a.listen(); err != nil { // bind the ports first
		return err
	}
	defer a.closeListeners() // for failure paths; the servers close them otherwise
	started, err := a.start()
	if err != nil {
		a.stop(started)
		return err
	}
	a.log.Info("shopmind ready", "targets", opts.Targets, "modules", a.modules, "http", a.addrs.HTTP, "grpc", a.addrs.GRPC)
	if opts.OnReady != nil {
		opts.OnReady(a.addrs)
	}
	runErr := a.wait()
	a.stop(started)
	a.log.Info("shopmind stopped")
	return runErr
}

// newApp resolves the targets to the modules to run and the services to host.
func newApp(ctx context.Context, opts Options) (*app, error) {
	names := make([]string, len(opts.Services))
	for i, s := range opts.Services {
		names[i] = s.Name
	}
	modules, err := Resolve(opts.Targets, names)
	if err != nil {
		return nil, err
	}
	a := &app{ctx: ctx, cfg: opts.Config, log: opts.Logger, opts: opts, modules: modules,
		registry: prometheus.NewRegistry(), errc: make(chan error, 2), conns: &connCache{conns: map[string]*grpc.ClientConn{}}}
	for _, m := range modules { // in start order
		if i := slices.IndexFunc(opts.Services, func(s service.Def) bool { return s.Name == m }); i >= 0 {
			a.selected = append(a.selected, opts.Services[i])
		}
	}
	a.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if a.cfg.JWTSecretGenerated && a.split() {
		return nil, fmt.Errorf("SHOPMIND_JWT_SECRET is not set: this process runs %q, part of a platform split over several processes (%s), "+
			"and every process must sign and verify tokens with the same secret; set SHOPMIND_JWT_SECRET (32 bytes or more, "+
			"e.g. `openssl rand -hex 32`) to the same value in every process (deploy/README.md)", opts.Targets, a.splitReason())
	}
	if a.cfg.JWTSecretGenerated {
		a.log.Warn("SHOPMIND_JWT_SECRET is not set: using a random secret for this process only; tokens die with it and replicas cannot verify each other's tokens. Set it before any real use.")
	}
	return a, nil
}

// split reports whether this process is one of several making up the platform: it runs
// with etcd discovery, or it does not host the gateway and every service. Such a process
// cannot use a random per-process JWT secret (the others could not verify its tokens).
func (a *app) split() bool { return a.splitReason() != "" }

func (a *app) splitReason() string {
	if a.cfg.Discovery.Enabled() {
		return "SHOPMIND_ETCD_ENDPOINTS is set"
	}
	if !a.has(TargetGateway) {
		return "no gateway here"
	}
	for _, s := range a.opts.Services {
		if !a.has(s.Name) {
			return "service " + s.Name + " runs elsewhere"
		}
	}
	return ""
}

// listen binds the servers' ports: a port in use is the most common start failure, and it
// should fail at once, naming the variable, before any database work.
func (a *app) listen() (err error) {
	if a.has(ModuleGRPCServer) {
		if a.grpcLis, err = listen(a.cfg.GRPCAddr, "SHOPMIND_GRPC_ADDR"); err != nil {
			return err
		}
		a.addrs.GRPC = a.grpcLis.Addr().String()
	}
	if a.has(TargetGateway) {
		if a.httpLis, err = listen(a.cfg.HTTPAddr, "SHOPMIND_HTTP_ADDR"); err != nil {
			a.closeListeners()
			return err
		}
		a.addrs.HTTP = a.httpLis.Addr().String()
	}
	return nil
}

func (a *app) closeListeners() {
	for _, l := range []net.Listener{a.grpcLis, a.httpLis} {
		if l != nil {
			_ = l.Close()
		}
	}
}

// start inits and starts the modules in dependency order. It returns the modules to stop
// (those started so far, and the one that failed to start), also on failure.
func (a *app) start() ([]module, error) {
	table := moduleTable(names(a.opts.Services))
	var started []module
	for _, name := range a.modules {
		m, err := table[name].init(a)
		if err != nil {
			return started, err
		}
		started = append(started, m)
		if err := m.Start(a.ctx); err != nil {
			return started, err
		}
	}
	return started, nil
}

// wait blocks until the context ends or a server fails.
func (a *app) wait() error {
	select {
	case <-a.ctx.Done():
		return nil
	case err := <-a.errc:
		a.log.Error("server failed", "error", err)
		return err
	}
}

// stop stops the modules in the reverse order, bounded in time as a whole: the
// registrations close first, the servers let in-flight requests finish, background work
// ends, and the pool closes last.
func (a *app) stop(started []module) {
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.ShutdownTimeout)
	defer cancel()
	for i := len(started) - 1; i >= 0; i-- {
		_ = started[i].Stop(ctx) // each logs what it needs to
	}
}

func names(defs []service.Def) []string {
	out := make([]string, len(defs))
	for i, d := range defs {
		out[i] = d.Name
	}
	return out
}

// initDatabase opens and migrates the platform database (the authentication tables and the
// hosted services' schemas); the pool closes when the module stops.
func initDatabase(a *app) (module, error) {
	return hooks{
		start: func(ctx context.Context) (err error) {
			a.pool, err = openDatabase(ctx, &a.cfg.Config, a.log, a.selected)
			return err
		},
		stop: func(context.Context) error {
			if a.pool != nil {
				a.pool.Close()
			}
			return nil
		},
	}, nil
}

// initAuth builds the process's one token verifier and one revocation list, shared by the
// gRPC services and the gateway; the list is loaded before anything serves, and its listener
// (on its own connection) runs until the module stops, before the pool closes.
func initAuth(a *app) (module, error) {
	a.tokens = authn.NewTokens(a.cfg.JWTSecret, a.cfg.Auth.AccessTTL, a.cfg.Auth.RefreshTTL)
	background, stopBackground := context.WithCancel(context.WithoutCancel(a.ctx))
	return hooks{
		start: func(ctx context.Context) error {
			a.rev = authn.NewRevocations(a.pool, a.log)
			if err := a.rev.Start(ctx, background); err != nil {
				return fmt.Errorf("revocation list: %w", err)
			}
			return nil
		},
		stop: func(context.Context) error {
			stopBackground()
			if a.rev != nil {
				a.rev.Wait()
			}
			return nil
		},
	}, nil
}

// initDiscovery connects to etcd when discovery is on; the connections to other targets
// (a.dial) are opened on first use and closed when the module stops.
func initDiscovery(a *app) (module, error) {
	return hooks{
		start: func(context.Context) (err error) {
			if a.cfg.Discovery.Enabled() {
				if a.etcd, err = discovery.NewClient(a.cfg.Discovery); err != nil {
					return fmt.Errorf("etcd: %w", err)
				}
			}
			return nil
		},
		stop: func(context.Context) error {
			a.conns.closeAll()
			if a.etcd != nil {
				return a.etcd.Close()
			}
			return nil
		},
	}, nil
}

// initGRPCServer builds the gRPC server the hosted services register on, with the shared
// authentication. The services' background work lives until the server stops, which
// happens after it has drained (grpc-serve stops first).
func initGRPCServer(a *app) (module, error) {
	a.auth, a.permissions = newAuthenticator(&a.cfg.Config, a.tokens, a.rev, a.dial)
	srv, err := grpcserver.New(grpcserver.Options{Logger: a.log, Registry: a.registry,
		Unary: []grpc.UnaryServerInterceptor{a.auth.Unary}, Stream: []grpc.StreamServerInterceptor{a.auth.Stream}})
	if err != nil {
		return nil, err
	}
	a.grpcSrv = srv
	var stopServices context.CancelFunc
	a.services, stopServices = context.WithCancel(context.WithoutCancel(a.ctx))
	return hooks{stop: func(context.Context) error { stopServices(); return nil }}, nil
}

// initService registers a hosted service on the gRPC server (its background work runs on
// the server's services context) and seeds its demo data when asked to.
func initService(name string) func(*app) (module, error) {
	return func(a *app) (module, error) {
		i := slices.IndexFunc(a.selected, func(s service.Def) bool { return s.Name == name })
		s := a.selected[i]
		return hooks{stop: s.Stop, start: func(ctx context.Context) error {
			deps := a.deps()
			deps.Settings = a.cfg.Services[s.Name]
			if err := s.Register(a.services, a.grpcSrv, deps); err != nil {
				return fmt.Errorf("start %s: %w", s.Name, err)
			}
			if a.cfg.DemoData && s.Seed != nil {
				if err := s.Seed(ctx, deps); err != nil {
					return fmt.Errorf("demo data of %s: %w", s.Name, err)
				}
			}
			return nil
		}}, nil
	}
}

// deps are what the hosted services receive.
func (a *app) deps() service.Deps {
	return service.Deps{Config: &a.cfg.Config, Logger: a.log, DB: a.pool, Dial: a.dial, Auth: a.auth, Permissions: a.permissions}
}

// initGRPCServe serves the gRPC server once every hosted service has registered; stopping
// it lets in-flight calls finish, bounded by the shutdown timeout.
func initGRPCServe(a *app) (module, error) {
	return hooks{
		start: func(context.Context) error {
			a.grpcSrv.MarkServing()
			go func() { a.errc <- a.grpcSrv.Serve(a.grpcLis) }()
			return nil
		},
		stop: func(ctx context.Context) error {
			a.grpcSrv.Stop(ctx)
			return nil
		},
	}, nil
}

// initGateway builds the HTTP edge in front of every service that has REST routes (dialled
// through a.dial, in process for the hosted ones) and serves it; stopping it lets in-flight
// requests finish.
func initGateway(a *app) (module, error) {
	cfg := a.cfg
	var httpSrv *http.Server
	return hooks{
		start: func(ctx context.Context) error {
			var backends []gateway.Backend
			for _, s := range a.opts.Services {
				if s.Gateway == nil {
					continue
				}
				conn, err := a.dial(s.Name)
				if err != nil {
					return err
				}
				backends = append(backends, gateway.Backend{Target: s.Name, Conn: conn, Register: s.Gateway, Streams: s.Streams, Topics: s.Topics, Uploads: s.Uploads})
			}
			// Every other environment gets its own connections, to its own addresses
			// (SHOPMIND_<ENV>_SERVICE_ADDRS, by default the same as dev's).
			envBackends := map[string][]gateway.Backend{}
			for _, env := range cfg.Edge.EnvironmentNames() {
				if env == gateway.DefaultEnvironment {
					continue
				}
				for _, s := range a.opts.Services {
					if s.Gateway == nil {
						continue
					}
					conn, err := a.dialEnv(env, s.Name)
					if err != nil {
						return err
					}
					envBackends[env] = append(envBackends[env], gateway.Backend{Target: s.Name, Conn: conn, Register: s.Gateway, Streams: s.Streams, Topics: s.Topics, Uploads: s.Uploads})
				}
			}
			var inspect func(*http.Request) waf.Verdict
			if cfg.WAF.Enabled {
				rules, err := crs.New(cfg.WAF, a.log)
				if err != nil {
					return fmt.Errorf("waf: %w", err)
				}
				inspect = rules.Inspect
			}
			gw, err := gateway.New(ctx, gateway.Options{WAF: gateway.WAF(inspect), Logger: a.log, Registry: a.registry, Backends: backends,
				EnvBackends: envBackends, Edge: cfg.Edge, AlwaysHTTP200: cfg.AlwaysHTTP200, MaxBodyBytes: cfg.MaxBodyBytes,
				Authenticate: newEdgeAuth(&cfg.Config, a.tokens, a.rev, a.dial).Middleware, Metadata: gateway.IdentityMetadata,
				Documentation: apidocs.Handler(version.Version), DocumentationPaths: apidocs.Handles, Console: console.Handler(),
				SSEKeepAlive: cfg.Edge.SSEKeepAlive, RealtimeHeartbeat: cfg.Edge.RealtimeHeartbeat})
			if err != nil {
				return err
			}
			srv := &http.Server{Handler: gw, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
			if err := gateway.ConfigureServer(srv, cfg.Edge); err != nil { // HTTPS + HTTP/2 when configured
				return err
			}
			httpSrv = srv
			go func() {
				if err := gateway.Serve(srv, a.httpLis); !errors.Is(err, http.ErrServerClosed) {
					a.errc <- err
				}
			}()
			return nil
		},
		stop: func(ctx context.Context) error {
			if httpSrv == nil {
				return nil
			}
			if err := httpSrv.Shutdown(ctx); err != nil {
				a.log.Warn("http shutdown", "error", err)
			}
			return nil
		},
	}, nil
}

// initRegistration announces the hosted services in etcd (when discovery is on) once they
// serve; at shutdown the registrations close first, so that callers stop picking this
// process while its in-flight calls finish.
func initRegistration(a *app) (module, error) {
	var regs []*discovery.Registration
	return hooks{
		start: func(ctx context.Context) error {
			if a.etcd == nil || a.grpcLis == nil {
				return nil
			}
			adv, err := a.cfg.Discovery.Advertise(a.grpcLis.Addr().String())
			if err != nil {
				return err
			}
			for _, s := range a.selected {
				reg, err := discovery.Register(ctx, a.cfg.Discovery, a.etcd, s.Name, adv, a.log)
				if err != nil {
					return fmt.Errorf("register %s in etcd: %w", s.Name, err)
				}
				regs = append(regs, reg)
			}
			return nil
		},
		stop: func(ctx context.Context) error {
			for _, reg := range regs {
				if err := reg.Close(ctx); err != nil {
					a.log.Warn("etcd deregistration", "error", err)
				}
			}
			return nil
		},
	}, nil
}

// dialEnv connects to a target of an edge environment: our own listener for targets this
// process hosts in that environment's pool, etcd round robin when discovery is on, static
// addresses otherwise. With etcd, an edge environment is served by the pool of
// SHOPMIND_ETCD_ENV_POOLS (its own key prefix) or, when not listed there, by this process's
// own pool (SHOPMIND_ETCD_ENV), as static addresses default to dev's.
func (a *app) dialEnv(env, target string) (grpc.ClientConnInterface, error) {
	cfg := a.cfg
	hostedHere := a.has(target) && env == gateway.DefaultEnvironment
	if a.etcd != nil {
		dcfg := cfg.Discovery
		dcfg.Env = cfg.Discovery.PoolOf(env)
		hostedHere = a.has(target) && dcfg.Env == cfg.Discovery.PoolOf(gateway.DefaultEnvironment)
		if !hostedHere {
			return a.conns.getWith("etcd:"+dcfg.Env+":"+target, func() (*grpc.ClientConn, error) {
				return discovery.Dial(a.ctx, dcfg, a.etcd, target, a.log, inputcheck.DialOptions()...)
			})
		}
	}
	addr := cfg.EnvAddrOf(env, target)
	if a.grpcLis != nil && (addr == cfg.GRPCAddr || hostedHere) {
		// A target this process hosts: loopback to our own listener, and unary calls in
		// process (the same interceptor chain, no encoding or socket).
		loopback, err := a.conns.get(a.grpcLis.Addr().String())
		if err != nil || !cfg.InProcessCalls {
			return loopback, err
		}
		return a.grpcSrv.InProcess(loopback), nil
	}
	return a.conns.get(addr)
}

// dial connects to a target of this process's environment.
func (a *app) dial(target string) (grpc.ClientConnInterface, error) {
	return a.dialEnv(gateway.DefaultEnvironment, target)
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
		AdminCheck: func(ctx context.Context, id *authn.Identity, method, path string) (bool, string, error) {
			conn, err := dial("system")
			if err != nil {
				return false, "", err
			}
			resp, err := systemv1.NewSystemServiceClient(conn).CheckAdminPermission(authn.Outgoing(ctx),
				&systemv1.CheckAdminPermissionRequest{UserId: id.UserID, TenantId: id.TenantID, Method: method, Path: path})
			return resp.GetAllowed(), resp.GetReason(), err
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

package discovery

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"
)

// Defaults of the SHOPMIND_ETCD_* variables.
const (
	DefaultEnv         = "dev"
	DefaultLeaseTTL    = 10 * time.Second
	DefaultDialTimeout = 5 * time.Second
)

// Config configures etcd service discovery. The zero Config (no Endpoints) means static
// discovery: nothing registers and nothing resolves through etcd.
type Config struct {
	// Endpoints are the etcd client endpoints (host:port or http://host:port).
	Endpoints []string
	// Env names the environment; every key lives under shopmind/<Env>/services/, so several
	// environments can share one etcd cluster without seeing each other's backends.
	Env string
	// LeaseTTL is how long a registration outlives its process (whole seconds, at least 1s):
	// a backend that dies without deregistering disappears from resolvers within it.
	LeaseTTL time.Duration
	// DialTimeout bounds connecting to etcd and each single etcd request made on a
	// caller's behalf (first registration, deregistration, resolver listing).
	DialTimeout time.Duration
	// EnvPools maps a gateway edge environment (local, test, ...; SHOPMIND_ENVIRONMENTS) to
	// the etcd environment whose registrations serve it (SHOPMIND_ETCD_ENV_POOLS). An edge
	// environment not listed is served by Env, this process's own pool.
	EnvPools map[string]string
	// AdvertiseAddr is the host:port other processes dial to reach this process's gRPC
	// server. Empty: derived from the listen address (see Advertise).
	AdvertiseAddr string
}

// Enabled reports whether etcd discovery is configured.
func (c Config) Enabled() bool { return len(c.Endpoints) > 0 }

// Prefix is the etcd key prefix under which the instances of target register, without a
// trailing slash: shopmind/<env>/services/<target>. Each instance's key is Prefix + "/" + addr.
func (c Config) Prefix(target string) string {
	env := c.Env
	if env == "" {
		env = DefaultEnv
	}
	return "shopmind/" + env + "/services/" + target
}

// PoolOf is the etcd environment (key prefix shopmind/<pool>/services/) whose instances
// serve the gateway edge environment edgeEnv: its SHOPMIND_ETCD_ENV_POOLS entry, or this
// process's own (Env) when it has none.
func (c Config) PoolOf(edgeEnv string) string {
	if pool, ok := c.EnvPools[edgeEnv]; ok {
		return pool
	}
	if c.Env == "" {
		return DefaultEnv
	}
	return c.Env
}

// Target is the gRPC dial target that resolves target through etcd:
// etcd:///shopmind/<env>/services/<target>.
func (c Config) Target(target string) string {
	return Scheme + ":///" + c.Prefix(target)
}

func (c Config) leaseTTLSeconds() int64 {
	ttl := c.LeaseTTL
	if ttl <= 0 {
		ttl = DefaultLeaseTTL
	}
	return int64(math.Ceil(ttl.Seconds()))
}

func (c Config) dialTimeout() time.Duration {
	if c.DialTimeout <= 0 {
		return DefaultDialTimeout
	}
	return c.DialTimeout
}

var envPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// ConfigFromEnv reads the discovery variables through getenv (os.Getenv in production):
//
//	SHOPMIND_ETCD_ENDPOINTS       comma list of etcd endpoints; empty = static discovery
//	SHOPMIND_ETCD_ENV             environment in the key prefix (default dev)
//	SHOPMIND_ETCD_LEASE_TTL       registration lease TTL (default 10s, at least 1s)
//	SHOPMIND_ETCD_DIAL_TIMEOUT    etcd dial/request timeout (default 5s)
//	SHOPMIND_GRPC_ADVERTISE_ADDR  host:port registered for this process (default: derived)
//	SHOPMIND_ETCD_ENV_POOLS       edge-env=etcd-env,... : gateway environments served by
//	                              another pool (default: every one by SHOPMIND_ETCD_ENV's)
//
// It returns every problem found, each message naming its variable, in the style of
// internal/config.
func ConfigFromEnv(getenv func(string) string) (Config, []string) {
	env := func(key, def string) string {
		if v := strings.TrimSpace(getenv(key)); v != "" {
			return v
		}
		return def
	}
	var errs []string
	cfg := Config{Env: env("SHOPMIND_ETCD_ENV", DefaultEnv)}
	for _, ep := range strings.Split(getenv("SHOPMIND_ETCD_ENDPOINTS"), ",") {
		ep = strings.TrimSpace(ep)
		if ep == "" {
			continue
		}
		if err := checkEndpoint(ep); err != nil {
			errs = append(errs, fmt.Sprintf("SHOPMIND_ETCD_ENDPOINTS: %q %s", ep, err))
			continue
		}
		cfg.Endpoints = append(cfg.Endpoints, ep)
	}
	if !envPattern.MatchString(cfg.Env) {
		errs = append(errs, fmt.Sprintf("SHOPMIND_ETCD_ENV: %q is not a lowercase name (a-z, 0-9, '.', '_', '-')", cfg.Env))
	}
	if v := strings.TrimSpace(getenv("SHOPMIND_ETCD_ENV_POOLS")); v != "" {
		cfg.EnvPools = map[string]string{}
		for _, pair := range strings.Split(v, ",") {
			edge, pool, ok := strings.Cut(strings.TrimSpace(pair), "=")
			edge, pool = strings.TrimSpace(edge), strings.TrimSpace(pool)
			switch {
			case !ok || edge == "" || !envPattern.MatchString(pool):
				errs = append(errs, fmt.Sprintf("SHOPMIND_ETCD_ENV_POOLS: %q is not edge-environment=etcd-environment (lowercase names)", pair))
			case cfg.EnvPools[edge] != "":
				errs = append(errs, fmt.Sprintf("SHOPMIND_ETCD_ENV_POOLS: %q is listed twice", edge))
			default:
				cfg.EnvPools[edge] = pool
			}
		}
	}
	var err error
	if cfg.LeaseTTL, err = time.ParseDuration(env("SHOPMIND_ETCD_LEASE_TTL", DefaultLeaseTTL.String())); err != nil || cfg.LeaseTTL < time.Second {
		errs = append(errs, "SHOPMIND_ETCD_LEASE_TTL: not a duration of at least 1s")
	}
	if cfg.DialTimeout, err = time.ParseDuration(env("SHOPMIND_ETCD_DIAL_TIMEOUT", DefaultDialTimeout.String())); err != nil || cfg.DialTimeout <= 0 {
		errs = append(errs, "SHOPMIND_ETCD_DIAL_TIMEOUT: not a positive duration")
	}
	if v := env("SHOPMIND_GRPC_ADVERTISE_ADDR", ""); v != "" {
		host, port, err := net.SplitHostPort(v)
		switch {
		case err != nil || port == "" || port == "0":
			errs = append(errs, fmt.Sprintf("SHOPMIND_GRPC_ADVERTISE_ADDR: %q is not host:port", v))
		case isWildcard(host):
			errs = append(errs, fmt.Sprintf("SHOPMIND_GRPC_ADVERTISE_ADDR: %q has no host others can dial", v))
		default:
			cfg.AdvertiseAddr = v
		}
	}
	return cfg, errs
}

func checkEndpoint(ep string) error {
	hostport := ep
	if strings.Contains(ep, "://") {
		u, err := url.Parse(ep)
		if err != nil || u.Host == "" {
			return fmt.Errorf("is not host:port or http://host:port")
		}
		if u.Scheme != "http" {
			return fmt.Errorf("has scheme %q: only plain http endpoints are supported (no TLS yet)", u.Scheme)
		}
		hostport = u.Host
	}
	if _, port, err := net.SplitHostPort(hostport); err != nil || port == "" {
		return fmt.Errorf("is not host:port or http://host:port")
	}
	return nil
}

func isWildcard(host string) bool {
	if host == "" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}

// Advertise is the address to register for a gRPC server listening on listenAddr
// (pass the listener's real address, so that port 0 is resolved): cfg.AdvertiseAddr when
// set; listenAddr when its host is a specific one (127.0.0.1:9090, 10.0.0.5:9090); the
// machine's host name with the listen port when it listens on every interface
// (:9090, 0.0.0.0:9090, [::]:9090), which is what container platforms resolve.
func (c Config) Advertise(listenAddr string) (string, error) {
	if c.AdvertiseAddr != "" {
		return c.AdvertiseAddr, nil
	}
	host, port, err := net.SplitHostPort(listenAddr)
	if err != nil {
		return "", fmt.Errorf("discovery: listen address %q: %w", listenAddr, err)
	}
	if !isWildcard(host) {
		return listenAddr, nil
	}
	name, err := os.Hostname()
	if err != nil || name == "" {
		return "", fmt.Errorf("discovery: %s listens on every interface and the host name is unknown (%v): set SHOPMIND_GRPC_ADVERTISE_ADDR", listenAddr, err)
	}
	return net.JoinHostPort(name, port), nil
}

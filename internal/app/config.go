package app

import (
	"fmt"
	"os"
	"slices"

	"github.com/shopmind/shopmind/gateway"
	"github.com/shopmind/shopmind/internal/config"
	"github.com/shopmind/shopmind/internal/discovery"
	"github.com/shopmind/shopmind/internal/service"
)

// Config is the process's configuration, composed here from the packages that own their
// variables: the platform's (internal/config, which composes the WAF's), the gateway edge's
// (gateway), etcd discovery's (internal/discovery) and each service's (service.Def.Config).
// Every variable is in the README's configuration table or a document it points to.
type Config struct {
	config.Config
	// Edge configures the gateway edge (gateway.LoadConfig).
	Edge gateway.EdgeConfig
	// Discovery configures etcd service discovery; off without SHOPMIND_ETCD_ENDPOINTS.
	Discovery discovery.Config
	// Services are the services' own configurations by service name, what their
	// Def.Config returned (a pointer to the service's type); each receives its own as
	// service.Deps.Settings.
	Services map[string]any
}

// LoadConfig reads the configuration through getenv for the services in defs. It fails on
// malformed values with one error naming each variable, all of them together.
func LoadConfig(getenv func(string) string, defs []service.Def) (*Config, error) {
	platform, errs := config.Read(getenv)
	cfg := &Config{Config: *platform}
	var edgeErrs, derrs []string
	cfg.Edge, edgeErrs = gateway.LoadConfig(getenv)
	errs = append(errs, edgeErrs...)
	cfg.Services = map[string]any{}
	for _, d := range defs {
		if d.Config == nil {
			continue
		}
		settings, serrs := d.Config(getenv)
		cfg.Services[d.Name] = settings
		errs = append(errs, serrs...)
	}
	cfg.Discovery, derrs = discovery.ConfigFromEnv(getenv)
	errs = append(errs, derrs...)
	for edge := range cfg.Discovery.EnvPools { // an edge environment's pool: the edge must know it
		switch {
		case edge == gateway.DefaultEnvironment:
			errs = append(errs, fmt.Sprintf("SHOPMIND_ETCD_ENV_POOLS: %s is always served by SHOPMIND_ETCD_ENV's pool", edge))
		case !slices.Contains(cfg.Edge.EnvironmentNames(), edge):
			errs = append(errs, fmt.Sprintf("SHOPMIND_ETCD_ENV_POOLS: %q is not an environment of SHOPMIND_ENVIRONMENTS", edge))
		}
	}
	if len(errs) > 0 {
		return nil, config.Errors(errs)
	}
	return cfg, nil
}

// LoadConfigFromMap is LoadConfig reading a map instead of the environment (tests, tools).
func LoadConfigFromMap(vars map[string]string, defs []service.Def) (*Config, error) {
	return LoadConfig(func(k string) string { return vars[k] }, defs)
}

// LoadEnv is LoadConfig reading the process's environment.
func LoadEnv(defs []service.Def) (*Config, error) {
	return LoadConfig(os.Getenv, defs)
}

// EnvAddrOf returns the gRPC address the gateway dials for a target in an environment: the
// environment's own map first, then the dev address (AddrOf).
func (c *Config) EnvAddrOf(env, target string) string {
	if a, ok := c.Edge.EnvServiceAddrs[env][target]; ok {
		return a
	}
	return c.AddrOf(target)
}

// ServiceConfig returns service name's configuration in c, of type *T (tests adjust it
// through a stack.Option). It panics when the service has none of that type.
func ServiceConfig[T any](c *Config, name string) *T {
	s, ok := c.Services[name].(*T)
	if !ok {
		panic(fmt.Sprintf("app: service %s has no configuration of type %T", name, (*T)(nil)))
	}
	return s
}

package app

import (
	"os"

	"github.com/shopmind/shopmind/gateway"
	"github.com/shopmind/shopmind/internal/config"
	"github.com/shopmind/shopmind/internal/discovery"
	"github.com/shopmind/shopmind/internal/service"
)

// Config is the process's configuration, composed here from the packages that own their
// variables: the platform's (internal/config, which composes the WAF's), the gateway edge's
// (gateway) and etcd discovery's (internal/discovery). Every variable is in the README's configuration table
// or a document it points to.
type Config struct {
	config.Config
	// Edge configures the gateway edge (gateway.LoadConfig).
	Edge gateway.EdgeConfig
	// Discovery configures etcd service discovery; off without SHOPMIND_ETCD_ENDPOINTS.
	Discovery discovery.Config
}

// LoadConfig reads the configuration through getenv for the services in defs. It fails on
// malformed values with one error naming each variable, all of them together.
func LoadConfig(getenv func(string) string, defs []service.Def) (*Config, error) {
	platform, errs := config.Read(getenv)
	cfg := &Config{Config: *platform}
	var edgeErrs, derrs []string
	cfg.Edge, edgeErrs = gateway.LoadConfig(getenv)
	errs = append(errs, edgeErrs...)
	cfg.Discovery, derrs = discovery.ConfigFromEnv(getenv)
	errs = append(errs, derrs...)
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

// Package config reads the platform's configuration from the environment: mode,
// addresses, database, tokens and login protection, logging, the demo tenant, the
// analytical store, in-process calls, body limits, the HTTP status mode (and the WAF's,
// which internal/waf reads). Every variable is listed in the README's configuration table;
// Read is the only place that reads the platform's variables (commands read their own
// inputs, such as `shopmind tenant create`'s SHOPMIND_TENANT_ADMIN_PASSWORD). The process's
// whole configuration, with etcd discovery's, is composed by internal/app.LoadConfig.
package config

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/shopmind/shopmind/internal/waf"
)

// Mode is the run mode: development tolerates missing secrets, production refuses them.
type Mode string

// Run modes.
const (
	ModeDevelopment Mode = "development"
	ModeProduction  Mode = "production"
)

// Config is the whole platform configuration.
type Config struct {
	Mode Mode
	// HTTPAddr is the gateway's listen address.
	HTTPAddr string
	// GRPCAddr is the gRPC listen address of the backend targets.
	GRPCAddr string
	// ServiceAddrs maps a target to the gRPC address the gateway dials (static discovery).
	// Targets absent from the map are dialled at GRPCAddr.
	ServiceAddrs map[string]string
	// DatabaseURL is the platform PostgreSQL database (created when missing). pgx's pool
	// parameters (pool_max_conns, ...) may be given in it.
	DatabaseURL string
	// DatabaseMaxConns caps the process's connection pool (SHOPMIND_DATABASE_MAX_CONNS, at
	// least postgres.MinMaxConns; 0: the URL's pool_max_conns, else
	// postgres.DefaultMaxConns(), two per core and at least 4). The revocation listener
	// keeps a connection of its own outside the pool.
	DatabaseMaxConns int
	// JWTSecret signs and verifies tokens (HS256).
	JWTSecret string
	// JWTSecretGenerated is true when no secret was configured and a random one is in use.
	JWTSecretGenerated bool
	// DemoTenant creates tenant demo on first start (SHOPMIND_DEMO_TENANT; default true in
	// development, false in production).
	DemoTenant bool
	// AdminPassword and DemoAnalystPassword are the passwords of users admin and analyst of
	// tenant demo, set when it is created. Development defaults to admin123 / analyst123;
	// production has no default: both are empty without the demo tenant and must pass
	// CheckPassword with it.
	AdminPassword       string
	DemoAnalystPassword string
	// CaptchaMode is always, on-failure or off.
	CaptchaMode string
	// DemoData seeds the demo tenant with data on start; false without DemoTenant.
	DemoData bool
	// AlwaysHTTP200 answers every envelope with HTTP 200 (the code carries the meaning).
	AlwaysHTTP200 bool
	// LogLevel is debug, info, warn or error.
	LogLevel slog.Level
	// ShutdownTimeout bounds the graceful shutdown.
	ShutdownTimeout time.Duration
	// MaxBodyBytes bounds request bodies at the gateway.
	MaxBodyBytes int64
	// InProcessCalls makes unary calls between targets hosted by one process (the gateway's
	// included) run in the process, through the server's interceptor chain, instead of over
	// a loopback gRPC connection (SHOPMIND_IN_PROCESS_CALLS, default true).
	InProcessCalls bool
	// Auth configures tokens and login protection (auth.go).
	Auth AuthConfig
	// WAF configures the web application firewall (internal/waf, which reads its own
	// variables).
	WAF waf.Config
	// Analytics configures the analytical store (analytics.go).
	Analytics AnalyticsConfig
}

// placeholderSecrets are values that must never sign tokens in production.
var placeholderSecrets = map[string]bool{
	"": true, "changeme": true, "change-me": true, "secret": true, "<jwt_secret>": true,
	"your-secret": true, "jwt_secret": true, "please-change": true,
}

// MinSecretLen is the shortest JWT secret accepted in production (256 bits, RFC 7518 3.2).
const MinSecretLen = 32

// DemoTenantCode is the code of the demo tenant.
const DemoTenantCode = "demo"

// Development passwords of the demo tenant's users; never used in production.
const (
	DevAdminPassword   = "admin123"
	DevAnalystPassword = "analyst123"
)

// FromMap reads the configuration from a map instead of the environment (tests, tools).
func FromMap(vars map[string]string) (*Config, error) {
	return load(func(k string) string { return vars[k] })
}

func load(getenv func(string) string) (*Config, error) {
	cfg, errs := Read(getenv)
	if len(errs) > 0 {
		return nil, Errors(errs)
	}
	return cfg, nil
}

// Errors joins the messages of malformed variables, each naming its variable, into the
// configuration error.
func Errors(errs []string) error {
	return fmt.Errorf("configuration: %s", strings.Join(errs, "; "))
}

// Read reads the platform's variables through getenv and returns the configuration with a
// message naming the variable for each malformed value (none when it is valid). The
// composition root (internal/app.LoadConfig) adds the other packages' variables.
func Read(getenv func(string) string) (*Config, []string) {
	env := func(key, def string) string {
		if v := strings.TrimSpace(getenv(key)); v != "" {
			return v
		}
		return def
	}
	cfg := &Config{
		Mode:        Mode(env("SHOPMIND_MODE", string(ModeDevelopment))),
		HTTPAddr:    env("SHOPMIND_HTTP_ADDR", "127.0.0.1:8080"),
		GRPCAddr:    env("SHOPMIND_GRPC_ADDR", "127.0.0.1:9090"),
		DatabaseURL: env("SHOPMIND_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/shopmind?sslmode=disable"),
		JWTSecret:   getenv("SHOPMIND_JWT_SECRET"),
		CaptchaMode: env("SHOPMIND_CAPTCHA_MODE", "on-failure"),
	}
	var errs []string
	if cfg.Mode != ModeDevelopment && cfg.Mode != ModeProduction {
		errs = append(errs, fmt.Sprintf("SHOPMIND_MODE: %q is not development or production", cfg.Mode))
	}
	switch cfg.CaptchaMode {
	case "always", "on-failure", "off":
	default:
		errs = append(errs, fmt.Sprintf("SHOPMIND_CAPTCHA_MODE: %q is not always, on-failure or off", cfg.CaptchaMode))
	}
	boolVar := func(key string, def bool) bool {
		v := getenv(key)
		if v == "" {
			return def
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %q is not a boolean", key, v))
		}
		return b
	}
	cfg.DemoTenant = boolVar("SHOPMIND_DEMO_TENANT", cfg.Mode != ModeProduction)
	// Demo data belongs in the demo tenant only: never seeded into another tenant that
	// happens to be called demo.
	cfg.DemoData = boolVar("SHOPMIND_DEMO_DATA", false) && cfg.DemoTenant
	loadDemoPasswords(cfg, getenv, &errs)
	cfg.InProcessCalls = boolVar("SHOPMIND_IN_PROCESS_CALLS", true)
	switch v := env("SHOPMIND_HTTP_STATUS", "mapped"); v {
	case "mapped":
	case "always-200":
		cfg.AlwaysHTTP200 = true
	default:
		errs = append(errs, fmt.Sprintf("SHOPMIND_HTTP_STATUS: %q is not mapped or always-200", v))
	}
	if err := cfg.LogLevel.UnmarshalText([]byte(env("SHOPMIND_LOG_LEVEL", "info"))); err != nil {
		errs = append(errs, "SHOPMIND_LOG_LEVEL: "+err.Error())
	}
	var err error
	if cfg.ShutdownTimeout, err = time.ParseDuration(env("SHOPMIND_SHUTDOWN_TIMEOUT", "20s")); err != nil || cfg.ShutdownTimeout <= 0 {
		errs = append(errs, "SHOPMIND_SHUTDOWN_TIMEOUT: not a positive duration")
	}
	cfg.DatabaseMaxConns = Vars{getenv, &errs}.Integer("SHOPMIND_DATABASE_MAX_CONNS", 0, 4, 10000) // 4: postgres.MinMaxConns
	if cfg.MaxBodyBytes, err = strconv.ParseInt(env("SHOPMIND_MAX_BODY_BYTES", "4194304"), 10, 64); err != nil || cfg.MaxBodyBytes <= 0 {
		errs = append(errs, "SHOPMIND_MAX_BODY_BYTES: not a positive integer")
	}
	cfg.ServiceAddrs = map[string]string{}
	if v := getenv("SHOPMIND_SERVICE_ADDRS"); v != "" {
		for _, pair := range strings.Split(v, ",") {
			name, addr, ok := strings.Cut(strings.TrimSpace(pair), "=")
			if !ok || name == "" || addr == "" {
				errs = append(errs, fmt.Sprintf("SHOPMIND_SERVICE_ADDRS: %q is not target=host:port", pair))
				continue
			}
			cfg.ServiceAddrs[name] = addr
		}
	}
	if placeholderSecrets[strings.ToLower(strings.TrimSpace(cfg.JWTSecret))] {
		if cfg.Mode == ModeProduction {
			errs = append(errs, "SHOPMIND_JWT_SECRET: unset or a placeholder; production refuses to start without a real secret")
		} else {
			cfg.JWTSecret = randomSecret()
			cfg.JWTSecretGenerated = true
		}
	} else if cfg.Mode == ModeProduction && len(cfg.JWTSecret) < MinSecretLen {
		errs = append(errs, fmt.Sprintf("SHOPMIND_JWT_SECRET: at least %d bytes in production", MinSecretLen))
	}
	cfg.Auth = loadAuth(getenv, &errs)
	var wafErrs []string
	cfg.WAF, wafErrs = waf.LoadConfig(getenv)
	errs = append(errs, wafErrs...)
	cfg.Analytics = loadAnalytics(getenv, &errs)
	return cfg, errs
}

// loadDemoPasswords sets the demo tenant's passwords: development's defaults, or in
// production nothing without the demo tenant and explicit strong passwords with it.
func loadDemoPasswords(cfg *Config, getenv func(string) string, errs *[]string) {
	if cfg.Mode != ModeProduction {
		str := Vars{getenv, errs}.Str
		cfg.AdminPassword = str("SHOPMIND_ADMIN_PASSWORD", DevAdminPassword)
		cfg.DemoAnalystPassword = str("SHOPMIND_DEMO_ANALYST_PASSWORD", DevAnalystPassword)
		return
	}
	if !cfg.DemoTenant {
		return // no demo tenant, so no password for it, set or not
	}
	for _, p := range []struct {
		key, user string
		dst       *string
	}{{"SHOPMIND_ADMIN_PASSWORD", "admin", &cfg.AdminPassword}, {"SHOPMIND_DEMO_ANALYST_PASSWORD", "analyst", &cfg.DemoAnalystPassword}} {
		v := strings.TrimSpace(getenv(p.key))
		if v == "" {
			*errs = append(*errs, fmt.Sprintf("%s: unset; production creates the demo tenant (SHOPMIND_DEMO_TENANT=true) only with explicit strong passwords", p.key))
			continue
		}
		if err := CheckPassword(v, p.user, DemoTenantCode); err != nil {
			*errs = append(*errs, fmt.Sprintf("%s: %v; production refuses to start with it", p.key, err))
			continue
		}
		*p.dst = v
	}
}

func randomSecret() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return hex.EncodeToString(b)
}

// AddrOf returns the gRPC address the gateway dials for a target.
func (c *Config) AddrOf(target string) string {
	if a, ok := c.ServiceAddrs[target]; ok {
		return a
	}
	return c.GRPCAddr
}

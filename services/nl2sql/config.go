package nl2sql

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shopmind/shopmind/internal/config"
	"github.com/shopmind/shopmind/internal/discovery"
)

// Defaults of the nl2sql service's variables (NL2SQL.md lists them all).
const (
	DefaultTokenTTL       = time.Hour
	DefaultCacheMargin    = time.Minute
	DefaultCacheSize      = 10_000
	DefaultMetaTimeout    = 2 * time.Minute
	DefaultProviderAddr   = "127.0.0.1:0"
	DefaultProviderMaxRow = 1000
)

// Config configures the bridge and the built-in provider (services/nl2sql/NL2SQL.md).
type Config struct {
	// APIURL is the provider's address (SHOPMIND_NL2SQL_API_URL); empty: the built-in
	// provider (target nl2sql-provider).
	APIURL string
	// APIKey is the provider API key (SHOPMIND_NL2SQL_API_KEY); with the built-in provider
	// and no key, both sides derive the same key from SHOPMIND_JWT_SECRET.
	APIKey string
	// BotID, DatasourceID and RoleID are the ids `shopmind nl2sql setup` prints
	// (SHOPMIND_NL2SQL_BOT_ID, _DATASOURCE_ID, _ROLE_ID).
	BotID, DatasourceID, RoleID string
	// EmbedURL is the base of embed URLs (SHOPMIND_NL2SQL_EMBED_URL); empty: APIURL's
	// origin.
	EmbedURL string
	// Datasource connection the setup provisions (SHOPMIND_NL2SQL_DS_*): engine
	// (postgresql or clickhouse), host, port, user, password, database and schema; empty
	// fields default to the platform's analytical store.
	DSEngine, DSHost, DSUser, DSPassword, DSDatabase, DSSchema string
	DSPort                                                     int
	// TokenTTL is the default lifetime of provider tokens (SHOPMIND_NL2SQL_TOKEN_TTL).
	TokenTTL time.Duration
	// CacheMargin: a cached token is reused until this long before it expires
	// (SHOPMIND_NL2SQL_CACHE_MARGIN); CacheSize bounds the cached tokens
	// (SHOPMIND_NL2SQL_CACHE_SIZE, 0 turns the cache off).
	CacheMargin time.Duration
	CacheSize   int
	// Timeout, Retries and Backoff govern each provider call (SHOPMIND_NL2SQL_TIMEOUT,
	// _RETRIES, _RETRY_BACKOFF).
	Timeout time.Duration
	Retries int
	Backoff time.Duration
	// MetaTimeout bounds the wait for the datasource metadata (SHOPMIND_NL2SQL_META_TIMEOUT).
	MetaTimeout time.Duration
	// ProviderAddr is where the built-in provider listens (SHOPMIND_NL2SQL_PROVIDER_ADDR;
	// default a free loopback port, which a bridge in the same process finds by itself).
	ProviderAddr string
	// ProviderMaxRows caps the rows of one built-in provider answer
	// (SHOPMIND_NL2SQL_PROVIDER_MAX_ROWS).
	ProviderMaxRows int
	// Etcd is etcd discovery's configuration: with endpoints, the bridge watches
	// <prefix>/config/nl2sql for overrides (override.go).
	Etcd discovery.Config
	// JWTSecret derives the built-in provider's default key.
	JWTSecret string
}

// LoadConfig reads the nl2sql variables through getenv (the service's Def.Config).
func LoadConfig(getenv func(string) string) (Config, []string) {
	var errs []string
	v := config.Vars{Getenv: getenv, Errs: &errs}
	cfg := Config{
		APIKey: v.Str("SHOPMIND_NL2SQL_API_KEY", ""), BotID: v.Str("SHOPMIND_NL2SQL_BOT_ID", ""),
		DatasourceID: v.Str("SHOPMIND_NL2SQL_DATASOURCE_ID", ""), RoleID: v.Str("SHOPMIND_NL2SQL_ROLE_ID", ""),
		DSEngine: v.Str("SHOPMIND_NL2SQL_DS_ENGINE", ""), DSHost: v.Str("SHOPMIND_NL2SQL_DS_HOST", ""),
		DSUser: v.Str("SHOPMIND_NL2SQL_DS_USER", ""), DSPassword: v.Str("SHOPMIND_NL2SQL_DS_PASSWORD", ""),
		DSDatabase: v.Str("SHOPMIND_NL2SQL_DS_DATABASE", ""), DSSchema: v.Str("SHOPMIND_NL2SQL_DS_SCHEMA", ""),
		DSPort:          v.Integer("SHOPMIND_NL2SQL_DS_PORT", 0, 1, 65535),
		TokenTTL:        v.Duration("SHOPMIND_NL2SQL_TOKEN_TTL", DefaultTokenTTL),
		CacheMargin:     v.Duration("SHOPMIND_NL2SQL_CACHE_MARGIN", DefaultCacheMargin),
		CacheSize:       v.Integer("SHOPMIND_NL2SQL_CACHE_SIZE", DefaultCacheSize, 0, 1_000_000),
		Timeout:         v.Duration("SHOPMIND_NL2SQL_TIMEOUT", 10*time.Second),
		Retries:         v.Integer("SHOPMIND_NL2SQL_RETRIES", 2, 0, 10),
		Backoff:         v.Duration("SHOPMIND_NL2SQL_RETRY_BACKOFF", 200*time.Millisecond),
		MetaTimeout:     v.Duration("SHOPMIND_NL2SQL_META_TIMEOUT", DefaultMetaTimeout),
		ProviderAddr:    v.Str("SHOPMIND_NL2SQL_PROVIDER_ADDR", DefaultProviderAddr),
		ProviderMaxRows: v.Integer("SHOPMIND_NL2SQL_PROVIDER_MAX_ROWS", DefaultProviderMaxRow, 1, 100_000),
		JWTSecret:       getenv("SHOPMIND_JWT_SECRET"),
	}
	cfg.APIURL = httpURL(v, "SHOPMIND_NL2SQL_API_URL")
	cfg.EmbedURL = httpURL(v, "SHOPMIND_NL2SQL_EMBED_URL")
	if cfg.DSEngine != "" && cfg.DSEngine != "postgresql" && cfg.DSEngine != "clickhouse" {
		errs = append(errs, fmt.Sprintf("SHOPMIND_NL2SQL_DS_ENGINE: %q is neither postgresql nor clickhouse", cfg.DSEngine))
		cfg.DSEngine = ""
	}
	if cfg.TokenTTL < time.Minute || cfg.TokenTTL > 24*time.Hour {
		errs = append(errs, fmt.Sprintf("SHOPMIND_NL2SQL_TOKEN_TTL: %s is not from 1m to 24h", cfg.TokenTTL))
		cfg.TokenTTL = DefaultTokenTTL
	}
	if _, _, err := net.SplitHostPort(cfg.ProviderAddr); err != nil {
		errs = append(errs, fmt.Sprintf("SHOPMIND_NL2SQL_PROVIDER_ADDR: %q is not host:port", cfg.ProviderAddr))
		cfg.ProviderAddr = DefaultProviderAddr
	}
	for _, id := range []struct{ key, val string }{{"SHOPMIND_NL2SQL_BOT_ID", cfg.BotID},
		{"SHOPMIND_NL2SQL_DATASOURCE_ID", cfg.DatasourceID}, {"SHOPMIND_NL2SQL_ROLE_ID", cfg.RoleID}} {
		if id.val != "" && !idRe.MatchString(id.val) {
			errs = append(errs, fmt.Sprintf("%s: %q is not an id (letters, digits, '_' and '-', at most 128)", id.key, id.val))
		}
	}
	cfg.Etcd, _ = discovery.ConfigFromEnv(getenv) // its errors are discovery's to report
	return cfg, errs
}

func httpURL(v config.Vars, key string) string {
	s := strings.TrimRight(v.Str(key, ""), "/")
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		*v.Errs = append(*v.Errs, fmt.Sprintf("%s: not an http(s) URL", key))
		return ""
	}
	return s
}

// BuiltIn reports whether the bridge uses the built-in provider (no SHOPMIND_NL2SQL_API_URL).
func (c Config) BuiltIn() bool { return c.APIURL == "" }

// ProviderKey is the key the built-in provider accepts: SHOPMIND_NL2SQL_API_KEY when set,
// otherwise derived from the JWT secret (so every process of one deployment agrees).
func (c Config) ProviderKey() string {
	if c.APIKey != "" {
		return c.APIKey
	}
	if c.JWTSecret == "" {
		return ""
	}
	m := hmac.New(sha256.New, []byte(c.JWTSecret))
	m.Write([]byte("shopmind nl2sql built-in provider key"))
	return "sk-builtin-" + hex.EncodeToString(m.Sum(nil))[:40]
}

// placeholders are key values that are obviously not real.
var placeholders = []string{"changeme", "change-me", "placeholder", "todo", "dummy", "example", "test",
	"sk-xxx", "api_key", "apikey", "secret", "none", "null", "key"}

// IsPlaceholder reports whether key looks like a placeholder rather than a real key.
func IsPlaceholder(key string) bool {
	k := strings.ToLower(strings.TrimSpace(key))
	if k == "" {
		return false
	}
	if strings.Contains(k, "your") || strings.HasPrefix(k, "<") || strings.HasPrefix(k, "${") || strings.Trim(k, "x*.-_") == "" {
		return true
	}
	return slices.Contains(placeholders, k)
}

// dsPort parses a port from a URL, or def.
func dsPort(u *url.URL, def int) int {
	if p, err := strconv.Atoi(u.Port()); err == nil {
		return p
	}
	return def
}

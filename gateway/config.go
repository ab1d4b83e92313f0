package gateway

import (
	"fmt"
	"math"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/shopmind/shopmind/gateway/realtime"
)

// DefaultEnvironment is the environment of unprefixed URLs without an X-Env header.
const DefaultEnvironment = "dev"

// Edge defaults. The gateway also applies them to a zero EdgeConfig (tests build Options by
// hand), except the rate limit, which a zero value disables.
const (
	DefaultEnvironments     = "dev,local,test"
	DefaultRateLimitRPS     = 50
	DefaultRateLimitBurst   = 100
	DefaultRateLimitMaxKeys = 100_000
	DefaultCORSOrigins      = "http://localhost:*,http://127.0.0.1:*"
	DefaultCORSMaxAge       = 600 * time.Second
	DefaultUpstreamTimeout  = 30 * time.Second
	DefaultPartnerTimeout   = 15 * time.Second
	DefaultPartnerKeyHeader = "X-Api-Key"
)

// EdgeConfig configures the gateway edge: environments, rate limiting, CORS, TLS, partners,
// upstream timeouts, keep-alives of event streams. Read by LoadConfig; every variable is in
// gateway/EDGE.md's table (SHOPMIND_CHAT_SSE_KEEPALIVE in services/chat/CHAT.md's).
type EdgeConfig struct {
	// Environments are the environment names (SHOPMIND_ENVIRONMENTS); the first-class one is
	// dev. Every other name is also a URL prefix (/local/tenant/api/...).
	Environments []string
	// EnvServiceAddrs maps an environment (not dev) to its static discovery map
	// (SHOPMIND_<ENV>_SERVICE_ADDRS). A target absent there is dialled at dev's address.
	EnvServiceAddrs map[string]map[string]string
	// TrustedProxies are the peers whose X-Forwarded-For is believed (SHOPMIND_TRUSTED_PROXIES).
	TrustedProxies []netip.Prefix
	// RateLimitRPS is the sustained rate per client address; 0 disables rate limiting.
	RateLimitRPS float64
	// RateLimitBurst is the bucket size per client address.
	RateLimitBurst int
	// RateLimitMaxKeys bounds the number of client addresses tracked at once.
	RateLimitMaxKeys int
	// CORSAllowedOrigins are origin patterns: "*", an exact origin, "scheme://host:*" (any
	// port) or "scheme://*.domain" (any subdomain).
	CORSAllowedOrigins []string
	// CORSAllowCredentials lets browsers send credentials on cross-origin requests.
	CORSAllowCredentials bool
	// CORSMaxAge is how long browsers may cache a preflight answer.
	CORSMaxAge time.Duration
	// TLSCertFile and TLSKeyFile switch the gateway to HTTPS (with HTTP/2) when both are set.
	TLSCertFile string
	TLSKeyFile  string
	// UpstreamTimeout bounds each gRPC call the gateway makes (504 beyond it).
	UpstreamTimeout time.Duration
	// Partners are the pass-through integrations reachable at /api-<name>/*.
	Partners []Partner
	// PartnerKeyHeader is the header that carries a partner's credential.
	PartnerKeyHeader string
	// PartnerTimeout bounds one partner exchange (502 beyond it).
	PartnerTimeout time.Duration
	// SSEKeepAlive is the interval of keep-alive comments on an idle event stream
	// (SHOPMIND_CHAT_SSE_KEEPALIVE; the process passes it as Options.SSEKeepAlive).
	SSEKeepAlive time.Duration
	// RealtimeHeartbeat is the interval of heartbeat frames and pings on the WebSocket
	// channel (SHOPMIND_REALTIME_HEARTBEAT; passed as Options.RealtimeHeartbeat).
	RealtimeHeartbeat time.Duration
}

// Partner is one external integration behind /api-<Name>/*.
type Partner struct {
	Name string
	// BaseURL is the upstream base (scheme, host, optional base path); request paths are
	// joined under its path and can never leave it.
	BaseURL *url.URL
	// Key is the credential sent in the partner key header (empty: none is sent).
	Key string
}

// EnvironmentNames returns the configured environments, or the defaults for a zero config.
func (e EdgeConfig) EnvironmentNames() []string {
	if len(e.Environments) == 0 {
		return strings.Split(DefaultEnvironments, ",")
	}
	return e.Environments
}

var (
	envNameRE     = regexp.MustCompile(`^[a-z][a-z0-9]{0,15}$`)
	partnerNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_]{0,31}$`)
	headerNameRE  = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")
)

// reservedEnvNames would make environment prefixes collide with real paths.
var reservedEnvNames = map[string]bool{
	"api": true, "tenant": true, "analysis": true, "basic": true, "notify": true,
	"healthz": true, "readyz": true, "metrics": true,
}

// LoadConfig reads the edge variables through getenv and returns the configuration with a
// message naming the variable for each malformed value (none when it is valid).
func LoadConfig(getenv func(string) string) (EdgeConfig, []string) {
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	get := func(key, def string) string {
		if v := strings.TrimSpace(getenv(key)); v != "" {
			return v
		}
		return def
	}
	duration := func(key string, def time.Duration, allowZero bool) time.Duration {
		v := get(key, "")
		if v == "" {
			return def
		}
		d, err := time.ParseDuration(v)
		if err != nil { // a bare number is seconds
			n, nerr := strconv.ParseFloat(v, 64)
			if nerr != nil {
				fail("%s: %q is not a duration (30s, 1m) or a number of seconds", key, v)
				return def
			}
			d = time.Duration(n * float64(time.Second))
		}
		if d < 0 || (d == 0 && !allowZero) {
			fail("%s: %q must be positive", key, v)
			return def
		}
		return d
	}
	e := EdgeConfig{EnvServiceAddrs: map[string]map[string]string{}}

	// Environments and their backend pools.
	seen := map[string]bool{}
	for _, name := range strings.Split(get("SHOPMIND_ENVIRONMENTS", DefaultEnvironments), ",") {
		name = strings.TrimSpace(name)
		switch {
		case !envNameRE.MatchString(name):
			fail("SHOPMIND_ENVIRONMENTS: %q is not a lower-case name of at most 16 letters and digits", name)
		case reservedEnvNames[name]:
			fail("SHOPMIND_ENVIRONMENTS: %q is reserved (it is a path prefix)", name)
		case seen[name]:
			fail("SHOPMIND_ENVIRONMENTS: %q is listed twice", name)
		default:
			seen[name] = true
			e.Environments = append(e.Environments, name)
		}
	}
	if !seen[DefaultEnvironment] {
		fail("SHOPMIND_ENVIRONMENTS: must include %s, the default environment", DefaultEnvironment)
	}
	if getenv("SHOPMIND_DEV_SERVICE_ADDRS") != "" {
		fail("SHOPMIND_DEV_SERVICE_ADDRS: the dev environment uses SHOPMIND_SERVICE_ADDRS")
	}
	for _, env := range e.Environments {
		if env == DefaultEnvironment {
			continue
		}
		key := "SHOPMIND_" + strings.ToUpper(env) + "_SERVICE_ADDRS"
		v := strings.TrimSpace(getenv(key))
		if v == "" {
			continue
		}
		addrs := map[string]string{}
		for _, pair := range strings.Split(v, ",") {
			name, addr, ok := strings.Cut(strings.TrimSpace(pair), "=")
			if !ok || name == "" || addr == "" {
				fail("%s: %q is not target=host:port", key, pair)
				continue
			}
			addrs[name] = addr
		}
		e.EnvServiceAddrs[env] = addrs
	}

	// Client addresses and rate limiting.
	if v := get("SHOPMIND_TRUSTED_PROXIES", ""); v != "" {
		for _, s := range strings.Split(v, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			if p, err := netip.ParsePrefix(s); err == nil {
				e.TrustedProxies = append(e.TrustedProxies, p.Masked())
			} else if a, err := netip.ParseAddr(s); err == nil {
				e.TrustedProxies = append(e.TrustedProxies, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			} else {
				fail("SHOPMIND_TRUSTED_PROXIES: %q is not a CIDR (10.0.0.0/8) or an address", s)
			}
		}
	}
	e.RateLimitRPS = DefaultRateLimitRPS
	if v := get("SHOPMIND_RATE_LIMIT_RPS", ""); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || math.IsNaN(f) || f > 1e9 {
			fail("SHOPMIND_RATE_LIMIT_RPS: %q is not a rate >= 0 (0 disables rate limiting)", v)
		} else {
			e.RateLimitRPS = f
		}
	}
	positiveInt := func(key string, def int) int {
		v := get(key, "")
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			fail("%s: %q is not a positive integer", key, v)
			return def
		}
		return n
	}
	e.RateLimitBurst = positiveInt("SHOPMIND_RATE_LIMIT_BURST", DefaultRateLimitBurst)
	e.RateLimitMaxKeys = positiveInt("SHOPMIND_RATE_LIMIT_MAX_KEYS", DefaultRateLimitMaxKeys)

	// CORS.
	for _, o := range strings.Split(get("SHOPMIND_CORS_ALLOWED_ORIGINS", DefaultCORSOrigins), ",") {
		o = strings.TrimSpace(o)
		if o == "" {
			continue
		}
		if err := ValidateOriginPattern(o); err != nil {
			fail("SHOPMIND_CORS_ALLOWED_ORIGINS: %q %v", o, err)
			continue
		}
		e.CORSAllowedOrigins = append(e.CORSAllowedOrigins, o)
	}
	e.CORSAllowCredentials = true
	if v := get("SHOPMIND_CORS_ALLOW_CREDENTIALS", ""); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			fail("SHOPMIND_CORS_ALLOW_CREDENTIALS: %q is not a boolean", v)
		} else {
			e.CORSAllowCredentials = b
		}
	}
	e.CORSMaxAge = duration("SHOPMIND_CORS_MAX_AGE", DefaultCORSMaxAge, true)

	// TLS.
	e.TLSCertFile = get("SHOPMIND_TLS_CERT_FILE", "")
	e.TLSKeyFile = get("SHOPMIND_TLS_KEY_FILE", "")
	if (e.TLSCertFile == "") != (e.TLSKeyFile == "") {
		fail("SHOPMIND_TLS_CERT_FILE, SHOPMIND_TLS_KEY_FILE: set both (HTTPS) or neither (plain HTTP)")
	}

	// Upstreams.
	e.UpstreamTimeout = duration("SHOPMIND_UPSTREAM_TIMEOUT", DefaultUpstreamTimeout, false)
	e.PartnerTimeout = duration("SHOPMIND_PARTNER_TIMEOUT", DefaultPartnerTimeout, false)
	e.PartnerKeyHeader = get("SHOPMIND_PARTNER_KEY_HEADER", DefaultPartnerKeyHeader)
	if !headerNameRE.MatchString(e.PartnerKeyHeader) {
		fail("SHOPMIND_PARTNER_KEY_HEADER: %q is not a header name", e.PartnerKeyHeader)
	}
	names := map[string]bool{}
	if v := get("SHOPMIND_PARTNERS", ""); v != "" {
		for _, pair := range strings.Split(v, ",") {
			pair = strings.TrimSpace(pair)
			name, raw, ok := strings.Cut(pair, "=")
			name, raw = strings.TrimSpace(name), strings.TrimSpace(raw)
			if !ok || !partnerNameRE.MatchString(name) {
				fail("SHOPMIND_PARTNERS: %q is not name=https://host/base (name: lower-case letters, digits, _)", pair)
				continue
			}
			if names[name] {
				fail("SHOPMIND_PARTNERS: partner %q is listed twice", name)
				continue
			}
			u, err := parsePartnerURL(raw)
			if err != nil {
				fail("SHOPMIND_PARTNERS: partner %s: %v", name, err)
				continue
			}
			names[name] = true
			e.Partners = append(e.Partners, Partner{Name: name, BaseURL: u,
				Key: strings.TrimSpace(getenv(PartnerKeyVar(name)))})
		}
	}

	// Event streams.
	e.SSEKeepAlive = DefaultSSEKeepAlive
	if v := get("SHOPMIND_CHAT_SSE_KEEPALIVE", ""); v != "" {
		if d, err := time.ParseDuration(v); err != nil || d <= 0 {
			fail("%s: %q is not a positive duration", "SHOPMIND_CHAT_SSE_KEEPALIVE", v)
		} else {
			e.SSEKeepAlive = d
		}
	}
	e.RealtimeHeartbeat = realtime.DefaultHeartbeat
	if v := get("SHOPMIND_REALTIME_HEARTBEAT", ""); v != "" {
		if d, err := time.ParseDuration(v); err != nil || d < time.Second {
			fail("%s: %q is not a duration of at least 1s", "SHOPMIND_REALTIME_HEARTBEAT", v)
		} else {
			e.RealtimeHeartbeat = d
		}
	}
	return e, errs
}

// PartnerKeyVar is the variable holding a partner's credential: SHOPMIND_PARTNER_<NAME>_KEY.
func PartnerKeyVar(name string) string {
	return "SHOPMIND_PARTNER_" + strings.ToUpper(name) + "_KEY"
}

func parsePartnerURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%q is not a URL", raw)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%q: scheme must be http or https", raw)
	case u.Host == "" || u.Hostname() == "":
		return nil, fmt.Errorf("%q: no host", raw)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return nil, fmt.Errorf("%q: no user info, query or fragment allowed (credentials go in %s)", raw, "SHOPMIND_PARTNER_<NAME>_KEY")
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// ValidateOriginPattern checks a CORS origin pattern: "*", "scheme://host[:port]",
// "scheme://host:*" (any port) or "scheme://*.domain[:port]" (any subdomain).
func ValidateOriginPattern(p string) error {
	if p == "*" {
		return nil
	}
	scheme, rest, ok := strings.Cut(p, "://")
	if !ok || (scheme != "http" && scheme != "https") || rest == "" {
		return fmt.Errorf("is not *, http://host[:port] or https://host[:port]")
	}
	if strings.ContainsAny(rest, "/?#@ ") {
		return fmt.Errorf("must be an origin: scheme://host[:port], no path")
	}
	host, port := rest, ""
	if i := strings.LastIndexByte(rest, ':'); i >= 0 && !strings.HasSuffix(rest, "]") {
		host, port = rest[:i], rest[i+1:]
		if port != "*" {
			if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
				return fmt.Errorf("has a bad port %q", port)
			}
		}
	}
	host = strings.TrimPrefix(host, "*.")
	if host == "" || strings.Contains(host, "*") {
		return fmt.Errorf("may use * only as the whole pattern, as the port (:*) or as a leading subdomain (*.example.com)")
	}
	return nil
}

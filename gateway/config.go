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
	v := &edgeVars{getenv: getenv}
	e := EdgeConfig{}
	e.Environments, e.EnvServiceAddrs = v.environments()

	// Client addresses and rate limiting.
	e.TrustedProxies = v.trustedProxies()
	e.RateLimitRPS = v.rate("SHOPMIND_RATE_LIMIT_RPS", DefaultRateLimitRPS)
	e.RateLimitBurst = v.positiveInt("SHOPMIND_RATE_LIMIT_BURST", DefaultRateLimitBurst)
	e.RateLimitMaxKeys = v.positiveInt("SHOPMIND_RATE_LIMIT_MAX_KEYS", DefaultRateLimitMaxKeys)

	// CORS.
	e.CORSAllowedOrigins = v.corsOrigins()
	e.CORSAllowCredentials = v.boolean("SHOPMIND_CORS_ALLOW_CREDENTIALS", true)
	e.CORSMaxAge = v.duration("SHOPMIND_CORS_MAX_AGE", DefaultCORSMaxAge, true)

	// TLS.
	e.TLSCertFile = v.get("SHOPMIND_TLS_CERT_FILE", "")
	e.TLSKeyFile = v.get("SHOPMIND_TLS_KEY_FILE", "")
	if (e.TLSCertFile == "") != (e.TLSKeyFile == "") {
		v.fail("SHOPMIND_TLS_CERT_FILE, SHOPMIND_TLS_KEY_FILE: set both (HTTPS) or neither (plain HTTP)")
	}

	// Upstreams.
	e.UpstreamTimeout = v.duration("SHOPMIND_UPSTREAM_TIMEOUT", DefaultUpstreamTimeout, false)
	e.PartnerTimeout = v.duration("SHOPMIND_PARTNER_TIMEOUT", DefaultPartnerTimeout, false)
	e.PartnerKeyHeader = v.get("SHOPMIND_PARTNER_KEY_HEADER", DefaultPartnerKeyHeader)
	if !headerNameRE.MatchString(e.PartnerKeyHeader) {
		v.fail("SHOPMIND_PARTNER_KEY_HEADER: %q is not a header name", e.PartnerKeyHeader)
	}
	e.Partners = v.partners()

	// Event streams.
	e.SSEKeepAlive = v.strictDuration("SHOPMIND_CHAT_SSE_KEEPALIVE", DefaultSSEKeepAlive, time.Nanosecond, "a positive duration")
	e.RealtimeHeartbeat = v.strictDuration("SHOPMIND_REALTIME_HEARTBEAT", realtime.DefaultHeartbeat, time.Second, "a duration of at least 1s")
	return e, v.errs
}

// edgeVars reads the edge's variables, keeping one message per malformed value (which then
// yields its default).
type edgeVars struct {
	getenv func(string) string
	errs   []string
}

func (v *edgeVars) fail(format string, args ...any) {
	v.errs = append(v.errs, fmt.Sprintf(format, args...))
}

// get is the trimmed value of key, or def when it is empty.
func (v *edgeVars) get(key, def string) string {
	if s := strings.TrimSpace(v.getenv(key)); s != "" {
		return s
	}
	return def
}

// duration reads a Go duration or a bare number of seconds.
func (v *edgeVars) duration(key string, def time.Duration, allowZero bool) time.Duration {
	s := v.get(key, "")
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil { // a bare number is seconds
		n, nerr := strconv.ParseFloat(s, 64)
		if nerr != nil {
			v.fail("%s: %q is not a duration (30s, 1m) or a number of seconds", key, s)
			return def
		}
		d = time.Duration(n * float64(time.Second))
	}
	if d < 0 || (d == 0 && !allowZero) {
		v.fail("%s: %q must be positive", key, s)
		return def
	}
	return d
}

// strictDuration reads a Go duration of at least least; what describes the accepted values.
func (v *edgeVars) strictDuration(key string, def, least time.Duration, what string) time.Duration {
	s := v.get(key, "")
	if s == "" {
		return def
	}
	if d, err := time.ParseDuration(s); err == nil && d >= least {
		return d
	}
	v.fail("%s: %q is not %s", key, s, what)
	return def
}

func (v *edgeVars) positiveInt(key string, def int) int {
	s := v.get(key, "")
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		v.fail("%s: %q is not a positive integer", key, s)
		return def
	}
	return n
}

func (v *edgeVars) boolean(key string, def bool) bool {
	s := v.get(key, "")
	if s == "" {
		return def
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		v.fail("%s: %q is not a boolean", key, s)
		return def
	}
	return b
}

// rate is a request rate >= 0 (0 disables rate limiting).
func (v *edgeVars) rate(key string, def float64) float64 {
	s := v.get(key, "")
	if s == "" {
		return def
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || math.IsNaN(f) || f > 1e9 {
		v.fail("%s: %q is not a rate >= 0 (0 disables rate limiting)", key, s)
		return def
	}
	return f
}

// environments reads SHOPMIND_ENVIRONMENTS and each non-default environment's backend
// addresses (SHOPMIND_<ENV>_SERVICE_ADDRS).
func (v *edgeVars) environments() ([]string, map[string]map[string]string) {
	var envs []string
	seen := map[string]bool{}
	for _, name := range strings.Split(v.get("SHOPMIND_ENVIRONMENTS", DefaultEnvironments), ",") {
		name = strings.TrimSpace(name)
		switch {
		case !envNameRE.MatchString(name):
			v.fail("SHOPMIND_ENVIRONMENTS: %q is not a lower-case name of at most 16 letters and digits", name)
		case reservedEnvNames[name]:
			v.fail("SHOPMIND_ENVIRONMENTS: %q is reserved (it is a path prefix)", name)
		case seen[name]:
			v.fail("SHOPMIND_ENVIRONMENTS: %q is listed twice", name)
		default:
			seen[name] = true
			envs = append(envs, name)
		}
	}
	if !seen[DefaultEnvironment] {
		v.fail("SHOPMIND_ENVIRONMENTS: must include %s, the default environment", DefaultEnvironment)
	}
	if v.getenv("SHOPMIND_DEV_SERVICE_ADDRS") != "" {
		v.fail("SHOPMIND_DEV_SERVICE_ADDRS: the dev environment uses SHOPMIND_SERVICE_ADDRS")
	}
	pools := map[string]map[string]string{}
	for _, env := range envs {
		if env == DefaultEnvironment {
			continue
		}
		key := "SHOPMIND_" + strings.ToUpper(env) + "_SERVICE_ADDRS"
		list := v.get(key, "")
		if list == "" {
			continue
		}
		addrs := map[string]string{}
		for _, pair := range strings.Split(list, ",") {
			name, addr, ok := strings.Cut(strings.TrimSpace(pair), "=")
			if !ok || name == "" || addr == "" {
				v.fail("%s: %q is not target=host:port", key, pair)
				continue
			}
			addrs[name] = addr
		}
		pools[env] = addrs
	}
	return envs, pools
}

// trustedProxies reads SHOPMIND_TRUSTED_PROXIES: CIDRs or single addresses.
func (v *edgeVars) trustedProxies() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range strings.Split(v.get("SHOPMIND_TRUSTED_PROXIES", ""), ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
		} else if a, err := netip.ParseAddr(s); err == nil {
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
		} else {
			v.fail("SHOPMIND_TRUSTED_PROXIES: %q is not a CIDR (10.0.0.0/8) or an address", s)
		}
	}
	return out
}

// corsOrigins reads SHOPMIND_CORS_ALLOWED_ORIGINS (patterns: ValidateOriginPattern).
func (v *edgeVars) corsOrigins() []string {
	var out []string
	for _, o := range strings.Split(v.get("SHOPMIND_CORS_ALLOWED_ORIGINS", DefaultCORSOrigins), ",") {
		o = strings.TrimSpace(o)
		if o == "" {
			continue
		}
		if err := ValidateOriginPattern(o); err != nil {
			v.fail("SHOPMIND_CORS_ALLOWED_ORIGINS: %q %v", o, err)
			continue
		}
		out = append(out, o)
	}
	return out
}

// partners reads SHOPMIND_PARTNERS (name=https://host/base, ...) and each partner's key.
func (v *edgeVars) partners() []Partner {
	list := v.get("SHOPMIND_PARTNERS", "")
	if list == "" {
		return nil
	}
	var out []Partner
	names := map[string]bool{}
	for _, pair := range strings.Split(list, ",") {
		pair = strings.TrimSpace(pair)
		name, raw, ok := strings.Cut(pair, "=")
		name, raw = strings.TrimSpace(name), strings.TrimSpace(raw)
		if !ok || !partnerNameRE.MatchString(name) {
			v.fail("SHOPMIND_PARTNERS: %q is not name=https://host/base (name: lower-case letters, digits, _)", pair)
			continue
		}
		if names[name] {
			v.fail("SHOPMIND_PARTNERS: partner %q is listed twice", name)
			continue
		}
		u, err := parsePartnerURL(raw)
		if err != nil {
			v.fail("SHOPMIND_PARTNERS: partner %s: %v", name, err)
			continue
		}
		names[name] = true
		out = append(out, Partner{Name: name, BaseURL: u, Key: strings.TrimSpace(v.getenv(PartnerKeyVar(name)))})
	}
	return out
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

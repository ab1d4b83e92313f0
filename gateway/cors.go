package gateway

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/rs/cors"
)

// corsAllowedHeaders are the request headers browsers may send cross-origin.
var corsAllowedHeaders = []string{"Authorization", "Content-Type", "Accept", "Accept-Language",
	"X-Request-Id", EnvHeader, "X-Requested-With"}

// corsExposedHeaders are the response headers browser scripts may read, besides the naming
// header of each event stream (X-Conversation-Id).
var corsExposedHeaders = []string{"X-Request-Id", "Retry-After", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"}

// newCORS answers preflights itself (before the WAF, the rate limit and authentication) and
// adds the CORS headers to allowed origins' requests, exposing corsExposedHeaders and the
// streams' headers. Origins are matched by originMatcher, never by prefix.
func newCORS(e EdgeConfig, streamHeaders []string) func(http.Handler) http.Handler {
	patterns := e.CORSAllowedOrigins
	if len(patterns) == 0 {
		patterns = strings.Split(DefaultCORSOrigins, ",")
	}
	maxAge := int(e.CORSMaxAge / time.Second)
	if maxAge == 0 {
		maxAge = -1 // rs/cors: send Access-Control-Max-Age: 0 (no caching)
	}
	c := cors.New(cors.Options{
		AllowOriginFunc:  originMatcher(patterns),
		AllowedMethods:   []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead},
		AllowedHeaders:   corsAllowedHeaders,
		ExposedHeaders:   append(slices.Clip(corsExposedHeaders), streamHeaders...),
		AllowCredentials: e.CORSAllowCredentials,
		MaxAge:           maxAge,
	})
	return c.Handler
}

// originPattern is one parsed SHOPMIND_CORS_ALLOWED_ORIGINS entry.
type originPattern struct {
	any       bool   // "*"
	scheme    string // http or https
	host      string // lower case; without the "*." of a subdomain pattern
	subdomain bool   // *.host: any subdomain of host (not host itself)
	port      string // "" none, "*" any (or none), or a number
}

func parseOriginPattern(p string) originPattern {
	if p == "*" {
		return originPattern{any: true}
	}
	scheme, rest, _ := strings.Cut(p, "://")
	op := originPattern{scheme: strings.ToLower(scheme)}
	if i := strings.LastIndexByte(rest, ':'); i >= 0 && !strings.HasSuffix(rest, "]") {
		rest, op.port = rest[:i], rest[i+1:]
	}
	if h, ok := strings.CutPrefix(rest, "*."); ok {
		op.subdomain, rest = true, h
	}
	op.host = strings.ToLower(strings.Trim(rest, "[]"))
	return op
}

// originMatcher compares an Origin header with the patterns component by component.
func originMatcher(patterns []string) func(string) bool {
	parsed := make([]originPattern, 0, len(patterns))
	for _, p := range patterns {
		if ValidateOriginPattern(p) == nil {
			parsed = append(parsed, parseOriginPattern(p))
		}
	}
	return func(origin string) bool {
		u, err := url.Parse(origin)
		if err != nil || u.Host == "" || u.Path != "" || u.User != nil || u.RawQuery != "" {
			return false
		}
		scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
		for _, p := range parsed {
			if p.any {
				return true
			}
			if p.scheme != scheme {
				continue
			}
			if p.subdomain {
				if !strings.HasSuffix(host, "."+p.host) {
					continue
				}
			} else if host != p.host {
				continue
			}
			if p.port == "*" || p.port == port {
				return true
			}
		}
		return false
	}
}

// corsWildcardWithCredentials reports the risky combination worth a warning at start.
func corsWildcardWithCredentials(e EdgeConfig) bool {
	if !e.CORSAllowCredentials {
		return false
	}
	for _, p := range e.CORSAllowedOrigins {
		if p == "*" {
			return true
		}
	}
	return false
}

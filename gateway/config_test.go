package gateway

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

// load reads the edge configuration from vars, failing with the messages' error like the
// process's configuration does.
func load(vars map[string]string) (EdgeConfig, error) {
	e, errs := LoadConfig(func(k string) string { return vars[k] })
	if len(errs) > 0 {
		return e, fmt.Errorf("configuration: %s", strings.Join(errs, "; "))
	}
	return e, nil
}

func TestEdgeDefaults(t *testing.T) {
	e, err := load(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(e.Environments, []string{"dev", "local", "test"}) || len(e.EnvServiceAddrs) != 0 {
		t.Errorf("environments: %v %v", e.Environments, e.EnvServiceAddrs)
	}
	if e.RateLimitRPS != 50 || e.RateLimitBurst != 100 || e.RateLimitMaxKeys != 100_000 || len(e.TrustedProxies) != 0 {
		t.Errorf("rate limit: %+v", e)
	}
	if !slices.Equal(e.CORSAllowedOrigins, []string{"http://localhost:*", "http://127.0.0.1:*"}) ||
		!e.CORSAllowCredentials || e.CORSMaxAge != 600*time.Second {
		t.Errorf("cors: %+v", e)
	}
	if e.TLSCertFile != "" || e.UpstreamTimeout != 30*time.Second || e.PartnerTimeout != 15*time.Second ||
		e.PartnerKeyHeader != "X-Api-Key" || len(e.Partners) != 0 {
		t.Errorf("upstreams: %+v", e)
	}
	if e.SSEKeepAlive != DefaultSSEKeepAlive {
		t.Errorf("keep-alive: %v", e.SSEKeepAlive)
	}
	if got := (EdgeConfig{}).EnvironmentNames(); !slices.Equal(got, []string{"dev", "local", "test"}) {
		t.Errorf("zero config environments: %v", got)
	}
}

func TestEdgeValues(t *testing.T) {
	e, err := load(map[string]string{
		"SHOPMIND_ENVIRONMENTS":           "dev, test, staging",
		"SHOPMIND_TEST_SERVICE_ADDRS":     "tenant=10.0.1.1:9090",
		"SHOPMIND_STAGING_SERVICE_ADDRS":  "tenant=10.0.2.1:9090,chat=10.0.2.2:9090",
		"SHOPMIND_TRUSTED_PROXIES":        "10.0.0.0/8, 192.168.1.7, ::1",
		"SHOPMIND_RATE_LIMIT_RPS":         "0.5",
		"SHOPMIND_RATE_LIMIT_BURST":       "3",
		"SHOPMIND_RATE_LIMIT_MAX_KEYS":    "1000",
		"SHOPMIND_CORS_ALLOWED_ORIGINS":   "https://app.example.com,https://*.shopmind.io,http://localhost:*",
		"SHOPMIND_CORS_ALLOW_CREDENTIALS": "false",
		"SHOPMIND_CORS_MAX_AGE":           "120",
		"SHOPMIND_TLS_CERT_FILE":          "/etc/shopmind/cert.pem",
		"SHOPMIND_TLS_KEY_FILE":           "/etc/shopmind/key.pem",
		"SHOPMIND_UPSTREAM_TIMEOUT":       "5s",
		"SHOPMIND_PARTNERS":               "partner_a=https://a.example/api/, partner_b=http://127.0.0.1:7000",
		"SHOPMIND_PARTNER_PARTNER_A_KEY":  "key-a",
		"SHOPMIND_PARTNER_KEY_HEADER":     "X-Partner-Token",
		"SHOPMIND_PARTNER_TIMEOUT":        "2s",
		"SHOPMIND_CHAT_SSE_KEEPALIVE":     "5s",
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(e.Environments, []string{"dev", "test", "staging"}) {
		t.Errorf("environments: %v", e.Environments)
	}
	if got := e.EnvServiceAddrs; len(got) != 2 || got["test"]["tenant"] != "10.0.1.1:9090" ||
		got["staging"]["tenant"] != "10.0.2.1:9090" || got["staging"]["chat"] != "10.0.2.2:9090" {
		t.Errorf("environments' addresses: %v", got)
	}
	if e.SSEKeepAlive != 5*time.Second {
		t.Errorf("keep-alive: %v", e.SSEKeepAlive)
	}
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.168.1.7/32"), netip.MustParsePrefix("::1/128")}
	if !slices.Equal(e.TrustedProxies, want) {
		t.Errorf("trusted proxies: %v", e.TrustedProxies)
	}
	if e.RateLimitRPS != 0.5 || e.RateLimitBurst != 3 || e.RateLimitMaxKeys != 1000 {
		t.Errorf("rate limit: %+v", e)
	}
	if len(e.CORSAllowedOrigins) != 3 || e.CORSAllowCredentials || e.CORSMaxAge != 120*time.Second {
		t.Errorf("cors: %+v", e)
	}
	if e.TLSCertFile != "/etc/shopmind/cert.pem" || e.TLSKeyFile != "/etc/shopmind/key.pem" || e.UpstreamTimeout != 5*time.Second {
		t.Errorf("tls/upstream: %+v", e)
	}
	if len(e.Partners) != 2 || e.PartnerKeyHeader != "X-Partner-Token" || e.PartnerTimeout != 2*time.Second {
		t.Fatalf("partners: %+v", e)
	}
	a, b := e.Partners[0], e.Partners[1]
	if a.Name != "partner_a" || a.BaseURL.String() != "https://a.example/api" || a.Key != "key-a" {
		t.Errorf("partner a: %+v %s", a, a.BaseURL)
	}
	if b.Name != "partner_b" || b.BaseURL.String() != "http://127.0.0.1:7000" || b.Key != "" {
		t.Errorf("partner b: %+v %s", b, b.BaseURL)
	}
}

func TestEdgeZeroRateDisables(t *testing.T) {
	e, err := load(map[string]string{"SHOPMIND_RATE_LIMIT_RPS": "0", "SHOPMIND_CORS_MAX_AGE": "0"})
	if err != nil || e.RateLimitRPS != 0 || e.CORSMaxAge != 0 {
		t.Fatalf("%v %+v", err, e)
	}
}

func TestEdgeInvalidValuesAreNamed(t *testing.T) {
	cases := []map[string]string{
		{"SHOPMIND_ENVIRONMENTS": "local,test"},             // no dev
		{"SHOPMIND_ENVIRONMENTS": "dev,Local"},              // upper case
		{"SHOPMIND_ENVIRONMENTS": "dev,api"},                // reserved
		{"SHOPMIND_ENVIRONMENTS": "dev,local,local"},        // twice
		{"SHOPMIND_LOCAL_SERVICE_ADDRS": "tenant"},          // not target=addr
		{"SHOPMIND_DEV_SERVICE_ADDRS": "tenant=x:1"},        // dev uses SHOPMIND_SERVICE_ADDRS
		{"SHOPMIND_TRUSTED_PROXIES": "10.0.0.0/33"},         // bad CIDR
		{"SHOPMIND_TRUSTED_PROXIES": "proxy.example"},       // not an address
		{"SHOPMIND_RATE_LIMIT_RPS": "-1"},                   // negative
		{"SHOPMIND_RATE_LIMIT_RPS": "fast"},                 // not a number
		{"SHOPMIND_RATE_LIMIT_BURST": "0"},                  // not positive
		{"SHOPMIND_RATE_LIMIT_MAX_KEYS": "many"},            // not a number
		{"SHOPMIND_CORS_ALLOWED_ORIGINS": "localhost:3000"}, // no scheme
		{"SHOPMIND_CORS_ALLOWED_ORIGINS": "https://a.example/path"},
		{"SHOPMIND_CORS_ALLOWED_ORIGINS": "https://a*.example"},
		{"SHOPMIND_CORS_ALLOWED_ORIGINS": "https://a.example:99999"},
		{"SHOPMIND_CORS_ALLOW_CREDENTIALS": "maybe"},
		{"SHOPMIND_CORS_MAX_AGE": "-5s"},
		{"SHOPMIND_TLS_CERT_FILE": "/cert.pem"}, // key missing
		{"SHOPMIND_TLS_KEY_FILE": "/key.pem"},   // cert missing
		{"SHOPMIND_UPSTREAM_TIMEOUT": "0"},
		{"SHOPMIND_UPSTREAM_TIMEOUT": "soon"},
		{"SHOPMIND_PARTNER_TIMEOUT": "-1s"},
		{"SHOPMIND_PARTNER_KEY_HEADER": "X Api Key"},
		{"SHOPMIND_PARTNERS": "partner_a"},
		{"SHOPMIND_PARTNERS": "Partner-A=https://a.example"},
		{"SHOPMIND_PARTNERS": "a=ftp://a.example"},
		{"SHOPMIND_PARTNERS": "a=https://user:pw@a.example"},
		{"SHOPMIND_PARTNERS": "a=https://a.example/api?key=1"},
		{"SHOPMIND_PARTNERS": "a=/relative"},
		{"SHOPMIND_PARTNERS": "a=https://a.example,a=https://b.example"},
		{"SHOPMIND_CHAT_SSE_KEEPALIVE": "0s"},
		{"SHOPMIND_CHAT_SSE_KEEPALIVE": "often"},
	}
	for _, c := range cases {
		var key string
		for k := range c {
			key = k
		}
		_, err := load(c)
		name := key
		if strings.HasPrefix(key, "SHOPMIND_TLS_") {
			name = "SHOPMIND_TLS_CERT_FILE"
		}
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%v: want an error naming %s, got %v", c, name, err)
		}
	}
}

package discovery

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestConfigFromEnvDefaults(t *testing.T) {
	cfg, errs := ConfigFromEnv(envOf(nil))
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	if cfg.Enabled() || cfg.Env != "dev" || cfg.LeaseTTL != 10*time.Second || cfg.DialTimeout != 5*time.Second || cfg.AdvertiseAddr != "" {
		t.Fatalf("defaults: %+v", cfg)
	}
	if got := cfg.Target("catalog"); got != "etcd:///shopmind/dev/services/catalog" {
		t.Fatalf("target: %s", got)
	}
	if got := (Config{}).Prefix("catalog"); got != "shopmind/dev/services/catalog" {
		t.Fatalf("prefix of the zero config: %s", got)
	}
}

func TestConfigFromEnvValues(t *testing.T) {
	cfg, errs := ConfigFromEnv(envOf(map[string]string{
		"SHOPMIND_ETCD_ENDPOINTS":      " etcd-1:2379, http://etcd-2:2379 ,,",
		"SHOPMIND_ETCD_ENV":            "staging",
		"SHOPMIND_ETCD_LEASE_TTL":      "3s",
		"SHOPMIND_ETCD_DIAL_TIMEOUT":   "750ms",
		"SHOPMIND_GRPC_ADVERTISE_ADDR": "order-0.order:9090",
	}))
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	if !cfg.Enabled() || !slices.Equal(cfg.Endpoints, []string{"etcd-1:2379", "http://etcd-2:2379"}) ||
		cfg.Env != "staging" || cfg.LeaseTTL != 3*time.Second || cfg.DialTimeout != 750*time.Millisecond ||
		cfg.AdvertiseAddr != "order-0.order:9090" {
		t.Fatalf("config: %+v", cfg)
	}
	if got := cfg.Prefix("order"); got != "shopmind/staging/services/order" {
		t.Fatalf("prefix: %s", got)
	}
	if got := (Config{LeaseTTL: 1500 * time.Millisecond}).leaseTTLSeconds(); got != 2 {
		t.Fatalf("a 1.5s TTL is %d whole seconds, want 2", got)
	}
}

func TestConfigFromEnvErrors(t *testing.T) {
	_, errs := ConfigFromEnv(envOf(map[string]string{
		"SHOPMIND_ETCD_ENDPOINTS":      "etcd-1,https://etcd-2:2379,ok:2379",
		"SHOPMIND_ETCD_ENV":            "Prod/EU",
		"SHOPMIND_ETCD_LEASE_TTL":      "500ms",
		"SHOPMIND_ETCD_DIAL_TIMEOUT":   "soon",
		"SHOPMIND_GRPC_ADVERTISE_ADDR": "0.0.0.0:9090",
	}))
	joined := strings.Join(errs, "\n")
	for _, want := range []string{
		`SHOPMIND_ETCD_ENDPOINTS: "etcd-1"`,
		`SHOPMIND_ETCD_ENDPOINTS: "https://etcd-2:2379"`,
		"SHOPMIND_ETCD_ENV:",
		"SHOPMIND_ETCD_LEASE_TTL:",
		"SHOPMIND_ETCD_DIAL_TIMEOUT:",
		"SHOPMIND_GRPC_ADVERTISE_ADDR:",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("no error naming %s in:\n%s", want, joined)
		}
	}
	if len(errs) != 6 {
		t.Errorf("%d errors, want 6:\n%s", len(errs), joined)
	}
	if _, errs := ConfigFromEnv(envOf(map[string]string{"SHOPMIND_GRPC_ADVERTISE_ADDR": "order"})); len(errs) != 1 {
		t.Errorf("advertise address without a port: %v", errs)
	}
}

func TestAdvertise(t *testing.T) {
	host, _ := os.Hostname()
	for _, tc := range []struct {
		cfg    Config
		listen string
		want   string
	}{
		{Config{AdvertiseAddr: "order-0:9090"}, "0.0.0.0:9090", "order-0:9090"},
		{Config{}, "127.0.0.1:41234", "127.0.0.1:41234"},
		{Config{}, "10.1.2.3:9090", "10.1.2.3:9090"},
		{Config{}, "[::]:9090", host + ":9090"},
		{Config{}, "0.0.0.0:9090", host + ":9090"},
		{Config{}, ":9090", host + ":9090"},
	} {
		got, err := tc.cfg.Advertise(tc.listen)
		if err != nil || got != tc.want {
			t.Errorf("Advertise(%q) with %+v = %q, %v; want %q", tc.listen, tc.cfg, got, err, tc.want)
		}
	}
	if _, err := (Config{}).Advertise("nonsense"); err == nil {
		t.Error("Advertise of a malformed listen address: no error")
	}
}

func TestEnvPools(t *testing.T) {
	cfg, errs := ConfigFromEnv(envOf(map[string]string{"SHOPMIND_ETCD_ENV": "prod", "SHOPMIND_ETCD_ENV_POOLS": " test = staging "}))
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	for edge, want := range map[string]string{"dev": "prod", "local": "prod", "test": "staging"} {
		if got := cfg.PoolOf(edge); got != want {
			t.Errorf("PoolOf(%s) = %s, want %s", edge, got, want)
		}
	}
	if got := (Config{}).PoolOf("local"); got != DefaultEnv {
		t.Errorf("zero config: PoolOf(local) = %s, want %s", got, DefaultEnv)
	}
	for _, bad := range []string{"test", "test=", "=staging", "test=Staging", "test=a,test=b"} {
		_, errs := ConfigFromEnv(envOf(map[string]string{"SHOPMIND_ETCD_ENV_POOLS": bad}))
		if len(errs) != 1 || !strings.Contains(errs[0], "SHOPMIND_ETCD_ENV_POOLS") {
			t.Errorf("%q: want one error naming SHOPMIND_ETCD_ENV_POOLS, got %v", bad, errs)
		}
	}
}

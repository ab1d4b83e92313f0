package app_test

import (
	"context"
	"log/slog"
	"maps"
	"strings"
	"testing"

	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/services"
)

func TestEnvAddrOf(t *testing.T) {
	cfg, err := app.LoadConfigFromMap(map[string]string{
		"SHOPMIND_ENVIRONMENTS":          "dev, test, staging",
		"SHOPMIND_SERVICE_ADDRS":         "chat=10.0.0.9:9090",
		"SHOPMIND_TEST_SERVICE_ADDRS":    "tenant=10.0.1.1:9090",
		"SHOPMIND_STAGING_SERVICE_ADDRS": "tenant=10.0.2.1:9090,chat=10.0.2.2:9090",
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ env, target, want string }{
		{"dev", "chat", "10.0.0.9:9090"},
		{"test", "tenant", "10.0.1.1:9090"},
		{"test", "chat", "10.0.0.9:9090"}, // not in test's map: dev's address
		{"test", "basic", "127.0.0.1:9090"},
		{"staging", "chat", "10.0.2.2:9090"},
		{"local", "tenant", "127.0.0.1:9090"}, // no map: dev's address
	} {
		if got := cfg.EnvAddrOf(c.env, c.target); got != c.want {
			t.Errorf("EnvAddrOf(%s, %s) = %s, want %s", c.env, c.target, got, c.want)
		}
	}
}

func TestEnvPoolsMustNameEdgeEnvironments(t *testing.T) {
	for pools, want := range map[string]string{
		"dev=prod":     "always served by SHOPMIND_ETCD_ENV",
		"staging=prod": `"staging" is not an environment of SHOPMIND_ENVIRONMENTS`,
	} {
		_, err := app.LoadConfigFromMap(map[string]string{"SHOPMIND_ETCD_ENV_POOLS": pools}, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: want an error containing %q, got %v", pools, want, err)
		}
	}
	if _, err := app.LoadConfigFromMap(map[string]string{"SHOPMIND_ETCD_ENV_POOLS": "test=staging"}, nil); err != nil {
		t.Fatal(err)
	}
}

// A process that is one of several cannot sign with a random secret of its own: it refuses
// to start, naming the variable, before binding anything.
func TestSplitProcessNeedsASharedSecret(t *testing.T) {
	for _, c := range []struct {
		targets string
		vars    map[string]string
		refused bool
	}{
		{"gateway", nil, true},
		{"tenant,system", nil, true},
		{"all", map[string]string{"SHOPMIND_ETCD_ENDPOINTS": "127.0.0.1:1"}, true},
		{"gateway", map[string]string{"SHOPMIND_JWT_SECRET": "a-shared-secret-of-at-least-32-bytes!"}, false},
	} {
		vars := map[string]string{"SHOPMIND_HTTP_ADDR": "256.0.0.1:0", "SHOPMIND_GRPC_ADDR": "256.0.0.1:0"} // binding would fail next
		maps.Copy(vars, c.vars)
		cfg, err := app.LoadConfigFromMap(vars, services.All())
		if err != nil {
			t.Fatal(err)
		}
		err = app.Run(context.Background(), app.Options{Config: cfg, Logger: slog.New(slog.DiscardHandler), Targets: c.targets, Services: services.All()})
		refused := err != nil && strings.Contains(err.Error(), "SHOPMIND_JWT_SECRET is not set")
		if refused != c.refused || err == nil {
			t.Errorf("targets %s %v: refused=%v, want %v (err %v)", c.targets, c.vars, refused, c.refused, err)
		}
	}
}

package app_test

import (
	"testing"

	"github.com/shopmind/shopmind/internal/app"
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

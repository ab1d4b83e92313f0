package config

import (
	"strings"
	"testing"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestDefaults(t *testing.T) {
	cfg, err := load(envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HTTPAddr != "127.0.0.1:8080" || cfg.GRPCAddr != "127.0.0.1:9090" ||
		cfg.DatabaseURL != "postgres://postgres@127.0.0.1:5432/shopmind?sslmode=disable" ||
		cfg.CaptchaMode != "on-failure" || cfg.AlwaysHTTP200 || cfg.DemoData || !cfg.InProcessCalls {
		t.Fatalf("defaults: %+v", cfg)
	}
	if !cfg.JWTSecretGenerated || len(cfg.JWTSecret) < MinSecretLen {
		t.Fatalf("development without a secret must generate one: %+v", cfg)
	}
	other, _ := load(envOf(nil))
	if other.JWTSecret == cfg.JWTSecret {
		t.Fatal("generated secrets repeat")
	}
}

func TestProductionRefusesWeakSecrets(t *testing.T) {
	for _, secret := range []string{"", "changeme", "CHANGEME", "secret", "short-but-real"} {
		_, err := load(envOf(map[string]string{"SHOPMIND_MODE": "production", "SHOPMIND_JWT_SECRET": secret}))
		if err == nil || !strings.Contains(err.Error(), "SHOPMIND_JWT_SECRET") {
			t.Errorf("secret %q: want refusal, got %v", secret, err)
		}
	}
	cfg, err := load(envOf(map[string]string{"SHOPMIND_MODE": "production", "SHOPMIND_JWT_SECRET": strings.Repeat("k", 32)}))
	if err != nil || cfg.JWTSecretGenerated {
		t.Fatalf("good secret: %v", err)
	}
}

func TestInvalidValuesAreNamed(t *testing.T) {
	cases := map[string]string{
		"SHOPMIND_CAPTCHA_MODE":     "sometimes",
		"SHOPMIND_DEMO_DATA":        "yes please",
		"SHOPMIND_HTTP_STATUS":      "201",
		"SHOPMIND_MODE":             "staging",
		"SHOPMIND_LOG_LEVEL":        "loud",
		"SHOPMIND_SHUTDOWN_TIMEOUT": "-1s",
		"SHOPMIND_MAX_BODY_BYTES":   "0",
		"SHOPMIND_SERVICE_ADDRS":    "tenant",
	}
	for key, value := range cases {
		_, err := load(envOf(map[string]string{key: value}))
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s=%q: want an error naming it, got %v", key, value, err)
		}
	}
}

func TestSwitchesAndServiceAddrs(t *testing.T) {
	cfg, err := load(envOf(map[string]string{
		"SHOPMIND_HTTP_STATUS": "always-200", "SHOPMIND_DEMO_DATA": "true", "SHOPMIND_CAPTCHA_MODE": "off",
		"SHOPMIND_SERVICE_ADDRS": "tenant=10.0.0.1:9000, chat=10.0.0.2:9000", "SHOPMIND_IN_PROCESS_CALLS": "false",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.AlwaysHTTP200 || !cfg.DemoData || cfg.CaptchaMode != "off" || cfg.InProcessCalls {
		t.Fatalf("%+v", cfg)
	}
	if cfg.AddrOf("tenant") != "10.0.0.1:9000" || cfg.AddrOf("chat") != "10.0.0.2:9000" || cfg.AddrOf("basic") != cfg.GRPCAddr {
		t.Fatalf("addrs %+v", cfg.ServiceAddrs)
	}
}

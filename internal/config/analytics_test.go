package config

import (
	"strings"
	"testing"
	"time"
)

func TestAnalyticsDefaults(t *testing.T) {
	cfg, err := load(envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Analytics
	if a.URL != "" || a.QueryTimeout != 30*time.Second || a.MaxRows != 10000 {
		t.Fatalf("defaults: %+v", a)
	}
}

func TestAnalyticsValues(t *testing.T) {
	cfg, err := load(envOf(map[string]string{
		"SHOPMIND_ANALYTICS_URL":  "clickhouse://127.0.0.1:9000/shopmind?dial_timeout=2s",
		"SHOPMIND_QUERY_TIMEOUT":  "5s",
		"SHOPMIND_QUERY_MAX_ROWS": "500",
	}))
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Analytics
	if a.URL != "clickhouse://127.0.0.1:9000/shopmind?dial_timeout=2s" || a.QueryTimeout != 5*time.Second || a.MaxRows != 500 {
		t.Fatalf("values: %+v", a)
	}
}

func TestAnalyticsCluster(t *testing.T) {
	cfg, err := load(envOf(map[string]string{
		"SHOPMIND_ANALYTICS_URL":      "clickhouse://127.0.0.1:9101,127.0.0.1:9102/shopmind?dial_timeout=2s",
		"SHOPMIND_CLICKHOUSE_CLUSTER": "shopmind",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if want := "clickhouse://127.0.0.1:9101,127.0.0.1:9102/shopmind?cluster=shopmind&dial_timeout=2s"; cfg.Analytics.URL != want {
		t.Fatalf("URL %q, want %q", cfg.Analytics.URL, want)
	}
	_, err = load(envOf(map[string]string{"SHOPMIND_ANALYTICS_URL": "clickhouse://127.0.0.1:9101/shopmind",
		"SHOPMIND_CLICKHOUSE_CLUSTER": "shop`mind"}))
	if err == nil || !strings.Contains(err.Error(), "SHOPMIND_CLICKHOUSE_CLUSTER") {
		t.Fatalf("a bad cluster name: %v", err)
	}
}

func TestAnalyticsInvalidValuesAreNamed(t *testing.T) {
	cases := []struct{ key, value string }{
		{"SHOPMIND_ANALYTICS_URL", "postgres://127.0.0.1/shopmind"},
		{"SHOPMIND_ANALYTICS_URL", "http://127.0.0.1:8123"},
		{"SHOPMIND_ANALYTICS_URL", "clickhouse://"},
		{"SHOPMIND_ANALYTICS_URL", "clickhouse://host:99999/db"},
		{"SHOPMIND_QUERY_TIMEOUT", "30"},
		{"SHOPMIND_QUERY_TIMEOUT", "-1s"},
		{"SHOPMIND_QUERY_TIMEOUT", "0s"},
		{"SHOPMIND_QUERY_MAX_ROWS", "0"},
		{"SHOPMIND_QUERY_MAX_ROWS", "-5"},
		{"SHOPMIND_QUERY_MAX_ROWS", "ten"},
		{"SHOPMIND_QUERY_MAX_ROWS", "1000001"},
		{"SHOPMIND_CLICKHOUSE_CLUSTER", "shopmind"}, // without a ClickHouse URL
	}
	for _, c := range cases {
		_, err := load(envOf(map[string]string{c.key: c.value}))
		if err == nil || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%s=%q: want an error naming it, got %v", c.key, c.value, err)
		}
	}
}

func TestAnalyticsURLPasswordIsRedacted(t *testing.T) {
	_, err := load(envOf(map[string]string{"SHOPMIND_ANALYTICS_URL": "tcp://user:hunter2@host:9000/db"}))
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("want an error without the password, got %v", err)
	}
}

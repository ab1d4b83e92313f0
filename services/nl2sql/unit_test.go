package nl2sql

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	nl2sqlv1 "github.com/shopmind/shopmind/gen/go/shopmind/nl2sql/v1"
	"github.com/shopmind/shopmind/internal/config"
)

func TestLoadConfig(t *testing.T) {
	cfg, errs := LoadConfig(func(k string) string {
		return map[string]string{"SHOPMIND_NL2SQL_API_URL": "https://api.example.com/v1/", "SHOPMIND_NL2SQL_TOKEN_TTL": "30m",
			"SHOPMIND_NL2SQL_BOT_ID": "bot_1", "SHOPMIND_NL2SQL_CACHE_SIZE": "5"}[k]
	})
	if len(errs) > 0 || cfg.APIURL != "https://api.example.com/v1" || cfg.TokenTTL != 30*time.Minute || cfg.BotID != "bot_1" || cfg.CacheSize != 5 || cfg.BuiltIn() {
		t.Fatalf("%+v %v", cfg, errs)
	}
	_, errs = LoadConfig(func(k string) string {
		return map[string]string{"SHOPMIND_NL2SQL_API_URL": "ftp://x", "SHOPMIND_NL2SQL_TOKEN_TTL": "5s", "SHOPMIND_NL2SQL_BOT_ID": "bad id!",
			"SHOPMIND_NL2SQL_DS_ENGINE": "mysql", "SHOPMIND_NL2SQL_RETRIES": "99", "SHOPMIND_NL2SQL_PROVIDER_ADDR": "nohost"}[k]
	})
	joined := strings.Join(errs, "\n")
	for _, v := range []string{"SHOPMIND_NL2SQL_API_URL", "SHOPMIND_NL2SQL_TOKEN_TTL", "SHOPMIND_NL2SQL_BOT_ID", "SHOPMIND_NL2SQL_DS_ENGINE", "SHOPMIND_NL2SQL_RETRIES", "SHOPMIND_NL2SQL_PROVIDER_ADDR"} {
		if !strings.Contains(joined, v) {
			t.Errorf("no error names %s: %s", v, joined)
		}
	}
}

func TestPlaceholderKeys(t *testing.T) {
	for _, k := range []string{"changeme", "YOUR_API_KEY", "<api-key>", "xxxxxxxx", "${NL2SQL_KEY}", "test"} {
		if !IsPlaceholder(k) {
			t.Errorf("%q is a placeholder", k)
		}
	}
	for _, k := range []string{"", "ADMIN_54RVZUHXDTONK3Z8GU35", "sk-builtin-0123abcd"} {
		if IsPlaceholder(k) {
			t.Errorf("%q is not a placeholder", k)
		}
	}
}

func TestProviderKeyDerivedFromSecret(t *testing.T) {
	a, b := Config{JWTSecret: "s1"}, Config{JWTSecret: "s2"}
	if a.ProviderKey() == "" || a.ProviderKey() == b.ProviderKey() || a.ProviderKey() != (Config{JWTSecret: "s1"}).ProviderKey() {
		t.Fatal("the derived key must be stable per secret and differ between secrets")
	}
	if (Config{JWTSecret: "s1", APIKey: "k"}).ProviderKey() != "k" {
		t.Fatal("an API key wins")
	}
}

func TestTablePattern(t *testing.T) {
	for _, ok := range []string{"^(basic_|diy_)", "^basic_", "^basic_orders$", "^diy_sales_.*", "^(basic_|diy_)(orders|goods)$"} {
		if err := checkTablePattern(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"^basic_|.*", "^basic_x|pg_.*", "basic_", "^users", "^(basic_|diy_)|system", "^basic_(", "^diy_|^"} {
		if err := checkTablePattern(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestFilterSQL(t *testing.T) {
	for _, tc := range []struct {
		f    *nl2sqlv1.RowFilter
		want string
	}{
		{&nl2sqlv1.RowFilter{Column: "shop_id", Operator: "in", Values: []string{"1", "2"}}, "shop_id IN (1, 2)"},
		{&nl2sqlv1.RowFilter{Column: "platform", Operator: "eq", Values: []string{"o'hara"}}, "platform = 'o''hara'"},
		{&nl2sqlv1.RowFilter{Column: "shop_id", Operator: "in", Variable: "shop_ids"}, "shop_id IN {{ shop_ids }}"},
		{&nl2sqlv1.RowFilter{Column: "platform", Operator: "in", Values: []string{"1 OR 1=1"}}, "platform IN ('1 OR 1=1')"},
	} {
		if got := filterSQL(tc.f); got != tc.want {
			t.Errorf("%v: got %q, want %q", tc.f, got, tc.want)
		}
	}
}

func TestTokenCache(t *testing.T) {
	c := newTokenCache(2)
	now := time.Now()
	c.put("a", cachedToken{"ta", now.Add(10 * time.Minute)}, now)
	if got, ok := c.get("a", now, time.Minute); !ok || got.token != "ta" {
		t.Fatal("a live token is reused")
	}
	if _, ok := c.get("a", now.Add(9*time.Minute+time.Second), time.Minute); ok {
		t.Fatal("a token within the margin of its expiry is not reused")
	}
	c.put("b", cachedToken{"tb", now.Add(time.Second)}, now)
	c.put("c", cachedToken{"tc", now.Add(time.Hour)}, now.Add(2*time.Second)) // b expired: it goes first
	if c.len() != 2 {
		t.Fatalf("size bound: %d", c.len())
	}
	if _, ok := c.get("a", now, time.Minute); !ok {
		t.Fatal("the expired entry should have been evicted, not a live one")
	}
	off := newTokenCache(0)
	off.put("a", cachedToken{"ta", now.Add(time.Hour)}, now)
	if _, ok := off.get("a", now, 0); ok {
		t.Fatal("size 0 turns the cache off")
	}
}

func TestOverrideApply(t *testing.T) {
	s := newSettings(Config{APIURL: "https://a.example.com", APIKey: "k1", TokenTTL: time.Hour}, slog.New(slog.DiscardHandler))
	if err := s.apply([]byte(`{"api_url":"https://b.example.com","token_ttl":"10m"}`)); err != nil {
		t.Fatal(err)
	}
	if e := s.get(); e.APIURL != "https://b.example.com" || e.APIKey != "k1" || e.TokenTTL != 10*time.Minute || e.source != "etcd" {
		t.Fatalf("%+v", e)
	}
	for _, bad := range []string{`{"api_url":"nope"}`, `{"token_ttl":"1s"}`, `{"unknown":1}`, `not json`} {
		if err := s.apply([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
		if s.get().APIURL != "https://b.example.com" {
			t.Fatalf("a refused override changed the configuration: %s", bad)
		}
	}
	if err := s.apply(nil); err != nil || s.get().APIURL != "https://a.example.com" || s.get().source != "env" {
		t.Fatalf("deleting the override returns to the environment: %+v %v", s.get(), err)
	}
}

func TestDatasourceDefaultsFromTheAnalyticalStore(t *testing.T) {
	pg := withDefaults(Config{}, &config.Config{DatabaseURL: "postgres://reader:pw@db.internal:6432/shopmind?sslmode=disable", JWTSecret: "s"})
	if pg.DSEngine != "postgresql" || pg.DSHost != "db.internal" || pg.DSPort != 6432 || pg.DSUser != "reader" || pg.DSPassword != "pw" || pg.DSDatabase != "shopmind" || pg.DSSchema != "analytics" || pg.JWTSecret != "s" {
		t.Fatalf("postgres: %+v", pg)
	}
	ch := withDefaults(Config{DSUser: "ro"}, &config.Config{Analytics: config.AnalyticsConfig{URL: "clickhouse://ch:9000/warehouse"}})
	if ch.DSEngine != "clickhouse" || ch.DSHost != "ch" || ch.DSPort != 9000 || ch.DSDatabase != "warehouse" || ch.DSSchema != "warehouse" || ch.DSUser != "ro" {
		t.Fatalf("clickhouse: %+v", ch)
	}
}

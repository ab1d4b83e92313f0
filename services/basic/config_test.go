package basic

import (
	"strings"
	"testing"
	"time"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestBasicDefaults(t *testing.T) {
	b, errs := LoadConfig(envOf(nil))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if b.PlatformURL != "" || b.PartnerAURL != "" || b.SyncTimeout != 2*time.Minute || b.UpstreamTimeout != 15*time.Second ||
		b.UpstreamRetries != 2 || b.WarehouseRetryInterval != 10*time.Second {
		t.Fatalf("defaults: %+v", b)
	}
}

func TestBasicValues(t *testing.T) {
	b, errs := LoadConfig(envOf(map[string]string{
		"SHOPMIND_PLATFORM_URL": "https://open.platform.example/", "SHOPMIND_PLATFORM_KEY": "pk",
		"SHOPMIND_PARTNER_A_URL": "http://127.0.0.1:9999", "SHOPMIND_PARTNER_A_KEY": "ak",
		"SHOPMIND_SYNC_TIMEOUT": "30s", "SHOPMIND_SYNC_REQUEST_TIMEOUT": "3s", "SHOPMIND_SYNC_RETRIES": "0",
		"SHOPMIND_WAREHOUSE_RETRY_INTERVAL": "1s",
	}))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if b.PlatformURL != "https://open.platform.example" || b.PlatformKey != "pk" || b.PartnerAURL != "http://127.0.0.1:9999" ||
		b.PartnerAKey != "ak" || b.SyncTimeout != 30*time.Second || b.UpstreamTimeout != 3*time.Second || b.UpstreamRetries != 0 ||
		b.WarehouseRetryInterval != time.Second {
		t.Fatalf("values: %+v", b)
	}
}

func TestBasicMalformed(t *testing.T) {
	_, errs := LoadConfig(envOf(map[string]string{
		"SHOPMIND_PLATFORM_URL": "ftp://x", "SHOPMIND_PARTNER_A_URL": "not a url", "SHOPMIND_SYNC_TIMEOUT": "-1s",
		"SHOPMIND_SYNC_REQUEST_TIMEOUT": "soon", "SHOPMIND_SYNC_RETRIES": "11", "SHOPMIND_WAREHOUSE_RETRY_INTERVAL": "0s",
	}))
	if len(errs) == 0 {
		t.Fatal("malformed values accepted")
	}
	err := strings.Join(errs, "; ")
	for _, key := range []string{"SHOPMIND_PLATFORM_URL", "SHOPMIND_PARTNER_A_URL", "SHOPMIND_SYNC_TIMEOUT", "SHOPMIND_SYNC_REQUEST_TIMEOUT",
		"SHOPMIND_SYNC_RETRIES", "SHOPMIND_WAREHOUSE_RETRY_INTERVAL"} {
		if !strings.Contains(err, key) {
			t.Errorf("%s not named in %v", key, err)
		}
	}
}

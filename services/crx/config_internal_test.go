package crx

import (
	"strings"
	"testing"

	crxv1 "github.com/shopmind/shopmind/gen/go/shopmind/crx/v1"
	"github.com/shopmind/shopmind/internal/apperr"
)

func TestLoadConfig(t *testing.T) {
	cfg, errs := LoadConfig(func(string) string { return "" })
	if len(errs) != 0 || cfg.LatestVersion != DefaultLatestVersion || cfg.MinVersion != DefaultLatestVersion ||
		cfg.SyncMaxBytes != DefaultSyncMaxBytes || cfg.ErrorsPerMinute != DefaultErrorsPerMin {
		t.Fatalf("defaults: %+v %v", cfg, errs)
	}
	env := map[string]string{"SHOPMIND_CRX_LATEST_VERSION": "2.1", "SHOPMIND_CRX_MIN_VERSION": "1.9.3",
		"SHOPMIND_CRX_DOWNLOAD_URL": "https://cdn.example.com/x.crx", "SHOPMIND_CRX_RELEASED_AT": "2026-11-01T00:00:00Z",
		"SHOPMIND_CRX_SYNC_MAX_BYTES": "2048", "SHOPMIND_CRX_ERROR_RATE": "5", "SHOPMIND_CRX_RELEASE_NOTES": "Faster uploads"}
	cfg, errs = LoadConfig(func(k string) string { return env[k] })
	if len(errs) != 0 || cfg.MinVersion != "1.9.3" || cfg.ReleasedAt.Year() != 2026 || cfg.SyncMaxBytes != 2048 || cfg.ErrorsPerMinute != 5 {
		t.Fatalf("set: %+v %v", cfg, errs)
	}
	bad := map[string]string{"SHOPMIND_CRX_LATEST_VERSION": "v2", "SHOPMIND_CRX_MIN_VERSION": "3.0",
		"SHOPMIND_CRX_DOWNLOAD_URL": "ftp://x", "SHOPMIND_CRX_RELEASED_AT": "yesterday", "SHOPMIND_CRX_SYNC_MAX_BYTES": "0",
		"SHOPMIND_CRX_ERROR_RATE": "many"}
	_, errs = LoadConfig(func(k string) string { return bad[k] })
	joined := strings.Join(errs, "\n")
	for k := range bad {
		if !strings.Contains(joined, k) {
			t.Errorf("no message names %s: %s", k, joined)
		}
	}
}

func TestCompareVersions(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"1.10", "1.9", 1}, {"1.0", "1", 0}, {"1.0.0.1", "1", 1}, {"0.9.9", "1.0", -1}, {"2", "2.0.0", 0}} {
		if got := compareVersions(c.a, c.b); got != c.want {
			t.Errorf("compare %s %s: %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestDefaultsPassTheirOwnChecks(t *testing.T) {
	if err := checkTenantConfig(DefaultMetrics(), DefaultUpload()); err != nil {
		t.Fatal(err)
	}
}

func TestCheckTenantConfigNamesFields(t *testing.T) {
	m := DefaultMetrics()[0]
	dupe := DefaultMetrics()[0]
	api := &crxv1.MetricDefinition{Key: "uv", Name: "UV", Platform: "jd", UrlPattern: "^x", Source: "api", ApiUrlPattern: "[", JsonPath: "data", IntervalSeconds: 30}
	err := checkTenantConfig([]*crxv1.MetricDefinition{m, dupe, api},
		&crxv1.UploadSettings{BatchSize: 0, IntervalSeconds: 5, MaxConcurrentTabs: 21, RandomDelayMsMin: 10, RandomDelayMsMax: 5})
	ae, ok := err.(*apperr.Error)
	if !ok || ae.Kind != apperr.KindInvalid {
		t.Fatalf("want a 400, got %v", err)
	}
	fields := map[string]bool{}
	for _, v := range ae.Violations {
		fields[v.Field] = true
	}
	for _, f := range []string{"metrics[1].key", "metrics[2].api_url_pattern", "metrics[2].json_path", "metrics[2].interval_seconds",
		"upload.batch_size", "upload.interval_seconds", "upload.max_concurrent_tabs", "upload.random_delay_ms_max"} {
		if !fields[f] {
			t.Errorf("%s not named: %v", f, ae.Violations)
		}
	}
}

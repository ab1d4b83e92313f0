package basic

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Basic service defaults.
const (
	DefaultSyncTimeout            = 2 * time.Minute
	DefaultSyncRequestTimeout     = 15 * time.Second
	DefaultUpstreamRetries        = 2
	DefaultWarehouseRetryInterval = 10 * time.Second
	DefaultWarehousePushWait      = time.Second
	DefaultImportMaxBytes         = 2 << 30
	DefaultImportMaxRows          = 20_000_000
	DefaultImportTimeout          = time.Hour
	// MaxUpstreamRetries bounds SHOPMIND_SYNC_RETRIES.
	MaxUpstreamRetries = 10
)

// Config configures the basic service (services/basic/BASIC.md lists every variable):
// the platform and partner A integrations its sync endpoints call, and how it keeps the
// analytical store in step.
type Config struct {
	// PlatformURL is the base URL of the platform goods API (SHOPMIND_PLATFORM_URL); empty:
	// sync-from-platform answers 503 "not configured".
	PlatformURL string
	// PlatformKey is the platform API key (SHOPMIND_PLATFORM_KEY).
	PlatformKey string
	// PartnerAURL is the base URL of partner A's SKU API (SHOPMIND_PARTNER_A_URL); empty:
	// sync-sku-from-partner_a answers 503 "not configured".
	PartnerAURL string
	// PartnerAKey is partner A's API key (SHOPMIND_PARTNER_A_KEY).
	PartnerAKey string
	// SyncTimeout bounds one sync call as a whole (SHOPMIND_SYNC_TIMEOUT); beyond it the sync
	// stops (pages already written stay) and answers 504.
	SyncTimeout time.Duration
	// UpstreamTimeout bounds one HTTP request to the platform or partner A
	// (SHOPMIND_SYNC_REQUEST_TIMEOUT).
	UpstreamTimeout time.Duration
	// UpstreamRetries is how often a failed upstream request is retried
	// (SHOPMIND_SYNC_RETRIES, 0 to 10).
	UpstreamRetries int
	// WarehouseRetryInterval is how often the background loop retries writes to the
	// analytical store that failed during a request (SHOPMIND_WAREHOUSE_RETRY_INTERVAL).
	WarehouseRetryInterval time.Duration
	// WarehousePushWait is how long a write request waits for its change to reach the
	// analytical store before answering with the sync pending (SHOPMIND_WAREHOUSE_PUSH_WAIT).
	WarehousePushWait time.Duration
	// ImportMaxBytes bounds an imported file (SHOPMIND_IMPORT_MAX_BYTES); larger: 413.
	ImportMaxBytes int64
	// ImportMaxRows bounds an imported file's data rows (SHOPMIND_IMPORT_MAX_ROWS); more: 413.
	ImportMaxRows int64
	// ImportTimeout is an import job's time budget (SHOPMIND_IMPORT_TIMEOUT); beyond it: 504.
	ImportTimeout time.Duration
}

// LoadConfig reads the basic service's variables through getenv and returns the
// configuration with a message naming the variable for each malformed value (none when it
// is valid). It is the service's Def.Config.
func LoadConfig(getenv func(string) string) (Config, []string) {
	var errs []string
	cfg := Config{SyncTimeout: DefaultSyncTimeout, UpstreamTimeout: DefaultSyncRequestTimeout,
		UpstreamRetries: DefaultUpstreamRetries, WarehouseRetryInterval: DefaultWarehouseRetryInterval,
		WarehousePushWait: DefaultWarehousePushWait, ImportMaxBytes: DefaultImportMaxBytes, ImportMaxRows: DefaultImportMaxRows,
		ImportTimeout: DefaultImportTimeout}
	httpURL := func(key string) string {
		v := strings.TrimSpace(getenv(key))
		if v == "" {
			return ""
		}
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Sprintf("%s: %q is not an http(s) URL", key, redactURL(v)))
			return ""
		}
		return strings.TrimRight(v, "/")
	}
	duration := func(key string, dst *time.Duration) {
		if v := strings.TrimSpace(getenv(key)); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				errs = append(errs, fmt.Sprintf("%s: %q is not a positive duration", key, v))
				return
			}
			*dst = d
		}
	}
	cfg.PlatformURL = httpURL("SHOPMIND_PLATFORM_URL")
	cfg.PlatformKey = strings.TrimSpace(getenv("SHOPMIND_PLATFORM_KEY"))
	cfg.PartnerAURL = httpURL("SHOPMIND_PARTNER_A_URL")
	cfg.PartnerAKey = strings.TrimSpace(getenv("SHOPMIND_PARTNER_A_KEY"))
	duration("SHOPMIND_SYNC_TIMEOUT", &cfg.SyncTimeout)
	duration("SHOPMIND_SYNC_REQUEST_TIMEOUT", &cfg.UpstreamTimeout)
	duration("SHOPMIND_WAREHOUSE_RETRY_INTERVAL", &cfg.WarehouseRetryInterval)
	duration("SHOPMIND_WAREHOUSE_PUSH_WAIT", &cfg.WarehousePushWait)
	duration("SHOPMIND_IMPORT_TIMEOUT", &cfg.ImportTimeout)
	positive := func(key string, dst *int64) {
		if v := strings.TrimSpace(getenv(key)); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				errs = append(errs, fmt.Sprintf("%s: %q is not a positive integer", key, v))
				return
			}
			*dst = n
		}
	}
	positive("SHOPMIND_IMPORT_MAX_BYTES", &cfg.ImportMaxBytes)
	positive("SHOPMIND_IMPORT_MAX_ROWS", &cfg.ImportMaxRows)
	if v := strings.TrimSpace(getenv("SHOPMIND_SYNC_RETRIES")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > MaxUpstreamRetries {
			errs = append(errs, fmt.Sprintf("SHOPMIND_SYNC_RETRIES: %q is not an integer between 0 and %d", v, MaxUpstreamRetries))
		} else {
			cfg.UpstreamRetries = n
		}
	}
	return cfg, errs
}

// redactURL hides a password in error messages.
func redactURL(v string) string {
	u, err := url.Parse(v)
	if err != nil || u.User == nil {
		return v
	}
	return u.Redacted()
}

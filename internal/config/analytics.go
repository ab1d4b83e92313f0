package config

import (
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Analytics defaults.
const (
	DefaultQueryTimeout = 30 * time.Second
	DefaultQueryMaxRows = 10_000
	// MaxQueryMaxRows bounds SHOPMIND_QUERY_MAX_ROWS: results are held in memory.
	MaxQueryMaxRows = 1_000_000
)

// AnalyticsConfig configures the analytical store (internal/analytics/warehouse; every
// variable is in internal/analytics/warehouse/WAREHOUSE.md's table).
type AnalyticsConfig struct {
	// URL selects the store (SHOPMIND_ANALYTICS_URL): empty for the PostgreSQL schema
	// analytics in the platform database, or clickhouse://host:9000/db?... for ClickHouse
	// (native protocol).
	URL string
	// QueryTimeout bounds one analytical query (SHOPMIND_QUERY_TIMEOUT); beyond it the
	// query is cancelled and answers 504.
	QueryTimeout time.Duration
	// MaxRows caps the rows one query returns (SHOPMIND_QUERY_MAX_ROWS); longer
	// results are truncated and marked so.
	MaxRows int
}

// loadAnalytics reads the analytics variables, appending a message naming the variable to
// errs for each malformed value.
func loadAnalytics(getenv func(string) string, errs *[]string) AnalyticsConfig {
	cfg := AnalyticsConfig{QueryTimeout: DefaultQueryTimeout, MaxRows: DefaultQueryMaxRows}
	if v := strings.TrimSpace(getenv("SHOPMIND_ANALYTICS_URL")); v != "" {
		if err := checkClickHouseURL(v); err != nil {
			*errs = append(*errs, "SHOPMIND_ANALYTICS_URL: "+err.Error())
		} else {
			cfg.URL = v
		}
	}
	// SHOPMIND_CLICKHOUSE_CLUSTER puts the ClickHouse store in cluster mode: it travels to
	// the store as the URL's cluster parameter (internal/analytics/warehouse).
	if v := strings.TrimSpace(getenv("SHOPMIND_CLICKHOUSE_CLUSTER")); v != "" {
		switch {
		case cfg.URL == "":
			*errs = append(*errs, "SHOPMIND_CLICKHOUSE_CLUSTER: cluster mode needs SHOPMIND_ANALYTICS_URL=clickhouse://... (the replicas' addresses, comma-separated)")
		case !clusterNameRe.MatchString(v):
			*errs = append(*errs, fmt.Sprintf("SHOPMIND_CLICKHOUSE_CLUSTER: %q is not a cluster name (lower-case letters, digits, underscores)", v))
		default:
			u, _ := url.Parse(cfg.URL)
			q := u.Query()
			q.Set("cluster", v)
			u.RawQuery = q.Encode()
			cfg.URL = u.String()
		}
	}
	if v := strings.TrimSpace(getenv("SHOPMIND_QUERY_TIMEOUT")); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			*errs = append(*errs, fmt.Sprintf("SHOPMIND_QUERY_TIMEOUT: %q is not a positive duration", v))
		} else {
			cfg.QueryTimeout = d
		}
	}
	if v := strings.TrimSpace(getenv("SHOPMIND_QUERY_MAX_ROWS")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n > MaxQueryMaxRows {
			*errs = append(*errs, fmt.Sprintf("SHOPMIND_QUERY_MAX_ROWS: %q is not an integer between 1 and %d", v, MaxQueryMaxRows))
		} else {
			cfg.MaxRows = n
		}
	}
	return cfg
}

// checkClickHouseURL accepts clickhouse://host[:port][/database][?options].
func checkClickHouseURL(v string) error {
	if !strings.HasPrefix(v, "clickhouse://") {
		return fmt.Errorf("%q must be empty (PostgreSQL schema analytics) or start with clickhouse://", redactURL(v))
	}
	u, err := url.Parse(v)
	if err != nil {
		return fmt.Errorf("not a URL: %v", err)
	}
	if u.Host == "" {
		return fmt.Errorf("%q names no host", redactURL(v))
	}
	if port := u.Port(); port != "" {
		if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
			return fmt.Errorf("%q has an invalid port", redactURL(v))
		}
	}
	return nil
}

// clusterNameRe is what a ClickHouse cluster name (remote_servers) must look like.
var clusterNameRe = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// redactURL hides a password in error messages.
func redactURL(v string) string {
	u, err := url.Parse(v)
	if err != nil || u.User == nil {
		return v
	}
	return u.Redacted()
}

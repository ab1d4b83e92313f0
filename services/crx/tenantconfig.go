package crx

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"

	crxv1 "github.com/shopmind/shopmind/gen/go/shopmind/crx/v1"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/authn"
)

// LoginExpiryDays is the spec's login expiry of the extension.
const LoginExpiryDays = 30

// Bounds of the upload settings an administrator may set.
const (
	maxBatchSize       = 500
	minUploadInterval  = 10
	maxUploadInterval  = 86400
	maxConcurrentTabs  = 20
	maxRandomDelayMs   = 60000
	minMetricInterval  = 60
	maxMetricSelectors = 512
)

// DefaultUpload are the upload settings of a tenant whose administrator set none.
func DefaultUpload() *crxv1.UploadSettings {
	return &crxv1.UploadSettings{BatchSize: 100, IntervalSeconds: 300, MaxConcurrentTabs: 3,
		RandomDelayMsMin: 500, RandomDelayMsMax: 3000}
}

// DefaultMetrics are the metrics of a tenant whose administrator set none: the traffic and
// sales figures of the merchants' back offices of taobao (Sycm), jd and pdd, read from the
// pages' DOM. Administrators replace them with their own (GetTenantConfig/UpdateTenantConfig).
func DefaultMetrics() []*crxv1.MetricDefinition {
	m := func(key, name, platform, pattern, selector string) *crxv1.MetricDefinition {
		return &crxv1.MetricDefinition{Key: key, Name: name, Platform: platform, UrlPattern: pattern, Source: "dom",
			Selector: selector, IntervalSeconds: 3600}
	}
	return []*crxv1.MetricDefinition{
		m("visitors", "Visitors", "taobao", `^https://sycm\.taobao\.com/`, `[data-metric="uv"] .value`),
		m("gmv", "GMV", "taobao", `^https://sycm\.taobao\.com/`, `[data-metric="payAmt"] .value`),
		m("orders", "Paid orders", "taobao", `^https://sycm\.taobao\.com/`, `[data-metric="payOrdCnt"] .value`),
		m("visitors", "Visitors", "jd", `^https://sz\.jd\.com/`, `#uv .num`),
		m("gmv", "GMV", "jd", `^https://sz\.jd\.com/`, `#ordAmt .num`),
		m("visitors", "Visitors", "pdd", `^https://mms\.pinduoduo\.com/sycm/`, `.uv-card .value`),
		m("gmv", "GMV", "pdd", `^https://mms\.pinduoduo\.com/sycm/`, `.gmv-card .value`),
	}
}

// tenantConfig is a tenant's stored configuration (version 0: the defaults).
type tenantConfig struct {
	metrics   []*crxv1.MetricDefinition
	upload    *crxv1.UploadSettings
	version   int64
	updatedAt time.Time
}

func (c *tenantConfig) pb() *crxv1.TenantConfig {
	out := &crxv1.TenantConfig{Metrics: c.metrics, Upload: c.upload, ConfigVersion: c.version}
	if !c.updatedAt.IsZero() {
		out.UpdatedAt = timestamppb.New(c.updatedAt)
	}
	return out
}

// metricKeys is the set of metric keys the tenant's extensions may upload.
func (c *tenantConfig) metricKeys() map[string]bool {
	keys := make(map[string]bool, len(c.metrics))
	for _, m := range c.metrics {
		keys[m.GetKey()] = true
	}
	return keys
}

// loadConfig reads the tenant's configuration, or the defaults.
func (s *server) loadConfig(ctx context.Context, tenantID int64) (*tenantConfig, error) {
	var metrics, upload []byte
	c := &tenantConfig{}
	err := s.pool.QueryRow(ctx, `SELECT metrics, upload, version, updated_at FROM crx.tenant_configs WHERE tenant_id = $1`,
		tenantID).Scan(&metrics, &upload, &c.version, &c.updatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return &tenantConfig{metrics: DefaultMetrics(), upload: DefaultUpload()}, nil
	}
	if err != nil {
		return nil, err
	}
	var stored crxv1.TenantConfig
	if err := protojson.Unmarshal(fmt.Appendf(nil, `{"metrics":%s,"upload":%s}`, metrics, upload), &stored); err != nil {
		return nil, apperr.Internal(fmt.Errorf("crx: stored configuration of tenant %d: %w", tenantID, err))
	}
	c.metrics, c.upload = stored.GetMetrics(), stored.GetUpload()
	return c, nil
}

func (s *server) GetAuthConfig(ctx context.Context, _ *crxv1.GetAuthConfigRequest) (*crxv1.GetAuthConfigResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	c, err := s.loadConfig(ctx, id.TenantID)
	if err != nil {
		return nil, err
	}
	perms, err := s.crxPermissions(ctx, id)
	if err != nil {
		return nil, err
	}
	return &crxv1.GetAuthConfigResponse{Permissions: perms, Metrics: c.metrics, Upload: c.upload,
		LoginExpiryDays: LoginExpiryDays, ConfigVersion: c.version}, nil
}

// crxPermissions are the crx:* permission codes the caller holds, sorted.
func (s *server) crxPermissions(ctx context.Context, id *authn.Identity) ([]string, error) {
	held := map[string]bool{}
	if id.IsAdmin {
		held = authn.Permissions()
	} else if s.perms != nil {
		p, err := s.perms.Permissions(ctx, id)
		if err != nil {
			return nil, err
		}
		held = p
	}
	out := []string{}
	for code, ok := range held {
		if ok && strings.HasPrefix(code, "crx:") {
			out = append(out, code)
		}
	}
	slices.Sort(out)
	return out, nil
}

func (s *server) GetTenantConfig(ctx context.Context, _ *crxv1.GetTenantConfigRequest) (*crxv1.GetTenantConfigResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	c, err := s.loadConfig(ctx, id.TenantID)
	if err != nil {
		return nil, err
	}
	return &crxv1.GetTenantConfigResponse{Config: c.pb()}, nil
}

func (s *server) UpdateTenantConfig(ctx context.Context, req *crxv1.UpdateTenantConfigRequest) (*crxv1.UpdateTenantConfigResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	c := &tenantConfig{metrics: req.GetMetrics(), upload: req.GetUpload()}
	if req.GetRestoreDefaults() {
		// Stored as a new version like any change (not deleted: the version would go back to
		// one an extension may hold, and it would not reload).
		c = &tenantConfig{metrics: DefaultMetrics(), upload: DefaultUpload()}
	} else if err := checkTenantConfig(c.metrics, c.upload); err != nil {
		return nil, err
	}
	metrics := []byte("[")
	for i, m := range c.metrics {
		if i > 0 {
			metrics = append(metrics, ',')
		}
		b, err := protojson.Marshal(m)
		if err != nil {
			return nil, apperr.Internal(err)
		}
		metrics = append(metrics, b...)
	}
	metrics = append(metrics, ']')
	upload, err := protojson.Marshal(c.upload)
	if err != nil {
		return nil, apperr.Internal(err)
	}
	if c.metrics == nil {
		c.metrics = []*crxv1.MetricDefinition{}
	}
	err = s.pool.QueryRow(ctx, `INSERT INTO crx.tenant_configs (tenant_id, metrics, upload, version, updated_by)
		VALUES ($1, $2, $3, 1, $4)
		ON CONFLICT (tenant_id) DO UPDATE SET metrics = EXCLUDED.metrics, upload = EXCLUDED.upload,
			version = crx.tenant_configs.version + 1, updated_by = EXCLUDED.updated_by, updated_at = now()
		RETURNING version, updated_at`, id.TenantID, metrics, upload, id.UserID).Scan(&c.version, &c.updatedAt)
	if err != nil {
		return nil, err
	}
	return &crxv1.UpdateTenantConfigResponse{Config: c.pb()}, nil
}

// Names a configuration may use: metric keys and platforms.
var (
	keyRe      = regexp.MustCompile(`^[a-z][a-z0-9_.]{0,63}$`)
	platformRe = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)
)

// checkTenantConfig checks what the request rules cannot: each violation names its field.
func checkTenantConfig(metrics []*crxv1.MetricDefinition, u *crxv1.UploadSettings) error {
	var v []apperr.FieldViolation
	bad := func(field, msg string) { v = append(v, apperr.FieldViolation{Field: field, Message: msg}) }
	seen := map[string]bool{}
	for i, m := range metrics {
		f := func(name string) string { return fmt.Sprintf("metrics[%d].%s", i, name) }
		if !keyRe.MatchString(m.GetKey()) {
			bad(f("key"), "must be a lowercase identifier of at most 64 characters")
		}
		// One key may be collected on several platforms (gmv on taobao and on jd).
		if k := m.GetKey() + "/" + m.GetPlatform(); seen[k] {
			bad(f("key"), fmt.Sprintf("metric %q is defined twice for platform %q", m.GetKey(), m.GetPlatform()))
		} else {
			seen[k] = true
		}
		if n := len([]rune(m.GetName())); n < 1 || n > 128 {
			bad(f("name"), "must be 1 to 128 characters")
		}
		if !platformRe.MatchString(m.GetPlatform()) {
			bad(f("platform"), "must be a lowercase identifier of at most 32 characters")
		}
		checkRE := func(name, re string) {
			if re == "" || len(re) > 1024 {
				bad(f(name), "must be a regular expression of 1 to 1024 characters")
			} else if _, err := regexp.Compile(re); err != nil {
				bad(f(name), "is not a valid RE2 regular expression: "+err.Error())
			}
		}
		checkRE("url_pattern", m.GetUrlPattern())
		switch m.GetSource() {
		case "dom":
			if s := m.GetSelector(); s == "" || len(s) > maxMetricSelectors {
				bad(f("selector"), fmt.Sprintf("is required with source dom, at most %d characters", maxMetricSelectors))
			}
		case "api":
			checkRE("api_url_pattern", m.GetApiUrlPattern())
			if p := m.GetJsonPath(); !strings.HasPrefix(p, "$") || len(p) > 256 {
				bad(f("json_path"), "is required with source api: a JSON path starting with $, at most 256 characters")
			}
		default:
			bad(f("source"), `must be "dom" or "api"`)
		}
		if m.GetIntervalSeconds() < minMetricInterval || m.GetIntervalSeconds() > maxUploadInterval {
			bad(f("interval_seconds"), fmt.Sprintf("must be between %d and %d", minMetricInterval, maxUploadInterval))
		}
	}
	between := func(field string, x, lo, hi int32) {
		if x < lo || x > hi {
			bad("upload."+field, fmt.Sprintf("must be between %d and %d", lo, hi))
		}
	}
	between("batch_size", u.GetBatchSize(), 1, maxBatchSize)
	between("interval_seconds", u.GetIntervalSeconds(), minUploadInterval, maxUploadInterval)
	between("max_concurrent_tabs", u.GetMaxConcurrentTabs(), 1, maxConcurrentTabs)
	between("random_delay_ms_min", u.GetRandomDelayMsMin(), 0, maxRandomDelayMs)
	between("random_delay_ms_max", u.GetRandomDelayMsMax(), u.GetRandomDelayMsMin(), maxRandomDelayMs)
	if len(v) > 0 {
		return apperr.InvalidFields(v)
	}
	return nil
}

package crx_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	crxv1 "github.com/shopmind/shopmind/gen/go/shopmind/crx/v1"
	notifyv1 "github.com/shopmind/shopmind/gen/go/shopmind/notify/v1"
	"github.com/shopmind/shopmind/internal/testutil"
	"github.com/shopmind/shopmind/internal/testutil/stack"
	"github.com/shopmind/shopmind/services/crx"
)

// Contract tests: the crx service's RPCs through the generated clients, on the gRPC server
// only (no gateway). Shops are checked by the basic service and uploads notified to the
// notify service, so both run too.

func shop(t *testing.T, s *stack.Services, tenant, platformShopID string) int64 {
	t.Helper()
	var id int64
	if err := s.DB.Pool.QueryRow(context.Background(), `INSERT INTO basic.shops (tenant_id, name, platform, platform_shop_id, status)
		SELECT id, 'Shop ' || $2, 'taobao', $2, 'active' FROM tenant.tenants WHERE code = $1 RETURNING id`, tenant, platformShopID).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

func otherTenant(t *testing.T, s *stack.Services) {
	t.Helper()
	if _, err := s.DB.Pool.Exec(context.Background(), `INSERT INTO tenant.tenants (code, name) VALUES ('other', 'other')`); err != nil {
		t.Fatal(err)
	}
}

func stored(t *testing.T, s *stack.Services) int {
	t.Helper()
	var n int
	if err := s.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM analytics.diy_crx_metrics`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func wantInvalid(t *testing.T, what string, err error, field string) {
	t.Helper()
	if status.Code(err) != codes.InvalidArgument || !slices.Contains(stack.Violations(err), field) {
		t.Errorf("%s: want InvalidArgument naming %s, got %v (%v)", what, field, err, stack.Violations(err))
	}
}

func TestContractVersionAndConfig(t *testing.T) {
	s := stack.StartServices(t, "crx", "basic", "notify")
	c := crxv1.NewExtensionServiceClient(s.Conn)

	v, err := c.GetVersion(context.Background(), &crxv1.GetVersionRequest{CurrentVersion: "0.9"})
	if err != nil || v.GetLatestVersion() != "1.0.0" || !v.GetUpdateRequired() || !v.GetUpdateAvailable() {
		t.Fatalf("GetVersion 0.9: %v %v", v, err)
	}
	v, err = c.GetVersion(context.Background(), &crxv1.GetVersionRequest{CurrentVersion: "1.0"})
	if err != nil || v.GetUpdateRequired() || v.GetUpdateAvailable() {
		t.Fatalf("GetVersion 1.0: %v %v", v, err)
	}
	_, err = c.GetVersion(context.Background(), &crxv1.GetVersionRequest{CurrentVersion: "v1"})
	wantInvalid(t, "version v1", err, "current_version")

	cfg, err := c.GetAuthConfig(s.Admin, &crxv1.GetAuthConfigRequest{})
	if err != nil || cfg.GetLoginExpiryDays() != 30 || cfg.GetConfigVersion() != 0 || len(cfg.GetMetrics()) == 0 ||
		cfg.GetUpload().GetBatchSize() != 100 || !slices.Contains(cfg.GetPermissions(), "crx:data:sync") {
		t.Fatalf("default config: %v %v", cfg, err)
	}
	if _, err := c.GetAuthConfig(context.Background(), &crxv1.GetAuthConfigRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("config without a token: %v", err)
	}

	good := &crxv1.MetricDefinition{Key: "uv", Name: "Visitors", Platform: "jd", UrlPattern: `^https://sz\.jd\.com/`,
		Source: "dom", Selector: "#uv", IntervalSeconds: 600}
	upload := &crxv1.UploadSettings{BatchSize: 200, IntervalSeconds: 60, MaxConcurrentTabs: 2, RandomDelayMsMin: 10, RandomDelayMsMax: 20}
	badRE := &crxv1.MetricDefinition{Key: "gmv", Name: "GMV", Platform: "jd", UrlPattern: "(", Source: "dom", Selector: "#x", IntervalSeconds: 600}
	_, err = c.UpdateTenantConfig(s.Admin, &crxv1.UpdateTenantConfigRequest{Metrics: []*crxv1.MetricDefinition{good, badRE}, Upload: upload})
	wantInvalid(t, "bad regular expression", err, "metrics[1].url_pattern")
	_, err = c.UpdateTenantConfig(s.Admin, &crxv1.UpdateTenantConfigRequest{Metrics: []*crxv1.MetricDefinition{good},
		Upload: &crxv1.UploadSettings{BatchSize: 501, IntervalSeconds: 60, MaxConcurrentTabs: 1, RandomDelayMsMin: 5, RandomDelayMsMax: 1}})
	wantInvalid(t, "batch size 501", err, "upload.batch_size")
	wantInvalid(t, "delays reversed", err, "upload.random_delay_ms_max")
	_, err = c.UpdateTenantConfig(s.Admin, &crxv1.UpdateTenantConfigRequest{Metrics: []*crxv1.MetricDefinition{good}})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("update without upload: %v", err)
	}
	if got, _ := c.GetAuthConfig(s.Admin, &crxv1.GetAuthConfigRequest{}); got.GetConfigVersion() != 0 {
		t.Fatalf("a refused update changed the configuration: %v", got)
	}

	up, err := c.UpdateTenantConfig(s.Admin, &crxv1.UpdateTenantConfigRequest{Metrics: []*crxv1.MetricDefinition{good}, Upload: upload})
	if err != nil || up.GetConfig().GetConfigVersion() != 1 {
		t.Fatalf("update: %v %v", up, err)
	}
	cfg, err = c.GetAuthConfig(s.Admin, &crxv1.GetAuthConfigRequest{})
	if err != nil || cfg.GetConfigVersion() != 1 || len(cfg.GetMetrics()) != 1 || cfg.GetMetrics()[0].GetKey() != "uv" ||
		cfg.GetUpload().GetBatchSize() != 200 {
		t.Fatalf("config after update: %v %v", cfg, err)
	}
	back, err := c.UpdateTenantConfig(s.Admin, &crxv1.UpdateTenantConfigRequest{RestoreDefaults: true})
	// The defaults come back as a new version, so extensions holding version 1 reload.
	if err != nil || back.GetConfig().GetConfigVersion() != 2 || len(back.GetConfig().GetMetrics()) != len(crx.DefaultMetrics()) {
		t.Fatalf("restore defaults: %v %v", back, err)
	}
}

func TestContractSync(t *testing.T) {
	s := stack.StartServices(t, "crx", "basic", "notify")
	c := crxv1.NewExtensionServiceClient(s.Conn)
	otherTenant(t, s)
	mine := shop(t, s, "demo", "tb-1")
	foreign := shop(t, s, "other", "tb-9")
	now := time.Now().UTC().Truncate(time.Second)
	at := timestamppb.New(now.Add(-time.Hour))
	items := []*crxv1.MetricItem{
		{MetricKey: "gmv", ShopId: mine, Value: 1200.5, CollectedAt: at, Dims: map[string]string{"channel": "search"}},
		{MetricKey: "gmv", PlatformShopId: "tb-1", Value: 800, CollectedAt: at, Dims: map[string]string{"channel": "ads"}},
		{MetricKey: "gmv", ShopId: foreign, Value: 1, CollectedAt: at},
		{MetricKey: "nope", ShopId: mine, Value: 1, CollectedAt: at},
		{MetricKey: "visitors", ShopId: mine, Value: 5, CollectedAt: timestamppb.New(now.Add(-40 * 24 * time.Hour))},
		{MetricKey: "visitors", ShopId: mine, Value: 5, CollectedAt: timestamppb.New(now.Add(time.Hour))},
		{MetricKey: "visitors", PlatformShopId: "tb-9", Value: 5, CollectedAt: at},
	}
	const batch = "7b0d3c52-0a4f-4f5e-9d8e-2f1f3b9c1a77"
	r, err := c.SyncMetrics(s.Admin, &crxv1.SyncMetricsRequest{ClientBatchId: batch, Items: items, ExtensionVersion: "1.0.0"})
	if err != nil {
		t.Fatalf("SyncMetrics: %v", err)
	}
	codesOf := map[int32]string{}
	for _, e := range r.GetErrors() {
		codesOf[e.GetIndex()] = e.GetCode()
	}
	want := map[int32]string{2: "unknown_shop", 3: "unknown_metric", 4: "stale_timestamp", 5: "future_timestamp", 6: "unknown_shop"}
	if r.GetAccepted() != 2 || r.GetDuplicates() != 0 || r.GetRejected() != 5 || len(codesOf) != 5 {
		t.Fatalf("first batch: %v", r)
	}
	for i, code := range want {
		if codesOf[i] != code {
			t.Errorf("item %d: want %s, got %s", i, code, codesOf[i])
		}
	}
	if n := stored(t, s); n != 2 {
		t.Fatalf("stored %d rows, want 2", n)
	}

	// The same batch again: the same answer, nothing stored again.
	again, err := c.SyncMetrics(s.Admin, &crxv1.SyncMetricsRequest{ClientBatchId: batch, Items: items})
	if err != nil || again.GetAccepted() != 2 || again.GetRejected() != 5 || stored(t, s) != 2 {
		t.Fatalf("retried batch: %v %v (stored %d)", again, err, stored(t, s))
	}
	// The same values under a new batch id: duplicates.
	dup, err := c.SyncMetrics(s.Admin, &crxv1.SyncMetricsRequest{ClientBatchId: "8b0d3c52-0a4f-4f5e-9d8e-2f1f3b9c1a77", Items: items[:2]})
	if err != nil || dup.GetAccepted() != 0 || dup.GetDuplicates() != 2 || stored(t, s) != 2 {
		t.Fatalf("same values, new batch: %v %v", dup, err)
	}

	// Whole-batch refusals store nothing.
	_, err = c.SyncMetrics(s.Admin, &crxv1.SyncMetricsRequest{ClientBatchId: "not-a-uuid", Items: items[:1]})
	wantInvalid(t, "batch id", err, "client_batch_id")
	big := make([]*crxv1.MetricItem, 501)
	for i := range big {
		big[i] = &crxv1.MetricItem{MetricKey: "gmv", ShopId: mine, Value: float64(i), CollectedAt: at}
	}
	_, err = c.SyncMetrics(s.Admin, &crxv1.SyncMetricsRequest{ClientBatchId: "9b0d3c52-0a4f-4f5e-9d8e-2f1f3b9c1a77", Items: big})
	wantInvalid(t, "501 items", err, "items")
	_, err = c.SyncMetrics(s.Admin, &crxv1.SyncMetricsRequest{ClientBatchId: "9b0d3c52-0a4f-4f5e-9d8e-2f1f3b9c1a77",
		Items: []*crxv1.MetricItem{{MetricKey: "gmv", ShopId: mine, PlatformShopId: "tb-1", Value: 1, CollectedAt: at}}})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("both shop ids: %v", err)
	}
	_, err = c.SyncMetrics(s.Admin, &crxv1.SyncMetricsRequest{ClientBatchId: "9b0d3c52-0a4f-4f5e-9d8e-2f1f3b9c1a77", ExtensionVersion: "0.1",
		Items: items[:1]})
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("old extension: want FailedPrecondition (422), got %v", err)
	}
	if n := stored(t, s); n != 2 {
		t.Fatalf("refused batches stored rows: %d", n)
	}

	// The uploader was notified once per batch.
	list, err := notifyv1.NewNotifyServiceClient(s.Conn).ListCollected(s.Admin, &notifyv1.ListCollectedRequest{Type: "crx_upload"})
	if err != nil || list.GetTotal() != 2 || list.GetItems()[0].GetSource() != "crx.sync" {
		t.Fatalf("notifications: %v %v", list, err)
	}
}

func TestContractAdhocAndErrors(t *testing.T) {
	s := stack.StartServices(t, "crx", "basic", "notify")
	c := crxv1.NewExtensionServiceClient(s.Conn)
	data, _ := structpb.NewStruct(map[string]any{"price": 99.5, "title": "Linen Dress Summer", "rows": []any{"a", "b"}})
	req := &crxv1.UploadAdhocRequest{ClientId: "5b0d3c52-0a4f-4f5e-9d8e-2f1f3b9c1a77", PageUrl: "https://item.taobao.com/item.htm?id=1",
		PageTitle: "Item page", Platform: "taobao", CollectedAt: timestamppb.Now(), Data: data}
	first, err := c.UploadAdhoc(s.Admin, req)
	if err != nil || first.GetId() <= 0 || first.GetDuplicate() {
		t.Fatalf("UploadAdhoc: %v %v", first, err)
	}
	second, err := c.UploadAdhoc(s.Admin, req)
	if err != nil || second.GetId() != first.GetId() || !second.GetDuplicate() {
		t.Fatalf("UploadAdhoc again: %v %v", second, err)
	}
	_, err = c.UploadAdhoc(s.Admin, &crxv1.UploadAdhocRequest{ClientId: "6b0d3c52-0a4f-4f5e-9d8e-2f1f3b9c1a77", PageUrl: "https://x.example/",
		CollectedAt: timestamppb.Now()})
	wantInvalid(t, "adhoc without data", err, "data")

	found, err := c.ListAdhoc(s.Admin, &crxv1.ListAdhocRequest{Keyword: "linen dress"})
	if err != nil || found.GetTotal() != 1 || found.GetItems()[0].GetData().GetFields()["price"].GetNumberValue() != 99.5 {
		t.Fatalf("ListAdhoc keyword: %v %v", found, err)
	}
	if none, err := c.ListAdhoc(s.Admin, &crxv1.ListAdhocRequest{Keyword: "velvet"}); err != nil || none.GetTotal() != 0 {
		t.Fatalf("ListAdhoc other keyword: %v %v", none, err)
	}

	l, err := c.LogError(s.Admin, &crxv1.LogErrorRequest{Level: "error", Message: "sync failed", Stack: "at x", ExtensionVersion: "1.0.0",
		Context: data})
	if err != nil || l.GetId() <= 0 {
		t.Fatalf("LogError: %v %v", l, err)
	}
	_, err = c.LogError(s.Admin, &crxv1.LogErrorRequest{Level: "panic", Message: "x"})
	wantInvalid(t, "level panic", err, "level")
	logs, err := c.ListErrorLogs(s.Admin, &crxv1.ListErrorLogsRequest{Level: "error"})
	if err != nil || logs.GetTotal() != 1 || logs.GetItems()[0].GetMessage() != "sync failed" || logs.GetItems()[0].GetContext() == nil {
		t.Fatalf("ListErrorLogs: %v %v", logs, err)
	}
}

// Identical batches in flight at once (an extension's retry sent while the first request
// is still storing): the values stored once, every request answered the one answer of the
// batch (the stored values accepted, none as duplicates), the batch notified once.
func TestContractSyncConcurrentRetries(t *testing.T) {
	s := stack.StartServices(t, "crx", "basic", "notify")
	c := crxv1.NewExtensionServiceClient(s.Conn)
	mine := shop(t, s, "demo", "tb-1")
	at := timestamppb.New(time.Now().UTC().Add(-time.Hour))
	req := &crxv1.SyncMetricsRequest{ClientBatchId: "5d3c1a77-0a4f-4f5e-9d8e-2f1f3b9c1a77", Items: []*crxv1.MetricItem{
		{MetricKey: "gmv", ShopId: mine, Value: 12.5, CollectedAt: at},
		{MetricKey: "visitors", ShopId: mine, Value: 3, CollectedAt: at},
	}}
	type result struct {
		r   *crxv1.SyncMetricsResponse
		err error
	}
	rs := testutil.Burst(16, func(int) result {
		r, err := c.SyncMetrics(s.Admin, req)
		return result{r, err}
	})
	for _, x := range rs {
		if x.err != nil || x.r.GetAccepted() != 2 || x.r.GetDuplicates() != 0 {
			t.Errorf("an identical batch answered %v %v; want 2 accepted, 0 duplicates", x.r, x.err)
		}
	}
	if n := stored(t, s); n != 2 {
		t.Errorf("stored %d values, want 2", n)
	}
	again, err := c.SyncMetrics(s.Admin, req)
	if err != nil || again.GetAccepted() != 2 || again.GetDuplicates() != 0 {
		t.Errorf("a later retry answered %v %v", again, err)
	}
	var notes int
	if err := s.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM notify.notifications WHERE type = 'crx_upload'`).Scan(&notes); err != nil || notes != 1 {
		t.Errorf("%d upload notifications (%v), want 1", notes, err)
	}
}

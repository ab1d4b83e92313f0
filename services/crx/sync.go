package crx

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	basicv1 "github.com/shopmind/shopmind/gen/go/shopmind/basic/v1"
	crxv1 "github.com/shopmind/shopmind/gen/go/shopmind/crx/v1"
	"github.com/shopmind/shopmind/internal/analytics/warehouse"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/notifyclient"
	"github.com/shopmind/shopmind/internal/service"
)

// Time bounds of a collected value.
const (
	// maxAge: values read longer ago are stale.
	maxAge = 30 * 24 * time.Hour
	// clockSkew: how far in the future a browser's clock may be.
	clockSkew = 5 * time.Minute
	// statAhead: how far after now the time a value describes may be (a day's value is
	// stamped with that day).
	statAhead = 24 * time.Hour
	// batchMemory: how long a batch id is remembered.
	batchMemory = 7 * 24 * time.Hour
)

// Item error codes (crxv1.ItemError.code).
const (
	codeUnknownMetric = "unknown_metric"
	codeUnknownShop   = "unknown_shop"
	codeStale         = "stale_timestamp"
	codeFuture        = "future_timestamp"
)

// basicTarget is the service that owns shops.
const basicTarget = "basic"

func (s *server) SyncMetrics(ctx context.Context, req *crxv1.SyncMetricsRequest) (*crxv1.SyncMetricsResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if n := proto.Size(req); n > s.cfg.SyncMaxBytes {
		return nil, apperr.New(apperr.KindTooLarge, "sync batch of %d bytes exceeds the limit of %d bytes; send fewer items per batch", n, s.cfg.SyncMaxBytes)
	}
	if v := req.GetExtensionVersion(); v != "" && compareVersions(v, s.cfg.MinVersion) < 0 {
		return nil, apperr.New(apperr.KindRule, "extension version %s is older than the oldest supported version %s: update the extension (GET /api/v1/data/crx/ver)", v, s.cfg.MinVersion)
	}
	prev, claim, err := s.claimBatch(ctx, id, req.GetClientBatchId())
	if err != nil || prev != nil {
		return prev, err
	}
	// The claim is ours: release it when no answer is remembered, so a retry can store it.
	answered := false
	defer func() {
		if !answered {
			s.releaseBatch(id.TenantID, req.GetClientBatchId(), claim)
		}
	}()
	resp, rows, err := s.checkItems(ctx, id, req)
	if err != nil {
		return nil, err
	}
	inserted, err := s.wh.Collector().InsertCollected(ctx, rows)
	if err != nil {
		s.notify.Publish(ctx, notifyclient.Notification{Type: "crx_upload_failed", Level: notifyclient.LevelError,
			Source: "crx.sync", UserID: id.UserID, Title: fmt.Sprintf("Extension upload of %d values failed", len(req.GetItems())),
			Content:  "The analytical store did not accept the batch; the extension keeps it and retries. Batch " + req.GetClientBatchId(),
			DedupKey: "crx.sync.failed:" + req.GetClientBatchId()}) // once per batch, however often it is retried
		return nil, apperr.New(apperr.KindUnavailable, "the analytical store is unavailable; nothing of the batch was stored, retry it")
	}
	resp.Accepted = int32(inserted)
	resp.Duplicates = int32(len(rows) - inserted)
	if err := s.rememberBatch(ctx, id, resp, claim); err != nil {
		// The values are stored (and a retry finds them as duplicates): answer success.
		s.log.Warn("crx: sync batch not remembered", "tenant", id.TenantID, "batch", resp.ClientBatchId, "error", err)
	} else {
		answered = true
	}
	s.notifySync(ctx, id, resp)
	return resp, nil
}

// Claims of batch ids: a claim older than claimExpiry is taken over (its process stopped
// between claiming and answering; the values it stored are then answered as duplicates);
// a request finding another's live claim waits for its answer up to claimWait, polling.
const (
	claimExpiry = time.Minute
	claimWait   = 5 * time.Second
	claimPoll   = 25 * time.Millisecond
)

// claimBatch claims a batch id for the caller's request. It returns the stored response
// when the batch was answered within batchMemory (waiting for a claim in flight to be
// answered), or nil and the claim's time when the claim is this request's: it then stores
// the batch, and releases or answers the claim of that time only (a claim taken over by a
// retry after claimExpiry is the retry's).
func (s *server) claimBatch(ctx context.Context, id *authn.Identity, batchID string) (*crxv1.SyncMetricsResponse, time.Time, error) {
	deadline := time.Now().Add(claimWait)
	for {
		// A new claim, or the takeover of a forgotten answer or of an abandoned claim.
		var claimed time.Time
		err := s.pool.QueryRow(ctx, `INSERT INTO crx.sync_batches (tenant_id, client_batch_id, user_id, response)
			VALUES ($1, $2, $3, NULL)
			ON CONFLICT (tenant_id, client_batch_id) DO UPDATE
				SET user_id = EXCLUDED.user_id, response = NULL, created_at = now()
				WHERE (crx.sync_batches.response IS NOT NULL AND crx.sync_batches.created_at <= now() - $4::interval)
					OR (crx.sync_batches.response IS NULL AND crx.sync_batches.created_at <= now() - $5::interval)
			RETURNING created_at`,
			id.TenantID, batchID, id.UserID, batchMemory.String(), claimExpiry.String()).Scan(&claimed)
		if err == nil {
			return nil, claimed, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, time.Time{}, err
		}
		var raw []byte
		err = s.pool.QueryRow(ctx, `SELECT response FROM crx.sync_batches WHERE tenant_id = $1 AND client_batch_id = $2`, id.TenantID, batchID).Scan(&raw)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // the claim was released just now: claim it again
		}
		if err != nil {
			return nil, time.Time{}, err
		}
		if raw != nil {
			out := &crxv1.SyncMetricsResponse{}
			if err := protojson.Unmarshal(raw, out); err != nil {
				return nil, time.Time{}, apperr.Internal(fmt.Errorf("crx: stored response of batch %s: %w", batchID, err))
			}
			return out, time.Time{}, nil
		}
		if time.Now().After(deadline) {
			return nil, time.Time{}, apperr.New(apperr.KindConflict, "batch %s is being stored by another request; retry it", batchID)
		}
		select {
		case <-ctx.Done():
			return nil, time.Time{}, ctx.Err()
		case <-time.After(claimPoll):
		}
	}
}

// releaseBatch drops this request's unanswered claim (the batch failed), unless a retry took
// it over: detached from the request, whose context may be what ended it.
func (s *server) releaseBatch(tenantID int64, batchID string, claim time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := s.pool.Exec(ctx, `DELETE FROM crx.sync_batches
		WHERE tenant_id = $1 AND client_batch_id = $2 AND response IS NULL AND created_at = $3`, tenantID, batchID, claim); err != nil {
		s.log.Warn("crx: sync batch claim not released", "tenant", tenantID, "batch", batchID, "error", err)
	}
}

// errClaimTaken: a retry took the claim over (this request outlived claimExpiry).
var errClaimTaken = errors.New("the claim was taken over by a retry")

// rememberBatch stores the answer of the batch this request claimed at claim, unless a
// retry took the claim over.
func (s *server) rememberBatch(ctx context.Context, id *authn.Identity, resp *crxv1.SyncMetricsResponse, claim time.Time) error {
	raw, err := protojson.Marshal(resp)
	if err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `UPDATE crx.sync_batches SET response = $3, created_at = now()
		WHERE tenant_id = $1 AND client_batch_id = $2 AND response IS NULL AND created_at = $4`, id.TenantID, resp.ClientBatchId, raw, claim)
	if err == nil && tag.RowsAffected() == 0 {
		err = errClaimTaken
	}
	return err
}

// forgetBatches runs forgetOldBatches at once and then hourly until ctx ends.
func (s *server) forgetBatches(ctx context.Context) {
	forget := func() {
		if _, err := s.forgetOldBatches(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("crx: forgetting old sync batches failed", "error", err)
		}
	}
	forget()
	service.Every(ctx, time.Hour, forget)
}

// forgetOldBatches drops the batch ids older than batchMemory (answered ones are not
// remembered longer; a claim that old was abandoned long ago) and returns how many.
func (s *server) forgetOldBatches(ctx context.Context) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM crx.sync_batches WHERE created_at < now() - $1::interval`, batchMemory.String())
	return tag.RowsAffected(), err
}

// checkItems splits the batch into rows to store and per-item errors.
func (s *server) checkItems(ctx context.Context, id *authn.Identity, req *crxv1.SyncMetricsRequest) (*crxv1.SyncMetricsResponse, []warehouse.CollectedValue, error) {
	cfg, err := s.loadConfig(ctx, id.TenantID)
	if err != nil {
		return nil, nil, err
	}
	keys := cfg.metricKeys()
	shops, err := s.resolveShops(ctx, req.GetItems())
	if err != nil {
		return nil, nil, err
	}
	resp := &crxv1.SyncMetricsResponse{ClientBatchId: req.GetClientBatchId(), Errors: []*crxv1.ItemError{}}
	now := time.Now().UTC()
	rows := make([]warehouse.CollectedValue, 0, len(req.GetItems()))
	for i, it := range req.GetItems() {
		reject := func(code, format string, args ...any) {
			resp.Errors = append(resp.Errors, &crxv1.ItemError{Index: int32(i), MetricKey: it.GetMetricKey(), Code: code,
				Message: fmt.Sprintf(format, args...)})
		}
		collected := it.GetCollectedAt().AsTime().UTC().Truncate(time.Second)
		stat := collected
		if it.StatTime != nil {
			stat = it.GetStatTime().AsTime().UTC().Truncate(time.Second)
		}
		var sh *basicv1.Shop
		ambiguous := false
		if it.GetShopId() != 0 {
			sh = shops.byID[it.GetShopId()]
		} else {
			sh, ambiguous = shops.byPlatformID(it.GetPlatform(), it.GetPlatformShopId())
		}
		switch {
		case !keys[it.GetMetricKey()]:
			reject(codeUnknownMetric, "metric %q is not in the tenant's extension configuration", it.GetMetricKey())
		case sh == nil && it.GetShopId() != 0:
			reject(codeUnknownShop, "shop %d is not a shop of your tenant", it.GetShopId())
		case ambiguous:
			reject(codeUnknownShop, "platform shop %q is a shop of your tenant on more than one platform: set platform", it.GetPlatformShopId())
		case sh == nil && it.GetPlatform() != "":
			reject(codeUnknownShop, "platform shop %q on %s is not a shop of your tenant", it.GetPlatformShopId(), it.GetPlatform())
		case sh == nil:
			reject(codeUnknownShop, "platform shop %q is not a shop of your tenant", it.GetPlatformShopId())
		case collected.After(now.Add(clockSkew)):
			reject(codeFuture, "collected_at %s is in the future", collected.Format(time.RFC3339))
		case collected.Before(now.Add(-maxAge)):
			reject(codeStale, "collected_at %s is older than 30 days", collected.Format(time.RFC3339))
		case stat.After(now.Add(statAhead)):
			reject(codeFuture, "stat_time %s is more than a day in the future", stat.Format(time.RFC3339))
		default:
			platform := it.GetPlatform()
			if platform == "" {
				platform = sh.GetPlatform()
			}
			dims, dimsKey := warehouse.CanonicalDims(it.GetDims())
			rows = append(rows, warehouse.CollectedValue{TenantID: id.TenantID, StatTime: stat, ShopID: sh.GetId(),
				Platform: platform, MetricKey: it.GetMetricKey(), Value: it.GetValue(), Dims: dims, DimsKey: dimsKey,
				CollectedAt: collected, PageURL: it.GetPageUrl(), UserID: id.UserID, BatchID: req.GetClientBatchId(), ReceivedAt: now})
		}
	}
	resp.Rejected = int32(len(resp.Errors))
	return resp, rows, nil
}

// shopSet is the caller's tenant's shops named by a batch.
type shopSet struct {
	byID       map[int64]*basicv1.Shop
	byPlatform map[string][]*basicv1.Shop // by platform shop id: one per platform at most
}

// byPlatformID finds a shop by its platform shop id, which is unique only per platform: on
// the item's platform when it names one; otherwise the one shop of that id, ambiguous when
// the tenant has that id on several platforms.
func (s *shopSet) byPlatformID(platform, platformShopID string) (sh *basicv1.Shop, ambiguous bool) {
	candidates := s.byPlatform[platformShopID]
	if platform != "" {
		for _, c := range candidates {
			if c.GetPlatform() == platform {
				return c, false
			}
		}
		return nil, false
	}
	if len(candidates) > 1 {
		return nil, true
	}
	if len(candidates) == 1 {
		return candidates[0], false
	}
	return nil, false
}

// resolveShops asks the basic service which of the batch's shops belong to the caller's
// tenant (the caller's token is forwarded, so only that tenant's shops are answered).
func (s *server) resolveShops(ctx context.Context, items []*crxv1.MetricItem) (*shopSet, error) {
	ids, pids := map[int64]bool{}, map[string]bool{}
	req := &basicv1.ResolveShopsRequest{}
	for _, it := range items {
		if id := it.GetShopId(); id != 0 && !ids[id] {
			ids[id] = true
			req.ShopIds = append(req.ShopIds, id)
		}
		if p := it.GetPlatformShopId(); p != "" && !pids[p] {
			pids[p] = true
			req.PlatformShopIds = append(req.PlatformShopIds, p)
		}
	}
	conn, err := s.dial(basicTarget)
	if err != nil {
		return nil, apperr.New(apperr.KindUnavailable, "the shop directory is unavailable; retry the batch")
	}
	resp, err := basicv1.NewShopDirectoryServiceClient(conn).ResolveShops(authn.Outgoing(ctx), req)
	if err != nil {
		s.log.Warn("crx: shop directory", "error", err)
		return nil, apperr.New(apperr.KindUnavailable, "the shop directory is unavailable; retry the batch")
	}
	out := &shopSet{byID: map[int64]*basicv1.Shop{}, byPlatform: map[string][]*basicv1.Shop{}}
	for _, sh := range resp.GetShops() {
		out.byID[sh.GetId()] = sh
		out.byPlatform[sh.GetPlatformShopId()] = append(out.byPlatform[sh.GetPlatformShopId()], sh)
	}
	return out, nil
}

// notifySync tells the uploader what happened to the batch (once per batch id).
func (s *server) notifySync(ctx context.Context, id *authn.Identity, r *crxv1.SyncMetricsResponse) {
	level := notifyclient.LevelInfo
	if r.Rejected > 0 {
		level = notifyclient.LevelWarning
	}
	content := fmt.Sprintf("Batch %s: %d values stored, %d already stored, %d rejected.", r.ClientBatchId, r.Accepted, r.Duplicates, r.Rejected)
	for i, e := range r.Errors {
		if i == 5 {
			content += fmt.Sprintf("\n... and %d more", len(r.Errors)-5)
			break
		}
		content += fmt.Sprintf("\nitem %d (%s): %s", e.Index, e.MetricKey, e.Message)
	}
	s.notify.Publish(ctx, notifyclient.Notification{Type: "crx_upload", Level: level, Source: "crx.sync", UserID: id.UserID,
		Title:   fmt.Sprintf("Extension upload: %d stored, %d rejected", r.Accepted, r.Rejected),
		Content: content, DedupKey: "crx.sync:" + r.ClientBatchId})
}

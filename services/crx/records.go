package crx

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	crxv1 "github.com/shopmind/shopmind/gen/go/shopmind/crx/v1"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/listing"
)

// Size bounds of free-form JSON.
const (
	maxAdhocBytes   = 1 << 20
	maxContextBytes = 64 << 10
)

func (s *server) UploadAdhoc(ctx context.Context, req *crxv1.UploadAdhocRequest) (*crxv1.UploadAdhocResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if n := proto.Size(req.GetData()); n > maxAdhocBytes {
		return nil, apperr.New(apperr.KindTooLarge, "data of %d bytes exceeds the limit of %d bytes", n, maxAdhocBytes)
	}
	data, err := protojson.Marshal(req.GetData())
	if err != nil {
		return nil, apperr.Invalid("data", "data.json", "is not representable as JSON: "+err.Error())
	}
	var rid int64
	err = s.pool.QueryRow(ctx, `INSERT INTO crx.adhoc (tenant_id, user_id, client_id, page_url, page_title, platform, collected_at, data)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (tenant_id, user_id, client_id) DO NOTHING RETURNING id`,
		id.TenantID, id.UserID, req.GetClientId(), req.GetPageUrl(), req.GetPageTitle(), req.GetPlatform(),
		req.GetCollectedAt().AsTime(), data).Scan(&rid)
	if errors.Is(err, pgx.ErrNoRows) {
		err = s.pool.QueryRow(ctx, `SELECT id FROM crx.adhoc WHERE tenant_id = $1 AND user_id = $2 AND client_id = $3`,
			id.TenantID, id.UserID, req.GetClientId()).Scan(&rid)
		if err != nil {
			return nil, err
		}
		return &crxv1.UploadAdhocResponse{Id: rid, Duplicate: true}, nil
	}
	if err != nil {
		return nil, err
	}
	return &crxv1.UploadAdhocResponse{Id: rid}, nil
}

func (s *server) ListAdhoc(ctx context.Context, req *crxv1.ListAdhocRequest) (*crxv1.ListAdhocResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	p := listing.PageOf(req.PageNum, req.PageSize)
	w := &listing.Where{}
	w.Add("tenant_id = %s", id.TenantID)
	if !id.IsAdmin {
		w.Add("user_id = %s", id.UserID)
	}
	if req.GetPlatform() != "" {
		w.Add("platform = %s", req.GetPlatform())
	}
	if k := req.GetKeyword(); k != "" {
		pat := listing.Contains(k)
		w.Add("(page_title ILIKE %s OR page_url ILIKE %s OR data::text ILIKE %s)", pat, pat, pat)
	}
	out := &crxv1.ListAdhocResponse{Items: []*crxv1.AdhocRecord{}, PageNum: p.Num, PageSize: p.Size}
	err = s.page(ctx, "crx.adhoc", w, p, &out.Total,
		"id, user_id, client_id::text, page_url, page_title, platform, collected_at, data, created_at",
		func(r pgx.Rows) error {
			rec := &crxv1.AdhocRecord{Data: &structpb.Struct{}}
			var collected, created time.Time
			var data []byte
			if err := r.Scan(&rec.Id, &rec.UserId, &rec.ClientId, &rec.PageUrl, &rec.PageTitle, &rec.Platform, &collected, &data, &created); err != nil {
				return err
			}
			if err := protojson.Unmarshal(data, rec.Data); err != nil {
				return err
			}
			rec.CollectedAt, rec.CreatedAt = timestamppb.New(collected), timestamppb.New(created)
			out.Items = append(out.Items, rec)
			return nil
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// page counts the rows of table matching w and scans one page of cols, newest first, in one
// read-only snapshot.
func (s *server) page(ctx context.Context, table string, w *listing.Where, p listing.Page, total *int64, cols string, scan func(pgx.Rows) error) error {
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM "+table+w.SQL(), w.Args...).Scan(total); err != nil {
			return err
		}
		sql := "SELECT " + cols + " FROM " + table + w.SQL() + " ORDER BY created_at DESC, id DESC LIMIT " + w.Arg(p.Size) + " OFFSET " + w.Arg(p.Offset())
		rows, err := tx.Query(ctx, sql, w.Args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if err := scan(rows); err != nil {
				return err
			}
		}
		return rows.Err()
	})
}

func (s *server) LogError(ctx context.Context, req *crxv1.LogErrorRequest) (*crxv1.LogErrorResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	var ctxJSON []byte
	if req.Context != nil {
		if n := proto.Size(req.GetContext()); n > maxContextBytes {
			return nil, apperr.New(apperr.KindTooLarge, "context of %d bytes exceeds the limit of %d bytes", n, maxContextBytes)
		}
		if ctxJSON, err = protojson.Marshal(req.GetContext()); err != nil {
			return nil, apperr.Invalid("context", "context.json", "is not representable as JSON: "+err.Error())
		}
	}
	occurred := time.Now()
	if req.OccurredAt != nil {
		occurred = req.GetOccurredAt().AsTime()
	}
	var rid int64
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// Serialise one user's reports so the count below is exact across replicas.
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1, $2)", int32(0x63727865), int32(id.UserID)); err != nil {
			return err
		}
		var recent int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM crx.error_logs
			WHERE tenant_id = $1 AND user_id = $2 AND created_at > now() - interval '1 minute'`, id.TenantID, id.UserID).Scan(&recent); err != nil {
			return err
		}
		if recent >= s.cfg.ErrorsPerMinute {
			return apperr.New(apperr.KindTooManyRequests, "at most %d error reports per minute per user; retry later", s.cfg.ErrorsPerMinute)
		}
		return tx.QueryRow(ctx, `INSERT INTO crx.error_logs
			(tenant_id, user_id, level, message, stack, extension_version, url, user_agent, occurred_at, context)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id`,
			id.TenantID, id.UserID, req.GetLevel(), req.GetMessage(), req.GetStack(), req.GetExtensionVersion(), req.GetUrl(),
			req.GetUserAgent(), occurred, ctxJSON).Scan(&rid)
	})
	if err != nil {
		return nil, err
	}
	return &crxv1.LogErrorResponse{Id: rid}, nil
}

func (s *server) ListErrorLogs(ctx context.Context, req *crxv1.ListErrorLogsRequest) (*crxv1.ListErrorLogsResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	p := listing.PageOf(req.PageNum, req.PageSize)
	w := &listing.Where{}
	w.Add("tenant_id = %s", id.TenantID)
	if req.GetLevel() != "" {
		w.Add("level = %s", req.GetLevel())
	}
	if req.UserId != nil {
		w.Add("user_id = %s", req.GetUserId())
	}
	if req.StartTime != nil {
		w.Add("created_at >= %s", req.GetStartTime().AsTime())
	}
	if req.EndTime != nil {
		w.Add("created_at < %s", req.GetEndTime().AsTime())
	}
	out := &crxv1.ListErrorLogsResponse{Items: []*crxv1.ErrorLog{}, PageNum: p.Num, PageSize: p.Size}
	err = s.page(ctx, "crx.error_logs", w, p, &out.Total,
		"id, user_id, level, message, stack, extension_version, url, user_agent, occurred_at, context, created_at",
		func(r pgx.Rows) error {
			e := &crxv1.ErrorLog{}
			var occurred, created time.Time
			var cj []byte
			if err := r.Scan(&e.Id, &e.UserId, &e.Level, &e.Message, &e.Stack, &e.ExtensionVersion, &e.Url, &e.UserAgent,
				&occurred, &cj, &created); err != nil {
				return err
			}
			if cj != nil {
				e.Context = &structpb.Struct{}
				if err := protojson.Unmarshal(cj, e.Context); err != nil {
					return err
				}
			}
			e.OccurredAt, e.CreatedAt = timestamppb.New(occurred), timestamppb.New(created)
			out.Items = append(out.Items, e)
			return nil
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Package notify is the notification service: the notifications collected for each tenant
// and user (sync and import results, extension upload summaries and failures, partner
// failures), their listing with filters, sort and pagination, and read state. Services
// produce notifications through one internal RPC, NotifyPublisherService.Publish, with
// internal/notifyclient. See NOTIFY.md.
package notify

import (
	"context"
	"embed"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	notifyv1 "github.com/shopmind/shopmind/gen/go/shopmind/notify/v1"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/listing"
	"github.com/shopmind/shopmind/internal/postgres"
	"github.com/shopmind/shopmind/internal/restapi"
	"github.com/shopmind/shopmind/internal/service"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Service describes the notify service to the binary.
func Service() service.Def {
	return service.Def{
		Name:       "notify",
		Migrations: postgres.Embedded("notify", migrationFiles),
		Register: func(_ context.Context, s grpc.ServiceRegistrar, deps service.Deps) error {
			st := &store{pool: deps.DB}
			notifyv1.RegisterNotifyServiceServer(s, &listServer{st: st})
			notifyv1.RegisterNotifyPublisherServiceServer(s, &publishServer{st: st})
			return nil
		},
		Gateway: restapi.Routes(restapi.Route(notifyv1.RegisterNotifyServiceHandlerClient, notifyv1.NewNotifyServiceClient)),
	}
}

type store struct{ pool *pgxpool.Pool }

// publishServer is NotifyPublisherService.
type publishServer struct {
	notifyv1.UnimplementedNotifyPublisherServiceServer
	st *store
}

func (s *publishServer) Publish(ctx context.Context, req *notifyv1.PublishRequest) (*notifyv1.PublishResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	var dedup *string
	if req.GetDedupKey() != "" {
		k := req.GetDedupKey()
		dedup = &k
	}
	var nid int64
	err = s.st.pool.QueryRow(ctx, `INSERT INTO notify.notifications
		(tenant_id, user_id, type, level, title, content, source, shop_id, dedup_key, created_by)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		ON CONFLICT (tenant_id, dedup_key) WHERE dedup_key IS NOT NULL DO NOTHING
		RETURNING id`, id.TenantID, req.GetUserId(), req.GetType(), req.GetLevel(), req.GetTitle(), req.GetContent(),
		req.GetSource(), req.GetShopId(), dedup, id.UserID).Scan(&nid)
	if errors.Is(err, pgx.ErrNoRows) {
		err = s.st.pool.QueryRow(ctx, `SELECT id FROM notify.notifications WHERE tenant_id = $1 AND dedup_key = $2`,
			id.TenantID, req.GetDedupKey()).Scan(&nid)
		if err != nil {
			return nil, err
		}
		return &notifyv1.PublishResponse{Id: nid, Duplicate: true}, nil
	}
	if err != nil {
		return nil, err
	}
	return &notifyv1.PublishResponse{Id: nid}, nil
}

// listServer is NotifyService.
type listServer struct {
	notifyv1.UnimplementedNotifyServiceServer
	st *store
}

// sorts are the sort fields of ListCollected.
var sorts = map[string]string{
	"created_at": "n.created_at",
	"id":         "n.id",
	"type":       "n.type",
	"level":      "CASE n.level WHEN 'info' THEN 1 WHEN 'warning' THEN 2 ELSE 3 END",
}

// visible adds the condition "the caller may see notification n" (the caller's tenant, and
// addressed to the caller or to everyone) and returns the expression "the caller has read
// n", which reuses the condition's placeholder of the caller's id.
func visible(w *listing.Where, id *authn.Identity) (readExpr string) {
	user := w.Arg(id.UserID)
	w.Add("n.tenant_id = %s AND n.user_id IN (0, "+user+")", id.TenantID)
	return "EXISTS (SELECT 1 FROM notify.reads r WHERE r.notification_id = n.id AND r.user_id = " + user + ")"
}

func (s *listServer) ListCollected(ctx context.Context, req *notifyv1.ListCollectedRequest) (*notifyv1.ListCollectedResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	sort, err := listing.ParseSort(req.GetSort(), sorts, "created_at", true)
	if err != nil {
		return nil, err
	}
	p := listing.PageOf(req.PageNum, req.PageSize)
	w := &listing.Where{}
	readExpr := visible(w, id)
	if req.GetType() != "" {
		w.Add("n.type = %s", req.GetType())
	}
	if req.GetLevel() != "" {
		w.Add("n.level = %s", req.GetLevel())
	}
	if req.Read != nil {
		if req.GetRead() {
			w.Add(readExpr)
		} else {
			w.Add("NOT " + readExpr)
		}
	}
	if req.ShopId != nil {
		w.Add("n.shop_id = %s", req.GetShopId())
	}
	if req.StartTime != nil {
		w.Add("n.created_at >= %s", req.GetStartTime().AsTime())
	}
	if req.EndTime != nil {
		w.Add("n.created_at < %s", req.GetEndTime().AsTime())
	}
	if req.GetKeyword() != "" {
		pat := listing.Contains(req.GetKeyword())
		w.Add("(n.title ILIKE %s OR n.content ILIKE %s)", pat, pat)
	}
	out := &notifyv1.ListCollectedResponse{Items: []*notifyv1.Notification{}, PageNum: p.Num, PageSize: p.Size}
	err = pgx.BeginTxFunc(ctx, s.st.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM notify.notifications n"+w.SQL(), w.Args...).Scan(&out.Total); err != nil {
			return err
		}
		uw := &listing.Where{}
		uw.Add("NOT " + visible(uw, id))
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM notify.notifications n"+uw.SQL(), uw.Args...).Scan(&out.Unread); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, "SELECT n.id, n.type, n.level, n.title, n.content, n.source, n.shop_id, "+readExpr+
			", n.created_at FROM notify.notifications n"+w.SQL()+" "+sort.OrderBy("n.id")+
			" LIMIT "+w.Arg(p.Size)+" OFFSET "+w.Arg(p.Offset()), w.Args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			n := &notifyv1.Notification{}
			var at time.Time
			if err := rows.Scan(&n.Id, &n.Type, &n.Level, &n.Title, &n.Content, &n.Source, &n.ShopId, &n.Read, &at); err != nil {
				return err
			}
			n.CreatedAt = timestamppb.New(at)
			out.Items = append(out.Items, n)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *listServer) MarkRead(ctx context.Context, req *notifyv1.MarkReadRequest) (*notifyv1.MarkReadResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	ids := req.GetIds()
	var changed int64
	err = pgx.BeginFunc(ctx, s.st.pool, func(tx pgx.Tx) error {
		var found []int64
		rows, err := tx.Query(ctx, `SELECT id FROM notify.notifications
			WHERE id = ANY($1) AND tenant_id = $2 AND user_id IN (0, $3)`, ids, id.TenantID, id.UserID)
		if err != nil {
			return err
		}
		found, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		if missing := missingIDs(ids, found); len(missing) > 0 {
			return apperr.New(apperr.KindNotFound, "notifications %v not found", missing)
		}
		var tag interface{ RowsAffected() int64 }
		if req.GetUnread() {
			tag, err = tx.Exec(ctx, `DELETE FROM notify.reads WHERE user_id = $1 AND notification_id = ANY($2)`, id.UserID, ids)
		} else {
			tag, err = tx.Exec(ctx, `INSERT INTO notify.reads (user_id, notification_id) SELECT $1, unnest($2::bigint[])
				ON CONFLICT DO NOTHING`, id.UserID, ids)
		}
		if err != nil {
			return err
		}
		changed = tag.RowsAffected()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &notifyv1.MarkReadResponse{Changed: changed}, nil
}

func (s *listServer) MarkAllRead(ctx context.Context, _ *notifyv1.MarkAllReadRequest) (*notifyv1.MarkAllReadResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	tag, err := s.st.pool.Exec(ctx, `INSERT INTO notify.reads (user_id, notification_id)
		SELECT $1, n.id FROM notify.notifications n WHERE n.tenant_id = $2 AND n.user_id IN (0, $1)
		ON CONFLICT DO NOTHING`, id.UserID, id.TenantID)
	if err != nil {
		return nil, err
	}
	return &notifyv1.MarkAllReadResponse{Changed: tag.RowsAffected()}, nil
}

// missingIDs are the ids of want not in found (deduplicated, in want's order).
func missingIDs(want, found []int64) []int64 {
	have := make(map[int64]bool, len(found))
	for _, f := range found {
		have[f] = true
	}
	var out []int64
	for _, w := range want {
		if !have[w] {
			have[w] = true
			out = append(out, w)
		}
	}
	return out
}

package basic

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/types/known/timestamppb"

	basicv1 "github.com/shopmind/shopmind/gen/go/shopmind/basic/v1"
	"github.com/shopmind/shopmind/internal/analytics/warehouse"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/services/basic/imports"
)

// Importer runs imports of merchants' order exports (IMPORT.md): the service's Import RPC
// and `shopmind import` use it. A job claims its tenant and kind (one running import each),
// reads the file row by row (services/basic/imports), and stores each batch of orders in
// one transaction with the job's progress and rejected rows, so progress, stored rows and
// errors always agree; the outbox carries the changed orders to the analytical store.
type Importer struct {
	pool   *pgxpool.Pool
	outbox *outbox
	cfg    Config
	log    *slog.Logger
}

// NewImporter is the Importer of a process that is not the service (`shopmind import`):
// it pushes to the analytical store itself.
func NewImporter(ctx context.Context, pool *pgxpool.Pool, wh warehouse.Store, log *slog.Logger, cfg Config) *Importer {
	return &Importer{pool: pool, outbox: newOutbox(ctx, pool, wh, log, cfg.WarehousePushWait), cfg: cfg, log: log}
}

// ImportParams are one import's caller and options.
type ImportParams struct {
	TenantID int64
	UserID   int64
	Options  *basicv1.ImportOptions
	// Progress, when set, is called after each stored batch with the job's state.
	Progress func(*basicv1.ImportJob)
}

const (
	// importBatchLines bounds the lines stored in one transaction.
	importBatchLines = 4000
	// importStale is how long a running job may go without a heartbeat before another
	// import of its tenant and kind takes over (its process died).
	importStale = 2 * time.Minute
	// jobErrorsShown is how many rejected rows a job's answer carries.
	jobErrorsShown = 100
)

// errTooLarge: the file went past SHOPMIND_IMPORT_MAX_BYTES.
var errTooLarge = errors.New("file too large")

// limitedReader counts the bytes read and fails past max.
type limitedReader struct {
	r    io.Reader
	n    int64
	max  int64
	over bool
}

func (l *limitedReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	l.n += int64(n)
	if l.n > l.max {
		l.over = true
		return 0, errTooLarge
	}
	return n, err
}

// importRun is one running job.
type importRun struct {
	im     *Importer
	p      ImportParams
	job    *basicv1.ImportJob
	shops  map[string]int64 // shop name -> id
	goods  map[goodsKey]int64
	plat   string
	shopID int64 // options' shop, 0: by name
	byShop map[int64]bool
	// analyzedAt: the orders written when the statistics were last refreshed.
	analyzedAt int64
}

type goodsKey struct {
	shop int64
	key  string
}

// Run imports body. The job it answers is finished; err is the job's failure (an
// apperr: 409 another import runs, 400 the file cannot be read, 413 too large, 504 time
// budget), with the job (when one was created) still returned.
func (im *Importer) Run(ctx context.Context, p ImportParams, body io.Reader) (*basicv1.ImportJob, error) {
	opts := p.Options
	if opts.GetDeclaredSize() > im.cfg.ImportMaxBytes {
		return nil, apperr.New(apperr.KindTooLarge, "file too large: %d bytes, the limit is %d (SHOPMIND_IMPORT_MAX_BYTES)", opts.GetDeclaredSize(), im.cfg.ImportMaxBytes)
	}
	kind := opts.GetKind()
	if kind == "" {
		kind = "orders"
	}
	run := &importRun{im: im, p: p, shops: map[string]int64{}, goods: map[goodsKey]int64{}, byShop: map[int64]bool{},
		job: &basicv1.ImportJob{Kind: kind, FileName: opts.GetFileName(), Status: "running"}}
	if id := opts.GetShopId(); id > 0 {
		var plat string
		err := im.pool.QueryRow(ctx, "SELECT platform FROM basic.shops WHERE tenant_id = $1 AND id = $2", p.TenantID, id).Scan(&plat)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, apperr.Invalid("shop_id", "exists", fmt.Sprintf("shop %d not found", id))
		}
		if err != nil {
			return nil, err
		}
		run.shopID, run.plat = id, plat
	}
	if err := run.claim(ctx); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, im.cfg.ImportTimeout)
	defer cancel()
	lr := &limitedReader{r: body, max: im.cfg.ImportMaxBytes}
	err := run.read(ctx, lr)
	run.job.BytesRead = lr.n
	switch {
	case err == nil:
	case lr.over || errors.Is(err, errTooLarge):
		err = apperr.New(apperr.KindTooLarge, "file too large: over %d bytes (SHOPMIND_IMPORT_MAX_BYTES); the rows before were stored (job %d)", im.cfg.ImportMaxBytes, run.job.Id)
	case errors.Is(err, imports.ErrTooManyRows):
		err = apperr.New(apperr.KindTooLarge, "file has more than %d rows (SHOPMIND_IMPORT_MAX_ROWS); the rows before were stored (job %d)", im.cfg.ImportMaxRows, run.job.Id)
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		err = apperr.New(apperr.KindTimeout, "import job %d ran past its time budget of %s (SHOPMIND_IMPORT_TIMEOUT); the rows read were stored, importing the file again completes it", run.job.Id, im.cfg.ImportTimeout)
	}
	var fe *imports.FileError
	if errors.As(err, &fe) {
		err = apperr.Invalid("file", "readable", fe.Message)
	}
	// Finish even when the caller went away: the job must not stay running.
	fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer fcancel()
	if ferr := run.finish(fctx, err); ferr != nil && err == nil {
		err = ferr
	}
	// The changed orders reach the analytical store before the answer (when it keeps up).
	im.outbox.push(fctx, p.TenantID)
	return run.job, err
}

// claim creates the job, refusing a second running import of the tenant and kind.
func (r *importRun) claim(ctx context.Context) error {
	for attempt := 0; attempt < 2; attempt++ {
		var started time.Time
		err := r.im.pool.QueryRow(ctx, `INSERT INTO basic.import_jobs (tenant_id, kind, format, file_name, user_id)
			VALUES ($1, $2, $3, $4, $5) RETURNING id, started_at`, r.p.TenantID, r.job.Kind, r.p.Options.GetFormat(),
			r.job.FileName, r.p.UserID).Scan(&r.job.Id, &started)
		if err == nil {
			r.job.StartedAt = timestamppb.New(started)
			return nil
		}
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "23505" {
			return err
		}
		// A running job: taken over when its process stopped beating.
		var id int64
		var stale bool
		qerr := r.im.pool.QueryRow(ctx, `SELECT id, heartbeat_at < now() - $3::interval FROM basic.import_jobs
			WHERE tenant_id = $1 AND kind = $2 AND status = 'running'`, r.p.TenantID, r.job.Kind, importStale.String()).Scan(&id, &stale)
		if errors.Is(qerr, pgx.ErrNoRows) {
			continue // it just finished
		}
		if qerr != nil {
			return qerr
		}
		if !stale {
			return apperr.New(apperr.KindConflict, "import job %d of this tenant's %s is running; one import of a kind runs at a time", id, r.job.Kind)
		}
		if _, err := r.im.pool.Exec(ctx, `UPDATE basic.import_jobs SET status = 'failed', finished_at = now(),
			message = 'the process running it stopped' WHERE tenant_id = $1 AND id = $2 AND status = 'running'`, r.p.TenantID, id); err != nil {
			return err
		}
	}
	return apperr.New(apperr.KindConflict, "another import of this tenant's %s is starting; try again", r.job.Kind)
}

// read parses the file and stores it batch by batch.
func (r *importRun) read(ctx context.Context, body io.Reader) error {
	opts := r.p.Options
	rd, err := imports.NewReader(body, imports.Options{Format: opts.GetFormat(), Mapping: opts.GetMapping(),
		Encoding: opts.GetEncoding(), MaxRows: r.im.cfg.ImportMaxRows})
	if err != nil {
		return err
	}
	r.job.Format, r.job.Encoding = rd.Format().Name, rd.Encoding()
	if r.plat == "" {
		r.plat = rd.Format().Platform
	}
	var batch []*imports.Order
	var errs []imports.RowError
	lines := 0
	flush := func() error {
		errs = append(errs, rd.TakeErrors()...)
		if err := r.store(ctx, batch, errs, rd.RowsRead()); err != nil {
			return err
		}
		batch, errs, lines = batch[:0], errs[:0], 0
		if err := r.analyzeWhenGrown(ctx); err != nil {
			return err
		}
		r.im.outbox.kick(r.p.TenantID)
		if r.p.Progress != nil {
			r.p.Progress(r.job)
		}
		return nil
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		o, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			// What was read is stored first, then the failure ends the job.
			_ = flush()
			return err
		}
		if len(o.Lines) > 0 {
			batch = append(batch, o)
			lines += len(o.Lines)
		}
		if lines >= importBatchLines {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// analyzeWhenGrown refreshes the planner statistics of the tables an import grows (at
// 2,000 stored orders, then at each doubling): plans made while they were small (the
// outbox's queue joins, the order lines' lookups) would scan them whole at every batch.
func (r *importRun) analyzeWhenGrown(ctx context.Context) error {
	n := r.job.OrdersCreated + r.job.OrdersUpdated
	if n < 2000 || n < r.analyzedAt*2 {
		return nil
	}
	r.analyzedAt = n
	_, err := r.im.pool.Exec(ctx, "ANALYZE basic.orders, basic.order_items, basic.warehouse_outbox")
	return err
}

// store writes one batch: shops and goods found or created, orders inserted or, when their
// content changed, updated with their lines replaced; rejected rows and the job's counters
// in the same transaction.
func (r *importRun) store(ctx context.Context, batch []*imports.Order, errs []imports.RowError, rowsRead int64) error {
	return pgx.BeginFunc(ctx, r.im.pool, func(tx pgx.Tx) error {
		// Later rows of one order number in one shop win (a file repeating an order).
		type key struct {
			shop int64
			no   string
		}
		seen := map[key]int{}
		var list []*imports.Order
		var shops []int64
		var rowsOK int64
		for _, o := range batch {
			rowsOK += o.Rows
			sid, err := r.shop(ctx, tx, o.Shop)
			if err != nil {
				return err
			}
			k := key{sid, o.OrderNo}
			if i, ok := seen[k]; ok {
				list[i] = o
				shops[i] = sid
				continue
			}
			seen[k] = len(list)
			list = append(list, o)
			shops = append(shops, sid)
		}
		if err := r.resolveGoods(ctx, tx, list, shops); err != nil {
			return err
		}
		created, updated, err := r.upsertOrders(ctx, tx, list, shops)
		if err != nil {
			return err
		}
		if len(errs) > 0 {
			ln := make([]int64, len(errs))
			cols := make([]string, len(errs))
			reasons := make([]string, len(errs))
			for i, e := range errs {
				ln[i], cols[i], reasons[i] = e.Line, e.Column, e.Reason
			}
			if _, err := tx.Exec(ctx, `INSERT INTO basic.import_errors (tenant_id, job_id, line, col, reason)
				SELECT $1, $2, * FROM unnest($3::bigint[], $4::text[], $5::text[])`, r.p.TenantID, r.job.Id, ln, cols, reasons); err != nil {
				return err
			}
		}
		j := r.job
		j.RowsRead = rowsRead
		j.RowsStored += rowsOK
		j.RowsRejected += int64(len(errs))
		j.OrdersCreated += created
		j.OrdersUpdated += updated
		j.OrdersUnchanged += int64(len(list)) - created - updated
		_, err = tx.Exec(ctx, `UPDATE basic.import_jobs SET format = $3, encoding = $4, rows_read = $5, rows_stored = $6,
			rows_rejected = $7, orders_created = $8, orders_updated = $9, orders_unchanged = $10, shop_ids = $11, heartbeat_at = now()
			WHERE tenant_id = $1 AND id = $2`, r.p.TenantID, j.Id, j.Format, j.Encoding, j.RowsRead, j.RowsStored, j.RowsRejected,
			j.OrdersCreated, j.OrdersUpdated, j.OrdersUnchanged, r.shopIDs())
		return err
	})
}

func (r *importRun) shopIDs() []int64 {
	out := make([]int64, 0, len(r.byShop))
	for id := range r.byShop {
		out = append(out, id)
	}
	sortInt64(out)
	r.job.ShopIds = out
	return out
}

func sortInt64(s []int64) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// shop finds or creates the shop a row names: the options' shop_id, else the row's shop
// column, else the options' shop_name, else "<Platform> import"; matched by (platform,
// platform shop id = name).
func (r *importRun) shop(ctx context.Context, tx pgx.Tx, rowShop string) (int64, error) {
	if r.shopID > 0 {
		r.byShop[r.shopID] = true
		return r.shopID, nil
	}
	name := rowShop
	if name == "" {
		name = strings.TrimSpace(r.p.Options.GetShopName())
	}
	if name == "" {
		name = strings.ToUpper(r.plat[:1]) + r.plat[1:] + " import"
	}
	if id, ok := r.shops[name]; ok {
		return id, nil
	}
	var id int64
	err := tx.QueryRow(ctx, `WITH ins AS (INSERT INTO basic.shops (tenant_id, name, platform, platform_shop_id) VALUES ($1, $2, $3, $2)
		ON CONFLICT (tenant_id, platform, platform_shop_id) DO NOTHING RETURNING id)
		SELECT id FROM ins UNION ALL SELECT id FROM basic.shops WHERE tenant_id = $1 AND platform = $3 AND platform_shop_id = $2`,
		r.p.TenantID, name, r.plat).Scan(&id)
	if err != nil {
		return 0, err
	}
	r.shops[name] = id
	r.byShop[id] = true
	return id, nil
}

// goodsKeyOf is how a line finds its goods: the SKU (the merchant's code), else its name.
func goodsKeyOf(l *imports.Line) string {
	if l.SKU != "" {
		return l.SKU
	}
	return l.GoodsName
}

// resolveGoods finds each line's goods by the shop's platform goods id or item number
// (the line's SKU, else its name), creating those not found (on sale, the line's name and
// price).
func (r *importRun) resolveGoods(ctx context.Context, tx pgx.Tx, list []*imports.Order, shops []int64) error {
	var wantShop []int64
	var wantKey, wantName []string
	var wantPrice []int64
	asked := map[goodsKey]bool{}
	for i, o := range list {
		for li := range o.Lines {
			l := &o.Lines[li]
			k := goodsKey{shops[i], goodsKeyOf(l)}
			if k.key == "" || asked[k] {
				continue
			}
			if _, ok := r.goods[k]; ok {
				continue
			}
			asked[k] = true
			name := l.GoodsName
			if name == "" {
				name = l.SKU
			}
			wantShop, wantKey, wantName, wantPrice = append(wantShop, k.shop), append(wantKey, k.key), append(wantName, name), append(wantPrice, l.UnitPrice)
		}
	}
	if len(wantKey) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `INSERT INTO basic.goods (tenant_id, shop_id, platform_goods_id, name, item_no, status, price)
		SELECT $1, w.shop, w.key, w.name, CASE WHEN char_length(w.key) <= 64 THEN w.key ELSE '' END, 'on_sale', w.price / 100.0
		FROM unnest($2::bigint[], $3::text[], $4::text[], $5::bigint[]) AS w(shop, key, name, price)
		WHERE NOT EXISTS (SELECT 1 FROM basic.goods g WHERE g.tenant_id = $1 AND g.shop_id = w.shop
			AND (g.platform_goods_id = w.key OR (g.item_no = w.key AND g.status <> 'deleted')))
		ON CONFLICT (tenant_id, shop_id, platform_goods_id) WHERE platform_goods_id <> '' DO NOTHING`,
		r.p.TenantID, wantShop, wantKey, wantName, wantPrice); err != nil {
		return err
	}
	rows, err := tx.Query(ctx, `SELECT DISTINCT ON (w.shop, w.key) w.shop, w.key, g.id
		FROM unnest($2::bigint[], $3::text[]) AS w(shop, key)
		JOIN basic.goods g ON g.tenant_id = $1 AND g.shop_id = w.shop AND (g.platform_goods_id = w.key OR g.item_no = w.key)
		ORDER BY w.shop, w.key, (g.platform_goods_id = w.key) DESC, (g.status = 'deleted'), g.id`, r.p.TenantID, wantShop, wantKey)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var k goodsKey
		var id int64
		if err := rows.Scan(&k.shop, &k.key, &id); err != nil {
			return err
		}
		r.goods[k] = id
	}
	return rows.Err()
}

// buyerID is the analytical store's buyer id of a buyer name or address: a stable 62-bit
// hash (0 for none). The store keeps no buyer names.
func buyerID(s string) int64 {
	if s == "" {
		return 0
	}
	h := fnv.New64a()
	_, _ = io.WriteString(h, strings.ToLower(s))
	return int64(h.Sum64() & (1<<62 - 1))
}

func tsz(t *time.Time) pgtype.Timestamptz {
	if t == nil {
		return pgtype.Timestamptz{}
	}
	return pgtype.Timestamptz{Time: *t, Valid: true}
}

// upsertOrders inserts new orders and updates those whose digest changed (their lines
// replaced); it counts the created and the updated.
func (r *importRun) upsertOrders(ctx context.Context, tx pgx.Tx, list []*imports.Order, shops []int64) (created, updated int64, err error) {
	if len(list) == 0 {
		return 0, 0, nil
	}
	n := len(list)
	nos, statuses := make([]string, n), make([]string, n)
	buyers, totals, discounts, paid, refunds, counts := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	ordered := make([]time.Time, n)
	paidAt, shippedAt, completedAt := make([]pgtype.Timestamptz, n), make([]pgtype.Timestamptz, n), make([]pgtype.Timestamptz, n)
	digests := make([][]byte, n)
	for i, o := range list {
		nos[i], statuses[i] = o.OrderNo, o.Status
		buyers[i], totals[i], discounts[i], paid[i], refunds[i], counts[i] = buyerID(o.Buyer), o.Total, o.Discount, o.Paid, o.Refund, o.ItemCount()
		ordered[i], paidAt[i], shippedAt[i], completedAt[i] = o.OrderedAt, tsz(o.PaidAt), tsz(o.ShippedAt), tsz(o.CompletedAt)
		digests[i] = o.Digest()
	}
	rows, err := tx.Query(ctx, `INSERT INTO basic.orders AS o (tenant_id, shop_id, order_no, status, buyer_id, total_amount,
		discount_amount, paid_amount, refund_amount, item_count, ordered_at, paid_at, shipped_at, completed_at, digest, import_job_id)
		SELECT $1, w.shop, w.no, w.status, w.buyer, w.total / 100.0, w.discount / 100.0, w.paid / 100.0, w.refund / 100.0,
			w.items, w.ordered, w.paid_at, w.shipped_at, w.completed_at, w.digest, $16
		FROM unnest($2::bigint[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::bigint[], $8::bigint[], $9::bigint[],
			$10::bigint[], $11::timestamptz[], $12::timestamptz[], $13::timestamptz[], $14::timestamptz[], $15::bytea[])
			AS w(shop, no, status, buyer, total, discount, paid, refund, items, ordered, paid_at, shipped_at, completed_at, digest)
		ON CONFLICT (tenant_id, shop_id, order_no) DO UPDATE SET status = EXCLUDED.status, buyer_id = EXCLUDED.buyer_id,
			total_amount = EXCLUDED.total_amount, discount_amount = EXCLUDED.discount_amount, paid_amount = EXCLUDED.paid_amount,
			refund_amount = EXCLUDED.refund_amount, item_count = EXCLUDED.item_count, ordered_at = EXCLUDED.ordered_at,
			paid_at = EXCLUDED.paid_at, shipped_at = EXCLUDED.shipped_at, completed_at = EXCLUDED.completed_at,
			digest = EXCLUDED.digest, import_job_id = EXCLUDED.import_job_id, updated_at = now()
		WHERE o.digest <> EXCLUDED.digest
		RETURNING o.id, o.shop_id, o.order_no, (o.xmax = 0)`,
		r.p.TenantID, shops, nos, statuses, buyers, totals, discounts, paid, refunds, counts, ordered, paidAt, shippedAt, completedAt,
		digests, r.job.Id)
	if err != nil {
		return 0, 0, err
	}
	type key struct {
		shop int64
		no   string
	}
	changed := map[key]int64{}
	var changedIDs []int64
	for rows.Next() {
		var id, shop int64
		var no string
		var inserted bool
		if err := rows.Scan(&id, &shop, &no, &inserted); err != nil {
			rows.Close()
			return 0, 0, err
		}
		changed[key{shop, no}] = id
		changedIDs = append(changedIDs, id)
		if inserted {
			created++
		} else {
			updated++
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, 0, err
	}
	if len(changedIDs) == 0 {
		return 0, 0, nil
	}
	if updated > 0 {
		if _, err := tx.Exec(ctx, "DELETE FROM basic.order_items WHERE tenant_id = $1 AND order_id = ANY($2)", r.p.TenantID, changedIDs); err != nil {
			return 0, 0, err
		}
	}
	var oid, gid, qty, price, amount []int64
	var lineNo []int32
	var skus, names []string
	for i, o := range list {
		id, ok := changed[key{shops[i], o.OrderNo}]
		if !ok {
			continue
		}
		for li, l := range o.Lines {
			oid, lineNo = append(oid, id), append(lineNo, int32(li+1))
			gid = append(gid, r.goods[goodsKey{shops[i], goodsKeyOf(&l)}])
			skus, names = append(skus, l.SKU), append(names, l.GoodsName)
			qty, price, amount = append(qty, l.Quantity), append(price, l.UnitPrice), append(amount, l.Amount)
		}
	}
	_, err = tx.Exec(ctx, `INSERT INTO basic.order_items (tenant_id, order_id, line_no, goods_id, sku, goods_name, quantity, unit_price, amount)
		SELECT $1, w.o, w.l, w.g, w.s, w.n, w.q, w.p / 100.0, w.a / 100.0
		FROM unnest($2::bigint[], $3::int[], $4::bigint[], $5::text[], $6::text[], $7::bigint[], $8::bigint[], $9::bigint[])
			AS w(o, l, g, s, n, q, p, a)`, r.p.TenantID, oid, lineNo, gid, skus, names, qty, price, amount)
	return created, updated, err
}

// finish records the job's end: succeeded, partial (rows rejected) or failed (err).
func (r *importRun) finish(ctx context.Context, failure error) error {
	j := r.job
	switch {
	case failure != nil:
		j.Status = "failed"
		var ae *apperr.Error
		if errors.As(failure, &ae) {
			j.Message = ae.Message
		} else {
			j.Message = "internal error"
		}
	case j.RowsRejected > 0:
		j.Status = "partial"
	default:
		j.Status = "succeeded"
	}
	var finished time.Time
	err := r.im.pool.QueryRow(ctx, `UPDATE basic.import_jobs SET status = $3, message = $4, bytes_read = $5, format = $6,
		encoding = $7, finished_at = now() WHERE tenant_id = $1 AND id = $2 RETURNING finished_at`,
		r.p.TenantID, j.Id, j.Status, j.Message, j.BytesRead, j.Format, j.Encoding).Scan(&finished)
	if err != nil {
		return err
	}
	j.FinishedAt = timestamppb.New(finished)
	errs, err := r.im.jobErrors(ctx, r.p.TenantID, j.Id, jobErrorsShown, 0)
	j.Errors = errs
	return err
}

// jobErrors reads a page of a job's rejected rows.
func (im *Importer) jobErrors(ctx context.Context, tenantID, jobID int64, limit, offset int) ([]*basicv1.ImportRowError, error) {
	rows, err := im.pool.Query(ctx, `SELECT line, col, reason FROM basic.import_errors WHERE tenant_id = $1 AND job_id = $2
		ORDER BY line, col LIMIT $3 OFFSET $4`, tenantID, jobID, limit, offset)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*basicv1.ImportRowError, error) {
		e := &basicv1.ImportRowError{}
		err := r.Scan(&e.Line, &e.Column, &e.Reason)
		return e, err
	})
}

// Flush pushes the tenant's queued changes to the analytical store now (the CLI, whose
// process has no background pusher).
func (im *Importer) Flush(tenantID int64) error { return im.outbox.flushNow(tenantID) }

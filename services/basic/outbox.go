package basic

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/shopmind/shopmind/internal/analytics/warehouse"
	"github.com/shopmind/shopmind/internal/service"
)

// outbox carries shop, category and goods changes from schema basic to the analytical
// store (basic_shops, basic_categories, basic_goods).
//
// Protocol: statement triggers queue the key of every inserted or updated row in
// basic.warehouse_outbox, in the transaction of the change (a new seq on each change).
// After a write request commits, it asks for a push of its tenant's queue and waits for it
// at most SHOPMIND_WAREHOUSE_PUSH_WAIT, holding no connection while it waits; past that it
// answers success anyway (its change is committed) with the gRPC header
// x-shopmind-sync: pending, and the push completes in the background. Pushes run on the
// process's pusher, never on a request: one push per tenant at a time (requests arriving
// meanwhile are covered by the next round, so N concurrent writes cost about two pushes),
// and at most maxConcurrentPushes tenants at once, so pushes can never take every
// connection of the pool (a push takes two when the store is PostgreSQL, which shares the
// pool). A push takes the tenant's advisory lock without waiting (pushes of one tenant on
// other replicas are serialised by it, so an older state can never overwrite a newer one;
// a busy lock is retried after a short pause), reads up to outboxChunk queued keys with
// the current rows in one snapshot, upserts them with the warehouse Writer (PostgreSQL ON
// CONFLICT, ClickHouse delete-then-insert), and removes the queued keys whose seq is still
// the one read; a key changed meanwhile stays queued for the next push. When the store
// fails, the failure is logged and the background loop retries every
// SHOPMIND_WAREHOUSE_RETRY_INTERVAL until the store takes it.
type outbox struct {
	pool *pgxpool.Pool
	wh   warehouse.Store
	log  *slog.Logger
	// wait bounds how long a request waits for the push of its change.
	wait time.Duration
	// base ends the pushes when the service stops (the queue stays for the next start).
	base context.Context

	mu      sync.Mutex
	tenants map[int64]*tenantPushes
	slots   chan struct{} // maxConcurrentPushes
}

// tenantPushes is one tenant's push state: rounds asked for and rounds finished.
type tenantPushes struct {
	asked, finished uint64
	stored          uint64 // the last round that reached the store
	running         bool
	roundDone       chan struct{} // closed when a round finishes, then replaced
}

const (
	// outboxChunk is how many queued keys one push step sends.
	outboxChunk = 5000
	// pushTimeout bounds one push round.
	pushTimeout = 2 * time.Minute
	// maxConcurrentPushes bounds the tenants pushed at once (two connections each at most).
	maxConcurrentPushes = 1
	// lockRetry is the pause before taking a busy tenant lock again.
	lockRetry = 20 * time.Millisecond
)

func newOutbox(base context.Context, pool *pgxpool.Pool, wh warehouse.Store, log *slog.Logger, wait time.Duration) *outbox {
	return &outbox{pool: pool, wh: wh, log: log, wait: wait, base: base,
		tenants: map[int64]*tenantPushes{}, slots: make(chan struct{}, maxConcurrentPushes)}
}

// push asks for a push of the tenant's queue and waits until a round that started after
// the call has finished, at most o.wait or until ctx ends. It reports whether the change is
// in the store (false: the push is still pending, or failed and is queued for retry).
func (o *outbox) push(ctx context.Context, tenantID int64) bool {
	o.mu.Lock()
	tp := o.request(tenantID)
	want := tp.asked
	o.mu.Unlock()
	wait := o.wait
	if dl, ok := ctx.Deadline(); ok {
		// Leave the request at least half of its remaining time to answer: a change it
		// committed must never be answered by the caller's deadline.
		wait = min(wait, time.Until(dl)/2)
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		o.mu.Lock()
		finished, stored, done := tp.finished, tp.stored, tp.roundDone
		o.mu.Unlock()
		if finished >= want {
			// A round numbered want or later read the queue after this change committed.
			return stored >= want
		}
		select {
		case <-done:
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// request records a round asked for and starts the tenant's pusher when idle; o.mu held.
func (o *outbox) request(tenantID int64) *tenantPushes {
	tp := o.tenants[tenantID]
	if tp == nil {
		tp = &tenantPushes{roundDone: make(chan struct{})}
		o.tenants[tenantID] = tp
	}
	tp.asked++
	if !tp.running {
		tp.running = true
		go o.pushRounds(tenantID, tp)
	}
	return tp
}

// pushRounds flushes the tenant's queue until no round is pending. A round covers every
// request asked before it started; a failed round is logged and counts as finished (its
// changes stay queued for the retry loop), so waiting requests are released.
func (o *outbox) pushRounds(tenantID int64, tp *tenantPushes) {
	for {
		o.mu.Lock()
		if tp.finished >= tp.asked {
			tp.running = false
			delete(o.tenants, tenantID)
			o.mu.Unlock()
			return
		}
		round := tp.asked
		o.mu.Unlock()

		err := o.flushNow(tenantID)
		if err != nil && o.base.Err() == nil {
			o.log.Warn("analytical store: push of basic data failed; the changes stay queued and are retried",
				"tenant_id", tenantID, "error", err)
		}

		o.mu.Lock()
		tp.finished = round
		if err == nil {
			tp.stored = round
		}
		close(tp.roundDone)
		tp.roundDone = make(chan struct{})
		o.mu.Unlock()
	}
}

// flushNow runs one push round in one of the process's push slots.
func (o *outbox) flushNow(tenantID int64) error {
	ctx, cancel := context.WithTimeout(o.base, pushTimeout)
	defer cancel()
	select {
	case o.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-o.slots }()
	return o.flush(ctx, tenantID)
}

// flush sends the tenant's whole queue.
func (o *outbox) flush(ctx context.Context, tenantID int64) error {
	for {
		n, err := o.flushChunk(ctx, tenantID)
		if errors.Is(err, errPushBusy) {
			select {
			case <-time.After(lockRetry):
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if err != nil {
			return err
		}
		if n < outboxChunk {
			return nil
		}
	}
}

// errPushBusy: another process is pushing the tenant's queue.
var errPushBusy = errors.New("push of the tenant's queue in progress elsewhere")

type queued struct {
	kind string
	id   int64
	seq  int64
}

// flushChunk sends up to outboxChunk queued keys; it returns how many it read.
func (o *outbox) flushChunk(ctx context.Context, tenantID int64) (int, error) {
	var n int
	err := pgx.BeginFunc(ctx, o.pool, func(tx pgx.Tx) error {
		// Without waiting: a connection never sits in a lock queue.
		if ok, err := tryXactLock(ctx, tx, lockOutbox, tenantID); err != nil || !ok {
			if err == nil {
				err = errPushBusy
			}
			return err
		}
		// Read committed: the queue is read first, the rows after, so a row is never older
		// than the seq read for it (a change in between keeps its key queued: its seq moved).
		items, err := o.queuedKeys(ctx, tx, tenantID, outboxChunk)
		if err != nil {
			return err
		}
		n = len(items)
		if n == 0 {
			return nil
		}
		ids := map[string][]int64{}
		for _, q := range items {
			ids[q.kind] = append(ids[q.kind], q.id)
		}
		shops, err := o.shops(ctx, tx, tenantID, ids["shop"])
		if err != nil {
			return err
		}
		cats, err := o.categories(ctx, tx, tenantID, ids["category"])
		if err != nil {
			return err
		}
		goods, err := o.goods(ctx, tx, tenantID, ids["goods"])
		if err != nil {
			return err
		}
		orders, lines, err := o.orders(ctx, tx, tenantID, ids["order"])
		if err != nil {
			return err
		}
		w := o.wh.Writer()
		if err := w.UpsertShops(ctx, shops); err != nil {
			return err
		}
		if err := w.UpsertCategories(ctx, cats); err != nil {
			return err
		}
		if err := w.UpsertGoods(ctx, goods); err != nil {
			return err
		}
		if err := w.UpsertOrders(ctx, orders, lines); err != nil {
			return err
		}
		return o.unqueue(ctx, tx, tenantID, items)
	})
	return n, err
}

// Times go to the store in whole seconds (ClickHouse keeps seconds), so both dialects
// hold the same values.
func sec(t time.Time) time.Time { return t.UTC().Truncate(time.Second) }

// run retries queued changes every interval until ctx ends (first round at once: changes
// left by a process that stopped before pushing).
func (o *outbox) run(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = 10 * time.Second
	}
	o.retryAll(ctx)
	service.Every(ctx, interval, func() { o.retryAll(ctx) })
}

// retryAll asks for a push of every tenant with queued changes.
func (o *outbox) retryAll(ctx context.Context) {
	tenants, err := o.queuedTenants(ctx)
	if err != nil {
		if ctx.Err() == nil {
			o.log.Warn("analytical store: reading the basic outbox failed", "error", err)
		}
		return
	}
	// Through the tenants' pushers, so a retry never overlaps a request's push.
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, t := range tenants {
		o.request(t)
	}
}

// kick asks for a push of the tenant's queue without waiting for it (an import's batches:
// the store follows the import instead of receiving its whole queue at the end).
func (o *outbox) kick(tenantID int64) {
	o.mu.Lock()
	o.request(tenantID)
	o.mu.Unlock()
}

package authn

import (
	"context"
	"embed"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/shopmind/shopmind/internal/postgres"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations are the revocation table's migrations; every target that verifies tokens needs them.
func Migrations() postgres.Migrations {
	return *postgres.Embedded("authn", migrationFiles)
}

// Revocation kinds.
const (
	KindToken  = "token"  // one access token id
	KindFamily = "family" // every token of a refresh family
)

const notifyChannel = "shopmind_revocations"

// Revocations is the in-memory revocation list of one process. It is loaded from PostgreSQL
// at start and kept current with LISTEN/NOTIFY, so every replica of every service learns of a
// logout without a per-request call, and a restarted process still knows it.
type Revocations struct {
	pool *pgxpool.Pool
	log  *slog.Logger

	mu       sync.RWMutex
	tokens   map[string]time.Time
	families map[string]time.Time
	loaded   chan struct{}
	stopped  chan struct{} // closed when the listener has stopped
}

// NewRevocations returns a list backed by pool (nil: memory only, for unit tests).
func NewRevocations(pool *pgxpool.Pool, log *slog.Logger) *Revocations {
	return &Revocations{pool: pool, log: log, tokens: map[string]time.Time{}, families: map[string]time.Time{}, loaded: make(chan struct{})}
}

// Revoked reports whether the token id or its family is revoked.
func (r *Revocations) Revoked(tokenID, family string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, t := r.tokens[tokenID]
	_, f := r.families[family]
	return t || f
}

func (r *Revocations) apply(kind, id string, exp time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.tokens
	if kind == KindFamily {
		m = r.families
	}
	if exp.After(m[id]) {
		m[id] = exp
	}
}

// Revoke records a revocation durably, announces it to every process, and applies it here.
func (r *Revocations) Revoke(ctx context.Context, kind, id string, exp time.Time) error {
	if r.pool == nil {
		if kind != KindToken && kind != KindFamily {
			return fmt.Errorf("unknown revocation kind %q", kind)
		}
		r.apply(kind, id, exp)
		return nil
	}
	// Applied here only once stored: a revocation that failed to store must fail the
	// logout (the client retries), not look done to this process alone.
	tx, err := r.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	applyHere, err := r.RevokeInTx(ctx, tx, kind, map[string]time.Time{id: exp})
	if err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	applyHere()
	return nil
}

// RevokeInTx records revocations (ids with the time until which each is refused) inside the
// caller's transaction: they are stored, and announced to every process, when tx commits,
// together with the change that caused them (a disabled user, a new password), so neither
// happens without the other. Call the returned function once tx has committed to apply them
// in this process at once (the announcement reaches it too, a moment later). tx must be on
// the database of the revocation list.
func (r *Revocations) RevokeInTx(ctx context.Context, tx pgx.Tx, kind string, ids map[string]time.Time) (func(), error) {
	if kind != KindToken && kind != KindFamily {
		return nil, fmt.Errorf("unknown revocation kind %q", kind)
	}
	keys := make([]string, 0, len(ids))
	exps := make([]time.Time, 0, len(ids))
	payloads := make([]string, 0, len(ids))
	for id, exp := range ids {
		keys, exps = append(keys, id), append(exps, exp)
		payloads = append(payloads, kind+":"+id+":"+strconv.FormatInt(exp.Unix(), 10))
	}
	if len(keys) > 0 {
		if _, err := tx.Exec(ctx, `INSERT INTO authn.revocations (kind, id, expires_at)
			SELECT $1, id, exp FROM unnest($2::text[], $3::timestamptz[]) AS v(id, exp)
			ON CONFLICT (kind, id) DO UPDATE SET expires_at = greatest(authn.revocations.expires_at, excluded.expires_at)`,
			kind, keys, exps); err != nil {
			return nil, err
		}
		if _, err := tx.Exec(ctx, "SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p", notifyChannel, payloads); err != nil {
			return nil, err
		}
	}
	return func() {
		for id, exp := range ids {
			r.apply(kind, id, exp)
		}
	}, nil
}

// Start loads the list and follows changes until run ends. It returns once the first load
// is done (or ctx, the start, ends), so a process never serves before it knows the
// revocations. The listener holds a connection of its own, outside the pool (a pool
// connection held forever would shrink the pool, and closing the pool would wait for it);
// Wait returns once it has let go.
func (r *Revocations) Start(ctx, run context.Context) error {
	r.stopped = make(chan struct{})
	if r.pool == nil {
		close(r.loaded)
		close(r.stopped)
		return nil
	}
	first := make(chan error, 1)
	go func() {
		defer close(r.stopped)
		r.follow(run, first)
	}()
	select {
	case err := <-first:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Wait blocks until the listener started by Start has stopped (run ended); it returns at
// once when Start was not called.
func (r *Revocations) Wait() {
	if r.stopped != nil {
		<-r.stopped
	}
}

// follow listens for notifications; after any connection loss it listens again and reloads,
// so nothing announced meanwhile is missed. The first outcome (loaded, or the first
// failure) goes to first.
func (r *Revocations) follow(ctx context.Context, first chan<- error) {
	backoff := 100 * time.Millisecond
	prune := time.NewTicker(time.Minute)
	defer prune.Stop()
	report := func(err error) {
		if first != nil {
			first <- err
			first = nil
		}
	}
	for ctx.Err() == nil {
		err := r.listenOnce(ctx, func() { report(nil); backoff = 100 * time.Millisecond }, prune.C)
		report(err)
		if ctx.Err() != nil {
			return
		}
		r.log.Warn("revocation listener lost its connection; reconnecting", "error", err)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// listenOnce listens on a new connection, loads the list, calls loaded, and applies
// notifications until the connection fails or ctx ends.
func (r *Revocations) listenOnce(ctx context.Context, loaded func(), prune <-chan time.Time) error {
	conn, err := pgx.ConnectConfig(ctx, r.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background()) //nolint:errcheck
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return err
	}
	if err := r.load(ctx); err != nil {
		return err
	}
	loaded()
	for {
		waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		n, err := conn.WaitForNotification(waitCtx)
		idle := waitCtx.Err() != nil // read before cancel, which would make it always true
		cancel()
		select {
		case <-prune:
			r.pruneExpired()
		default:
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if idle { // idle timeout (pgx keeps the connection): keep listening
				continue
			}
			return err
		}
		kind, rest, ok := strings.Cut(n.Payload, ":")
		id, expText, ok2 := strings.Cut(rest, ":")
		exp, err := strconv.ParseInt(expText, 10, 64)
		if !ok || !ok2 || err != nil {
			r.log.Warn("malformed revocation notification", "payload", n.Payload)
			continue
		}
		r.apply(kind, id, time.Unix(exp, 0))
	}
}

func (r *Revocations) load(ctx context.Context) error {
	rows, err := r.pool.Query(ctx, "SELECT kind, id, expires_at FROM authn.revocations WHERE expires_at > now()")
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var kind, id string
		var exp time.Time
		if err := rows.Scan(&kind, &id, &exp); err != nil {
			return err
		}
		r.apply(kind, id, exp)
	}
	return rows.Err()
}

// pruneExpired drops entries whose tokens have expired anyway, keeping memory bounded.
func (r *Revocations) pruneExpired() {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range []map[string]time.Time{r.tokens, r.families} {
		for id, exp := range m {
			if exp.Before(now) {
				delete(m, id)
			}
		}
	}
}

// Package postgres opens the platform database (creating it when missing) and applies each
// service's embedded migrations under an advisory lock, so replicas starting together
// migrate once.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"log/slog"
	"net/url"
	"runtime"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// Migrations are one service's SQL migrations (goose format, files NNNNN_name.sql).
type Migrations struct {
	// Service names the owner; its version table is goose_<service>.
	Service string
	// FS holds the .sql files at its root.
	FS fs.FS
}

// Embedded are service's migrations in the migrations/ folder of files, a package's
// `//go:embed migrations/*.sql`.
func Embedded(service string, files fs.FS) *Migrations {
	sub, err := fs.Sub(files, "migrations")
	if err != nil { // only for an invalid path, which "migrations" is not
		panic(err)
	}
	return &Migrations{Service: service, FS: sub}
}

// EnsureDatabase creates the database named in dbURL when it does not exist yet.
func EnsureDatabase(ctx context.Context, dbURL string) error {
	u, err := url.Parse(dbURL)
	if err != nil {
		return fmt.Errorf("database url: %w", err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	if name == "" {
		return errors.New("database url names no database")
	}
	admin := *u
	admin.Path = "/postgres"
	conn, err := pgx.Connect(ctx, admin.String())
	if err != nil {
		return fmt.Errorf("connect to maintenance database: %w", err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return fmt.Errorf("look up database: %w", err)
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P04" { // created meanwhile by another replica
		return nil
	}
	return err
}

// MinMaxConns is the smallest pool: two connections for a push to the analytical store (a
// push takes two when the store is PostgreSQL) and two for requests; requests beyond the
// pool wait in its queue, bounded by their deadline.
const MinMaxConns = 4

// DefaultMaxConns is the pool of a process whose URL and configuration set none: two
// connections per core the process may use (GOMAXPROCS), at least MinMaxConns. A request
// holds a connection only for its queries, a few milliseconds, so a process cannot keep more
// busy than that; more connections only move the queue into PostgreSQL, where the extra
// backends compete for the cores. On 2 cores a pool of 16 doubled the tail of the goods
// listing under 32 concurrent clients (README, Benchmarks: the whole stack).
func DefaultMaxConns() int32 { return int32(max(MinMaxConns, 2*runtime.GOMAXPROCS(0))) }

// Open connects a pool to dbURL. maxConns > 0 caps the pool; 0 keeps the URL's
// pool_max_conns, or DefaultMaxConns() when the URL has none.
func Open(ctx context.Context, dbURL string, maxConns int) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, fmt.Errorf("database url: %w", err)
	}
	switch {
	case maxConns > 0:
		cfg.MaxConns = int32(maxConns)
	case !strings.Contains(dbURL, "pool_max_conns="):
		cfg.MaxConns = DefaultMaxConns()
	}
	if cfg.MaxConns < MinMaxConns {
		return nil, fmt.Errorf("database pool: %d connections is below the minimum of %d (SHOPMIND_DATABASE_MAX_CONNS or pool_max_conns)", cfg.MaxConns, MinMaxConns)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("ping database: %w", err)
	}
	return pool, nil
}

// Migrate applies every pending migration of each service, each under its own advisory lock.
func Migrate(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger, sets ...Migrations) error {
	if len(sets) == 0 {
		return nil
	}
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	for _, set := range sets {
		locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(lockID(set.Service)), lock.WithLockTimeout(1, 120))
		if err != nil {
			return err
		}
		provider, err := goose.NewProvider(goose.DialectPostgres, db, set.FS,
			goose.WithTableName("goose_"+set.Service),
			goose.WithSessionLocker(locker),
			goose.WithDisableGlobalRegistry(true))
		if err != nil {
			return fmt.Errorf("migrations of %s: %w", set.Service, err)
		}
		results, err := provider.Up(ctx)
		if err != nil {
			return fmt.Errorf("migrate %s: %w", set.Service, err)
		}
		for _, r := range results {
			logger.Info("migration applied", "service", set.Service, "version", r.Source.Version, "duration", r.Duration)
		}
	}
	return nil
}

// lockID derives a stable advisory lock id per service.
func lockID(service string) int64 {
	h := fnv.New64a()
	h.Write([]byte("shopmind-migrate:" + service))
	return int64(h.Sum64() & 0x7fffffffffffffff)
}

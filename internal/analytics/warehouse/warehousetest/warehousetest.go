// Package warehousetest hands tests a fresh analytical store on the real servers: PostgreSQL
// (a database of its own through pgtest, schema analytics created) and ClickHouse (a
// database shopmind_test_<random> on SHOPMIND_TEST_CLICKHOUSE_URL, dropped when the test
// ends). Without a reachable ClickHouse the ClickHouse tests skip, unless CI is set: then
// they fail.
//
// With SHOPMIND_TEST_CLICKHOUSE_CLUSTER=<name> (make test-ch-cluster) the ClickHouse store is
// in cluster mode on that cluster: the database is created and dropped ON CLUSTER, and the
// store's tables are Distributed over ReplicatedMergeTree (WAREHOUSE.md, "Cluster mode").
package warehousetest

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/shopmind/shopmind/internal/analytics/warehouse"
	"github.com/shopmind/shopmind/internal/testutil/pgtest"
	"github.com/shopmind/shopmind/internal/testutil/tier"
)

// DefaultClickHouseURL is the ClickHouse server the tests use unless
// SHOPMIND_TEST_CLICKHOUSE_URL says otherwise (start it with scripts/clickhouse.sh).
const DefaultClickHouseURL = "clickhouse://127.0.0.1:9000/default"

// ClickHouseURL is the server URL of the ClickHouse tests.
func ClickHouseURL() string {
	return cmp.Or(os.Getenv("SHOPMIND_TEST_CLICKHOUSE_URL"), DefaultClickHouseURL)
}

// ClickHouseCluster is the cluster of the ClickHouse tests ("" for one server).
func ClickHouseCluster() string { return os.Getenv("SHOPMIND_TEST_CLICKHOUSE_CLUSTER") }

// DB is one test's store and what the test needs to speak its dialect.
type DB struct {
	Store warehouse.Store
	// Exec runs a statement outside the store's read-only query path (test setup: diy
	// tables, ...), against the store's database or schema.
	Exec func(ctx context.Context, sql string) error
	// URL is the analytics URL of the store ("" for PostgreSQL).
	URL string
	// Pool is the PostgreSQL database's pool (nil for ClickHouse).
	Pool *pgxpool.Pool
}

// DriverURL is URL without ShopMind's own cluster parameter, for a test's own
// clickhouse-go connection (the driver would send the parameter to the server as a
// setting).
func (d *DB) DriverURL() string {
	u, err := url.Parse(d.URL)
	if err != nil {
		return d.URL
	}
	q := u.Query()
	q.Del("cluster")
	u.RawQuery = q.Encode()
	return u.String()
}

// P is the dialect's n-th placeholder ($n or ?).
func (d *DB) P(n int) string {
	if d.Store.Dialect() == warehouse.DialectPostgres {
		return fmt.Sprintf("$%d", n)
	}
	return "?"
}

// Postgres opens a store on a fresh PostgreSQL database with the schema created.
func Postgres(t testing.TB) *DB {
	t.Helper()
	tier.Needs(t, "PostgreSQL (warehousetest)")
	return OnPool(t, pgtest.New(t).Pool)
}

// OnPool opens the PostgreSQL store in the database of pool (a running platform's, say),
// creating the schema where it is missing.
func OnPool(t testing.TB, pool *pgxpool.Pool) *DB {
	t.Helper()
	ctx := context.Background()
	store, err := warehouse.Open(ctx, "", pool, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("warehousetest: open postgres store: %v", err)
	}
	if err := store.EnsureSchema(ctx); err != nil {
		t.Fatalf("warehousetest: postgres schema: %v", err)
	}
	return &DB{Store: store, Pool: pool, Exec: func(ctx context.Context, sql string) error {
		_, err := pool.Exec(ctx, "SET search_path = "+warehouse.PostgresSchema+"; "+sql)
		return err
	}}
}

// ClickHouse opens a store on a fresh ClickHouse database with the schema created; the
// database is dropped when t ends.
func ClickHouse(t testing.TB) *DB {
	t.Helper()
	tier.Needs(t, "ClickHouse (warehousetest)")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	serverURL := ClickHouseURL()
	opts, err := clickhouse.ParseDSN(serverURL)
	if err != nil {
		t.Fatalf("warehousetest: SHOPMIND_TEST_CLICKHOUSE_URL: %v", err)
	}
	opts.DialTimeout = 3 * time.Second
	admin, err := clickhouse.Open(opts)
	if err == nil {
		err = admin.Ping(ctx)
	}
	if err != nil {
		msg := fmt.Sprintf("warehousetest: ClickHouse is not reachable at %s (start it with scripts/clickhouse.sh): %v", serverURL, err)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	name := "shopmind_test_" + randomHex(6)
	onCluster := ""
	if c := ClickHouseCluster(); c != "" {
		onCluster = " ON CLUSTER " + c
	}
	if err := admin.Exec(ctx, "CREATE DATABASE "+name+onCluster); err != nil {
		t.Fatalf("warehousetest: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+onCluster); err != nil {
			t.Logf("warehousetest: drop %s: %v", name, err)
		}
		admin.Close()
	})
	dbURL := withDatabase(serverURL, name, ClickHouseCluster())
	store, err := warehouse.Open(ctx, dbURL, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("warehousetest: open clickhouse store: %v", err)
	}
	t.Cleanup(func() { store.Close() })
	if err := store.EnsureSchema(ctx); err != nil {
		t.Fatalf("warehousetest: clickhouse schema: %v", err)
	}
	dbOpts := *opts
	dbOpts.Auth.Database = name
	exec, err := clickhouse.Open(&dbOpts)
	if err != nil {
		t.Fatalf("warehousetest: connect to %s: %v", name, err)
	}
	t.Cleanup(func() { exec.Close() })
	return &DB{Store: store, URL: dbURL, Exec: func(ctx context.Context, sql string) error {
		return exec.Exec(ctx, sql)
	}}
}

// Each runs f as a subtest against both dialects.
func Each(t *testing.T, f func(t *testing.T, db *DB)) {
	t.Run("postgres", func(t *testing.T) { f(t, Postgres(t)) })
	t.Run("clickhouse", func(t *testing.T) { f(t, ClickHouse(t)) })
}

func withDatabase(serverURL, name, cluster string) string {
	u, err := url.Parse(serverURL)
	if err != nil {
		panic(err)
	}
	u.Path = "/" + name
	if cluster != "" {
		q := u.Query()
		q.Set("cluster", cluster)
		u.RawQuery = q.Encode()
	}
	return u.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

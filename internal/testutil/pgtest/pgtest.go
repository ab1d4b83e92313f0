// Package pgtest hands each test a fresh, migrated PostgreSQL database on the real server.
// The migrations run once into a template database named after a hash of their content;
// every test then clones the template (CREATE DATABASE ... TEMPLATE), which takes tens of
// milliseconds, and drops its clone when it ends.
package pgtest

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/shopmind/shopmind/internal/postgres"
	"github.com/shopmind/shopmind/internal/testutil/tier"
)

// DefaultURL is the server the tests use, unless SHOPMIND_TEST_DATABASE_URL says otherwise.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// ServerURL returns the maintenance URL of the test server.
func ServerURL() string {
	return cmp.Or(os.Getenv("SHOPMIND_TEST_DATABASE_URL"), DefaultURL)
}

// Database is a fresh database of one test.
type Database struct {
	URL  string
	Pool *pgxpool.Pool
}

// New creates a migrated database for t and drops it when t ends.
func New(t testing.TB, sets ...postgres.Migrations) *Database {
	t.Helper()
	tier.Needs(t, "PostgreSQL (pgtest)")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, ServerURL())
	if err != nil {
		t.Fatalf("pgtest: PostgreSQL is not reachable at %s (start it with `make deps`): %v", ServerURL(), err)
	}
	defer admin.Close(ctx)

	template, err := ensureTemplate(ctx, admin, sets)
	if err != nil {
		t.Fatalf("pgtest: template: %v", err)
	}
	name := "shopmind_test_" + randomHex(6)
	if _, err := admin.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s", ident(name), ident(template))); err != nil {
		t.Fatalf("pgtest: clone template: %v", err)
	}
	dbURL := withDatabase(ServerURL(), name)
	pool, err := postgres.Open(ctx, dbURL, 0)
	if err != nil {
		t.Fatalf("pgtest: open: %v", err)
	}
	t.Cleanup(func() {
		pool.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, ServerURL())
		if err != nil {
			t.Logf("pgtest: drop %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", ident(name))); err != nil {
			t.Logf("pgtest: drop %s: %v", name, err)
		}
	})
	return &Database{URL: dbURL, Pool: pool}
}

// ensureTemplate builds the template for this migration set once, across processes: test
// packages run in parallel, so creation happens under an advisory lock and the finished
// database appears under its final name only when fully migrated.
func ensureTemplate(ctx context.Context, admin *pgx.Conn, sets []postgres.Migrations) (string, error) {
	digest, err := migrationsDigest(sets)
	if err != nil {
		return "", err
	}
	name := "shopmind_tmpl_" + digest[:16]
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock(7262011)"); err != nil {
		return "", err
	}
	defer admin.Exec(context.Background(), "SELECT pg_advisory_unlock(7262011)") //nolint:errcheck
	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	building := name + "_building"
	if _, err := admin.Exec(ctx, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", ident(building))); err != nil {
		return "", err
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+ident(building)); err != nil {
		return "", err
	}
	pool, err := postgres.Open(ctx, withDatabase(ServerURL(), building), 0)
	if err != nil {
		return "", err
	}
	err = postgres.Migrate(ctx, pool, slog.New(slog.DiscardHandler), sets...)
	pool.Close()
	if err != nil {
		return "", err
	}
	if _, err := admin.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s RENAME TO %s", ident(building), ident(name))); err != nil {
		return "", err
	}
	_, err = admin.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s IS_TEMPLATE true", ident(name)))
	return name, err
}

// migrationsDigest hashes every migration file, so a changed migration gets a new template.
func migrationsDigest(sets []postgres.Migrations) (string, error) {
	h := sha256.New()
	for _, set := range sets {
		var files []string
		err := fs.WalkDir(set.FS, ".", func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				files = append(files, path)
			}
			return err
		})
		if err != nil {
			return "", err
		}
		sort.Strings(files)
		fmt.Fprintf(h, "service %s\n", set.Service)
		for _, f := range files {
			b, err := fs.ReadFile(set.FS, f)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(h, "%s %d\n", f, len(b))
			h.Write(b)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// URLFor returns the test server URL with its database replaced by name.
func URLFor(serverURL, name string) string { return withDatabase(serverURL, name) }

func withDatabase(serverURL, name string) string {
	u, err := url.Parse(serverURL)
	if err != nil {
		panic(err)
	}
	u.Path = "/" + name
	return u.String()
}

func ident(name string) string { return pgx.Identifier{name}.Sanitize() }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

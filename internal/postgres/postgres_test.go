package postgres_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"

	"github.com/shopmind/shopmind/internal/postgres"
	"github.com/shopmind/shopmind/internal/testutil/pgtest"
	"github.com/shopmind/shopmind/internal/testutil/tier"
)

var widgets = postgres.Migrations{Service: "widgets", FS: fstest.MapFS{
	"00001_widgets.sql": {Data: []byte("-- +goose Up\nCREATE SCHEMA widgets;\nCREATE TABLE widgets.widget (id bigserial PRIMARY KEY, name text NOT NULL);\n-- +goose Down\nDROP SCHEMA widgets CASCADE;\n")},
	"00002_color.sql":   {Data: []byte("-- +goose Up\nALTER TABLE widgets.widget ADD COLUMN color text NOT NULL DEFAULT 'red';\n-- +goose Down\nALTER TABLE widgets.widget DROP COLUMN color;\n")},
}}

// Each test gets its own migrated database; what one writes the other never sees.
func TestDatabasesAreFreshAndIsolated(t *testing.T) {
	ctx := context.Background()
	a := pgtest.New(t, widgets)
	b := pgtest.New(t, widgets)
	if a.URL == b.URL {
		t.Fatal("two tests share a database")
	}
	if _, err := a.Pool.Exec(ctx, "INSERT INTO widgets.widget (name) VALUES ('a')"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := b.Pool.QueryRow(ctx, "SELECT count(*) FROM widgets.widget").Scan(&n); err != nil || n != 0 {
		t.Fatalf("b sees %d rows (%v)", n, err)
	}
	var color string
	if err := a.Pool.QueryRow(ctx, "SELECT color FROM widgets.widget").Scan(&color); err != nil || color != "red" {
		t.Fatalf("second migration missing: %q %v", color, err)
	}
}

// Replicas starting together migrate once: concurrent Migrate calls on a fresh database
// all succeed and leave each version applied exactly once.
func TestConcurrentMigrationsApplyOnce(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t) // empty template; widgets are migrated below
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- postgres.Migrate(ctx, db.Pool, slog.New(slog.DiscardHandler), widgets)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var applied int
	if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM goose_widgets WHERE version_id > 0").Scan(&applied); err != nil || applied != 2 {
		t.Fatalf("applied %d versions (%v)", applied, err)
	}
}

// EnsureDatabase creates a missing database and is idempotent.
func TestEnsureDatabase(t *testing.T) {
	tier.Needs(t, "PostgreSQL")
	ctx := context.Background()
	name := fmt.Sprintf("shopmind_ensure_%d", testingPID())
	url := pgtest.URLFor(pgtest.ServerURL(), name)
	admin, err := pgx.Connect(ctx, pgtest.ServerURL())
	if err != nil {
		t.Skipf("PostgreSQL unreachable: %v", err)
	}
	defer admin.Close(ctx)
	_, _ = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name)
	t.Cleanup(func() { _, _ = admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })
	for i := 0; i < 2; i++ {
		if err := postgres.EnsureDatabase(ctx, url); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
	}
	pool, err := postgres.Open(ctx, url, 0)
	if err != nil {
		t.Fatal(err)
	}
	pool.Close()
}

func testingPID() int { return os.Getpid() }

package semantic

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/shopmind/shopmind/internal/analytics/warehouse/warehousetest"
	"github.com/shopmind/shopmind/internal/testutil/tier"
)

// ClickHouse at SHOPMIND_TEST_CLICKHOUSE_URL (native protocol; scripts/clickhouse.sh starts
// Debian's 18.16 here). Skipped when it is unreachable, unless CI is set.

// setupClickHouse creates a database of its own with the catalog's tables and the data set,
// and returns a connection whose default database it is. It skips t when ClickHouse is not
// reachable, unless CI is set.
func setupClickHouse(t testing.TB, ds dataset) driver.Conn {
	t.Helper()
	conn, err := openClickHouse(t, ds)
	if err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("ClickHouse is not reachable at %s (scripts/clickhouse.sh starts it): %v", warehousetest.ClickHouseURL(), err)
		}
		t.Fatalf("ClickHouse is not reachable at %s: %v", warehousetest.ClickHouseURL(), err)
	}
	return conn
}

// openClickHouse is setupClickHouse returning the connection error instead of skipping.
func openClickHouse(t testing.TB, ds dataset) (driver.Conn, error) {
	t.Helper()
	tier.Needs(t, "ClickHouse")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opts, err := ch.ParseDSN(warehousetest.ClickHouseURL())
	if err != nil {
		t.Fatalf("SHOPMIND_TEST_CLICKHOUSE_URL: %v", err)
	}
	opts.DialTimeout = 3 * time.Second
	admin, err := ch.Open(opts)
	if err == nil {
		err = admin.Ping(ctx)
	}
	if err != nil {
		return nil, err
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	db := "shopmind_semantic_" + hex.EncodeToString(b)
	if err := admin.Exec(ctx, "CREATE DATABASE "+db); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+db); err != nil {
			t.Logf("drop %s: %v", db, err)
		}
		_ = admin.Close()
	})
	own := *opts
	own.Auth.Database = db
	conn, err := ch.Open(&own)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	for _, tbl := range baseCatalog.Tables {
		if err := conn.Exec(ctx, chDDL(tbl)); err != nil {
			t.Fatalf("%s: %v", tbl.Name, err)
		}
		// 18.16 needs the column list in a batch insert.
		batch, err := conn.PrepareBatch(ctx, "INSERT INTO "+tbl.Name+" ("+strings.Join(columnNames(tbl), ", ")+")")
		if err != nil {
			t.Fatalf("prepare %s: %v", tbl.Name, err)
		}
		for _, row := range ds[tbl.Name] {
			if err := batch.Append(row...); err != nil {
				t.Fatalf("append %s: %v", tbl.Name, err)
			}
		}
		if err := batch.Send(); err != nil {
			t.Fatalf("send %s: %v", tbl.Name, err)
		}
	}
	return conn, nil
}

func chRunner(conn driver.Conn) runner {
	return func(ctx context.Context, c *Compiled) ([][]any, error) {
		rows, err := conn.Query(ctx, c.SQL, c.Args...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		types := rows.ColumnTypes()
		var out [][]any
		for rows.Next() {
			ptrs := make([]any, len(types))
			for i, ct := range types {
				ptrs[i] = reflect.New(ct.ScanType()).Interface()
			}
			if err := rows.Scan(ptrs...); err != nil {
				return nil, err
			}
			row := make([]any, len(ptrs))
			for i, p := range ptrs {
				row[i] = reflect.ValueOf(p).Elem().Interface()
			}
			out = append(out, row)
		}
		return out, rows.Err()
	}
}

// TestExecClickHouse runs every execution case on ClickHouse and compares the rows with the
// hand-written PostgreSQL answers over the same data.
func TestExecClickHouse(t *testing.T) {
	ds := buildData()
	conn := setupClickHouse(t, ds)
	pool := setupPostgres(t, ds)
	var version string
	if err := conn.QueryRow(context.Background(), "SELECT version()").Scan(&version); err == nil {
		t.Logf("ClickHouse %s", version)
	}
	runExecCases(t, pool, ClickHouse(), chRunner(conn))

	// A metric named like a column of its table (the two-level shape) and every compile
	// case of the unit tests run without a ClickHouse error.
	ctx := context.Background()
	for _, c := range compileCases() {
		q := c.q()
		compiled, err := Compile(q, baseCatalog, ClickHouse())
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if _, err := chRunner(conn)(ctx, compiled); err != nil {
			t.Errorf("%s: %v\n%s", c.name, err, compiled.SQL)
		}
	}
}

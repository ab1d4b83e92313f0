package sqlsandbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/shopmind/shopmind/internal/analytics/catalog"
	"github.com/shopmind/shopmind/internal/analytics/demodata"
	"github.com/shopmind/shopmind/internal/analytics/warehouse"
	"github.com/shopmind/shopmind/internal/analytics/warehouse/warehousetest"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/sqlsandbox"
)

// Tenants of the fixture: the caller (1) and the other tenant (2), with different data.
const (
	tenantA = 1
	tenantB = 2
)

// shopsA is the shop filter of the row-filter runs: two of tenant A's shops.
var shopsA = []int64{1, 3}

// fixture loads demo data for two tenants and opens a sandbox on the store.
func fixture(t *testing.T, db *warehousetest.DB) *sqlsandbox.Sandbox {
	t.Helper()
	ctx := context.Background()
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i, tenant := range []int64{tenantA, tenantB} {
		if _, err := demodata.Generate(ctx, db.Store.Writer(), demodata.Options{TenantID: tenant, Orders: 300, Seed: int64(i + 1), Now: now, Days: 90}); err != nil {
			t.Fatalf("demo data: %v", err)
		}
	}
	cfg := sqlsandbox.DefaultConfig()
	cfg.MaxRows = 5000
	sb, err := sqlsandbox.Open(ctx, cfg, db.Store, db.Pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sb.Close)
	return sb
}

// handRunner runs a query with the tenant (and shop) filter written out by hand: views of
// the same names over the base tables, each with WHERE i_tenant_id = ... (AND shop_id IN ...).
type handRunner func(t *testing.T, sql string, withShops bool) []string

func pgHand(t *testing.T, db *warehousetest.DB) handRunner {
	ctx := context.Background()
	for _, withShops := range []bool{false, true} {
		schema := handSchema(withShops)
		if _, err := db.Pool.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
			t.Fatal(err)
		}
		for _, tbl := range catalog.Base().Tables {
			if _, err := db.Pool.Exec(ctx, fmt.Sprintf("CREATE VIEW %s.%s AS SELECT * FROM analytics.%s WHERE %s",
				schema, tbl.Name, tbl.Name, handFilter(tbl, withShops))); err != nil {
				t.Fatal(err)
			}
		}
	}
	return func(t *testing.T, sql string, withShops bool) []string {
		tx, err := db.Pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, "SET LOCAL search_path = "+handSchema(withShops)+"; SET LOCAL TimeZone = 'UTC'"); err != nil {
			t.Fatal(err)
		}
		rows, err := tx.Query(ctx, sql)
		if err != nil {
			t.Fatalf("by hand: %q: %v", sql, err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, rowKey(vals))
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("by hand: %q: %v", sql, err)
		}
		return out
	}
}

func handSchema(withShops bool) string {
	if withShops {
		return "hand_shops"
	}
	return "hand_tenant"
}

func handFilter(tbl *catalog.Table, withShops bool) string {
	f := fmt.Sprintf("i_tenant_id = %d", tenantA)
	if withShops && tbl.Column("shop_id") != nil {
		f += fmt.Sprintf(" AND shop_id IN (%d, %d)", shopsA[0], shopsA[1])
	}
	return f
}

func chHand(t *testing.T, db *warehousetest.DB) handRunner {
	ctx := context.Background()
	opts, err := clickhouse.ParseDSN(db.DriverURL())
	if err != nil {
		t.Fatal(err)
	}
	base := opts.Auth.Database
	conns := map[bool]clickhouse.Conn{}
	for _, withShops := range []bool{false, true} {
		name := base + "_" + handSchema(withShops)
		if err := db.Exec(ctx, "CREATE DATABASE "+name); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name) })
		for _, tbl := range catalog.Base().Tables {
			if err := db.Exec(ctx, fmt.Sprintf("CREATE VIEW %s.%s AS SELECT * FROM %s.%s WHERE %s",
				name, tbl.Name, base, tbl.Name, handFilter(tbl, withShops))); err != nil {
				t.Fatal(err)
			}
		}
		o := *opts
		o.Auth.Database = name
		conn, err := clickhouse.Open(&o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		conns[withShops] = conn
	}
	return func(t *testing.T, sql string, withShops bool) []string {
		rows, err := conns[withShops].Query(ctx, sql)
		if err != nil {
			t.Fatalf("by hand: %q: %v", sql, err)
		}
		defer rows.Close()
		types := rows.ColumnTypes()
		var out []string
		for rows.Next() {
			dest := make([]any, len(types))
			for i, ct := range types {
				dest[i] = reflect.New(ct.ScanType()).Interface()
			}
			if err := rows.Scan(dest...); err != nil {
				t.Fatal(err)
			}
			vals := make([]any, len(dest))
			for i, d := range dest {
				vals[i] = reflect.ValueOf(d).Elem().Interface()
			}
			out = append(out, rowKey(vals))
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("by hand: %q: %v", sql, err)
		}
		return out
	}
}

// rowKey is a row as comparable text: numbers of any width alike, floats to 9 significant
// digits (sums may add in another order), times in UTC.
func rowKey(vals []any) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = valueKey(v)
	}
	return strings.Join(parts, " | ")
}

func valueKey(v any) string {
	rv := reflect.ValueOf(v)
	for rv.IsValid() && (rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface) {
		if rv.IsNil() {
			return "NULL"
		}
		rv = rv.Elem()
	}
	if !rv.IsValid() {
		return "NULL"
	}
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return fmt.Sprint(rv.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprint(rv.Uint())
	case reflect.Float32, reflect.Float64:
		return floatKey(rv.Float())
	case reflect.Bool:
		if rv.Bool() {
			return "1"
		}
		return "0"
	case reflect.String:
		return rv.String()
	}
	switch x := rv.Interface().(type) {
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case pgtype.Numeric:
		f, err := x.Float64Value()
		if err != nil || !f.Valid {
			return "NULL"
		}
		return floatKey(f.Float64)
	case []byte:
		return string(x)
	case []any:
		b, _ := json.Marshal(x)
		return string(b)
	}
	return fmt.Sprint(rv.Interface())
}

func floatKey(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return fmt.Sprint(int64(f))
	}
	return fmt.Sprintf("%.9g", f)
}

// TestLegitCorpusRows runs every legitimate query through the sandbox and by hand with the
// tenant filter written out, for the tenant alone and with a shop row filter, on both
// dialects: the rows must be the same.
func TestLegitCorpusRows(t *testing.T) {
	warehousetest.Each(t, func(t *testing.T, db *warehousetest.DB) {
		sb := fixture(t, db)
		dialect := db.Store.Dialect()
		var hand handRunner
		if dialect == warehouse.DialectPostgres {
			hand = pgHand(t, db)
		} else {
			hand = chHand(t, db)
		}
		ctx := context.Background()
		nonEmpty := 0
		for _, q := range loadLegit(t, dialect) {
			for _, withShops := range []bool{false, true} {
				scope := sqlsandbox.Scope{TenantID: tenantA}
				if withShops {
					scope.RowFilters = []sqlsandbox.RowFilter{sqlsandbox.ShopFilter(shopsA)}
				}
				res, err := sb.Run(ctx, scope, q, 0)
				if err != nil {
					t.Errorf("shops=%v: %q: %v", withShops, q, err)
					continue
				}
				if res.Truncated {
					t.Errorf("%q: truncated; the corpus queries stay under the cap", q)
				}
				got := make([]string, len(res.Rows))
				for i, r := range res.Rows {
					got[i] = rowKey(r)
				}
				want := hand(t, q, withShops)
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Errorf("shops=%v: %q: rows differ\nsandbox (%s): %d rows %.300q\nby hand: %d rows %.300q", withShops, q, res.SQLRun, len(got), got, len(want), want)
				}
				if len(got) > 0 {
					nonEmpty++
				}
			}
		}
		if nonEmpty < 150 {
			t.Errorf("only %d of the corpus runs returned rows: the fixture is too thin to compare", nonEmpty)
		}
	})
}

// TestEscapeCorpusNeutral runs the corpus's neutral cases: they run, and only the caller's
// rows (first column i_tenant_id) come back, whatever the statement says about tenants.
func TestEscapeCorpusNeutral(t *testing.T) {
	warehousetest.Each(t, func(t *testing.T, db *warehousetest.DB) {
		sb := fixture(t, db)
		ctx := context.Background()
		n := 0
		for _, c := range loadEscapes(t) {
			if c.refuse != "" || c.dialect != db.Store.Dialect() {
				continue
			}
			n++
			for _, tenant := range []int64{tenantA, tenantB} {
				res, err := sb.Run(ctx, sqlsandbox.Scope{TenantID: tenant}, c.sql, 0)
				if err != nil {
					t.Errorf("escape.tsv:%d: %q: %v", c.line, c.sql, err)
					continue
				}
				if len(res.Rows) == 0 {
					t.Errorf("escape.tsv:%d: %q: no rows; a neutral case must show the caller's rows", c.line, c.sql)
				}
				for _, r := range res.Rows {
					if valueKey(r[0]) != fmt.Sprint(tenant) {
						t.Fatalf("escape.tsv:%d: %q as tenant %d returned a row of tenant %v (ran %s)", c.line, c.sql, tenant, r[0], res.SQLRun)
					}
				}
			}
		}
		if n == 0 {
			t.Fatal("no neutral cases for this dialect")
		}
	})
}

// TestCaps: the row cap truncates, the time cap answers 504, the scan or cost cap 422, SQL
// errors of the author 400 with the server's message.
func TestCaps(t *testing.T) {
	warehousetest.Each(t, func(t *testing.T, db *warehousetest.DB) {
		sb := fixture(t, db)
		ctx := context.Background()
		scope := sqlsandbox.Scope{TenantID: tenantA}

		res, err := sb.Run(ctx, scope, "SELECT order_id FROM basic_orders ORDER BY order_id", 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Rows) != 10 || !res.Truncated {
			t.Errorf("max rows 10: got %d rows, truncated %v", len(res.Rows), res.Truncated)
		}
		if !strings.Contains(res.SQLRun, "LIMIT 11") {
			t.Errorf("the LIMIT cap is not in the SQL run: %s", res.SQLRun)
		}
		res, err = sb.Run(ctx, scope, "SELECT order_id FROM basic_orders ORDER BY order_id LIMIT 3", 10)
		if err != nil || len(res.Rows) != 3 || res.Truncated {
			t.Errorf("LIMIT 3 under the cap: %v rows, truncated %v, %v", len(res.Rows), res != nil && res.Truncated, err)
		}

		unknownColumn := "SELECT no_such_column FROM basic_orders"
		_, err = sb.Run(ctx, scope, unknownColumn, 0)
		wantKind(t, err, apperr.KindInvalid, "no_such_column")

		tight := sb.Config()
		tight.MaxScanRows, tight.MaxCost = 100, 100
		wide := "SELECT count(*) FROM basic_orders a, basic_order_items b"
		if db.Store.Dialect() == warehouse.DialectClickHouse {
			wide = "SELECT count() FROM basic_orders" // 600 rows to read, cap 100
		}
		_, err = sqlsandbox.New(tight, db.Store).Run(ctx, scope, wide, 0)
		wantKind(t, err, apperr.KindRule, "cap")

		slow := sb.Config()
		slow.Timeout = time.Second
		slow.MaxCost, slow.MaxScanRows = 1e18, 1e18
		heavy := "SELECT count(*) FROM basic_order_items a, basic_order_items b, basic_order_items c WHERE a.amount + b.amount > c.amount"
		if db.Store.Dialect() == warehouse.DialectClickHouse {
			// 750 x 750 x 750 rows joined on the one tenant: far beyond a second.
			heavy = "SELECT count() FROM basic_order_items AS a ALL INNER JOIN (SELECT i_tenant_id, b, c FROM (SELECT i_tenant_id, amount AS b FROM basic_order_items) ALL INNER JOIN (SELECT i_tenant_id, amount AS c FROM basic_order_items) USING i_tenant_id) USING i_tenant_id WHERE a.amount + b > c"
		}
		_, err = sqlsandbox.New(slow, db.Store).Run(ctx, scope, heavy, 0)
		wantKind(t, err, apperr.KindTimeout, "time limit")
	})
}

func wantKind(t *testing.T, err error, kind apperr.Kind, text string) {
	t.Helper()
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Kind != kind {
		t.Errorf("want a %d error, got %v", apperr.EnvelopeCode(kind), err)
		return
	}
	if !strings.Contains(ae.Message, text) {
		t.Errorf("error %q does not mention %q", ae.Message, text)
	}
}

// TestDefenceInDepth sends statements the parser would refuse straight to the store's
// untrusted path, as if the checks had a hole: the database itself still holds.
func TestDefenceInDepth(t *testing.T) {
	warehousetest.Each(t, func(t *testing.T, db *warehousetest.DB) {
		sb := fixture(t, db)
		ctx := context.Background()
		opts := warehouse.QueryOptions{MaxRows: 10, Timeout: 5 * time.Second,
			Untrusted: &warehouse.Untrusted{Pool: sb.Pool(), Role: sb.Config().Role, MaxScanRows: 1000, MaxCost: 1e9}}
		if db.Store.Dialect() == warehouse.DialectPostgres {
			if _, err := db.Pool.Exec(ctx, "CREATE TABLE public.secret (a int); INSERT INTO public.secret VALUES (1)"); err != nil {
				t.Fatal(err)
			}
			res, err := db.Store.Query(ctx, "SELECT current_user", nil, opts)
			if err != nil || len(res.Rows) != 1 || res.Rows[0][0] != sb.Config().Role {
				t.Fatalf("the statement does not run as the sandbox role: %v %v", res, err)
			}
			for _, q := range []string{
				"SELECT count(*) FROM pg_authid",
				"SELECT pg_read_file('/etc/passwd')",
				"SELECT count(*) FROM public.secret",
			} {
				_, err := db.Store.Query(ctx, q, nil, opts)
				wantKind(t, err, apperr.KindForbidden, "permission denied")
			}
			_, err = db.Store.Query(ctx, "WITH d AS (DELETE FROM basic_orders RETURNING 1) SELECT count(*) FROM d", nil, opts)
			var ae *apperr.Error
			if !errors.As(err, &ae) || ae.Kind != apperr.KindForbidden {
				t.Errorf("a writing CTE in the READ ONLY transaction: want 403, got %v", err)
			}
			_, err = db.Store.Query(ctx, "SELECT set_config('default_transaction_read_only', 'off', true), set_config('role', 'postgres', true)", nil, opts)
			if err == nil {
				t.Error("set_config('role', 'postgres') as the sandbox role succeeded")
			}
		} else {
			_, err := db.Store.Query(ctx, "SELECT count() FROM numbers(10)", nil, opts)
			wantKind(t, err, apperr.KindForbidden, "read-only")
			_, err = db.Store.Query(ctx, "SELECT count() FROM basic_orders SETTINGS readonly = 0", nil, opts)
			if err == nil {
				t.Error("SETTINGS readonly = 0 under readonly=1 succeeded")
			}
			_, err = db.Store.Query(ctx, "SELECT count() FROM basic_order_items", nil, opts)
			wantKind(t, err, apperr.KindRule, "cap")
		}
		var n int
		if db.Pool != nil {
			if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM analytics.basic_orders").Scan(&n); err != nil || n != 600 {
				t.Errorf("the orders after the attempts: %d, %v", n, err)
			}
		}
	})
}

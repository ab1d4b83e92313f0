package semantic

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/shopmind/shopmind/internal/analytics/catalog"
	"github.com/shopmind/shopmind/internal/testutil/pgtest"
)

// A small hand-made data set for two tenants that share every id (so a join that forgot
// the tenant would mix them), created from the catalog in PostgreSQL and ClickHouse.

type dataset map[string][][]any // table -> rows, values in catalog column order

func ts(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func tsp(s string) *time.Time {
	if s == "" {
		return nil
	}
	t := ts(s)
	return &t
}

type line struct {
	goods int64
	qty   int64
	price float64
}

type goodsRow struct {
	id, shop, category, staff int64
	name, platform            string
	virtual                   bool
	price, cost               float64
}

func buildData() dataset {
	ds := dataset{}
	for _, tenant := range []int64{1, 2} {
		big := 1.0 // tenant 2's amounts are 1000 times larger, its names differ
		prefix := ""
		if tenant == 2 {
			big, prefix = 1000, "T2 "
		}
		shops := []struct {
			id             int64
			name, platform string
		}{{1, "North", "taobao"}, {2, "South", "jd"}, {3, "Empty", "jd"}}
		for _, s := range shops {
			ds["basic_shops"] = append(ds["basic_shops"], []any{tenant, s.id, prefix + s.name, s.platform, "open", ts("2023-06-01T00:00:00Z")})
		}
		for _, c := range []struct {
			id, parent int64
			name       string
			level      int64
		}{{10, 0, "Clothes", 1}, {11, 10, "Shirts", 2}, {12, 0, "Food", 1}} {
			ds["basic_categories"] = append(ds["basic_categories"], []any{tenant, c.id, c.parent, prefix + c.name, c.level})
		}
		goods := []goodsRow{
			{100, 1, 11, 5, "Shirt", "taobao", false, 20, 8},
			{101, 1, 12, 6, "Apple", "taobao", false, 2, 1},
			{102, 2, 11, 5, "Tee", "jd", false, 15, 5},
			{103, 2, 12, 7, "Voucher", "jd", true, 50, 0},
		}
		gm := map[int64]goodsRow{}
		for _, g := range goods {
			gm[g.id] = g
			ds["basic_goods"] = append(ds["basic_goods"], []any{tenant, g.id, g.shop, g.category, g.staff, prefix + g.name, fmt.Sprintf("SKU-%d", g.id),
				g.platform, g.virtual, "on_sale", g.price * big, g.cost * big, ts("2024-01-10T00:00:00Z"), ts("2024-01-10T00:00:00Z")})
		}
		platform := map[int64]string{1: "taobao", 2: "jd"}
		itemID := int64(0)
		order := func(id, shop int64, status string, buyer int64, ordered, paid, shipped, completed string, discount float64, lines ...line) {
			var total float64
			var count int64
			for _, l := range lines {
				itemID++
				amount := float64(l.qty) * l.price * big
				total += amount
				count += l.qty
				ds["basic_order_items"] = append(ds["basic_order_items"], []any{tenant, itemID, id, l.goods, l.goods*10 + 1, shop, status,
					l.qty, l.price * big, amount, float64(l.qty) * gm[l.goods].cost * big, ts(ordered)})
			}
			ds["basic_orders"] = append(ds["basic_orders"], []any{tenant, id, fmt.Sprintf("NO-%d-%d", tenant, id), shop, platform[shop], status, buyer,
				total, discount * big, total - discount*big, count, ts(ordered), tsp(paid), tsp(shipped), tsp(completed)})
		}
		order(1, 1, "paid", 501, "2024-01-01T00:00:00Z", "2024-01-01T01:00:00Z", "", "", 5, line{100, 2, 20}, line{101, 5, 2})
		order(2, 1, "completed", 502, "2024-01-15T10:00:00Z", "2024-01-15T11:00:00Z", "2024-01-16T08:00:00Z", "2024-01-20T08:00:00Z", 0, line{100, 1, 20})
		order(3, 2, "cancelled", 501, "2024-01-31T23:59:59Z", "", "", "", 0, line{102, 3, 15})
		order(4, 2, "shipped", 503, "2024-02-05T08:00:00Z", "2024-02-05T09:00:00Z", "2024-02-07T08:00:00Z", "", 10, line{103, 1, 50}, line{102, 1, 15})
		order(5, 1, "pending", 504, "2024-02-29T12:00:00Z", "", "", "", 0, line{101, 10, 2})
		order(6, 2, "paid", 502, "2024-03-10T00:00:00Z", "2024-04-02T00:00:00Z", "", "", 0, line{102, 2, 15})
		order(7, 1, "completed", 505, "2023-12-31T23:00:00Z", "2024-01-01T01:00:00Z", "2024-01-02T08:00:00Z", "2024-01-05T08:00:00Z", 0, line{100, 1, 20})
		order(8, 1, "paid", 501, "2024-04-01T00:00:00Z", "2024-04-01T00:10:00Z", "", "", 0, line{101, 1, 2})
		order(9, 2, "refunded", 506, "2024-03-20T15:00:00Z", "2024-03-20T15:05:00Z", "", "", 0, line{103, 2, 50})
		if tenant == 2 {
			order(10, 1, "paid", 601, "2024-02-01T00:00:00Z", "2024-02-01T00:00:00Z", "", "", 0, line{100, 9, 20})
		}
	}
	return ds
}

// Test DDL: the catalog's logical types as each store's SQL types.

func pgDDL(t *catalog.Table) string {
	var cols []string
	for _, c := range t.Columns {
		typ := map[catalog.Type]string{catalog.TypeInt: "bigint", catalog.TypeFloat: "double precision", catalog.TypeString: "text",
			catalog.TypeTime: "timestamptz", catalog.TypeBool: "boolean"}[c.Type]
		if !c.Nullable {
			typ += " NOT NULL"
		}
		cols = append(cols, fmt.Sprintf("%q %s", c.Name, typ))
	}
	return fmt.Sprintf("CREATE TABLE %q (%s)", t.Name, strings.Join(cols, ", "))
}

func chDDL(t *catalog.Table) string {
	var cols []string
	for _, c := range t.Columns {
		typ := map[catalog.Type]string{catalog.TypeInt: "Int64", catalog.TypeFloat: "Float64", catalog.TypeString: "String",
			catalog.TypeTime: "DateTime('UTC')", catalog.TypeBool: "UInt8"}[c.Type]
		if c.Nullable {
			typ = "Nullable(" + typ + ")"
		}
		cols = append(cols, fmt.Sprintf("`%s` %s", c.Name, typ))
	}
	return fmt.Sprintf("CREATE TABLE `%s` (%s) ENGINE = MergeTree ORDER BY (`%s`, `%s`)", t.Name, strings.Join(cols, ", "), catalog.TenantColumn, t.Key)
}

func columnNames(t *catalog.Table) []string {
	out := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		out[i] = c.Name
	}
	return out
}

// setupPostgres creates the catalog's tables in a fresh database and loads the data set.
func setupPostgres(t testing.TB, ds dataset) *pgxpool.Pool {
	t.Helper()
	db := pgtest.New(t)
	ctx := context.Background()
	for _, tbl := range baseCatalog.Tables {
		if _, err := db.Pool.Exec(ctx, pgDDL(tbl)); err != nil {
			t.Fatalf("%s: %v", tbl.Name, err)
		}
		for _, row := range ds[tbl.Name] {
			ph := make([]string, len(row))
			for i := range row {
				ph[i] = fmt.Sprintf("$%d", i+1)
			}
			sql := fmt.Sprintf("INSERT INTO %q VALUES (%s)", tbl.Name, strings.Join(ph, ", "))
			if _, err := db.Pool.Exec(ctx, sql, row...); err != nil {
				t.Fatalf("insert %s: %v", tbl.Name, err)
			}
		}
	}
	return db.Pool
}

func pgRows(ctx context.Context, pool *pgxpool.Pool, sql string, args ...any) ([][]any, error) {
	rows, err := pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// norm makes values of both stores comparable: numbers as float64 rounded to 6 decimals,
// times as UTC RFC 3339 (dates included), pointers dereferenced, bools as 0/1.
func norm(v any) any {
	rv := reflect.ValueOf(v)
	for rv.IsValid() && rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return nil
		}
		rv = rv.Elem()
	}
	if !rv.IsValid() {
		return nil
	}
	switch x := rv.Interface().(type) {
	case time.Time:
		return x.UTC().Format(time.RFC3339)
	case bool:
		if x {
			return 1.0
		}
		return 0.0
	case string:
		return x
	}
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(rv.Uint())
	case reflect.Float32, reflect.Float64:
		f := rv.Float()
		if math.IsNaN(f) {
			return "NaN"
		}
		return math.Round(f*1e6) / 1e6
	}
	if n, ok := v.(pgtype.Numeric); ok {
		f, err := n.Float64Value()
		if err == nil && f.Valid {
			return math.Round(f.Float64*1e6) / 1e6
		}
		if err == nil {
			return nil
		}
	}
	return fmt.Sprintf("%v", v)
}

func normRows(rows [][]any) [][]any {
	out := make([][]any, len(rows))
	for i, r := range rows {
		out[i] = make([]any, len(r))
		for j, v := range r {
			out[i][j] = norm(v)
		}
	}
	return out
}

func sortRows(rows [][]any) {
	sort.SliceStable(rows, func(i, j int) bool { return fmt.Sprint(rows[i]) < fmt.Sprint(rows[j]) })
}

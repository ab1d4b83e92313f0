package semantic

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shopmind/shopmind/internal/analytics/catalog"
	"github.com/shopmind/shopmind/internal/apperr"
)

var dialects = []Dialect{Postgres(), ClickHouse()}

type compileCase struct {
	name string
	q    func() *Query
	cols []string          // expected output column names
	has  map[string]string // dialect name -> snippet the SQL must contain ("*" for both)
	not  []string          // snippets neither SQL may contain
	// tables: how many FROM/JOIN table references the statement has, per dialect (0: any).
	tables map[string]int
}

func with(q *Query, f func(*Query)) *Query { f(q); return q }

func compileCases() []compileCase {
	return []compileCase{
		{
			name: "gmv by day: one direct SELECT",
			q:    func() *Query { return query([]string{"gmv"}, nil, "day") },
			cols: []string{"time", "gmv"},
			has: map[string]string{
				"postgres":   `SELECT date_trunc('day', t0."ordered_at" AT TIME ZONE 'UTC') AS "time", sum(t0."paid_amount") AS "gmv" FROM "basic_orders" AS t0 WHERE t0."i_tenant_id" = $1 AND t0."ordered_at" >= $2 AND t0."ordered_at" < $3 AND t0."status" IN ($4, $5, $6) GROUP BY 1 ORDER BY 1 ASC, 2 DESC NULLS LAST LIMIT $7`,
				"clickhouse": "SELECT toStartOfDay(`ordered_at`, 'UTC') AS `time`, sum(`paid_amount`) AS `gmv` FROM `basic_orders` WHERE `i_tenant_id` = ? AND `ordered_at` >= ? AND `ordered_at` < ? AND `status` IN (?, ?, ?) GROUP BY `time` ORDER BY `time` ASC, `gmv` DESC LIMIT ?",
			},
			not:    []string{"UNION", "JOIN"},
			tables: map[string]int{"postgres": 1, "clickhouse": 1},
		},
		{
			name: "week and month buckets",
			q:    func() *Query { return query([]string{"units"}, nil, "week") },
			cols: []string{"time", "units"},
			has:  map[string]string{"postgres": `date_trunc('week', t0."ordered_at" AT TIME ZONE 'UTC')`, "clickhouse": "toMonday(`ordered_at`, 'UTC')"},
		},
		{
			name: "month",
			q:    func() *Query { return query([]string{"sales"}, nil, "month") },
			cols: []string{"time", "sales"},
			has:  map[string]string{"postgres": `date_trunc('month', t0."ordered_at" AT TIME ZONE 'UTC')`, "clickhouse": "toStartOfMonth(`ordered_at`, 'UTC')"},
		},
		{
			name: "top 20 goods by sales: aggregate on the foreign key, label joined after",
			q: func() *Query {
				return with(query([]string{"sales"}, []string{"goods"}, ""), func(q *Query) {
					q.Sort = []SortKey{{Field: "sales", Desc: true}}
					q.Limit = 20
				})
			},
			cols: []string{"goods", "goods_name", "sales"},
			has: map[string]string{
				"postgres":   `FROM (SELECT t0."goods_id" AS "_D0", sum(t0."amount") AS "_M0" FROM "basic_order_items" AS t0 WHERE`,
				"clickhouse": "AS `_Q0` ANY LEFT JOIN (SELECT `goods_id` AS `_D0`, `goods_name` AS `_L0` FROM `basic_goods` WHERE `i_tenant_id` = ?) AS `_P0` USING (`_D0`) ORDER BY `sales` DESC, `goods` ASC LIMIT ?",
			},
			not:    []string{"UNION"},
			tables: map[string]int{"postgres": 2, "clickhouse": 2},
		},
		{
			name:   "formula over one scan: no UNION",
			q:      func() *Query { return query([]string{"aov"}, []string{"shop"}, "") },
			cols:   []string{"shop", "shop_name", "aov"},
			has:    map[string]string{"postgres": `(q."_M0" / NULLIF(CAST(q."_M1" AS double precision), 0)) AS "aov"`, "clickhouse": "(`_M0` / NULLIF(toFloat64(`_M1`), 0)) AS `aov`"},
			not:    []string{"UNION"},
			tables: map[string]int{"postgres": 2, "clickhouse": 2},
		},
		{
			name:   "formula without labels: inlined in the direct SELECT",
			q:      func() *Query { return query([]string{"aov", "gmv"}, nil, "day") },
			cols:   []string{"time", "aov", "gmv"},
			has:    map[string]string{"postgres": `(sum(t0."paid_amount") / NULLIF(CAST(count(DISTINCT t0."order_id") AS double precision), 0)) AS "aov"`, "clickhouse": "(sum(`paid_amount`) / NULLIF(toFloat64(uniqExact(`order_id`)), 0)) AS `aov`"},
			not:    []string{"UNION", "JOIN"},
			tables: map[string]int{"postgres": 1, "clickhouse": 1},
		},
		{
			name:   "two tables: UNION ALL of per-table scans",
			q:      func() *Query { return query([]string{"gmv", "sales", "margin"}, []string{"shop"}, "month") },
			cols:   []string{"time", "shop", "shop_name", "gmv", "sales", "margin"},
			has:    map[string]string{"*": " UNION ALL ", "postgres": `COALESCE(max("_U0"), 0) AS "_M0"`, "clickhouse": "CAST(NULL AS Nullable(Float64)) AS `_U1`"},
			tables: map[string]int{"postgres": 3, "clickhouse": 3},
		},
		{
			name: "formula over formulas; dependencies computed, not output",
			q:    func() *Query { return query([]string{"aov_cents", "cancel_rate"}, nil, "") },
			cols: []string{"aov_cents", "cancel_rate"},
			has:  map[string]string{"postgres": `* CAST($`, "clickhouse": "* toFloat64(?)"},
		},
		{
			name:   "dimensions through joins: category via goods, platform via orders",
			q:      func() *Query { return query([]string{"sales", "units"}, []string{"category", "platform"}, "week") },
			cols:   []string{"time", "category", "category_name", "platform", "sales", "units"},
			has:    map[string]string{"postgres": `LEFT JOIN "basic_goods" AS t2 ON t2."i_tenant_id" = $1 AND t2."goods_id" = t0."goods_id"`, "clickhouse": "ANY LEFT JOIN (SELECT `goods_id` AS `_K2`, `category_id` AS `_C"},
			tables: map[string]int{"postgres": 4, "clickhouse": 4},
		},
		{
			name: "time range on a joined table",
			q:    func() *Query { return query([]string{"shipped_units"}, nil, "day") },
			cols: []string{"time", "shipped_units"},
			has:  map[string]string{"postgres": `t1."shipped_at" >= $2 AND t1."shipped_at" < $3`, "clickhouse": "WHERE `_C0` >= ? AND `_C0` < ?"},
		},
		{
			name: "filters: values bound, never in the text",
			q: func() *Query {
				return with(query([]string{"gmv", "buyers"}, []string{"shop", "basic_shops.status"}, ""), func(q *Query) {
					q.Filters = []Condition{
						{Field: "shop", Operator: "in", Value: []any{12345.0, 67890.0}},
						{Field: "basic_shops.shop_name", Operator: "like", Value: "%o'hara%"},
						{Field: "paid_at", Operator: "is_not_null"},
						{Field: "paid_amount", Operator: "gte", Value: 99.5},
						{Field: "basic_orders.buyer_id", Operator: "ne", Value: "424242"},
						{Field: "ordered_at", Operator: "lt", Value: "2024-03-01T00:00:00Z"},
						{Field: "basic_shops.shop_name", Operator: "ne", Value: "x'); DROP TABLE basic_orders; --"},
					}
				})
			},
			cols: []string{"shop", "shop_name", "basic_shops.status", "gmv", "buyers"},
			has:  map[string]string{"postgres": `t0."shop_id" IN ($`, "clickhouse": "`shop_id` IN (?, ?)"},
			not:  []string{"12345", "o'hara", "99.5", "424242", "2024-03", "DROP", "--"},
		},
		{
			name: "raw columns: unqualified nearest, qualified through a join",
			q:    func() *Query { return query([]string{"units"}, []string{"sku_id", "basic_goods.is_virtual"}, "") },
			cols: []string{"sku_id", "basic_goods.is_virtual", "units"},
			has:  map[string]string{"postgres": `t0."sku_id" AS "sku_id", t2."is_virtual" AS "basic_goods.is_virtual"`, "clickhouse": "`is_virtual` AS `_C"},
		},
		{
			name:   "totals",
			q:      func() *Query { return query([]string{"gmv", "avg_line", "max_order"}, nil, "") },
			cols:   []string{"gmv", "avg_line", "max_order"},
			has:    map[string]string{"postgres": `COALESCE(sum(t0."paid_amount") FILTER (WHERE (t0."status" IN ($4, $5, $6))), 0)`, "clickhouse": "avg(toNullable(`amount`))"},
			not:    []string{"GROUP BY"},
			tables: map[string]int{"postgres": 2, "clickhouse": 2},
		},
		{
			name:   "metrics of one table with different conditions: one scan, conditional aggregates",
			q:      func() *Query { return query([]string{"cancel_rate"}, []string{"shop"}, "day") },
			cols:   []string{"time", "shop", "shop_name", "cancel_rate"},
			has:    map[string]string{"postgres": `count(DISTINCT t0."order_id") FILTER (WHERE (t0."status" IN ($4, $5, $6))) AS "_M1"`, "clickhouse": "uniqExactIf(`order_id`, (`status` IN (?, ?, ?))) AS `_M1`"},
			not:    []string{"UNION"},
			tables: map[string]int{"postgres": 2, "clickhouse": 2},
		},
		{
			name:   "every metric conditional: the WHERE clause keeps the rows any of them needs",
			q:      func() *Query { return query([]string{"gmv", "cancelled"}, nil, "month") },
			cols:   []string{"time", "gmv", "cancelled"},
			has:    map[string]string{"postgres": `AND ((t0."status" IN ($4, $5, $6)) OR (t0."status" = $7))`, "clickhouse": "AND ((`status` IN (?, ?, ?)) OR (`status` = ?))"},
			not:    []string{"UNION", "JOIN"},
			tables: map[string]int{"postgres": 1, "clickhouse": 1},
		},
		{
			name: "ClickHouse: a metric named like a column takes the two-level shape",
			q: func() *Query {
				q := query(nil, []string{"shop_id"}, "")
				q.Metrics = []*Metric{{Name: "paid_amount", Type: TypeDerived, Derived: &DerivedConfig{SourceField: "basic_orders.paid_amount", Aggregation: "sum"}}}
				return q
			},
			cols: []string{"shop_id", "paid_amount"},
			has:  map[string]string{"clickhouse": "SELECT `_D0` AS `shop_id`, `_M0` AS `paid_amount` FROM (SELECT `shop_id` AS `_D0`, sum(`paid_amount`) AS `_M0`", "postgres": `SELECT t0."shop_id" AS "shop_id", sum(t0."paid_amount") AS "paid_amount"`},
		},
		{
			name: "explicit sort and limit",
			q: func() *Query {
				return with(query([]string{"gmv", "order_count"}, []string{"platform"}, "day"), func(q *Query) {
					q.Sort = []SortKey{{Field: "order_count", Desc: true}, {Field: "platform"}}
					q.Limit = 10000
				})
			},
			cols: []string{"time", "platform", "gmv", "order_count"},
			has:  map[string]string{"postgres": "ORDER BY 4 DESC NULLS LAST, 2 ASC, 1 ASC LIMIT $", "clickhouse": "ORDER BY `order_count` DESC, `platform` ASC, `time` ASC LIMIT ?"},
		},
		{
			name: "many metrics and dimensions",
			q: func() *Query {
				return query([]string{"gmv", "order_count", "all_orders", "buyers", "paid_gmv", "sales", "units", "cost", "lines", "avg_line", "aov", "cancel_rate", "margin", "aov_cents", "units_per_order"},
					[]string{"shop", "platform", "status"}, "month")
			},
			cols: []string{"time", "shop", "shop_name", "platform", "status", "gmv", "order_count", "all_orders", "buyers", "paid_gmv", "sales", "units", "cost", "lines", "avg_line", "aov", "cancel_rate", "margin", "aov_cents", "units_per_order"},
		},
	}
}

func TestCompile(t *testing.T) {
	for _, c := range compileCases() {
		for _, d := range dialects {
			t.Run(c.name+"/"+d.Name(), func(t *testing.T) {
				q := c.q()
				out, err := Compile(q, baseCatalog, d)
				if err != nil {
					t.Fatalf("Compile: %v", err)
				}
				if out.Dialect != d.Name() {
					t.Errorf("dialect %q", out.Dialect)
				}
				var names []string
				for _, oc := range out.Columns {
					names = append(names, oc.Name)
				}
				if fmt.Sprint(names) != fmt.Sprint(c.cols) {
					t.Errorf("columns %v, want %v", names, c.cols)
				}
				refs, err := checkSQL(out, q.TenantID, baseCatalog)
				if err != nil {
					t.Fatalf("%v\n%s", err, out.SQL)
				}
				if n := c.tables[d.Name()]; n > 0 && len(refs) != n {
					t.Errorf("%d table references, want %d:\n%s", len(refs), n, out.SQL)
				}
				for k, s := range c.has {
					if (k == "*" || k == d.Name()) && !strings.Contains(out.SQL, s) {
						t.Errorf("SQL lacks %q:\n%s", s, out.SQL)
					}
				}
				for _, s := range c.not {
					if strings.Contains(out.SQL, s) {
						t.Errorf("SQL contains %q:\n%s", s, out.SQL)
					}
				}
				if q.Limit > 0 {
					if last := out.Args[len(out.Args)-1]; last != int64(q.Limit) {
						t.Errorf("last argument %v, want the limit %d", last, q.Limit)
					}
				}
				// Output types and roles.
				for _, oc := range out.Columns {
					switch {
					case oc.Name == TimeColumn:
						if oc.Role != catalog.RoleTime || oc.Type != catalog.TypeTime {
							t.Errorf("time column %+v", oc)
						}
					case oc.Role == catalog.RoleMeasure:
						if oc.Type != catalog.TypeInt && oc.Type != catalog.TypeFloat {
							t.Errorf("measure %+v", oc)
						}
					case oc.Role != catalog.RoleDimension:
						t.Errorf("column %+v", oc)
					}
				}
			})
		}
	}
}

func TestCompileTypedArgs(t *testing.T) {
	q := with(query([]string{"gmv"}, []string{"shop"}, ""), func(q *Query) {
		q.Filters = []Condition{
			{Field: "shop", Operator: "eq", Value: 3.0},
			{Field: "basic_orders.buyer_id", Operator: "eq", Value: "9007199254740993"},
			{Field: "paid_amount", Operator: "gt", Value: 1.0},
			{Field: "paid_at", Operator: "gte", Value: "2024-01-02T03:04:05+02:00"},
		}
	})
	out, err := Compile(q, baseCatalog, Postgres())
	if err != nil {
		t.Fatal(err)
	}
	want := []any{int64(7), t0, t1, "paid", "shipped", "completed", int64(3), int64(9007199254740993), 1.0,
		time.Date(2024, 1, 2, 1, 4, 5, 0, time.UTC), int64(DefaultLimit)}
	if fmt.Sprintf("%#v", out.Args) != fmt.Sprintf("%#v", want) {
		t.Fatalf("args\n%#v\nwant\n%#v", out.Args, want)
	}
	// ClickHouse binds the same values, the tenant once per table reference, in text order.
	ch, err := Compile(q, baseCatalog, ClickHouse())
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(ch.SQL, "?"); n != len(ch.Args) {
		t.Fatalf("%d placeholders, %d args", n, len(ch.Args))
	}
	if ch.Args[0] != int64(7) || ch.Args[len(ch.Args)-2] != int64(7) {
		t.Fatalf("args %v", ch.Args)
	}
}

func TestCompileErrors(t *testing.T) {
	hostile := "amount); DROP TABLE x; --"
	cases := []struct {
		name string
		q    func() *Query
		kind apperr.Kind
		want []string
	}{
		{"hostile source field", func() *Query {
			q := query(nil, nil, "")
			q.Metrics = []*Metric{{Name: "evil", Type: TypeDerived, Derived: &DerivedConfig{SourceField: hostile, Aggregation: "sum"}}}
			return q
		}, apperr.KindInvalid, []string{"metric evil", "config.derived.source_field", "unknown column"}},
		{"hostile formula dependency", func() *Query {
			q := query(nil, nil, "")
			evil := &Metric{Name: "evil", Type: TypeDerived, Derived: &DerivedConfig{SourceField: hostile, Aggregation: "sum"}}
			q.Metrics = []*Metric{{Name: "f", Type: TypeFormula, Formula: &FormulaConfig{Expression: "evil * 2"}}}
			q.Resolve = func(n string) *Metric {
				if n == "evil" {
					return evil
				}
				return nil
			}
			return q
		}, apperr.KindInvalid, []string{"metric evil", "config.derived.source_field"}},
		{"hostile dimension", func() *Query { return query([]string{"gmv"}, []string{"shop_id; DROP TABLE x"}, "") }, apperr.KindInvalid, []string{"dimensions[0]"}},
		{"unknown dimension", func() *Query { return query([]string{"gmv"}, []string{"shop", "colour"}, "") }, apperr.KindInvalid, []string{"dimensions[1]", `unknown dimension or column "colour"`}},
		{"unknown qualified dimension", func() *Query { return query([]string{"gmv"}, []string{"basic_orders.colour"}, "") }, apperr.KindInvalid, []string{"dimensions[0]"}},
		{"tenant column as dimension", func() *Query { return query([]string{"gmv"}, []string{"basic_orders.i_tenant_id"}, "") }, apperr.KindInvalid, []string{"dimensions[0]"}},
		{"duplicate dimension", func() *Query { return query([]string{"gmv"}, []string{"shop", "shop"}, "") }, apperr.KindInvalid, []string{"dimensions[1]"}},
		{"no join path", func() *Query { return query([]string{"gmv"}, []string{"category"}, "") }, apperr.KindRule, []string{"metric gmv cannot be split by category", "no join path from basic_orders to basic_categories"}},
		{"no join path for a dependency", func() *Query { return query([]string{"aov"}, []string{"goods"}, "") }, apperr.KindRule, []string{"cannot be split by goods"}},
		{"measure as dimension", func() *Query { return query([]string{"gmv"}, []string{"paid_amount"}, "") }, apperr.KindRule, []string{"measure column"}},
		{"ambiguous column", func() *Query { return query([]string{"sales"}, []string{"created_at"}, "") }, apperr.KindInvalid, []string{"several tables reachable"}},
		{"two outputs with one name", func() *Query { return query([]string{"gmv"}, []string{"shop", "shop_name"}, "") }, apperr.KindInvalid, []string{`"shop_name"`}},
		{"filter unknown", func() *Query {
			return with(query([]string{"gmv"}, nil, ""), func(q *Query) { q.Filters = []Condition{{Field: "nope", Operator: "eq", Value: "x"}} })
		}, apperr.KindInvalid, []string{"filters[0].field"}},
		{"filter unreachable", func() *Query {
			return with(query([]string{"gmv"}, nil, ""), func(q *Query) { q.Filters = []Condition{{Field: "category", Operator: "eq", Value: 1.0}} })
		}, apperr.KindRule, []string{"cannot be filtered by category"}},
		{"filter string for float", func() *Query {
			return with(query([]string{"gmv"}, nil, ""), func(q *Query) {
				q.Filters = []Condition{{Field: "paid_amount", Operator: "gt", Value: "100 OR 1=1"}}
			})
		}, apperr.KindInvalid, []string{"filters[0].value", "float"}},
		{"filter bool for int", func() *Query {
			return with(query([]string{"gmv"}, nil, ""), func(q *Query) { q.Filters = []Condition{{Field: "shop", Operator: "eq", Value: true}} })
		}, apperr.KindInvalid, []string{"filters[0].value"}},
		{"filter list too long", func() *Query {
			return with(query([]string{"gmv"}, nil, ""), func(q *Query) {
				q.Filters = []Condition{{Field: "status", Operator: "in", Value: make([]any, 1001)}}
			})
		}, apperr.KindInvalid, []string{"filters[0].value"}},
		{"filter list of objects", func() *Query {
			return with(query([]string{"gmv"}, nil, ""), func(q *Query) {
				q.Filters = []Condition{{Field: "status", Operator: "in", Value: []any{map[string]any{"a": 1}}}}
			})
		}, apperr.KindInvalid, []string{"filters[0].value[0]", "an object"}},
		{"filter operator", func() *Query {
			return with(query([]string{"gmv"}, nil, ""), func(q *Query) { q.Filters = []Condition{{Field: "status", Operator: "; --", Value: "x"}} })
		}, apperr.KindInvalid, []string{"filters[0].operator"}},
		{"too many filters", func() *Query {
			return with(query([]string{"gmv"}, nil, ""), func(q *Query) { q.Filters = make([]Condition, 21) })
		}, apperr.KindInvalid, []string{"filters"}},
		{"sort unknown", func() *Query {
			return with(query([]string{"gmv"}, nil, "day"), func(q *Query) { q.Sort = []SortKey{{Field: "order_count"}} })
		}, apperr.KindInvalid, []string{"sort[0].field"}},
		{"sort by time without buckets", func() *Query {
			return with(query([]string{"gmv"}, nil, ""), func(q *Query) { q.Sort = []SortKey{{Field: "time"}} })
		}, apperr.KindInvalid, []string{"sort[0].field"}},
		{"limit", func() *Query { return with(query([]string{"gmv"}, nil, ""), func(q *Query) { q.Limit = MaxLimit + 2 }) }, apperr.KindInvalid, []string{"limit"}},
		{"negative limit", func() *Query { return with(query([]string{"gmv"}, nil, ""), func(q *Query) { q.Limit = -1 }) }, apperr.KindInvalid, []string{"limit"}},
		{"empty range", func() *Query { return with(query([]string{"gmv"}, nil, ""), func(q *Query) { q.End = q.Start }) }, apperr.KindInvalid, []string{"start_time"}},
		{"no start", func() *Query { return with(query([]string{"gmv"}, nil, ""), func(q *Query) { q.Start = time.Time{} }) }, apperr.KindInvalid, []string{"start_time"}},
		{"granularity", func() *Query { return query([]string{"gmv"}, nil, "year") }, apperr.KindInvalid, []string{"time_granularity"}},
		{"no metric", func() *Query { return query(nil, nil, "") }, apperr.KindInvalid, []string{"metrics"}},
		{"nil metric", func() *Query { return with(query(nil, nil, ""), func(q *Query) { q.Metrics = []*Metric{nil} }) }, apperr.KindInvalid, []string{"metrics[0]"}},
		{"metric twice", func() *Query { return query([]string{"gmv", "gmv"}, nil, "") }, apperr.KindInvalid, []string{"metrics[1]"}},
		{"no tenant", func() *Query { return with(query([]string{"gmv"}, nil, ""), func(q *Query) { q.TenantID = 0 }) }, apperr.KindInvalid, []string{"tenant"}},
		{"formula dependency gone", func() *Query {
			return with(query([]string{"aov"}, nil, ""), func(q *Query) { q.Resolve = func(string) *Metric { return nil } })
		}, apperr.KindRule, []string{"formula aov references unknown metric gmv"}},
		{"stored cycle", func() *Query {
			a := &Metric{Name: "a", Type: TypeFormula, Formula: &FormulaConfig{Expression: "b + 1"}}
			b := &Metric{Name: "b", Type: TypeFormula, Formula: &FormulaConfig{Expression: "gmv / a"}}
			ms := testMetrics()
			ms["a"], ms["b"] = a, b
			q := query(nil, nil, "")
			q.Metrics = []*Metric{a}
			q.Resolve = metricSet(ms).byName
			return q
		}, apperr.KindRule, []string{"cycle: a -> b -> a"}},
		{"exponential formula", func() *Query {
			ms := testMetrics()
			prev := "gmv"
			for i := 0; i < 20; i++ {
				n := fmt.Sprintf("x%d", i)
				ms[n] = &Metric{Name: n, Type: TypeFormula, Formula: &FormulaConfig{Expression: prev + " + " + prev}}
				prev = n
			}
			q := query(nil, nil, "")
			q.Metrics = []*Metric{ms[prev]}
			q.Resolve = metricSet(ms).byName
			return q
		}, apperr.KindRule, []string{"formula too large"}},
	}
	for _, c := range cases {
		for _, d := range dialects {
			out, err := Compile(c.q(), baseCatalog, d)
			if out != nil {
				t.Errorf("%s/%s: compiled %s", c.name, d.Name(), out.SQL)
			}
			wantErr(t, c.name+"/"+d.Name(), err, c.kind, c.want...)
			if err != nil && strings.Contains(err.Error(), "DROP") && !strings.Contains(err.Error(), `"`) {
				t.Errorf("%s: hostile text unquoted in the error: %v", c.name, err)
			}
		}
	}
}

// The tenant checker itself must catch a missing predicate.
func TestCheckerCatchesMissingTenant(t *testing.T) {
	for _, d := range dialects {
		out, err := Compile(query([]string{"gmv", "sales"}, []string{"shop"}, "day"), baseCatalog, d)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := checkSQL(out, 7, baseCatalog); err != nil {
			t.Fatalf("%s: %v", d.Name(), err)
		}
		if _, err := checkSQL(out, 8, baseCatalog); err == nil {
			t.Fatalf("%s: wrong tenant accepted", d.Name())
		}
		// Drop the tenant predicate of the label table.
		broken := *out
		label := "`i_tenant_id` = ?) AS `_P0` USING"
		if d.Name() == "postgres" {
			label = `l0."i_tenant_id" = $1 AND `
		}
		i := strings.LastIndex(broken.SQL, label)
		if i < 0 {
			t.Fatalf("%s: no label predicate in %s", d.Name(), out.SQL)
		}
		if d.Name() == "postgres" {
			broken.SQL = broken.SQL[:i] + broken.SQL[i+len(label):]
		} else {
			broken.SQL = broken.SQL[:i] + "0 = 0) AS `_P0` USING" + broken.SQL[i+len(label):]
			broken.Args = append(append([]any{}, out.Args[:len(out.Args)-2]...), out.Args[len(out.Args)-1])
		}
		if _, err := checkSQL(&broken, 7, baseCatalog); err == nil || !strings.Contains(err.Error(), "basic_shops") {
			t.Fatalf("%s: missing predicate not caught (%v):\n%s", d.Name(), err, broken.SQL)
		}
	}
}

// FuzzCompile: whatever the dimension, filter field, operator and value, Compile either
// refuses with an *apperr.Error or produces SQL that passes the structural checks.
func FuzzCompile(f *testing.F) {
	f.Add("shop", "status", "eq", "paid", 1.5, "gmv", "day")
	f.Add("basic_goods.is_virtual", "basic_shops.shop_name", "like", "%a'b%", 2.0, "sales", "week")
	f.Add("category", "amount); DROP TABLE x; --", "in", "x", 0.0, "margin", "")
	f.Fuzz(func(t *testing.T, dim, field, op, str string, num float64, metric, gran string) {
		ms := testMetrics()
		m := ms[metric]
		if m == nil {
			m = &Metric{Name: "m", Type: TypeDerived, Derived: &DerivedConfig{SourceField: metric, Aggregation: "sum"}}
		}
		for _, v := range []any{str, num, []any{str, num}, nil, true} {
			q := query(nil, []string{dim}, gran)
			q.Metrics = []*Metric{m}
			q.Filters = []Condition{{Field: field, Operator: op, Value: v}}
			for _, d := range dialects {
				out, err := Compile(q, baseCatalog, d)
				if err != nil {
					var ae *apperr.Error
					if !errors.As(err, &ae) {
						t.Fatalf("error %T %v", err, err)
					}
					continue
				}
				if _, err := checkSQL(out, q.TenantID, baseCatalog); err != nil {
					t.Fatalf("%v\n%s", err, out.SQL)
				}
			}
		}
	})
}

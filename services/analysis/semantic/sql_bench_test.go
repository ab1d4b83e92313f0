package semantic

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Generated SQL against hand-written SQL on generated volume. Runs only with
// SHOPMIND_SEMANTIC_BENCH_ORDERS set (orders of tenant 1; tenant 2 gets a quarter as many;
// two lines per order), for example:
//
//	SHOPMIND_SEMANTIC_BENCH_ORDERS=10000000 go test ./services/analysis/semantic/ \
//	    -run SQLVersusHandWritten -v -timeout 3h
//
// It logs, per shape and store, the median time of each statement and their ratio.

func benchOrders(b testing.TB) int {
	n, _ := strconv.Atoi(os.Getenv("SHOPMIND_SEMANTIC_BENCH_ORDERS"))
	if n <= 0 {
		b.Skip("set SHOPMIND_SEMANTIC_BENCH_ORDERS to run")
	}
	return n
}

type sqlShape struct {
	name string
	q    func() *Query
	pg   string // hand-written: $1 tenant, $2 start, $3 end
	ch   string // hand-written: ? tenant, ? start, ? end (in that order)
}

func sqlShapes() []sqlShape {
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	period := func(q *Query) *Query { q.TenantID, q.Start, q.End = 1, start, start.AddDate(0, 0, 90); return q }
	return []sqlShape{
		{
			name: "gmv_by_day_90d",
			q:    func() *Query { return period(query([]string{"gmv"}, nil, "day")) },
			pg: `SELECT date_trunc('day', ordered_at AT TIME ZONE 'UTC') AS d, sum(paid_amount) FROM basic_orders
				WHERE i_tenant_id = $1 AND ordered_at >= $2 AND ordered_at < $3 AND status IN ('paid', 'shipped', 'completed')
				GROUP BY 1 ORDER BY 1 LIMIT 100`,
			ch: `SELECT toStartOfDay(ordered_at, 'UTC') AS d, sum(paid_amount) FROM basic_orders
				WHERE i_tenant_id = ? AND ordered_at >= ? AND ordered_at < ? AND status IN ('paid', 'shipped', 'completed')
				GROUP BY d ORDER BY d LIMIT 100`,
		},
		{
			name: "top20_goods_by_sales",
			q: func() *Query {
				return period(with(query([]string{"sales"}, []string{"goods"}, ""), func(q *Query) {
					q.Sort, q.Limit = []SortKey{{Field: "sales", Desc: true}}, 20
				}))
			},
			pg: `SELECT i.goods_id, g.goods_name, sum(i.amount) AS s FROM basic_order_items i
				JOIN basic_goods g ON g.i_tenant_id = i.i_tenant_id AND g.goods_id = i.goods_id
				WHERE i.i_tenant_id = $1 AND i.ordered_at >= $2 AND i.ordered_at < $3
				GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 20`,
			ch: `SELECT goods_id, goods_name, s FROM (SELECT goods_id, sum(amount) AS s FROM basic_order_items
				WHERE i_tenant_id = ? AND ordered_at >= ? AND ordered_at < ? GROUP BY goods_id)
				ANY LEFT JOIN (SELECT goods_id, goods_name FROM basic_goods WHERE i_tenant_id = ?) USING (goods_id)
				ORDER BY s DESC LIMIT 20`,
		},
		{
			name: "aov_by_shop",
			q:    func() *Query { return period(query([]string{"aov"}, []string{"shop"}, "")) },
			pg: `SELECT o.shop_id, s.shop_name, sum(o.paid_amount) / NULLIF(count(DISTINCT o.order_id), 0) AS aov FROM basic_orders o
				JOIN basic_shops s ON s.i_tenant_id = o.i_tenant_id AND s.shop_id = o.shop_id
				WHERE o.i_tenant_id = $1 AND o.ordered_at >= $2 AND o.ordered_at < $3 AND o.status IN ('paid', 'shipped', 'completed')
				GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 100`,
			ch: `SELECT shop_id, shop_name, aov FROM (SELECT shop_id, sum(paid_amount) / uniqExact(order_id) AS aov FROM basic_orders
				WHERE i_tenant_id = ? AND ordered_at >= ? AND ordered_at < ? AND status IN ('paid', 'shipped', 'completed') GROUP BY shop_id)
				ANY LEFT JOIN (SELECT shop_id, shop_name FROM basic_shops WHERE i_tenant_id = ?) USING (shop_id)
				ORDER BY aov DESC LIMIT 100`,
		},
		{
			name: "gmv_sales_margin_by_shop_month",
			q:    func() *Query { return period(query([]string{"gmv", "sales", "margin"}, []string{"shop"}, "month")) },
			pg: `WITH o AS (SELECT date_trunc('month', ordered_at AT TIME ZONE 'UTC') m, shop_id, sum(paid_amount) gmv FROM basic_orders
					WHERE i_tenant_id = $1 AND ordered_at >= $2 AND ordered_at < $3 AND status IN ('paid', 'shipped', 'completed') GROUP BY 1, 2),
				i AS (SELECT date_trunc('month', ordered_at AT TIME ZONE 'UTC') m, shop_id, sum(amount) sales, sum(cost_amount) cost FROM basic_order_items
					WHERE i_tenant_id = $1 AND ordered_at >= $2 AND ordered_at < $3 GROUP BY 1, 2)
				SELECT x.m, x.shop_id, s.shop_name, x.gmv, x.sales, (x.sales - x.cost) / NULLIF(x.sales, 0)
				FROM (o FULL JOIN i USING (m, shop_id)) AS x LEFT JOIN basic_shops s ON s.i_tenant_id = $1 AND s.shop_id = x.shop_id
				ORDER BY 1, 4 DESC NULLS LAST LIMIT 100`,
			ch: `SELECT m, shop_id, shop_name, gmv, sales, (sales - cost) / NULLIF(sales, 0) FROM (
					SELECT m, shop_id, gmv, sales, cost FROM
						(SELECT toStartOfMonth(ordered_at, 'UTC') AS m, shop_id, sum(paid_amount) AS gmv FROM basic_orders
							WHERE i_tenant_id = ? AND ordered_at >= ? AND ordered_at < ? AND status IN ('paid', 'shipped', 'completed') GROUP BY m, shop_id)
					ALL FULL OUTER JOIN
						(SELECT toStartOfMonth(ordered_at, 'UTC') AS m, shop_id, sum(amount) AS sales, sum(cost_amount) AS cost FROM basic_order_items
							WHERE i_tenant_id = ? AND ordered_at >= ? AND ordered_at < ? GROUP BY m, shop_id)
					USING (m, shop_id))
				ANY LEFT JOIN (SELECT shop_id, shop_name FROM basic_shops WHERE i_tenant_id = ?) USING (shop_id)
				ORDER BY m, gmv DESC LIMIT 100`,
		},
	}
}

// Volume generation, the same rows in both stores: 50 shops, 20 categories, 5000 goods,
// orders spread over 180 days from 2024-01-01, two lines per order.
func pgGenerate(b testing.TB, pool *pgxpool.Pool, n int) {
	ctx := context.Background()
	for _, tbl := range baseCatalog.Tables {
		stmts := []string{fmt.Sprintf(`ALTER TABLE %q ADD PRIMARY KEY (i_tenant_id, %q)`, tbl.Name, tbl.Key)}
		switch tbl.Name {
		case "basic_orders":
			stmts = append(stmts, `CREATE INDEX ON basic_orders (i_tenant_id, ordered_at)`, `CREATE INDEX ON basic_orders (i_tenant_id, shop_id, ordered_at)`)
		case "basic_order_items":
			stmts = append(stmts, `CREATE INDEX ON basic_order_items (i_tenant_id, ordered_at)`, `CREATE INDEX ON basic_order_items (i_tenant_id, goods_id)`,
				`CREATE INDEX ON basic_order_items (i_tenant_id, order_id)`)
		}
		for _, s := range stmts {
			if _, err := pool.Exec(ctx, s); err != nil {
				b.Fatalf("%s: %v", s, err)
			}
		}
	}
	gen := []string{
		`INSERT INTO basic_shops SELECT t, s, 'shop ' || s, CASE WHEN s % 2 = 0 THEN 'jd' ELSE 'taobao' END, 'open', '2023-01-01Z'
			FROM generate_series(1, 2) t, generate_series(1, 50) s`,
		`INSERT INTO basic_categories SELECT t, c, 0, 'category ' || c, 1 FROM generate_series(1, 2) t, generate_series(1, 20) c`,
		`INSERT INTO basic_goods SELECT t, g, 1 + g % 50, 1 + g % 20, 1 + g % 30, 'goods ' || g, 'SKU' || g, 'jd', g % 10 = 0, 'on_sale',
			10 + g % 100, 5 + g % 50, '2023-01-01Z', '2023-01-01Z' FROM generate_series(1, 2) t, generate_series(1, 5000) g`,
		`INSERT INTO basic_orders SELECT t, o, 'NO' || o, 1 + o % 50, CASE WHEN o % 2 = 0 THEN 'jd' ELSE 'taobao' END,
			(ARRAY['paid', 'shipped', 'completed', 'cancelled', 'pending'])[1 + o % 5], o % 100000, 100 + o % 500, o % 10, 100 + o % 500 - o % 10,
			1 + o % 5, ts, ts + interval '1 hour', ts + interval '1 day', NULL
			FROM (SELECT t, o, timestamptz '2024-01-01Z' + ((o::bigint * 7919) % (180 * 86400)) * interval '1 second' AS ts
				FROM generate_series(1, 2) t, LATERAL generate_series(1, CASE WHEN t = 1 THEN $1::int ELSE $1::int / 4 END) o) x`,
		`INSERT INTO basic_order_items SELECT i_tenant_id, order_id * 2 + k, order_id, 1 + (order_id * 31 + k * 17) % 5000, order_id % 1000, shop_id, status,
			1 + k, 50, 50 * (1 + k), 20 * (1 + k), ordered_at FROM basic_orders, generate_series(0, 1) k`,
		`ANALYZE`,
	}
	for _, s := range gen {
		var args []any
		if strings.Contains(s, "$1") {
			args = []any{n}
		}
		if _, err := pool.Exec(ctx, s, args...); err != nil {
			b.Fatalf("%v\n%s", err, s)
		}
	}
}

func chGenerate(b testing.TB, conn driver.Conn, n int) {
	ctx := context.Background()
	ts := "toDateTime('2024-01-01 00:00:00', 'UTC') + ((o * 7919) % (180 * 86400))"
	gen := []string{
		`INSERT INTO basic_shops (i_tenant_id, shop_id, shop_name, platform, status, created_at) SELECT t, s, concat('shop ', toString(s)),
			if(s % 2 = 0, 'jd', 'taobao'), 'open', toDateTime('2023-01-01 00:00:00', 'UTC')
			FROM (SELECT toInt64(number + 1) AS t FROM numbers(2)) CROSS JOIN (SELECT toInt64(number + 1) AS s FROM numbers(50))`,
		`INSERT INTO basic_categories (i_tenant_id, category_id, parent_id, category_name, level) SELECT t, c, toInt64(0), concat('category ', toString(c)), toInt64(1)
			FROM (SELECT toInt64(number + 1) AS t FROM numbers(2)) CROSS JOIN (SELECT toInt64(number + 1) AS c FROM numbers(20))`,
		`INSERT INTO basic_goods (i_tenant_id, goods_id, shop_id, category_id, staff_id, goods_name, item_no, platform, is_virtual, status, price, cost, created_at, updated_at)
			SELECT t, g, 1 + g % 50, 1 + g % 20, 1 + g % 30, concat('goods ', toString(g)), concat('SKU', toString(g)), 'jd', g % 10 = 0, 'on_sale',
			toFloat64(10 + g % 100), toFloat64(5 + g % 50), toDateTime('2023-01-01 00:00:00', 'UTC'), toDateTime('2023-01-01 00:00:00', 'UTC')
			FROM (SELECT toInt64(number + 1) AS t FROM numbers(2)) CROSS JOIN (SELECT toInt64(number + 1) AS g FROM numbers(5000))`,
	}
	// Chunks of at most 500,000 orders: a long INSERT ... SELECT through clickhouse-go on
	// 18.16 has been seen to lose its connection.
	const chunk = 500000
	for _, t := range []struct{ tenant, n int }{{1, n}, {2, n / 4}} {
		for off := 0; off < t.n; off += chunk {
			size := min(chunk, t.n-off)
			orders := fmt.Sprintf("(SELECT toInt64(number + %d) AS o FROM numbers(%d))", off+1, size)
			gen = append(gen, fmt.Sprintf(`INSERT INTO basic_orders (i_tenant_id, order_id, order_no, shop_id, platform, status, buyer_id, total_amount, discount_amount,
			paid_amount, item_count, ordered_at, paid_at, shipped_at, completed_at)
			SELECT toInt64(%d), o, concat('NO', toString(o)), 1 + o %% 50, if(o %% 2 = 0, 'jd', 'taobao'),
			['paid', 'shipped', 'completed', 'cancelled', 'pending'][1 + o %% 5], o %% 100000, toFloat64(100 + o %% 500), toFloat64(o %% 10),
			toFloat64(100 + o %% 500 - o %% 10), 1 + o %% 5, %s, %s + 3600, %s + 86400, NULL
			FROM %s`, t.tenant, ts, ts, ts, orders),
				fmt.Sprintf(`INSERT INTO basic_order_items (i_tenant_id, item_id, order_id, goods_id, sku_id, shop_id, status, quantity, unit_price, amount, cost_amount, ordered_at)
			SELECT toInt64(%d), o * 2 + k, o, 1 + (o * 31 + k * 17) %% 5000, o %% 1000, 1 + o %% 50, ['paid', 'shipped', 'completed', 'cancelled', 'pending'][1 + o %% 5],
			1 + k, toFloat64(50), toFloat64(50 * (1 + k)), toFloat64(20 * (1 + k)), %s
			FROM %s CROSS JOIN (SELECT toInt64(number) AS k FROM numbers(2))`, t.tenant, ts, orders))
		}
	}
	for _, s := range gen {
		if err := conn.Exec(ctx, s); err != nil {
			b.Fatalf("%v\n%s", err, s)
		}
	}
}

// TestSQLVersusHandWritten runs the generated and the hand-written statement of each shape
// alternately (after one warm-up run each) and logs the median times and their ratio.
func TestSQLVersusHandWritten(t *testing.T) {
	n := benchOrders(t)
	rounds := 9
	if v, _ := strconv.Atoi(os.Getenv("SHOPMIND_SEMANTIC_BENCH_ROUNDS")); v > 0 {
		rounds = v
	}
	ctx := context.Background()
	start := time.Now()
	conn, err := openClickHouse(t, nil)
	if err != nil {
		t.Logf("ClickHouse not measured: %v", err)
	} else {
		chGenerate(t, conn, n)
		t.Logf("ClickHouse: %d orders generated in %s", n+n/4, time.Since(start).Round(time.Second))
	}
	start = time.Now()
	db := setupPostgres(t, nil)
	pgGenerate(t, db, n)
	t.Logf("PostgreSQL: %d orders generated in %s", n+n/4, time.Since(start).Round(time.Second))
	measure := func(name string, gen, hand func() error) {
		var g, h []time.Duration
		for i := 0; i <= rounds; i++ {
			for k, f := range []func() error{gen, hand} {
				t0 := time.Now()
				if err := f(); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if i > 0 { // the first round warms up
					if k == 0 {
						g = append(g, time.Since(t0))
					} else {
						h = append(h, time.Since(t0))
					}
				}
			}
		}
		mg, mh := median(g), median(h)
		t.Logf("%-45s generated %9s  hand-written %9s  ratio %.2f", name, mg.Round(time.Microsecond*100), mh.Round(time.Microsecond*100), float64(mg)/float64(mh))
	}
	for _, s := range sqlShapes() {
		q := s.q()
		pgc, err := Compile(q, baseCatalog, Postgres())
		if err != nil {
			t.Fatal(err)
		}
		measure(s.name+" postgres",
			func() error { _, err := pgRows(ctx, db, pgc.SQL, pgc.Args...); return err },
			func() error { _, err := pgRows(ctx, db, s.pg, q.TenantID, q.Start, q.End); return err })
		if conn == nil {
			continue
		}
		chc, err := Compile(q, baseCatalog, ClickHouse())
		if err != nil {
			t.Fatal(err)
		}
		var chArgs []any
		for len(chArgs) < countByte(s.ch, '?') {
			chArgs = append(chArgs, q.TenantID, q.Start, q.End)
		}
		hand := &Compiled{SQL: s.ch, Args: chArgs[:countByte(s.ch, '?')]}
		measure(s.name+" clickhouse",
			func() error { _, err := chRunner(conn)(ctx, chc); return err },
			func() error { _, err := chRunner(conn)(ctx, hand); return err })
	}
}

func median(d []time.Duration) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}

func countByte(s string, c byte) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
		}
	}
	return n
}

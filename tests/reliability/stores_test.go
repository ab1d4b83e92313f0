//go:build platform

package reliability

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/shopmind/shopmind/internal/analytics/warehouse/warehousetest"
)

// goodsRow is what the analytical store keeps of a goods.
type goodsRow struct {
	Name, Status, ItemNo string
	Virtual              bool
	Staff                int64
}

// analytical reads the goods of a tenant from the analytical store: one row per goods id,
// and how many rows there are in all (more than the ids: duplicates).
type analytical interface {
	goods(ctx context.Context, tenant int64) (map[int64]goodsRow, int, error)
}

// pgAnalytics is the PostgreSQL store (schema analytics of the platform database).
type pgAnalytics struct{ pool *pgxpool.Pool }

func (p pgAnalytics) goods(ctx context.Context, tenant int64) (map[int64]goodsRow, int, error) {
	rows, err := p.pool.Query(ctx, `SELECT goods_id, goods_name, status, item_no, is_virtual, staff_id
		FROM analytics.basic_goods WHERE i_tenant_id = $1`, tenant)
	if err != nil {
		return nil, 0, err
	}
	out, n := map[int64]goodsRow{}, 0
	for rows.Next() {
		var id int64
		var g goodsRow
		if err := rows.Scan(&id, &g.Name, &g.Status, &g.ItemNo, &g.Virtual, &g.Staff); err != nil {
			rows.Close()
			return nil, 0, err
		}
		out[id] = g
		n++
	}
	return out, n, rows.Err()
}

// chAnalytics is a ClickHouse store, read on the server's own port (not through a proxy).
type chAnalytics struct{ conn driver.Conn }

func (c chAnalytics) goods(ctx context.Context, tenant int64) (map[int64]goodsRow, int, error) {
	rows, err := c.conn.Query(ctx, `SELECT goods_id, goods_name, status, item_no, toUInt8(is_virtual), staff_id
		FROM basic_goods WHERE i_tenant_id = ?`, tenant)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	out, n := map[int64]goodsRow{}, 0
	for rows.Next() {
		var id, staff int64
		var name, status, item string
		var virtual uint8
		if err := rows.Scan(&id, &name, &status, &item, &virtual, &staff); err != nil {
			return nil, 0, err
		}
		out[id] = goodsRow{Name: name, Status: status, ItemNo: item, Virtual: virtual == 1, Staff: staff}
		n++
	}
	return out, n, rows.Err()
}

// openClickHouse connects to a warehousetest database.
func openClickHouse(t *testing.T, db *warehousetest.DB) chAnalytics {
	t.Helper()
	opts, err := clickhouse.ParseDSN(db.DriverURL())
	if err != nil {
		t.Fatal(err)
	}
	opts.DialTimeout = 3 * time.Second
	conn, err := clickhouse.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return chAnalytics{conn: conn}
}

// basicGoods reads the goods of a tenant from schema basic (the source of truth).
func basicGoods(ctx context.Context, pool *pgxpool.Pool, tenant int64) (map[int64]goodsRow, error) {
	rows, err := pool.Query(ctx, `SELECT id, name, status, item_no, is_virtual, staff_id FROM basic.goods WHERE tenant_id = $1`, tenant)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (struct {
		id int64
		g  goodsRow
	}, error) {
		var x struct {
			id int64
			g  goodsRow
		}
		err := r.Scan(&x.id, &x.g.Name, &x.g.Status, &x.g.ItemNo, &x.g.Virtual, &x.g.Staff)
		return x, err
	})
	if err != nil {
		return nil, err
	}
	m := make(map[int64]goodsRow, len(out))
	for _, x := range out {
		m[x.id] = x.g
	}
	return m, nil
}

// storeDiff compares the analytical store with schema basic: "" when they hold the same
// goods, once each.
func storeDiff(ctx context.Context, pool *pgxpool.Pool, store analytical, tenant int64) string {
	want, err := basicGoods(ctx, pool, tenant)
	if err != nil {
		return "reading basic.goods: " + err.Error()
	}
	got, rows, err := store.goods(ctx, tenant)
	if err != nil {
		return "reading the analytical store: " + err.Error()
	}
	var diffs []string
	if rows != len(got) {
		diffs = append(diffs, fmt.Sprintf("%d rows for %d goods (duplicates)", rows, len(got)))
	}
	for id, w := range want {
		g, ok := got[id]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("goods %d missing", id))
		case g != w:
			diffs = append(diffs, fmt.Sprintf("goods %d is %+v, basic has %+v", id, g, w))
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			diffs = append(diffs, fmt.Sprintf("goods %d unknown to basic", id))
		}
	}
	if len(diffs) == 0 {
		return ""
	}
	sort.Strings(diffs)
	if len(diffs) > 8 {
		diffs = append(diffs[:8], fmt.Sprintf("... %d differences in all", len(diffs)))
	}
	return strings.Join(diffs, "; ")
}

// catchUp waits until the analytical store equals schema basic, at most within; it fails
// the test otherwise and returns how long it took.
func catchUp(t *testing.T, pool *pgxpool.Pool, store analytical, tenant int64, within time.Duration) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within+10*time.Second)
	defer cancel()
	var diff string
	took, ok := eventually(within, func() bool {
		diff = storeDiff(ctx, pool, store, tenant)
		return diff == ""
	})
	if !ok {
		t.Errorf("the analytical store has not caught up %s after the writes: %s", within, diff)
	}
	return took
}

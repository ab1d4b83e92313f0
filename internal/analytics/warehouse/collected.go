package warehouse

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/jackc/pgx/v5"
)

// TableCollected is the table of metric values the browser extension collects (the crx
// service writes it). It is a diy_ table: the catalog discovers it like any tenant-defined
// table, so derived metrics and queries can use it (source_field diy_crx_metrics.value,
// dimensions diy_crx_metrics.metric_key, .shop_id, .platform ...).
const TableCollected = "diy_crx_metrics"

// CollectedValue is one row of diy_crx_metrics. Its key is (TenantID, ShopID, MetricKey,
// StatTime, DimsKey): a second value with the same key is a duplicate and is not stored.
// Times are kept to the second (ClickHouse DateTime); callers truncate them.
type CollectedValue struct {
	TenantID  int64
	StatTime  time.Time // the date or time the value describes
	ShopID    int64
	Platform  string
	MetricKey string
	Value     float64
	Dims      string // the dimensions as canonical JSON (keys sorted), "{}" when none
	DimsKey   string // CollectedDimsKey(Dims)
	// CollectedAt is when the browser read the value; ReceivedAt when the service stored it.
	CollectedAt time.Time
	PageURL     string
	UserID      int64
	BatchID     string
	ReceivedAt  time.Time
}

// collectedColumns are the table's columns, in order, with their comments (PostgreSQL
// column comments become the catalog's descriptions).
var collectedColumns = []struct{ name, pg, ch, comment string }{
	{"i_tenant_id", "bigint", "Int64", "tenant id"},
	{"stat_time", "timestamptz", "DateTime('UTC')", "the date or time the value describes"},
	{"shop_id", "bigint", "Int64", "shop id"},
	{"platform", "text", "String", "e-commerce platform the value was read on"},
	{"metric_key", "text", "String", "key of the collected metric (extension configuration)"},
	{"value", "double precision", "Float64", "the collected value"},
	{"dims", "text", "String", "dimensions of the value, JSON object"},
	{"dims_key", "text", "String", "hash of dims (part of the key of the value)"},
	{"collected_at", "timestamptz", "DateTime('UTC')", "when the browser read the value"},
	{"page_url", "text", "String", "page the value was read on"},
	{"user_id", "bigint", "Int64", "user whose extension uploaded it"},
	{"batch_id", "text", "String", "client batch id of the upload"},
	{"received_at", "timestamptz", "DateTime('UTC')", "when the service stored it"},
}

// collectedKey is the key columns, in sort order.
const collectedKey = "i_tenant_id, shop_id, metric_key, stat_time, dims_key"

func (v *CollectedValue) values() []any {
	return []any{v.TenantID, v.StatTime.UTC(), v.ShopID, v.Platform, v.MetricKey, v.Value, v.Dims, v.DimsKey,
		v.CollectedAt.UTC(), v.PageURL, v.UserID, v.BatchID, v.ReceivedAt.UTC()}
}

type collectedKeyT struct {
	tenant, shop int64
	metric       string
	at           int64 // unix seconds
	dims         string
}

func (v *CollectedValue) key() collectedKeyT {
	return collectedKeyT{v.TenantID, v.ShopID, v.MetricKey, v.StatTime.Unix(), v.DimsKey}
}

// CanonicalDims renders dimensions as JSON with sorted keys ("{}" for none) and returns it
// with its key hash (hex SHA-256, 32 characters), so equal dimension maps give equal keys.
func CanonicalDims(dims map[string]string) (string, string) {
	if len(dims) == 0 {
		return "{}", collectedDimsKey("{}")
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range slices.Sorted(maps.Keys(dims)) {
		if i > 0 {
			b.WriteByte(',')
		}
		kj, _ := json.Marshal(k)
		vj, _ := json.Marshal(dims[k])
		b.Write(kj)
		b.WriteByte(':')
		b.Write(vj)
	}
	b.WriteByte('}')
	return b.String(), collectedDimsKey(b.String())
}

func collectedDimsKey(canonical string) string {
	sum := sha256.Sum256([]byte(canonical))
	return hex.EncodeToString(sum[:16])
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL: primary key on the value's key, INSERT ... SELECT FROM unnest(arrays) ON
// CONFLICT DO NOTHING: one round trip per call, duplicates (stored before, or repeated in
// the call) skipped by the index.
// ---------------------------------------------------------------------------------------------

func (s *pgStore) Collector() Collector { return (*pgWriter)(s) }

func (w *pgWriter) EnsureCollected(ctx context.Context) error {
	return pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(pgSchemaLock)); err != nil {
			return fmt.Errorf("warehouse: schema lock: %w", err)
		}
		table := pgIdent(PostgresSchema, TableCollected)
		var b strings.Builder
		fmt.Fprintf(&b, "CREATE SCHEMA IF NOT EXISTS %s;\nCREATE TABLE IF NOT EXISTS %s (\n", pgIdent(PostgresSchema), table)
		for _, c := range collectedColumns {
			fmt.Fprintf(&b, "    %s %s NOT NULL,\n", c.name, c.pg)
		}
		fmt.Fprintf(&b, "    PRIMARY KEY (%s)\n);\n", collectedKey)
		fmt.Fprintf(&b, "CREATE INDEX IF NOT EXISTS diy_crx_metrics_time_idx ON %s (i_tenant_id, stat_time);\n", table)
		fmt.Fprintf(&b, "COMMENT ON TABLE %s IS 'metric values collected by the browser extension';\n", table)
		for _, c := range collectedColumns {
			fmt.Fprintf(&b, "COMMENT ON COLUMN %s.%s IS '%s';\n", table, c.name, strings.ReplaceAll(c.comment, "'", "''"))
		}
		if _, err := tx.Exec(ctx, b.String()); err != nil {
			return fmt.Errorf("warehouse: create %s: %w", TableCollected, err)
		}
		return nil
	})
}

func (w *pgWriter) InsertCollected(ctx context.Context, rows []CollectedValue) (int, error) {
	if len(rows) == 0 {
		return 0, nil
	}
	n := len(rows)
	tenant, shop, user := make([]int64, n), make([]int64, n), make([]int64, n)
	stat, collected, received := make([]time.Time, n), make([]time.Time, n), make([]time.Time, n)
	platform, metric, dims, dimsKey, page, batch := make([]string, n), make([]string, n), make([]string, n),
		make([]string, n), make([]string, n), make([]string, n)
	value := make([]float64, n)
	for i := range rows {
		r := &rows[i]
		tenant[i], stat[i], shop[i], platform[i], metric[i], value[i] = r.TenantID, r.StatTime.UTC(), r.ShopID, r.Platform, r.MetricKey, r.Value
		dims[i], dimsKey[i], collected[i], page[i], user[i], batch[i], received[i] = r.Dims, r.DimsKey, r.CollectedAt.UTC(), r.PageURL, r.UserID, r.BatchID, r.ReceivedAt.UTC()
	}
	names := make([]string, len(collectedColumns))
	for i, c := range collectedColumns {
		names[i] = c.name
	}
	sql := fmt.Sprintf(`INSERT INTO %s (%s)
		SELECT * FROM unnest($1::bigint[], $2::timestamptz[], $3::bigint[], $4::text[], $5::text[], $6::float8[],
			$7::text[], $8::text[], $9::timestamptz[], $10::text[], $11::bigint[], $12::text[], $13::timestamptz[])
		ON CONFLICT (%s) DO NOTHING`, pgIdent(PostgresSchema, TableCollected), strings.Join(names, ", "), collectedKey)
	tag, err := w.pool.Exec(ctx, sql, tenant, stat, shop, platform, metric, value, dims, dimsKey, collected, page, user, batch, received)
	if err != nil {
		return 0, fmt.Errorf("warehouse: insert into %s: %w", TableCollected, err)
	}
	return int(tag.RowsAffected()), nil
}

// ---------------------------------------------------------------------------------------------
// ClickHouse: ReplacingMergeTree ordered by the value's key. ClickHouse has no unique
// constraint, so InsertCollected reads which keys of the call are already stored (one
// SELECT bounded by tenant, shops, metrics and time range), drops them and the call's own
// repeats, and inserts the rest in one native batch, holding a per-tenant lock of this
// process so two calls of one process never both insert a key. Two processes inserting the
// same new key at the same instant can both insert it; the ReplacingMergeTree engine then
// collapses the pair at its next merge (the crx service's batch-id record makes a retried
// batch skip the store altogether, so that race needs two different batches carrying the
// same value at the same moment).
// ---------------------------------------------------------------------------------------------

// chCollectedLocks serialises InsertCollected per tenant within the process.
var chCollectedLocks sync.Map // tenant id -> *sync.Mutex

func (s *chStore) Collector() Collector { return (*chWriter)(s) }

func (w *chWriter) EnsureCollected(ctx context.Context) error {
	var b strings.Builder
	for i, c := range collectedColumns {
		sep := ","
		if i == len(collectedColumns)-1 {
			sep = ""
		}
		fmt.Fprintf(&b, "    %s %s%s\n", c.name, c.ch, sep)
	}
	return (*chStore)(w).createTable(ctx, TableCollected, b.String(),
		fmt.Sprintf("ReplacingMergeTree() PARTITION BY toYYYYMM(stat_time) ORDER BY (%s)", collectedKey))
}

func (w *chWriter) InsertCollected(ctx context.Context, rows []CollectedValue) (int, error) {
	byTenant := map[int64][]int{}
	var tenants []int64
	for i := range rows {
		t := rows[i].TenantID
		if _, ok := byTenant[t]; !ok {
			tenants = append(tenants, t)
		}
		byTenant[t] = append(byTenant[t], i)
	}
	total := 0
	for _, t := range tenants {
		n, err := w.insertCollectedTenant(ctx, t, rows, byTenant[t])
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

func (w *chWriter) insertCollectedTenant(ctx context.Context, tenant int64, rows []CollectedValue, idx []int) (int, error) {
	mu, _ := chCollectedLocks.LoadOrStore(tenant, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()

	shops, metrics := map[int64]bool{}, map[string]bool{}
	lo, hi := rows[idx[0]].StatTime, rows[idx[0]].StatTime
	for _, i := range idx {
		r := &rows[i]
		shops[r.ShopID], metrics[r.MetricKey] = true, true
		if r.StatTime.Before(lo) {
			lo = r.StatTime
		}
		if r.StatTime.After(hi) {
			hi = r.StatTime
		}
	}
	shopList := slices.Sorted(maps.Keys(shops))
	metricList := slices.Sorted(maps.Keys(metrics))
	existing := map[collectedKeyT]bool{}
	// IN lists (one placeholder per value, bound by the driver) let the sorting key prune.
	args := []any{tenant}
	args = append(args, anySlice(shopList)...)
	args = append(args, anySlice(metricList)...)
	args = append(args, lo.UTC().Truncate(time.Second), hi.UTC())
	keysSQL := func(table string) string {
		return `SELECT shop_id, metric_key, stat_time, dims_key FROM ` + table + `
		WHERE i_tenant_id = ? AND shop_id IN (` + placeholders(len(shopList)) + `) AND metric_key IN (` + placeholders(len(metricList)) + `)
		AND stat_time >= ? AND stat_time <= ?`
	}
	scan := func(q driver.Rows) error {
		k := collectedKeyT{tenant: tenant}
		var at time.Time
		if err := q.Scan(&k.shop, &k.metric, &at, &k.dims); err != nil {
			return fmt.Errorf("warehouse: read keys of %s: %w", TableCollected, err)
		}
		k.at = at.Unix()
		existing[k] = true
		return nil
	}
	if w.cluster != nil {
		// Every live replica's own table: a value another process stored on one replica
		// and the cluster has not copied to the other yet is found all the same.
		if err := (*chStore)(w).clusterKeys(ctx, keysSQL(TableCollected+LocalSuffix), args, scan); err != nil {
			return 0, err
		}
	} else {
		q, err := w.conn.Query(ctx, keysSQL(TableCollected), args...)
		if err != nil {
			return 0, (*chStore)(w).writeError(fmt.Errorf("warehouse: read keys of %s: %w", TableCollected, err))
		}
		for q.Next() {
			if err := scan(q); err != nil {
				q.Close()
				return 0, err
			}
		}
		q.Close()
		if err := q.Err(); err != nil {
			return 0, (*chStore)(w).writeError(fmt.Errorf("warehouse: read keys of %s: %w", TableCollected, err))
		}
	}
	names := make([]string, len(collectedColumns))
	for i, c := range collectedColumns {
		names[i] = c.name
	}
	batch, err := w.conn.PrepareBatch(ctx, fmt.Sprintf("INSERT INTO %s (%s)", TableCollected, strings.Join(names, ", ")))
	if err != nil {
		return 0, (*chStore)(w).writeError(fmt.Errorf("warehouse: insert into %s: %w", TableCollected, err))
	}
	n := 0
	for _, i := range idx {
		k := rows[i].key()
		if existing[k] {
			continue
		}
		existing[k] = true
		if err := batch.Append(rows[i].values()...); err != nil {
			_ = batch.Abort()
			return 0, fmt.Errorf("warehouse: insert into %s: %w", TableCollected, err)
		}
		n++
	}
	if n == 0 {
		_ = batch.Abort()
		return 0, nil
	}
	if err := batch.Send(); err != nil {
		return 0, (*chStore)(w).writeError(fmt.Errorf("warehouse: insert into %s: %w", TableCollected, err))
	}
	return n, nil
}

func anySlice[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// placeholders is "?, ?, ..." (n of them).
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

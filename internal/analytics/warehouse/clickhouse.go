package warehouse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/big"
	"net"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/shopmind/shopmind/internal/analytics/catalog"
	"github.com/shopmind/shopmind/internal/apperr"
)

// ClickHouse exception codes the store acts on.
const (
	chTableAlreadyExists = 57
	chUnknownDatabase    = 81
	chTimeoutExceeded    = 159
	chTooSlow            = 160 // estimated execution time beyond max_execution_time
	chReadonly           = 164
	chTooManyRows        = 158 // max_rows_to_read
	chTooManyRowsOrBytes = 396 // max_result_rows
	chMemoryLimit        = 241
)

// chUnavailable are the server's exceptions that say it cannot take the query now, whoever
// wrote it: too many simultaneous queries, no free connection, socket timeout, network
// error, aborted, too many parts, the keeper.
// On a cluster: no live replica of a shard (279: a Distributed query never skips a shard,
// skip_unavailable_shards is off, so the answer is an error and not a partial sum), the keeper.
var chUnavailable = map[int32]bool{202: true, 203: true, 209: true, 210: true, 236: true, 252: true, 999: true,
	225: true, 279: true}

// chFactTables are partitioned by month and ordered by time; the other base tables are small
// dimension tables ordered by key.
var chFactTables = map[string]bool{TableOrders: true, TableOrderItems: true}

// chTypes maps catalog types to ClickHouse types (18.16 has no Bool: UInt8).
var chTypes = map[catalog.Type]string{
	catalog.TypeInt:    "Int64",
	catalog.TypeFloat:  "Float64",
	catalog.TypeString: "String",
	catalog.TypeTime:   "DateTime('UTC')",
	catalog.TypeBool:   "UInt8",
}

// mutationWait bounds how long an upsert or tenant deletion waits for its mutation (a
// mutation rewrites the parts it touches: seconds for dimension tables, longer for a large
// tenant's orders).
const mutationWait = 30 * time.Minute

// chStore is the ClickHouse dialect.
type chStore struct {
	conn     driver.Conn
	database string
	logger   *slog.Logger
	// cluster is set in cluster mode (cluster=<name> in the URL): clickhouse_cluster.go.
	cluster *chCluster
}

func openClickHouse(ctx context.Context, rawURL string, logger *slog.Logger) (*chStore, error) {
	rawURL, clusterName, err := splitClusterParam(rawURL)
	if err != nil {
		return nil, fmt.Errorf("warehouse: clickhouse url: %w", err)
	}
	opts, err := clickhouse.ParseDSN(rawURL)
	if err != nil {
		return nil, fmt.Errorf("warehouse: clickhouse url: %w", err)
	}
	if opts.Protocol != clickhouse.Native {
		return nil, errors.New("warehouse: clickhouse url: only the native protocol is supported")
	}
	if opts.Auth.Database == "" {
		opts.Auth.Database = "default"
	}
	if opts.Compression == nil {
		opts.Compression = &clickhouse.Compression{Method: clickhouse.CompressionLZ4}
	}
	if !strings.Contains(rawURL, "dial_timeout") {
		opts.DialTimeout = 10 * time.Second
	}
	conn, err := connectClickHouse(ctx, opts)
	var ex *clickhouse.Exception
	if errors.As(err, &ex) && ex.Code == chUnknownDatabase {
		// Create the database through the default one, then connect again.
		if err := createClickHouseDatabase(ctx, *opts, clusterName); err != nil {
			return nil, err
		}
		conn, err = connectClickHouse(ctx, opts)
	}
	if err != nil {
		return nil, fmt.Errorf("warehouse: clickhouse at %s: %w", strings.Join(opts.Addr, ","), err)
	}
	s := &chStore{conn: conn, database: opts.Auth.Database, logger: logger}
	if clusterName != "" {
		if err := s.openCluster(ctx, clusterName, *opts); err != nil {
			conn.Close()
			return nil, err
		}
	}
	if v, err := conn.ServerVersion(); err == nil {
		logger.Info("analytical store: clickhouse", "server", v.String(), "database", s.database, "cluster", clusterName)
	}
	return s, nil
}

func connectClickHouse(ctx context.Context, opts *clickhouse.Options) (driver.Conn, error) {
	conn, err := clickhouse.Open(opts)
	if err != nil {
		return nil, err
	}
	if err := conn.Ping(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

func createClickHouseDatabase(ctx context.Context, opts clickhouse.Options, cluster string) error {
	name := opts.Auth.Database
	opts.Auth.Database = "default"
	conn, err := connectClickHouse(ctx, &opts)
	if err != nil {
		return fmt.Errorf("warehouse: clickhouse: %w", err)
	}
	defer conn.Close()
	ddl := "CREATE DATABASE IF NOT EXISTS " + chIdent(name)
	if cluster != "" {
		ddl += " ON CLUSTER " + chIdent(cluster)
	}
	if err := conn.Exec(ctx, ddl); err != nil {
		return fmt.Errorf("warehouse: create clickhouse database %s: %w", name, err)
	}
	return nil
}

// chIdent quotes an identifier with back quotes.
func chIdent(name string) string {
	return "`" + strings.NewReplacer("\\", "\\\\", "`", "\\`").Replace(name) + "`"
}

func (s *chStore) Dialect() string { return DialectClickHouse }
func (s *chStore) Writer() Writer  { return (*chWriter)(s) }
func (s *chStore) Close() error {
	if s.cluster != nil {
		s.cluster.close()
	}
	return s.conn.Close()
}

// chTableDDL is the column list and the one-server engine clause of one base table; it uses
// only syntax ClickHouse 18.16 accepts (createTable makes them replicated on a cluster).
func chTableDDL(t *catalog.Table) (columns, engine string) {
	var b strings.Builder
	for i, c := range t.Columns {
		typ := chTypes[c.Type]
		if c.Nullable {
			typ = "Nullable(" + typ + ")"
		}
		sep := ","
		if i == len(t.Columns)-1 {
			sep = ""
		}
		fmt.Fprintf(&b, "    %s %s%s\n", c.Name, typ, sep)
	}
	if chFactTables[t.Name] {
		return b.String(), fmt.Sprintf("MergeTree() PARTITION BY toYYYYMM(%s) ORDER BY (%s, %s, %s)",
			t.TimeColumn, catalog.TenantColumn, t.TimeColumn, t.Key)
	}
	return b.String(), fmt.Sprintf("ReplacingMergeTree() ORDER BY (%s, %s)", catalog.TenantColumn, t.Key)
}

func (s *chStore) EnsureSchema(ctx context.Context) error {
	for _, name := range baseTables {
		columns, engine := chTableDDL(base.Table(name))
		if err := s.createTable(ctx, name, columns, engine); err != nil {
			return err
		}
	}
	return nil
}

// Catalog discovers the diy_* tables of the connection's database.
func (s *chStore) Catalog(ctx context.Context) (*catalog.Catalog, error) {
	rows, err := s.conn.Query(ctx, "SELECT table, name, type, comment FROM system.columns WHERE database = currentDatabase()")
	if err != nil {
		return nil, fmt.Errorf("warehouse: discover diy tables: %w", err)
	}
	defer rows.Close()
	var cols []diyColumn
	for rows.Next() {
		var c diyColumn
		var typ string
		if err := rows.Scan(&c.table, &c.name, &typ, &c.comment); err != nil {
			return nil, fmt.Errorf("warehouse: discover diy tables: %w", err)
		}
		if !strings.HasPrefix(c.table, "diy_") || s.isLocalTable(c.table) {
			continue
		}
		c.typ, c.nullable, c.ok = chCatalogType(typ)
		cols = append(cols, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("warehouse: discover diy tables: %w", err)
	}
	// system.columns lists a table's columns in order; group tables without reordering them.
	sort.SliceStable(cols, func(i, j int) bool { return cols[i].table < cols[j].table })
	return catalog.Base().WithDiy(diyTables(cols, nil)), nil
}

// chCatalogType maps a ClickHouse type to a catalog type; ok is false for types the
// catalog cannot describe (arrays, maps, tuples ...).
func chCatalogType(typ string) (t catalog.Type, nullable, ok bool) {
	for {
		switch {
		case strings.HasPrefix(typ, "Nullable(") && strings.HasSuffix(typ, ")"):
			typ, nullable = typ[len("Nullable("):len(typ)-1], true
			continue
		case strings.HasPrefix(typ, "LowCardinality(") && strings.HasSuffix(typ, ")"):
			typ = typ[len("LowCardinality(") : len(typ)-1]
			continue
		}
		break
	}
	switch {
	case strings.HasPrefix(typ, "Int"), strings.HasPrefix(typ, "UInt"):
		return catalog.TypeInt, nullable, true
	case strings.HasPrefix(typ, "Float"), strings.HasPrefix(typ, "Decimal"):
		return catalog.TypeFloat, nullable, true
	case strings.HasPrefix(typ, "Date"):
		return catalog.TypeTime, nullable, true
	case typ == "Bool":
		return catalog.TypeBool, nullable, true
	case typ == "String", strings.HasPrefix(typ, "FixedString"), strings.HasPrefix(typ, "Enum"), typ == "UUID":
		return catalog.TypeString, nullable, true
	}
	return "", nullable, false
}

// Query runs sql with readonly=2 and max_execution_time, reading at most MaxRows+1 rows.
func (s *chStore) Query(ctx context.Context, sql string, args []any, opts QueryOptions) (*Result, error) {
	opts = opts.withDefaults()
	sql, err := checkSelect(sql)
	if err != nil {
		return nil, err
	}
	// The driver replaces max_execution_time with "context deadline + 5s" and bounds socket
	// reads by the deadline when the context has one, so the query context carries none:
	// the caller's cancellation and the store's own guard (a server that stops answering)
	// reach it as plain cancellations.
	qctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	var guardFired atomic.Bool
	guard := time.AfterFunc(opts.Timeout+queryGrace, func() { guardFired.Store(true); cancel() })
	defer guard.Stop()
	settings := clickhouse.Settings{
		// 2: reads only, but settings may be passed with the query (1 would refuse them).
		"readonly":           2,
		"max_execution_time": int(math.Ceil(opts.Timeout.Seconds())),
	}
	if u := opts.Untrusted; u != nil {
		// 1: reads only and no setting may be changed by the statement; the settings
		// sent with the query itself are still applied (tested on 18.16).
		settings["readonly"] = 1
		settings["max_result_rows"] = opts.MaxRows + 1
		if u.MaxScanRows > 0 {
			settings["max_rows_to_read"] = int(u.MaxScanRows)
		}
	}
	qctx = clickhouse.Context(qctx, clickhouse.WithSettings(settings))
	res, err := s.query(qctx, cancel, sql, args, opts)
	if err != nil && s.cluster != nil && qctx.Err() == nil && unreachable(err) {
		// A pooled connection to a replica that went away: once more, on a new connection
		// the driver dials to the next live address (a read is safe to repeat).
		res, err = s.query(qctx, cancel, sql, args, opts)
	}
	if err != nil {
		return nil, s.mapError(ctx, guardFired.Load(), opts, err)
	}
	return res, nil
}

func (s *chStore) query(ctx context.Context, cancel context.CancelFunc, sql string, args []any, opts QueryOptions) (*Result, error) {
	rows, err := s.conn.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	types := rows.ColumnTypes()
	res := &Result{Rows: [][]any{}}
	for _, ct := range types {
		t, _, ok := chCatalogType(ct.DatabaseTypeName())
		if !ok {
			t = catalog.TypeString
		}
		res.Columns = append(res.Columns, ResultColumn{Name: ct.Name(), Type: string(t)})
	}
	dest := make([]any, len(types))
	for i, ct := range types {
		dest[i] = reflect.New(ct.ScanType()).Interface()
	}
	for rows.Next() {
		if len(res.Rows) == opts.MaxRows {
			res.Truncated = true
			// Stop the server: the driver would otherwise drain the whole result on Close.
			cancel()
			return res, nil
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		row := make([]any, len(dest))
		for i, d := range dest {
			row[i] = chValue(reflect.ValueOf(d).Elem())
		}
		res.Rows = append(res.Rows, row)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return res, nil
}

// chValue converts a scanned value to int64, float64, string, bool, time.Time (UTC) or nil.
func chValue(v reflect.Value) any {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return int64(v.Uint())
	case reflect.Float32, reflect.Float64:
		return v.Float()
	case reflect.String:
		return v.String()
	case reflect.Bool:
		return v.Bool()
	}
	switch x := v.Interface().(type) {
	case time.Time:
		return x.UTC()
	case interface{ InexactFloat64() float64 }: // decimal.Decimal
		return x.InexactFloat64()
	case big.Int:
		if x.IsInt64() {
			return x.Int64()
		}
		return x.String()
	case fmt.Stringer:
		return x.String()
	default:
		return fmt.Sprint(x)
	}
}

func (s *chStore) mapError(ctx context.Context, guardFired bool, opts QueryOptions, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var ex *clickhouse.Exception
	if errors.As(err, &ex) {
		switch ex.Code {
		case chTimeoutExceeded, chTooSlow:
			return timeoutError(opts.Timeout, err)
		case chReadonly:
			return readOnlyError(err)
		case chTooManyRows, chTooManyRowsOrBytes, chMemoryLimit:
			if opts.Untrusted != nil {
				return capError("the query exceeded the sandbox's cap: %s", ex.Message)
			}
		}
	}
	if guardFired {
		return timeoutError(opts.Timeout, err)
	}
	if ex != nil && chUnavailable[ex.Code] {
		s.logger.Warn("analytical store busy or unreachable", "dialect", DialectClickHouse, "error", err)
		return apperr.New(apperr.KindUnavailable, "%s", s.unavailableMessage())
	}
	if ex != nil && opts.Untrusted != nil {
		return authorError(ex.Message, err)
	}
	if ex == nil && unreachable(err) {
		s.logger.Warn("analytical store unreachable", "dialect", DialectClickHouse, "error", err)
		return apperr.New(apperr.KindUnavailable, "%s", s.unavailableMessage())
	}
	s.logger.Error("analytical query failed", "dialect", DialectClickHouse, "error", err)
	return queryError(err)
}

// chWriter is the ClickHouse Writer: native batch inserts with explicit column lists (the
// only insert form that works on 18.16 through the driver).
type chWriter chStore

func (w *chWriter) insert(ctx context.Context, table string, n int, row func(i int) []any) error {
	err := w.insertOnce(ctx, table, n, row)
	if err != nil && w.cluster != nil && ctx.Err() == nil && unreachable(err) {
		// The node the batch went to went away: once more through the next live one. The
		// same rows make the same blocks, which the replicated tables store once
		// (insert_deduplicate), should the first attempt have landed.
		err = w.insertOnce(ctx, table, n, row)
	}
	return err
}

func (w *chWriter) insertOnce(ctx context.Context, table string, n int, row func(i int) []any) error {
	if n == 0 {
		return nil
	}
	t := base.Table(table)
	batch, err := w.conn.PrepareBatch(ctx, fmt.Sprintf("INSERT INTO %s (%s)", table, strings.Join(columnNames(t), ", ")))
	if err != nil {
		return (*chStore)(w).writeError(fmt.Errorf("warehouse: insert into %s: %w", table, err))
	}
	for i := 0; i < n; i++ {
		vals := row(i)
		for j, v := range vals {
			if b, ok := v.(bool); ok {
				vals[j] = boolUInt8(b)
			}
		}
		if err := batch.Append(vals...); err != nil {
			_ = batch.Abort()
			return fmt.Errorf("warehouse: insert into %s: %w", table, err)
		}
	}
	if err := batch.Send(); err != nil {
		return (*chStore)(w).writeError(fmt.Errorf("warehouse: insert into %s: %w", table, err))
	}
	return nil
}

func boolUInt8(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

func (w *chWriter) Shops(ctx context.Context, rows []Shop) error {
	return w.insert(ctx, TableShops, len(rows), func(i int) []any { return rows[i].values() })
}

func (w *chWriter) Categories(ctx context.Context, rows []Category) error {
	return w.insert(ctx, TableCategories, len(rows), func(i int) []any { return rows[i].values() })
}

func (w *chWriter) Goods(ctx context.Context, rows []Goods) error {
	return w.insert(ctx, TableGoods, len(rows), func(i int) []any { return rows[i].values() })
}

// Orders inserts the orders, then the items (two native batches; ClickHouse has no
// transactions).
func (w *chWriter) Orders(ctx context.Context, orders []Order, items []OrderItem) error {
	if err := w.insert(ctx, TableOrders, len(orders), func(i int) []any { return orders[i].values() }); err != nil {
		return err
	}
	return w.insert(ctx, TableOrderItems, len(items), func(i int) []any { return items[i].values() })
}

// upsert deletes the rows' keys (waiting for the mutation), then inserts the rows.
func (w *chWriter) upsert(ctx context.Context, table string, n int, key func(i int) (tenant, id int64), row func(i int) []any) error {
	if n == 0 {
		return nil
	}
	byTenant := map[int64][]string{}
	var tenants []int64
	for i := 0; i < n; i++ {
		tenant, id := key(i)
		if _, ok := byTenant[tenant]; !ok {
			tenants = append(tenants, tenant)
		}
		byTenant[tenant] = append(byTenant[tenant], strconv.FormatInt(id, 10))
	}
	t := base.Table(table)
	for _, tenant := range tenants {
		where := fmt.Sprintf("%s = %d AND %s IN (%s)", catalog.TenantColumn, tenant, t.Key, strings.Join(byTenant[tenant], ", "))
		if err := (*chStore)(w).mutate(ctx, table, "DELETE WHERE "+where); err != nil {
			return err
		}
	}
	return w.insert(ctx, table, n, row)
}

// mutate runs ALTER TABLE table <command> and waits until the table has no pending
// mutation (18.16 has no mutations_sync setting).
// On a cluster it runs on the local tables of each shard (mutateCluster).
func (s *chStore) mutate(ctx context.Context, table, command string) error {
	if s.cluster != nil {
		return s.mutateCluster(ctx, table, command)
	}
	if err := s.conn.Exec(ctx, fmt.Sprintf("ALTER TABLE %s %s", table, command)); err != nil {
		return s.writeError(fmt.Errorf("warehouse: alter %s: %w", table, err))
	}
	return waitMutations(ctx, s.conn, s.database, table)
}

func (w *chWriter) UpsertShops(ctx context.Context, rows []Shop) error {
	return w.upsert(ctx, TableShops, len(rows), func(i int) (int64, int64) { return rows[i].TenantID, rows[i].ShopID },
		func(i int) []any { return rows[i].values() })
}

func (w *chWriter) UpsertCategories(ctx context.Context, rows []Category) error {
	return w.upsert(ctx, TableCategories, len(rows), func(i int) (int64, int64) { return rows[i].TenantID, rows[i].CategoryID },
		func(i int) []any { return rows[i].values() })
}

func (w *chWriter) UpsertGoods(ctx context.Context, rows []Goods) error {
	return w.upsert(ctx, TableGoods, len(rows), func(i int) (int64, int64) { return rows[i].TenantID, rows[i].GoodsID },
		func(i int) []any { return rows[i].values() })
}

func (w *chWriter) DeleteTenant(ctx context.Context, tenantID int64) error {
	for i := len(baseTables) - 1; i >= 0; i-- {
		if err := (*chStore)(w).mutate(ctx, baseTables[i], fmt.Sprintf("DELETE WHERE %s = %d", catalog.TenantColumn, tenantID)); err != nil {
			return err
		}
	}
	return nil
}

// Analyze merges the dimension tables so repeated keys collapse (ReplacingMergeTree).
func (w *chWriter) Analyze(ctx context.Context) error {
	for _, table := range baseTables {
		if chFactTables[table] {
			continue
		}
		if w.cluster != nil {
			if err := (*chStore)(w).optimizeCluster(ctx, table); err != nil {
				return err
			}
			continue
		}
		if err := w.conn.Exec(ctx, "OPTIMIZE TABLE "+table+" FINAL"); err != nil {
			return fmt.Errorf("warehouse: optimize %s: %w", table, err)
		}
	}
	return nil
}

// unreachable tells a failure to reach the server (refused, reset, closed, timed out at
// the network, the driver's pool exhausted or closed) from an answer of the server.
func unreachable(err error) bool {
	var netErr net.Error
	if errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, clickhouse.ErrAcquireConnTimeout) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "connection refused") || strings.Contains(msg, "broken pipe") ||
		strings.Contains(msg, "connection reset") || strings.Contains(msg, "use of closed network connection")
}

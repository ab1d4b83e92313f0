package warehouse

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/shopmind/shopmind/internal/analytics/catalog"
	"github.com/shopmind/shopmind/internal/apperr"
)

// pgSchemaLock is the advisory lock id EnsureSchema holds while creating tables, so replicas
// starting together do not race on CREATE TABLE IF NOT EXISTS (which can fail with a
// duplicate pg_type row when two sessions create the same table).
const pgSchemaLock = 7262017

// pgIndexes are the secondary indexes of the base tables, beyond the primary key
// (i_tenant_id, key): every one leads with the tenant column, so tenant-filtered time
// ranges, goods and shop breakdowns and item-to-order joins are index-driven.
var pgIndexes = map[string][][]string{
	TableCategories: {{"i_tenant_id", "parent_id"}},
	TableGoods:      {{"i_tenant_id", "shop_id"}, {"i_tenant_id", "category_id"}, {"i_tenant_id", "staff_id"}},
	TableOrders:     {{"i_tenant_id", "ordered_at"}, {"i_tenant_id", "shop_id", "ordered_at"}},
	TableOrderItems: {{"i_tenant_id", "ordered_at"}, {"i_tenant_id", "goods_id"}, {"i_tenant_id", "order_id"}},
}

// pgTypes maps catalog types to PostgreSQL types.
var pgTypes = map[catalog.Type]string{
	catalog.TypeInt:    "bigint",
	catalog.TypeFloat:  "double precision",
	catalog.TypeString: "text",
	catalog.TypeTime:   "timestamptz",
	catalog.TypeBool:   "boolean",
}

// pgStore is the PostgreSQL dialect: schema analytics in the platform database.
type pgStore struct {
	pool   *pgxpool.Pool
	logger *slog.Logger
}

func newPostgres(pool *pgxpool.Pool, logger *slog.Logger) *pgStore {
	return &pgStore{pool: pool, logger: logger}
}

func (s *pgStore) Dialect() string { return DialectPostgres }
func (s *pgStore) Writer() Writer  { return (*pgWriter)(s) }
func (s *pgStore) Close() error    { return nil } // the pool belongs to the caller

func pgIdent(parts ...string) string { return pgx.Identifier(parts).Sanitize() }

// pgCreateTable is the DDL of one base table.
func pgCreateTable(t *catalog.Table) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE IF NOT EXISTS %s (\n", pgIdent(PostgresSchema, t.Name))
	for _, c := range t.Columns {
		null := " NOT NULL"
		if c.Nullable {
			null = ""
		}
		fmt.Fprintf(&b, "    %s %s%s,\n", pgIdent(c.Name), pgTypes[c.Type], null)
	}
	fmt.Fprintf(&b, "    PRIMARY KEY (%s, %s)\n)", pgIdent(catalog.TenantColumn), pgIdent(t.Key))
	return b.String()
}

func pgCreateIndex(table string, cols []string) string {
	name := table + "_" + strings.TrimPrefix(strings.Join(cols, "_"), "i_") + "_idx"
	quoted := make([]string, len(cols))
	for i, c := range cols {
		quoted[i] = pgIdent(c)
	}
	return fmt.Sprintf("CREATE INDEX IF NOT EXISTS %s ON %s (%s)", pgIdent(name), pgIdent(PostgresSchema, table), strings.Join(quoted, ", "))
}

// pgDDL is every statement EnsureSchema runs, in order.
func pgDDL() []string {
	stmts := []string{"CREATE SCHEMA IF NOT EXISTS " + pgIdent(PostgresSchema)}
	for _, name := range baseTables {
		t := base.Table(name)
		stmts = append(stmts, pgCreateTable(t))
		for _, cols := range pgIndexes[name] {
			stmts = append(stmts, pgCreateIndex(name, cols))
		}
	}
	return stmts
}

func (s *pgStore) EnsureSchema(ctx context.Context) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(pgSchemaLock)); err != nil {
			return fmt.Errorf("warehouse: schema lock: %w", err)
		}
		for _, stmt := range pgDDL() {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("warehouse: %s: %w", firstLine(stmt), err)
			}
		}
		return nil
	})
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return strings.TrimSuffix(line, " (")
}

// Catalog discovers the diy_* tables (and views) of schema analytics.
func (s *pgStore) Catalog(ctx context.Context) (*catalog.Catalog, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT c.table_name, c.column_name, c.data_type, c.is_nullable = 'YES',
		       coalesce(col_description(format('%I.%I', c.table_schema, c.table_name)::regclass, c.ordinal_position::int), ''),
		       coalesce(obj_description(format('%I.%I', c.table_schema, c.table_name)::regclass, 'pg_class'), '')
		FROM information_schema.columns c
		WHERE c.table_schema = $1 AND c.table_name LIKE 'diy\_%'
		ORDER BY c.table_name, c.ordinal_position`, PostgresSchema)
	if err != nil {
		return nil, fmt.Errorf("warehouse: discover diy tables: %w", err)
	}
	var cols []diyColumn
	comments := map[string]string{}
	for rows.Next() {
		var c diyColumn
		var dataType, tableComment string
		if err := rows.Scan(&c.table, &c.name, &dataType, &c.nullable, &c.comment, &tableComment); err != nil {
			rows.Close()
			return nil, fmt.Errorf("warehouse: discover diy tables: %w", err)
		}
		c.typ, c.ok = pgCatalogType(dataType)
		comments[c.table] = tableComment
		cols = append(cols, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("warehouse: discover diy tables: %w", err)
	}
	return catalog.Base().WithDiy(diyTables(cols, comments)), nil
}

// pgCatalogType maps an information_schema data_type to a catalog type.
func pgCatalogType(dataType string) (catalog.Type, bool) {
	switch dataType {
	case "smallint", "integer", "bigint":
		return catalog.TypeInt, true
	case "real", "double precision", "numeric":
		return catalog.TypeFloat, true
	case "text", "character varying", "character", "uuid", "json", "jsonb":
		return catalog.TypeString, true
	case "timestamp with time zone", "timestamp without time zone", "date":
		return catalog.TypeTime, true
	case "boolean":
		return catalog.TypeBool, true
	}
	return "", false
}

// pgCursor is the name of the cursor Query reads through.
const pgCursor = "shopmind_query"

// Query runs sql in a read-only transaction through a cursor: FETCH reads at most
// MaxRows+1 rows, so a cap never ships the rest of a large result.
func (s *pgStore) Query(ctx context.Context, sql string, args []any, opts QueryOptions) (*Result, error) {
	opts = opts.withDefaults()
	sql, err := checkSelect(sql)
	if err != nil {
		return nil, err
	}
	// The server's statement_timeout does the work; the context deadline only guards a
	// server that stops answering.
	qctx, cancel := context.WithTimeout(ctx, opts.Timeout+queryGrace)
	defer cancel()
	res, err := s.query(qctx, sql, args, opts)
	if err != nil {
		return nil, s.mapError(ctx, qctx, opts, err)
	}
	return res, nil
}

// queryGrace is how much longer than the server-side limit a query may take before the
// client gives up on the server.
const queryGrace = 5 * time.Second

func (s *pgStore) query(ctx context.Context, sql string, args []any, opts QueryOptions) (*Result, error) {
	pool := s.pool
	if opts.Untrusted != nil && opts.Untrusted.Pool != nil {
		pool = opts.Untrusted.Pool
	}
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = tx.Rollback(rctx)
	}()
	setup := fmt.Sprintf("SET LOCAL statement_timeout = %d; SET LOCAL search_path = %s; SET LOCAL TimeZone = 'UTC'; SET LOCAL cursor_tuple_fraction = 1",
		max(opts.Timeout.Milliseconds(), 1), pgIdent(PostgresSchema))
	if _, err := tx.Exec(ctx, setup); err != nil {
		return nil, err
	}
	if u := opts.Untrusted; u != nil {
		if err := pgUntrusted(ctx, tx, sql, args, u); err != nil {
			return nil, err
		}
	}
	if _, err := tx.Exec(ctx, "DECLARE "+pgCursor+" NO SCROLL CURSOR FOR "+sql, args...); err != nil {
		return nil, err
	}
	// The simple protocol: a cached FETCH statement would keep the first cursor's columns.
	rows, err := tx.Query(ctx, fmt.Sprintf("FETCH FORWARD %d FROM %s", opts.MaxRows+1, pgCursor), pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	res := &Result{Rows: [][]any{}}
	for _, fd := range rows.FieldDescriptions() {
		res.Columns = append(res.Columns, ResultColumn{Name: fd.Name, Type: string(pgResultType(fd.DataTypeOID))})
	}
	for rows.Next() {
		if len(res.Rows) == opts.MaxRows {
			res.Truncated = true
			break
		}
		vals, err := rows.Values()
		if err != nil {
			return nil, err
		}
		for i, v := range vals {
			vals[i] = pgValue(v)
		}
		res.Rows = append(res.Rows, vals)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return res, nil
}

// pgUntrusted adds a sandboxed query's defences inside its transaction: the restricted
// role, then the planner cost cap (EXPLAIN runs as that role too).
func pgUntrusted(ctx context.Context, tx pgx.Tx, sql string, args []any, u *Untrusted) error {
	if u.Role != "" {
		if _, err := tx.Exec(ctx, "SET LOCAL ROLE "+pgIdent(u.Role)); err != nil {
			return fmt.Errorf("set role %s: %w", u.Role, err)
		}
	}
	if u.MaxCost <= 0 {
		return nil
	}
	var plan []struct {
		Plan struct {
			TotalCost float64 `json:"Total Cost"`
		} `json:"Plan"`
	}
	if err := tx.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+sql, args...).Scan(&plan); err != nil {
		return err
	}
	if len(plan) == 1 && plan[0].Plan.TotalCost > u.MaxCost {
		return capError("the query's estimated cost %.0f is above the sandbox's cap of %.0f: filter on time or shop, aggregate, or join less",
			plan[0].Plan.TotalCost, u.MaxCost)
	}
	return nil
}

// mapError classifies a query failure (see the package documentation).
func (s *pgStore) mapError(ctx, qctx context.Context, opts QueryOptions, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if ae := (*apperr.Error)(nil); errors.As(err, &ae) {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && opts.Untrusted != nil && pgErr.Code != "57014" {
		switch {
		case pgErr.Code == "42501": // insufficient_privilege: outside the sandbox role's grants
			return &apperr.Error{Kind: apperr.KindForbidden, Message: "SQL refused by the database: " + pgErr.Message, Cause: err}
		case pgErr.Code == "53100", pgErr.Code == "53200", pgErr.Code == "54001": // disk full, out of memory, too complex; not 53300 (too many connections: unavailable, below)
			return capError("the query exceeded a database resource limit: %s", pgErr.Message)
		case strings.HasPrefix(pgErr.Code, "42"), strings.HasPrefix(pgErr.Code, "22"),
			strings.HasPrefix(pgErr.Code, "21"), strings.HasPrefix(pgErr.Code, "0A"),
			strings.HasPrefix(pgErr.Code, "2F"), strings.HasPrefix(pgErr.Code, "54"):
			return authorError(pgErr.Message, err)
		}
	}
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "57014": // query_canceled: our statement_timeout
			return timeoutError(opts.Timeout, err)
		case pgErr.Code == "25006", // read_only_sql_transaction
			pgErr.Code == "0A000" && strings.Contains(pgErr.Message, "data-modifying"):
			return readOnlyError(err)
		}
	}
	if qctx.Err() != nil {
		return timeoutError(opts.Timeout, err)
	}
	s.logger.Error("analytical query failed", "dialect", DialectPostgres, "error", err)
	return queryError(err)
}

// pgResultType maps a result column's type OID to a catalog type.
func pgResultType(oid uint32) catalog.Type {
	switch oid {
	case pgtype.Int2OID, pgtype.Int4OID, pgtype.Int8OID, pgtype.OIDOID:
		return catalog.TypeInt
	case pgtype.Float4OID, pgtype.Float8OID, pgtype.NumericOID:
		return catalog.TypeFloat
	case pgtype.BoolOID:
		return catalog.TypeBool
	case pgtype.DateOID, pgtype.TimestampOID, pgtype.TimestamptzOID:
		return catalog.TypeTime
	default:
		return catalog.TypeString
	}
}

// pgValue converts a decoded value to int64, float64, string, bool, time.Time (UTC) or nil.
func pgValue(v any) any {
	switch x := v.(type) {
	case nil, int64, float64, string, bool:
		return x
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case int:
		return int64(x)
	case uint32:
		return int64(x)
	case float32:
		return float64(x)
	case time.Time:
		return x.UTC()
	case pgtype.Numeric:
		f, err := x.Float64Value()
		if err != nil || !f.Valid {
			return nil
		}
		return f.Float64
	case [16]byte: // uuid
		h := hex.EncodeToString(x[:])
		return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
	case []byte:
		return string(x)
	case map[string]any, []any:
		b, err := json.Marshal(x)
		if err != nil {
			return fmt.Sprint(x)
		}
		return string(b)
	case fmt.Stringer:
		return x.String()
	default:
		return fmt.Sprint(x)
	}
}

// pgWriter is the PostgreSQL Writer: COPY for bulk loads, ON CONFLICT for upserts.
type pgWriter pgStore

func (w *pgWriter) copy(ctx context.Context, q interface {
	CopyFrom(context.Context, pgx.Identifier, []string, pgx.CopyFromSource) (int64, error)
}, table string, n int, row func(i int) []any) error {
	if n == 0 {
		return nil
	}
	t := base.Table(table)
	_, err := q.CopyFrom(ctx, pgx.Identifier{PostgresSchema, table}, columnNames(t), pgx.CopyFromSlice(n, func(i int) ([]any, error) {
		return row(i), nil
	}))
	if err != nil {
		return fmt.Errorf("warehouse: copy %s: %w", table, err)
	}
	return nil
}

func (w *pgWriter) Shops(ctx context.Context, rows []Shop) error {
	return w.copy(ctx, w.pool, TableShops, len(rows), func(i int) []any { return rows[i].values() })
}

func (w *pgWriter) Categories(ctx context.Context, rows []Category) error {
	return w.copy(ctx, w.pool, TableCategories, len(rows), func(i int) []any { return rows[i].values() })
}

func (w *pgWriter) Goods(ctx context.Context, rows []Goods) error {
	return w.copy(ctx, w.pool, TableGoods, len(rows), func(i int) []any { return rows[i].values() })
}

func (w *pgWriter) Orders(ctx context.Context, orders []Order, items []OrderItem) error {
	return pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		if err := w.copy(ctx, tx, TableOrders, len(orders), func(i int) []any { return orders[i].values() }); err != nil {
			return err
		}
		return w.copy(ctx, tx, TableOrderItems, len(items), func(i int) []any { return items[i].values() })
	})
}

// upsert inserts or replaces rows by (i_tenant_id, key) in one transaction.
func (w *pgWriter) upsert(ctx context.Context, table string, n int, row func(i int) []any) error {
	if n == 0 {
		return nil
	}
	t := base.Table(table)
	cols := columnNames(t)
	quoted := make([]string, len(cols))
	params := make([]string, len(cols))
	var set []string
	for i, c := range cols {
		quoted[i] = pgIdent(c)
		params[i] = fmt.Sprintf("$%d", i+1)
		if c != catalog.TenantColumn && c != t.Key {
			set = append(set, fmt.Sprintf("%s = EXCLUDED.%s", pgIdent(c), pgIdent(c)))
		}
	}
	sql := fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s) ON CONFLICT (%s, %s) DO UPDATE SET %s",
		pgIdent(PostgresSchema, table), strings.Join(quoted, ", "), strings.Join(params, ", "),
		pgIdent(catalog.TenantColumn), pgIdent(t.Key), strings.Join(set, ", "))
	return pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		batch := &pgx.Batch{}
		for i := 0; i < n; i++ {
			batch.Queue(sql, row(i)...)
		}
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return fmt.Errorf("warehouse: upsert %s: %w", table, err)
		}
		return nil
	})
}

func (w *pgWriter) UpsertShops(ctx context.Context, rows []Shop) error {
	return w.upsert(ctx, TableShops, len(rows), func(i int) []any { return rows[i].values() })
}

func (w *pgWriter) UpsertCategories(ctx context.Context, rows []Category) error {
	return w.upsert(ctx, TableCategories, len(rows), func(i int) []any { return rows[i].values() })
}

func (w *pgWriter) UpsertGoods(ctx context.Context, rows []Goods) error {
	return w.upsert(ctx, TableGoods, len(rows), func(i int) []any { return rows[i].values() })
}

func (w *pgWriter) DeleteTenant(ctx context.Context, tenantID int64) error {
	return pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		for i := len(baseTables) - 1; i >= 0; i-- {
			sql := fmt.Sprintf("DELETE FROM %s WHERE %s = $1", pgIdent(PostgresSchema, baseTables[i]), pgIdent(catalog.TenantColumn))
			if _, err := tx.Exec(ctx, sql, tenantID); err != nil {
				return fmt.Errorf("warehouse: delete tenant from %s: %w", baseTables[i], err)
			}
		}
		return nil
	})
}

func (w *pgWriter) Analyze(ctx context.Context) error {
	for _, table := range baseTables {
		if _, err := w.pool.Exec(ctx, "VACUUM (ANALYZE) "+pgIdent(PostgresSchema, table)); err != nil {
			return fmt.Errorf("warehouse: vacuum %s: %w", table, err)
		}
	}
	return nil
}

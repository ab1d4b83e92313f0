// Package warehouse is ShopMind's analytical store: one interface, two SQL dialects. The
// analysis service queries it and the basic service writes to it, so it lives in internal/,
// which both may import.
//
// # Dialects
//
//   - PostgreSQL (the default, SHOPMIND_ANALYTICS_URL empty): the schema "analytics" in the
//     platform database, reached through the platform's pgx pool, so one PostgreSQL runs
//     everything. Bulk loads use COPY; every base table has the primary key
//     (i_tenant_id, key) and indexes that lead with i_tenant_id (time column, goods, shop,
//     order), so tenant-filtered range and group-by queries stay index-driven. Queries run in
//     a READ ONLY transaction with SET LOCAL statement_timeout, search_path analytics and
//     TimeZone UTC, through a cursor so a row cap never transfers more than MaxRows+1 rows.
//     Placeholders are $1..$n.
//   - ClickHouse (SHOPMIND_ANALYTICS_URL=clickhouse://host:9000/db?...): the scale-out engine,
//     through github.com/ClickHouse/clickhouse-go/v2 on the native protocol (the HTTP
//     interface is not used). Placeholders are ?, bound client-side by the driver with
//     proper quoting. Queries carry the settings readonly=2 and max_execution_time; the row
//     cap is enforced by reading at most MaxRows+1 rows and then cancelling the query (the
//     driver of this protocol revision cannot send string-valued settings such as
//     result_overflow_mode to old servers).
//
// Both dialects are tested against real servers, ClickHouse against Debian's package
// (18.16, old): the DDL and SQL this package writes are the subset 18.16 and current
// releases both accept. Known 18.16 limits that matter to SQL generators: no window
// functions, no Bool type (bool columns are UInt8 and come back as int 0/1), no
// server-side query parameters, settings that are strings cannot be sent by the driver.
//
// # Tables
//
// The base tables are catalog.Base(): basic_shops, basic_categories, basic_goods,
// basic_orders, basic_order_items, each with the tenant column i_tenant_id. EnsureSchema
// creates them (idempotent; safe when replicas start together). Catalog adds the
// tenant-defined diy_* tables found in the store; a diy table is usable only when it has
// i_tenant_id and identifier-safe names (lower-case letters, digits, underscores).
// Column roles are inferred: time types are time, numeric columns are measures except
// *_id columns, which are dimensions like everything else.
//
// ClickHouse layout: the fact tables basic_orders and basic_order_items are MergeTree,
// PARTITION BY toYYYYMM(ordered_at), ORDER BY (i_tenant_id, ordered_at, key). The dimension
// tables basic_shops, basic_categories and basic_goods are ReplacingMergeTree ORDER BY
// (i_tenant_id, key). Times are DateTime('UTC') (Nullable(DateTime('UTC')) when nullable,
// second precision), bools UInt8.
//
// # Upserts on ClickHouse
//
// Writer.Upsert* are delete-then-insert on ClickHouse: ALTER TABLE ... DELETE WHERE
// i_tenant_id = t AND key IN (...), a wait until the mutation is done (polled in
// system.mutations; 18.16 has no mutations_sync), then a batch insert. After the call
// returns, plain SELECTs see exactly one row per key, so SQL generators never need FINAL or
// argMax. The dimension tables are ReplacingMergeTree as a safety net: should two writers
// race on the same key (or a bulk load repeat keys), background merges collapse the
// duplicate to the last insert. Upserts are meant for the low-volume edits of the basic
// service (goods, shops, categories), not for bulk loads: each call costs a mutation.
//
// # Errors
//
// Query maps a statement timeout (and the store's own deadline) to apperr.KindTimeout (504)
// with a message naming the limit, a write attempt refused by the read-only mode to
// apperr.KindForbidden, the caller's cancellation to the context error, and every other
// SQL error to apperr.Internal: queries come from the semantic-layer compiler, so a SQL error
// is a bug, logged with its cause and shown to clients as a generic 500. A row cap is not an
// error: Result.Truncated says the answer was cut.
package warehouse

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/shopmind/shopmind/internal/analytics/catalog"
	"github.com/shopmind/shopmind/internal/apperr"
)

// Dialect names.
const (
	DialectPostgres   = "postgres"
	DialectClickHouse = "clickhouse"
)

// Query defaults, used when QueryOptions leaves a bound at zero.
const (
	DefaultMaxRows = 10_000
	DefaultTimeout = 30 * time.Second
)

// PostgresSchema is the PostgreSQL schema of the analytical tables.
const PostgresSchema = "analytics"

// Store is the analytical store.
type Store interface {
	// Dialect is DialectPostgres or DialectClickHouse.
	Dialect() string
	// EnsureSchema creates the base catalog tables when missing (idempotent, safe for
	// concurrent replicas).
	EnsureSchema(ctx context.Context) error
	// Catalog is catalog.Base() plus the usable diy_* tables found in the store.
	Catalog(ctx context.Context) (*catalog.Catalog, error)
	// Query runs one read-only SQL statement with the dialect's placeholders, bounded by
	// opts (zero fields take the defaults).
	Query(ctx context.Context, sql string, args []any, opts QueryOptions) (*Result, error)
	// Writer loads and updates the base tables.
	Writer() Writer
	// Collector stores the metric values the browser extension collects (diy_crx_metrics).
	Collector() Collector
	// Close releases the store's own connections (the PostgreSQL pool is the caller's).
	Close() error
}

// QueryOptions bound one query.
type QueryOptions struct {
	// MaxRows is the most rows returned; more make the result Truncated.
	MaxRows int
	// Timeout bounds the query's execution.
	Timeout time.Duration
	// Untrusted, when set, marks SQL written by someone else and already checked and
	// rewritten by internal/sqlsandbox: the store adds its defences in depth and reports
	// the statement's own errors as the author's (400 with the server's message) instead
	// of as bugs.
	Untrusted *Untrusted
}

// Untrusted are the extra bounds of a sandboxed query.
type Untrusted struct {
	// Pool (PostgreSQL) holds connections logged in as the sandbox role, so that even the
	// session user cannot switch back to the platform's role; nil uses the store's pool.
	Pool *pgxpool.Pool
	// Role (PostgreSQL) is the role the statement runs as (SET LOCAL ROLE), one that may
	// only SELECT the analytics schema.
	Role string
	// MaxScanRows (ClickHouse) is max_rows_to_read: beyond it the query fails with 422.
	MaxScanRows int64
	// MaxCost (PostgreSQL) caps the planner's total cost estimate (EXPLAIN): a costlier
	// statement is refused with 422 before it runs.
	MaxCost float64
}

func (o QueryOptions) withDefaults() QueryOptions {
	if o.MaxRows <= 0 {
		o.MaxRows = DefaultMaxRows
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return o
}

// Result is a query's answer.
type Result struct {
	Columns []ResultColumn
	// Rows hold int64, float64, string, bool, time.Time (UTC) or nil values.
	Rows [][]any
	// Truncated is true when the query had more than MaxRows rows.
	Truncated bool
}

// ResultColumn is one result column; Type is a catalog type name (int, float, string, time,
// bool).
type ResultColumn struct {
	Name string
	Type string
}

// Writer loads the base tables. Row slices are written as given; the bulk methods do not
// deduplicate (load a tenant once, or DeleteTenant first). Writers are safe for concurrent
// use (demodata calls Orders from several goroutines).
type Writer interface {
	Shops(ctx context.Context, rows []Shop) error
	Categories(ctx context.Context, rows []Category) error
	Goods(ctx context.Context, rows []Goods) error
	// Orders writes orders and their items (PostgreSQL: in one transaction).
	Orders(ctx context.Context, orders []Order, items []OrderItem) error

	// UpsertShops, UpsertCategories and UpsertGoods insert or replace rows by
	// (i_tenant_id, key): PostgreSQL ON CONFLICT DO UPDATE, ClickHouse delete-then-insert
	// (see the package documentation).
	UpsertShops(ctx context.Context, rows []Shop) error
	UpsertCategories(ctx context.Context, rows []Category) error
	UpsertGoods(ctx context.Context, rows []Goods) error
	// UpsertOrders replaces orders with their complete item lists (orders_upsert.go).
	UpsertOrders(ctx context.Context, orders []Order, items []OrderItem) error

	// DeleteTenant removes every base-table row of a tenant (reloading demo data).
	DeleteTenant(ctx context.Context, tenantID int64) error
	// Analyze refreshes what the store knows after a bulk load: PostgreSQL VACUUM (ANALYZE)
	// of the base tables (planner statistics, visibility map for index-only scans),
	// ClickHouse OPTIMIZE of the small dimension tables (collapses repeated keys).
	Analyze(ctx context.Context) error
}

// Collector stores the metric values the browser extension collects, in the diy table
// diy_crx_metrics (TableCollected, collected.go).
type Collector interface {
	// EnsureCollected creates diy_crx_metrics when missing (idempotent).
	EnsureCollected(ctx context.Context) error
	// InsertCollected stores collected values, skipping those whose key (tenant, shop,
	// metric, stat time, dimensions) is already stored or repeated in rows; it returns how
	// many it stored. PostgreSQL: one INSERT ... SELECT FROM unnest ... ON CONFLICT DO
	// NOTHING. ClickHouse: see collected.go.
	InsertCollected(ctx context.Context, rows []CollectedValue) (int, error)
}

// Open opens the store analyticsURL names: "" is the PostgreSQL schema analytics through
// pool, clickhouse://... is ClickHouse over the native protocol. It does not create tables;
// call EnsureSchema.
func Open(ctx context.Context, analyticsURL string, pool *pgxpool.Pool, logger *slog.Logger) (Store, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case analyticsURL == "":
		if pool == nil {
			return nil, errors.New("warehouse: the PostgreSQL store needs the platform pool")
		}
		return newPostgres(pool, logger), nil
	case strings.HasPrefix(analyticsURL, "clickhouse://"):
		return openClickHouse(ctx, analyticsURL, logger)
	default:
		return nil, fmt.Errorf("warehouse: analytics URL must be empty (PostgreSQL) or clickhouse://..., got scheme %q", schemeOf(analyticsURL))
	}
}

func schemeOf(u string) string {
	if s, _, ok := strings.Cut(u, "://"); ok {
		return s
	}
	return ""
}

// identRe is what a diy table or column name must look like to be usable: the compiler
// writes identifiers unquoted.
var identRe = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// diyColumn is one column found in the store, its type already mapped.
type diyColumn struct {
	table, name, comment string
	typ                  catalog.Type
	nullable, ok         bool // ok: the store type maps to a catalog type
}

// diyTables turns discovered columns (ordered by table, then position) into catalog tables:
// tables without the tenant column or with unsafe names are left out, columns whose type
// does not map are skipped.
func diyTables(cols []diyColumn, tableComments map[string]string) []*catalog.Table {
	var out []*catalog.Table
	var cur *catalog.Table
	hasTenant := false
	flush := func() {
		if cur != nil && hasTenant {
			finishDiy(cur)
			out = append(out, cur)
		}
		cur, hasTenant = nil, false
	}
	for _, c := range cols {
		if !strings.HasPrefix(c.table, "diy_") || !identRe.MatchString(c.table) {
			continue
		}
		if cur == nil || cur.Name != c.table {
			flush()
			cur = &catalog.Table{Name: c.table, Diy: true, Description: tableComments[c.table]}
		}
		if !c.ok || !identRe.MatchString(c.name) {
			continue
		}
		if c.name == catalog.TenantColumn {
			if c.typ != catalog.TypeInt {
				continue // a tenant column that is not an integer cannot be filtered on
			}
			hasTenant = true
		}
		cur.Columns = append(cur.Columns, catalog.Column{Name: c.name, Type: c.typ, Role: inferRole(c.name, c.typ),
			Nullable: c.nullable, Description: c.comment})
	}
	flush()
	return out
}

// inferRole: time types are time, numbers are measures unless they are ids, the rest are
// dimensions.
func inferRole(name string, typ catalog.Type) catalog.Role {
	switch {
	case typ == catalog.TypeTime:
		return catalog.RoleTime
	case (typ == catalog.TypeInt || typ == catalog.TypeFloat) && !strings.HasSuffix(name, "_id") && name != "id":
		return catalog.RoleMeasure
	default:
		return catalog.RoleDimension
	}
}

// finishDiy picks the default time column (the first time column, preferring created_at
// and similar names) and the key (id, else the first *_id column other than the tenant).
func finishDiy(t *catalog.Table) {
	for _, pref := range []string{"ordered_at", "created_at", "event_time", "date", "dt"} {
		if c := t.Column(pref); c != nil && c.Type == catalog.TypeTime {
			t.TimeColumn = pref
			break
		}
	}
	for _, c := range t.Columns {
		if t.TimeColumn == "" && c.Type == catalog.TypeTime {
			t.TimeColumn = c.Name
		}
		if t.Key == "" && c.Name == "id" {
			t.Key = c.Name
		}
	}
	if t.Key == "" {
		for _, c := range t.Columns {
			if c.Name != catalog.TenantColumn && strings.HasSuffix(c.Name, "_id") && c.Type != catalog.TypeFloat {
				t.Key = c.Name
				break
			}
		}
	}
}

// timeoutError is the 504 of a query that ran out of time.
func timeoutError(limit time.Duration, cause error) error {
	return &apperr.Error{Kind: apperr.KindTimeout,
		Message: fmt.Sprintf("analytical query exceeded its time limit of %s", limit), Cause: cause}
}

// readOnlyError is the 403 of a query that tried to write.
func readOnlyError(cause error) error {
	return &apperr.Error{Kind: apperr.KindForbidden,
		Message: "analytical queries are read-only", Cause: cause}
}

// capError is the 422 of a sandboxed query beyond a scan or cost cap.
func capError(format string, args ...any) error {
	return apperr.New(apperr.KindRule, format, args...)
}

// authorError is the 400 of a sandboxed statement the server rejected: the author's
// mistake, shown with the server's message.
func authorError(msg string, cause error) error {
	msg = apperr.Clip(msg, 500)
	return &apperr.Error{Kind: apperr.KindInvalid, Message: "SQL error: " + msg, Cause: cause,
		Violations: []apperr.FieldViolation{{Field: "sql", Rule: "sql.server", Message: msg}}}
}

// queryError is the 500 of a SQL error: compiled queries that fail are bugs.
func queryError(cause error) error {
	return apperr.Internal(fmt.Errorf("warehouse query: %w", cause))
}

// checkSelect accepts one SELECT statement (WITH ... SELECT included) and strips a trailing
// semicolon. Anything else is refused before it reaches the store: the stores also refuse
// writes (read-only transaction, readonly setting), this only makes the answer uniform.
func checkSelect(sql string) (string, error) {
	sql = strings.TrimRight(strings.TrimSpace(sql), "; \t\r\n")
	switch strings.ToUpper(firstKeyword(sql)) {
	case "SELECT", "WITH":
		return sql, nil
	case "":
		return "", queryError(errors.New("empty statement"))
	default:
		return "", readOnlyError(fmt.Errorf("statement %q is not a SELECT", firstKeyword(sql)))
	}
}

// firstKeyword is the first word of sql after white space, comments and opening
// parentheses.
func firstKeyword(sql string) string {
	for {
		sql = strings.TrimLeft(sql, " \t\r\n(")
		switch {
		case strings.HasPrefix(sql, "--"):
			_, rest, ok := strings.Cut(sql, "\n")
			if !ok {
				return ""
			}
			sql = rest
		case strings.HasPrefix(sql, "/*"):
			_, rest, ok := strings.Cut(sql[2:], "*/")
			if !ok {
				return ""
			}
			sql = rest
		default:
			end := strings.IndexFunc(sql, func(r rune) bool {
				return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_')
			})
			if end < 0 {
				return sql
			}
			return sql[:end]
		}
	}
}

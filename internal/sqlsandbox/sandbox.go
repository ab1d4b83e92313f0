// Package sqlsandbox runs SQL written by someone else (a user, a language model, the
// built-in NL2SQL provider) against the analytical store without trusting it.
//
// Every statement is parsed with a real parser (PostgreSQL: libpg_query through
// github.com/pganalyze/pg_query_go/v6; ClickHouse: github.com/sqlc-dev/doubleclick), checked
// against an allowlist (one SELECT over the catalog's basic_* and diy_* tables, allowlisted
// functions and types, no INTO, locking, COPY, SET, settings, formats, table functions,
// system tables or parameters), and rewritten: every table reference becomes a subquery that
// keeps only the caller's tenant (and the caller's row filters), and the top-level LIMIT is
// capped. The SQL that runs is the printed tree, with the tenant and row-filter values bound
// as parameters (PostgreSQL) or printed by the sandbox as integer or quoted literals
// (ClickHouse). The store then runs it with its own defences: a role that may only SELECT the
// analytics schema, a READ ONLY transaction, statement_timeout and a row cap through a cursor
// on PostgreSQL; readonly=1, max_execution_time, max_rows_to_read and max_result_rows on
// ClickHouse. SANDBOX.md beside this file states the rules, the caps and their variables.
package sqlsandbox

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/shopmind/shopmind/internal/analytics/catalog"
	"github.com/shopmind/shopmind/internal/analytics/warehouse"
	"github.com/shopmind/shopmind/internal/apperr"
)

// Dialects, the same names as the warehouse's.
const (
	Postgres   = warehouse.DialectPostgres
	ClickHouse = warehouse.DialectClickHouse
)

// Defaults of Config.
const (
	DefaultMaxRows     = 1000
	DefaultTimeout     = 10 * time.Second
	DefaultMaxScanRows = 50_000_000
	DefaultMaxCost     = 50_000_000
	DefaultRole        = "shopmind_sandbox"
	DefaultMaxConns    = 4
	// HardMaxRows bounds MaxRows whatever the configuration says.
	HardMaxRows = 100_000
)

// Config holds the sandbox's caps (ConfigFromEnv reads them from the environment).
type Config struct {
	// MaxRows is the most rows a query returns (a caller may ask for fewer); the top-level
	// LIMIT is capped at MaxRows+1 so a longer result is detected and marked Truncated.
	MaxRows int
	// Timeout bounds a query's execution: statement_timeout / max_execution_time (504).
	Timeout time.Duration
	// MaxScanRows is ClickHouse's max_rows_to_read (422 beyond it).
	MaxScanRows int64
	// MaxCost is PostgreSQL's planner cost cap: a statement whose EXPLAIN total cost is
	// higher is refused with 422 before it runs.
	MaxCost float64
	// Role is the PostgreSQL role queries run as: Open logs in as it (and also SETs it
	// LOCAL); it may only SELECT the analytics schema. EnsureRole creates it.
	Role string
	// Password is the role's password, for servers that ask for one (empty: none is set).
	Password string
	// MaxConns bounds the role's pool (PostgreSQL).
	MaxConns int
}

// Environment variables of the sandbox (documented in SANDBOX.md).
const (
	EnvMaxRows     = "SHOPMIND_SANDBOX_MAX_ROWS"
	EnvTimeout     = "SHOPMIND_SANDBOX_TIMEOUT"
	EnvMaxScanRows = "SHOPMIND_SANDBOX_MAX_SCAN_ROWS"
	EnvMaxCost     = "SHOPMIND_SANDBOX_MAX_COST"
	EnvRole        = "SHOPMIND_SANDBOX_ROLE"
	EnvPassword    = "SHOPMIND_SANDBOX_PASSWORD"
	EnvMaxConns    = "SHOPMIND_SANDBOX_MAX_CONNS"
)

// DefaultConfig is the configuration with every default.
func DefaultConfig() Config {
	return Config{MaxRows: DefaultMaxRows, Timeout: DefaultTimeout, MaxScanRows: DefaultMaxScanRows,
		MaxCost: DefaultMaxCost, Role: DefaultRole, MaxConns: DefaultMaxConns}
}

// ConfigFromEnv reads the SHOPMIND_SANDBOX_* variables through getenv (os.Getenv when nil);
// a malformed value is an error naming the variable.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	c := DefaultConfig()
	if v := getenv(EnvMaxRows); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > HardMaxRows {
			return c, fmt.Errorf("%s: want an integer from 1 to %d, got %q", EnvMaxRows, HardMaxRows, v)
		}
		c.MaxRows = n
	}
	if v := getenv(EnvTimeout); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Millisecond || d > time.Hour {
			return c, fmt.Errorf("%s: want a duration from 1ms to 1h (e.g. 10s), got %q", EnvTimeout, v)
		}
		c.Timeout = d
	}
	if v := getenv(EnvMaxScanRows); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return c, fmt.Errorf("%s: want a positive integer, got %q", EnvMaxScanRows, v)
		}
		c.MaxScanRows = n
	}
	if v := getenv(EnvMaxCost); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			return c, fmt.Errorf("%s: want a positive number, got %q", EnvMaxCost, v)
		}
		c.MaxCost = f
	}
	if v := getenv(EnvRole); v != "" {
		if !identOK(v) {
			return c, fmt.Errorf("%s: want a lower-case identifier, got %q", EnvRole, v)
		}
		c.Role = v
	}
	c.Password = getenv(EnvPassword)
	if v := getenv(EnvMaxConns); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return c, fmt.Errorf("%s: want an integer from 1 to 1000, got %q", EnvMaxConns, v)
		}
		c.MaxConns = n
	}
	return c, nil
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.MaxRows <= 0 {
		c.MaxRows = d.MaxRows
	}
	c.MaxRows = min(c.MaxRows, HardMaxRows)
	if c.Timeout <= 0 {
		c.Timeout = d.Timeout
	}
	if c.MaxScanRows <= 0 {
		c.MaxScanRows = d.MaxScanRows
	}
	if c.MaxCost <= 0 {
		c.MaxCost = d.MaxCost
	}
	if c.Role == "" {
		c.Role = d.Role
	}
	if c.MaxConns <= 0 {
		c.MaxConns = d.MaxConns
	}
	return c
}

// identOK: a lower-case SQL identifier that needs no quoting.
func identOK(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r == '_':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// RowFilter keeps only the rows whose Column is one of Values. Table names the table it
// applies to; empty applies it to every table that has Column (tables without it are left
// alone). Values are int64 (int is accepted) or string; an empty Values keeps no rows.
type RowFilter struct {
	Table  string
	Column string
	Values []any
}

// Scope is who the query runs for: the tenant (mandatory, positive) and the row filters of
// the caller's policy.
type Scope struct {
	TenantID   int64
	RowFilters []RowFilter
}

// ShopFilter is the row filter of a policy limited to shops: shop_id IN ids on every table
// that has a shop_id column (basic_shops, basic_goods, basic_orders, basic_order_items and
// diy tables with one).
func ShopFilter(ids []int64) RowFilter {
	vals := make([]any, len(ids))
	for i, id := range ids {
		vals[i] = id
	}
	return RowFilter{Column: "shop_id", Values: vals}
}

// Rewritten is a checked and rewritten statement, ready to run.
type Rewritten struct {
	Dialect string
	// SQL is the statement that runs: the printed, rewritten tree.
	SQL string
	// Args are the bound parameters of SQL ($1..$n on PostgreSQL; none on ClickHouse,
	// where the sandbox prints the tenant and filter values itself).
	Args []any
	// Tables are the catalog tables the statement reads, sorted, without repeats.
	Tables []string
	// Limit is the top-level LIMIT the statement now carries (max rows + 1).
	Limit int
}

// Result is a query's answer.
type Result struct {
	Columns   []warehouse.ResultColumn
	Rows      [][]any
	Truncated bool
	Elapsed   time.Duration
	// SQLRun is the SQL actually run (Rewritten.SQL) and Args its bound parameters.
	SQLRun string
	Args   []any
}

// CatalogFunc returns the tables a statement may read.
type CatalogFunc func(ctx context.Context) (*catalog.Catalog, error)

// Sandbox checks, rewrites and runs untrusted SQL against one analytical store.
type Sandbox struct {
	cfg     Config
	store   warehouse.Store
	catalog CatalogFunc
	pool    *pgxpool.Pool // PostgreSQL: logged in as the sandbox role (Open); nil: SET ROLE only
}

// Open is New plus, on PostgreSQL, the role: EnsureRole through the platform pool, then a
// pool of its own logged in as the role (OpenPool). Close releases that pool. This is the
// constructor services use; New alone runs PostgreSQL statements on the store's pool with
// SET LOCAL ROLE, which a superuser platform account could undo (see SANDBOX.md).
func Open(ctx context.Context, cfg Config, store warehouse.Store, platform *pgxpool.Pool) (*Sandbox, error) {
	s := New(cfg, store)
	if store == nil || store.Dialect() != Postgres {
		return s, nil
	}
	if platform == nil {
		return nil, errors.New("sqlsandbox: the PostgreSQL store needs the platform pool")
	}
	if err := EnsureRoleWithPassword(ctx, platform, s.cfg.Role, s.cfg.Password); err != nil {
		return nil, err
	}
	pool, err := OpenPool(ctx, platform, s.cfg)
	if err != nil {
		return nil, err
	}
	s.pool = pool
	return s, nil
}

// Close releases the role's pool (when Open made one).
func (s *Sandbox) Close() {
	if s.pool != nil {
		s.pool.Close()
	}
}

// New builds a sandbox over store with cfg's caps (zero fields take the defaults). The
// tables allowed are the store's catalog (basic_* and the usable diy_* tables), read on
// every call; WithCatalog replaces that source (a cache, a fixed catalog in tests).
func New(cfg Config, store warehouse.Store) *Sandbox {
	s := &Sandbox{cfg: cfg.withDefaults(), store: store}
	if store != nil {
		s.catalog = store.Catalog
	} else {
		s.catalog = func(context.Context) (*catalog.Catalog, error) { return catalog.Base(), nil }
	}
	return s
}

// WithCatalog makes the sandbox read its allowed tables from fn and returns it.
func (s *Sandbox) WithCatalog(fn CatalogFunc) *Sandbox {
	s.catalog = fn
	return s
}

// Config is the sandbox's effective configuration.
func (s *Sandbox) Config() Config { return s.cfg }

// Dialect is the store's dialect (PostgreSQL without a store).
func (s *Sandbox) Dialect() string {
	if s.store == nil {
		return Postgres
	}
	return s.store.Dialect()
}

// Rewrite checks sql and rewrites it for scope without running it; maxRows <= 0 or above
// the configured cap takes the cap. Refusals are 400 errors naming the reason.
func (s *Sandbox) Rewrite(ctx context.Context, scope Scope, sql string, maxRows int) (*Rewritten, error) {
	cat, err := s.catalog(ctx)
	if err != nil {
		return nil, err
	}
	return Rewrite(s.Dialect(), cat, scope, sql, s.limit(maxRows))
}

// Check reports whether sql would be accepted (for a placeholder tenant), without running
// it: nil, or the 400 naming the reason.
func (s *Sandbox) Check(ctx context.Context, sql string) error {
	_, err := s.Rewrite(ctx, Scope{TenantID: 1}, sql, 0)
	return err
}

func (s *Sandbox) limit(maxRows int) int {
	if maxRows <= 0 || maxRows > s.cfg.MaxRows {
		return s.cfg.MaxRows
	}
	return maxRows
}

// Run checks, rewrites and runs sql for scope, returning at most maxRows rows (the cap when
// maxRows <= 0 or above it). Errors: 400 refused (the reason named) or a SQL error in the
// statement (the server's message), 422 a scan or cost cap, 504 the time cap.
func (s *Sandbox) Run(ctx context.Context, scope Scope, sql string, maxRows int) (*Result, error) {
	if s.store == nil {
		return nil, errors.New("sqlsandbox: Run needs a store")
	}
	maxRows = s.limit(maxRows)
	rw, err := s.Rewrite(ctx, scope, sql, maxRows)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	res, err := s.store.Query(ctx, rw.SQL, rw.Args, warehouse.QueryOptions{
		MaxRows: maxRows, Timeout: s.cfg.Timeout,
		Untrusted: &warehouse.Untrusted{Pool: s.pool, Role: s.cfg.Role, MaxScanRows: s.cfg.MaxScanRows, MaxCost: s.cfg.MaxCost},
	})
	if err != nil {
		return nil, err
	}
	return &Result{Columns: res.Columns, Rows: res.Rows, Truncated: res.Truncated,
		Elapsed: time.Since(start), SQLRun: rw.SQL, Args: rw.Args}, nil
}

// Rewrite checks sql in dialect against cat and rewrites it for scope with the top-level
// LIMIT capped at limit+1. It is the pure core of Sandbox.Rewrite.
func Rewrite(dialect string, cat *catalog.Catalog, scope Scope, sql string, limit int) (*Rewritten, error) {
	if scope.TenantID <= 0 {
		return nil, apperr.New(apperr.KindForbidden, "the SQL sandbox needs the caller's tenant")
	}
	if err := checkFilters(cat, scope.RowFilters); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = DefaultMaxRows
	}
	switch dialect {
	case Postgres:
		return rewritePostgres(cat, scope, sql, limit+1)
	case ClickHouse:
		return rewriteClickHouse(cat, scope, sql, limit+1)
	default:
		return nil, fmt.Errorf("sqlsandbox: unknown dialect %q", dialect)
	}
}

func checkFilters(cat *catalog.Catalog, filters []RowFilter) error {
	for _, f := range filters {
		if !identOK(f.Column) || (f.Table != "" && cat.Table(f.Table) == nil) {
			return fmt.Errorf("sqlsandbox: bad row filter %s.%s", f.Table, f.Column)
		}
		if f.Table != "" && cat.Table(f.Table).Column(f.Column) == nil {
			return fmt.Errorf("sqlsandbox: row filter column %s.%s does not exist", f.Table, f.Column)
		}
		for _, v := range f.Values {
			switch v.(type) {
			case int64, int, string:
			default:
				return fmt.Errorf("sqlsandbox: row filter %s: value %v (%T) is not an int64 or string", f.Column, v, v)
			}
		}
	}
	return nil
}

// filtersFor is the row filters that apply to table t.
func filtersFor(t *catalog.Table, filters []RowFilter) []RowFilter {
	var out []RowFilter
	for _, f := range filters {
		if (f.Table == "" || f.Table == t.Name) && t.Column(f.Column) != nil {
			out = append(out, f)
		}
	}
	return out
}

// refused is the 400 of a statement the sandbox does not accept.
func refused(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	return &apperr.Error{Kind: apperr.KindInvalid, Message: "SQL refused by the sandbox: " + msg,
		Violations: []apperr.FieldViolation{{Field: "sql", Rule: "sql.sandbox", Message: msg}}}
}

// Pool is the pool logged in as the sandbox role (nil unless Open made one).
func (s *Sandbox) Pool() *pgxpool.Pool { return s.pool }

// LoadConfig is ConfigFromEnv in the shape of a service's configuration loader: the
// configuration (the defaults where a value is malformed) and a message per malformed value.
func LoadConfig(getenv func(string) string) (Config, []string) {
	c, err := ConfigFromEnv(getenv)
	if err != nil {
		return DefaultConfig(), []string{err.Error()}
	}
	return c, nil
}

// Functions lists the functions a statement may call in dialect, sorted.
func Functions(dialect string) []string {
	set := pgFunctions
	if dialect == ClickHouse {
		set = chFunctions
	}
	return slices.Sorted(maps.Keys(set))
}

// Rules states what the sandbox enforces in dialect, one sentence each (the chat tool
// get_database_info and GetSqlSandbox show them).
func (s *Sandbox) Rules() []string {
	c := s.cfg
	rules := []string{
		"Exactly one statement, a SELECT (WITH ... SELECT, subqueries, joins, UNION, aggregates allowed); anything else is refused with 400 naming the reason.",
		"Only the analytics tables (basic_* and diy_*) may be read; system catalogs, information_schema, pg_* and system.* tables are refused.",
		"Every table reference is rewritten to read only your tenant's rows (and your policy's row filters): filtering on i_tenant_id yourself changes nothing.",
		"Only the listed functions may be called; unknown functions, settings functions, sleeps, file, program, large-object and network functions are refused.",
		"No SELECT INTO, FOR UPDATE/SHARE, COPY, SET, parameters ($1), SETTINGS, FORMAT or INTO OUTFILE.",
		fmt.Sprintf("At most %d rows come back (the top-level LIMIT is capped at %d); a longer result is cut and marked truncated.", c.MaxRows, c.MaxRows+1),
		fmt.Sprintf("A statement may run for %s; beyond it the answer is 504.", c.Timeout),
	}
	if s.Dialect() == ClickHouse {
		rules = append(rules,
			fmt.Sprintf("A statement may read at most %d rows (max_rows_to_read); beyond it the answer is 422.", c.MaxScanRows),
			"Statements run with readonly=1, max_execution_time, max_rows_to_read and max_result_rows set per query. ClickHouse 18.16 allows one JOIN per SELECT (with ANY or ALL), no window functions; PREWHERE, FINAL, SAMPLE and ARRAY JOIN are refused.")
	} else {
		rules = append(rules,
			fmt.Sprintf("A statement whose planner cost estimate exceeds %.0f is refused with 422 before it runs.", c.MaxCost),
			"Statements run in a READ ONLY transaction as a database role that may only SELECT the analytics schema, with statement_timeout set.")
	}
	return rules
}

package semantic

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/shopmind/shopmind/internal/analytics/catalog"
)

// Dialect is what differs between the SQL of the analytical stores. The exported methods
// are the building blocks a caller may want to reuse (placeholders, quoting, time buckets,
// safe division); the unexported ones decide the shape of the statement (joins, casts,
// ordering) and seal the interface: the only dialects are Postgres() and ClickHouse().
type Dialect interface {
	// Name is "postgres" or "clickhouse".
	Name() string
	// Placeholder is the SQL text of the n-th (1-based) bound parameter: $n or ?.
	Placeholder(n int) string
	// Quote quotes an identifier (a catalog name, never input text).
	Quote(ident string) string
	// TimeBucket truncates the timestamp expression expr to the start of its UTC day, ISO
	// week (Monday) or month; granularity is "day", "week" or "month".
	TimeBucket(granularity, expr string) string
	// SafeDivide divides num by den, NULL when den is 0.
	SafeDivide(num, den string) string

	// numbered reports whether placeholders are numbered ($n, reusable) rather than
	// positional (?, one argument per occurrence in text order).
	numbered() bool
	// nestedJoins selects the join shape: PostgreSQL joins tables with ON clauses;
	// ClickHouse (18.16 allows one JOIN per SELECT, equality ON/USING only) chains
	// subqueries joined with ANY LEFT JOIN ... USING.
	nestedJoins() bool
	aggregate(agg, expr string, colType catalog.Type, totals bool) string
	// aggregateIf aggregates the rows meeting cond only; additive aggregates are 0 over no row.
	aggregateIf(agg, expr string, colType catalog.Type, totals bool, cond string) string
	toFloat(expr string) string
	floatParam(ph string) string
	nullable(expr string, t catalog.Type) string
	nullOf(t catalog.Type) string
	orderKey(pos int, alias string, desc bool) string
	groupKey(pos int, alias string) string
}

// Postgres is the PostgreSQL dialect: numbered placeholders $1..$n, double-quoted
// identifiers, date_trunc on the UTC wall clock of timestamptz columns.
func Postgres() Dialect { return postgres{} }

// ClickHouse is the ClickHouse dialect: positional ? placeholders (bound by clickhouse-go),
// backquoted identifiers, toStartOfDay / toMonday / toStartOfMonth in UTC. The SQL keeps to
// what ClickHouse 18.16 accepts and current ClickHouse still does: one JOIN per SELECT
// (ANY LEFT JOIN of a subquery USING one key), UNION ALL of typed Nullable columns in a
// subquery, NULLIF, CAST(x AS Nullable(T)), aliases in GROUP BY and ORDER BY.
func ClickHouse() Dialect { return clickhouse{} }

type postgres struct{}

func (postgres) Name() string                  { return "postgres" }
func (postgres) Placeholder(n int) string      { return "$" + strconv.Itoa(n) }
func (postgres) numbered() bool                { return true }
func (postgres) nestedJoins() bool             { return false }
func (postgres) Quote(ident string) string     { return `"` + strings.ReplaceAll(ident, `"`, `""`) + `"` }
func (postgres) SafeDivide(n, d string) string { return n + " / NULLIF(" + d + ", 0)" }
func (postgres) toFloat(expr string) string    { return "CAST(" + expr + " AS double precision)" }
func (postgres) floatParam(ph string) string {
	return "CAST(" + ph + " AS double precision)"
}

func (postgres) TimeBucket(g, expr string) string {
	return "date_trunc('" + g + "', " + expr + " AT TIME ZONE 'UTC')"
}

func (postgres) aggregate(agg, expr string, t catalog.Type, totals bool) string {
	switch agg {
	case "sum":
		s := "sum(" + expr + ")"
		if t == catalog.TypeInt {
			s = "CAST(" + s + " AS bigint)" // sum(bigint) is numeric
		}
		if totals {
			s = "COALESCE(" + s + ", 0)" // a sum over no row is 0, as in ClickHouse
		}
		return s
	case "count":
		return "count(" + expr + ")"
	case "count_distinct":
		return "count(DISTINCT " + expr + ")"
	case "avg":
		if t == catalog.TypeInt {
			return "CAST(avg(" + expr + ") AS double precision)" // avg(bigint) is numeric
		}
		return "avg(" + expr + ")"
	default: // min, max
		return agg + "(" + expr + ")"
	}
}

func (p postgres) aggregateIf(agg, expr string, t catalog.Type, totals bool, cond string) string {
	filter := " FILTER (WHERE " + cond + ")"
	switch agg {
	case "sum":
		s := "sum(" + expr + ")" + filter
		if t == catalog.TypeInt {
			s = "CAST(" + s + " AS bigint)"
		}
		return "COALESCE(" + s + ", 0)"
	case "count":
		return "count(" + expr + ")" + filter
	case "count_distinct":
		return "count(DISTINCT " + expr + ")" + filter
	case "avg":
		if t == catalog.TypeInt {
			return "CAST(avg(" + expr + ")" + filter + " AS double precision)"
		}
		return "avg(" + expr + ")" + filter
	default:
		return agg + "(" + expr + ")" + filter
	}
}

func (postgres) nullable(expr string, _ catalog.Type) string { return expr }

func (postgres) nullOf(t catalog.Type) string {
	if t == catalog.TypeInt {
		return "CAST(NULL AS bigint)"
	}
	return "CAST(NULL AS double precision)"
}

func (postgres) orderKey(pos int, _ string, desc bool) string {
	if desc {
		return strconv.Itoa(pos) + " DESC NULLS LAST"
	}
	return strconv.Itoa(pos) + " ASC"
}

func (postgres) groupKey(pos int, _ string) string { return strconv.Itoa(pos) }

type clickhouse struct{}

func (clickhouse) Name() string              { return "clickhouse" }
func (clickhouse) Placeholder(int) string    { return "?" }
func (clickhouse) numbered() bool            { return false }
func (clickhouse) nestedJoins() bool         { return true }
func (clickhouse) Quote(ident string) string { return chQuotes.quote(ident) }
func (clickhouse) SafeDivide(n, d string) string {
	return n + " / NULLIF(" + d + ", 0)"
}
func (clickhouse) toFloat(expr string) string  { return "toFloat64(" + expr + ")" }
func (clickhouse) floatParam(ph string) string { return "toFloat64(" + ph + ")" }

func (clickhouse) TimeBucket(g, expr string) string {
	switch g {
	case "day":
		return "toStartOfDay(" + expr + ", 'UTC')"
	case "week":
		return "toMonday(" + expr + ", 'UTC')"
	default:
		return "toStartOfMonth(" + expr + ", 'UTC')"
	}
}

func (clickhouse) aggregate(agg, expr string, _ catalog.Type, totals bool) string {
	switch agg {
	case "count_distinct":
		return "uniqExact(" + expr + ")"
	case "avg", "min", "max":
		if totals {
			// Over no row avg is nan and min/max 0; over a Nullable argument they are NULL,
			// as in PostgreSQL (18.16 has no -OrNull combinator).
			return agg + "(toNullable(" + expr + "))"
		}
	}
	return agg + "(" + expr + ")"
}

func (clickhouse) aggregateIf(agg, expr string, _ catalog.Type, _ bool, cond string) string {
	switch agg {
	case "count_distinct":
		return "uniqExactIf(" + expr + ", " + cond + ")"
	case "avg", "min", "max":
		// Over no matching row these are NULL, as in PostgreSQL.
		return agg + "If(toNullable(" + expr + "), " + cond + ")"
	}
	return agg + "If(" + expr + ", " + cond + ")"
}

func (clickhouse) nullable(expr string, t catalog.Type) string {
	return "CAST(" + expr + " AS " + chNullable(t) + ")"
}

func (clickhouse) nullOf(t catalog.Type) string { return "CAST(NULL AS " + chNullable(t) + ")" }

func chNullable(t catalog.Type) string {
	if t == catalog.TypeInt {
		return "Nullable(Int64)"
	}
	return "Nullable(Float64)"
}

func (c clickhouse) orderKey(_ int, alias string, desc bool) string {
	// ClickHouse puts NULLs last in both directions.
	if desc {
		return c.Quote(alias) + " DESC"
	}
	return c.Quote(alias) + " ASC"
}

func (c clickhouse) groupKey(_ int, alias string) string { return c.Quote(alias) }

// quoteCache remembers quoted identifiers (catalog names, output names and internal aliases
// recur in every statement); it stops growing at maxQuoted entries.
type quoteCache struct {
	q     string
	m     sync.Map
	count atomic.Int64
}

const maxQuoted = 10000

var (
	pgQuotes = &quoteCache{q: `"`}
	chQuotes = &quoteCache{q: "`"}
)

func (c *quoteCache) quote(ident string) string {
	if v, ok := c.m.Load(ident); ok {
		return v.(string)
	}
	out := c.q + strings.ReplaceAll(ident, c.q, c.q+c.q) + c.q
	if c.count.Load() < maxQuoted {
		if _, loaded := c.m.LoadOrStore(ident, out); !loaded {
			c.count.Add(1)
		}
	}
	return out
}

package warehouse

import "strconv"

// Helpers for code outside the semantic layer that writes its own SQL for Store.Query (the
// basic service's orders listing): the dialect's placeholders and table names.

// Placeholder is the n-th (1-based) bind placeholder of a dialect: $n on PostgreSQL, ? on
// ClickHouse (bound client-side by the driver, in argument order).
func Placeholder(dialect string, n int) string {
	if dialect == DialectClickHouse {
		return "?"
	}
	return "$" + strconv.Itoa(n)
}

// TableName is a base table as a dialect's SQL names it: analytics.<name> on PostgreSQL
// (Query also sets search_path, the schema only makes it explicit), the bare name on
// ClickHouse (the connection's database).
func TableName(dialect, name string) string {
	if dialect == DialectClickHouse {
		return name
	}
	return PostgresSchema + "." + name
}

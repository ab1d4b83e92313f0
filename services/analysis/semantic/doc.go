// Package semantic is the semantic layer of the analysis service: it checks metric
// definitions against the analytics catalog and compiles structured analysis queries into
// one SQL statement for PostgreSQL or ClickHouse.
//
// # Metrics
//
//   - derived: aggregation(source_field) over the rows of the source column's table, placed
//     in the query's period by time_range_field (default: the table's time column; it may
//     also be a time column of a table the source table reaches, e.g. basic_orders.paid_at
//     for a basic_order_items metric). source_field is `column` (unique in the catalog, or
//     the key of exactly one table) or `table.column`. sum, avg, min and max need a numeric
//     measure column; count (non-NULL values) and count_distinct take any column.
//   - order: an aggregation over basic_orders: order_field columns with the role measure
//     (amounts, quantities) are summed; identifier columns (role dimension: order_id — also
//     written "id" —, order_no, buyer_id) are counted distinct. time_basis (ordered_at,
//     paid_at, shipped_at, completed_at) places orders in the period; query_condition is
//     ANDed (a NULL time_basis never matches).
//   - formula: arithmetic (+ - * /, unary minus, parentheses, decimal numbers) over other
//     metrics by name, formulas over formulas allowed, computed at the grain of the query
//     (per time bucket and dimension values) from its dependencies' values there. Division
//     by zero is NULL (x / NULLIF(y, 0), in both dialects); integer operands are converted
//     to float first, so 3 / 2 is 1.5. A dependency with no row in a group counts 0 when
//     it is additive (sum, count, count_distinct, order metrics) and NULL otherwise (avg,
//     min, max); NULL propagates through the arithmetic.
//
// # Queries
//
// Query.Metrics are computed per time bucket (Granularity day, week = ISO week starting
// Monday, or month; UTC) and per value of the Dimensions, over [Start, End). A dimension is
// a named one (shop, goods, category, root_category, staff, platform, status: the catalog's
// key column, with its label column — shop_name, goods_name, category_name,
// root_category_name — as an extra result column)
// or a catalog dimension column, `table.column` or `column` (the nearest table having it,
// per metric). A metric is split by a dimension through the catalog's joins, followed in the
// many-to-one direction only, so the joins never multiply the fact rows; a dimension a
// metric's table cannot reach is refused (422). A foreign key stands for the column it
// references: orders split by shop read basic_orders.shop_id, without joining basic_shops.
// Filters (on dimensions or any catalog column) restrict the fact rows of every metric, and
// must be reachable from every metric's table. Sort keys are metric names, dimensions or
// "time"; the default is time ascending, then the first metric descending; the remaining
// time bucket and dimensions always follow as tie-breakers, so LIMIT is deterministic.
// Result columns: time (when bucketed), each dimension (followed by its label), then the
// requested metrics (formula dependencies that were not requested are computed, not
// output).
//
// # SQL
//
// One statement per query, with bound parameters only: every value (tenant, period, filter
// operands, formula numbers, the limit) is a placeholder ($n in PostgreSQL, ? in ClickHouse
// in text order); identifiers come from the catalog, never from input text, and are quoted.
// Every table reference — fact tables, joined dimension tables and label tables — carries
// its own `i_tenant_id = <tenant>` predicate.
//
// Base metrics sharing a table and a time column are computed in one scan ("group"): one
// aggregating SELECT over the fact table joined (LEFT JOIN, many-to-one) along the shortest
// catalog paths to the dimension and filter columns, grouped by the time bucket and
// dimensions. Conditions shared by all its metrics go to the WHERE clause; otherwise each
// metric aggregates under its own (FILTER (WHERE ...) in PostgreSQL, the -If combinators in
// ClickHouse). One group and no label: that SELECT is the statement, formulas
// inlined, as one would write it by hand. Several groups: UNION ALL of the groups, each
// filling its own metric columns and NULL for the others, aggregated again by the keys
// (portable to ClickHouse 18.16, whose JOIN support is limited). Labels are joined after
// aggregation, formulas computed in the outermost SELECT, then ORDER BY and LIMIT.
//
// PostgreSQL joins tables with ON clauses. ClickHouse gets the subset both 18.16 and
// current releases accept: one JOIN per SELECT, as ANY LEFT JOIN of a tenant-filtered
// subquery USING one key aliased alike on both sides, joined subqueries aliased (current
// releases require it by default); typed Nullable columns in UNION
// ALL; NULLIF; aggregates over toNullable(x) for totals (no -OrNull combinator in 18.16).
// ClickHouse's LEFT JOIN gives default values (0, empty string) rather than NULL for a fact
// row whose dimension row is missing; PostgreSQL gives NULL.
package semantic

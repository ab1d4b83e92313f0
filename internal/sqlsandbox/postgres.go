package sqlsandbox

import (
	"maps"
	"slices"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/shopmind/shopmind/internal/analytics/catalog"
	"github.com/shopmind/shopmind/internal/analytics/warehouse"
)

// pgAllowedNodes are the parse-tree node types a statement may contain: anything else (a
// RangeFunction, a ParamRef, an IntoClause, a LockingClause, XML, a sampling clause ...)
// is refused before any other check. The walker below visits every message of the tree.
var pgAllowedNodes = setOf(
	"Node", "List", "String", "Integer", "Float", "Boolean", "BitString",
	"SelectStmt", "ResTarget", "ColumnRef", "A_Const", "A_Star", "A_Expr", "BoolExpr",
	"FuncCall", "TypeCast", "TypeName", "SubLink", "CaseExpr", "CaseWhen", "CoalesceExpr",
	"MinMaxExpr", "NullTest", "BooleanTest", "SortBy", "WindowDef", "WithClause",
	"CommonTableExpr", "RangeSubselect", "JoinExpr", "Alias", "A_ArrayExpr", "RowExpr",
	"SQLValueFunction", "GroupingSet", "GroupingFunc", "A_Indirection", "A_Indices",
	"NamedArgExpr", "RangeVar",
)

// pgFunctions are the functions a statement may call (by name, optionally qualified with
// pg_catalog): aggregates, window functions, date/time, arithmetic, string and conditional
// functions. Nothing that reads files, the server's settings or catalogs, sleeps, writes,
// reaches the network or other databases, or produces unbounded rows.
var pgFunctions = setOf(
	// aggregates
	"count", "sum", "avg", "min", "max", "stddev", "stddev_pop", "stddev_samp", "variance",
	"var_pop", "var_samp", "percentile_cont", "percentile_disc", "mode", "string_agg",
	"array_agg", "bool_and", "bool_or", "every", "corr", "covar_pop", "covar_samp",
	"regr_slope", "regr_intercept", "regr_r2", "regr_count", "regr_avgx", "regr_avgy",
	// window
	"row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag", "lead",
	"first_value", "last_value", "nth_value",
	// date and time
	"date_trunc", "date_part", "extract", "to_char", "to_date", "to_timestamp", "now",
	"make_date", "make_time", "make_timestamp", "make_timestamptz", "make_interval", "age",
	"date_bin", "timezone", "justify_days", "justify_hours", "justify_interval",
	"isfinite", "overlaps",
	// numbers
	"abs", "round", "ceil", "ceiling", "floor", "trunc", "power", "pow", "sqrt", "cbrt", "ln",
	"log", "log10", "exp", "mod", "sign", "div", "width_bucket", "greatest", "least",
	"to_number", "numeric", "float8", "int8", "int4", "random",
	// strings
	"lower", "upper", "length", "char_length", "character_length", "octet_length",
	"substring", "substr", "btrim", "ltrim", "rtrim", "trim", "concat", "concat_ws",
	"replace", "left", "right", "position", "strpos", "split_part", "initcap", "lpad",
	"rpad", "reverse", "starts_with", "translate", "md5", "regexp_replace", "regexp_match",
	"regexp_like", "format", "coalesce", "nullif", "textcat",
	// arrays
	"array_length", "cardinality", "array_to_string",
)

// pgTypes are the types a cast may name.
var pgTypes = setOf(
	"int2", "int4", "int8", "smallint", "integer", "int", "bigint", "numeric", "decimal",
	"float4", "float8", "real", "double precision", "text", "varchar", "bpchar", "char",
	"date", "timestamp", "timestamptz", "time", "timetz", "interval", "bool", "boolean",
)

// pgStatementNames name refused statements in the answer.
var pgStatementNames = map[string]string{
	"InsertStmt": "INSERT", "UpdateStmt": "UPDATE", "DeleteStmt": "DELETE", "MergeStmt": "MERGE",
	"CopyStmt": "COPY", "VariableSetStmt": "SET", "VariableShowStmt": "SHOW",
	"TransactionStmt": "a transaction command", "CreateStmt": "CREATE TABLE",
	"CreateTableAsStmt": "CREATE TABLE AS", "DropStmt": "DROP", "TruncateStmt": "TRUNCATE",
	"AlterTableStmt": "ALTER TABLE", "GrantStmt": "GRANT", "GrantRoleStmt": "GRANT",
	"DoStmt": "DO", "CallStmt": "CALL", "ExplainStmt": "EXPLAIN", "PrepareStmt": "PREPARE",
	"ExecuteStmt": "EXECUTE", "LockStmt": "LOCK", "ListenStmt": "LISTEN",
	"NotifyStmt": "NOTIFY", "VacuumStmt": "VACUUM", "CreateFunctionStmt": "CREATE FUNCTION",
	"ViewStmt": "CREATE VIEW", "DeclareCursorStmt": "DECLARE", "FetchStmt": "FETCH",
	"AlterRoleStmt": "ALTER ROLE", "CreateRoleStmt": "CREATE ROLE", "LoadStmt": "LOAD",
	"CreateExtensionStmt": "CREATE EXTENSION", "AlterSystemStmt": "ALTER SYSTEM",
	"DiscardStmt": "DISCARD", "CheckPointStmt": "CHECKPOINT", "ReindexStmt": "REINDEX",
	"ClusterStmt": "CLUSTER", "RefreshMatViewStmt": "REFRESH MATERIALIZED VIEW",
	"CreateSchemaStmt": "CREATE SCHEMA", "RuleStmt": "CREATE RULE",
	"CreateTrigStmt": "CREATE TRIGGER", "CommentStmt": "COMMENT", "SecLabelStmt": "SECURITY LABEL",
}

// pgNodeNames name refused node types in the answer.
var pgNodeNames = map[string]string{
	"RangeFunction": "a function in FROM (set-returning and table functions are not allowed)",
	"ParamRef":      "parameters ($1): write values into the statement",
	"IntoClause":    "SELECT INTO", "LockingClause": "FOR UPDATE/SHARE",
	"RangeTableSample": "TABLESAMPLE", "RangeTableFunc": "XMLTABLE",
	"CollateClause": "COLLATE", "XmlExpr": "XML functions", "XmlSerialize": "XMLSERIALIZE",
	"CTESearchClause": "SEARCH in a recursive CTE", "CTECycleClause": "CYCLE in a recursive CTE",
	"CurrentOfExpr": "WHERE CURRENT OF", "JsonFuncExpr": "SQL/JSON functions",
}

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// pgRewriter checks and rewrites one PostgreSQL statement.
type pgRewriter struct {
	cat    *catalog.Catalog
	scope  Scope
	args   []any
	params map[int]int32 // row filter index -> parameter number
	tables map[string]bool
}

// rewritePostgres parses sql with libpg_query, checks every node, replaces every table
// reference with a tenant-filtered subquery and caps the LIMIT.
func rewritePostgres(cat *catalog.Catalog, scope Scope, sql string, limit int) (*Rewritten, error) {
	tree, err := pg.Parse(sql)
	if err != nil {
		return nil, refused("the statement does not parse as PostgreSQL: %s", parseMessage(err))
	}
	switch len(tree.Stmts) {
	case 0:
		return nil, refused("the statement is empty")
	case 1:
	default:
		return nil, refused("exactly one statement is allowed, got %d", len(tree.Stmts))
	}
	sel := tree.Stmts[0].Stmt.GetSelectStmt()
	if sel == nil {
		kind := string(tree.Stmts[0].Stmt.ProtoReflect().WhichOneof(nodeOneof).Message().Name())
		if n, ok := pgStatementNames[kind]; ok {
			kind = n
		}
		return nil, refused("only SELECT is allowed, got %s", kind)
	}
	r := &pgRewriter{cat: cat, scope: scope, params: map[int]int32{}, tables: map[string]bool{}}
	if err := r.walk(sel.ProtoReflect(), nil); err != nil {
		return nil, err
	}
	if err := capLimit(sel, limit); err != nil {
		return nil, err
	}
	out, err := pg.Deparse(tree)
	if err != nil {
		return nil, refused("the rewritten statement cannot be printed: %v", err)
	}
	return &Rewritten{Dialect: Postgres, SQL: out, Args: r.args, Tables: slices.Sorted(maps.Keys(r.tables)), Limit: limit}, nil
}

// nodeOneof is the oneof of pg_query's Node wrapper.
var nodeOneof = (&pg.Node{}).ProtoReflect().Descriptor().Oneofs().ByName("node")

// walk visits m and everything below it. ctes are the CTE names visible here.
func (r *pgRewriter) walk(m protoreflect.Message, ctes []string) error {
	name := string(m.Descriptor().Name())
	if !pgAllowedNodes[name] {
		if n, ok := pgNodeNames[name]; ok {
			return refused("%s is not allowed", n)
		}
		return refused("%s is not allowed in the sandbox", name)
	}
	switch x := m.Interface().(type) {
	case *pg.Node:
		if rv := x.GetRangeVar(); rv != nil {
			return r.table(x, rv, ctes)
		}
	case *pg.RangeVar:
		return refused("a table reference outside FROM is not allowed")
	case *pg.SelectStmt:
		return r.selectStmt(x, ctes)
	case *pg.FuncCall:
		if err := checkFunc(x); err != nil {
			return err
		}
	case *pg.TypeName:
		if err := checkType(x); err != nil {
			return err
		}
	case *pg.SQLValueFunction:
		if x.Op >= pg.SQLValueFunctionOp_SVFOP_CURRENT_ROLE {
			return refused("session information functions (current_user, current_schema ...) are not allowed")
		}
	case *pg.ColumnRef:
		if err := checkColumnRef(x); err != nil {
			return err
		}
	case *pg.A_Expr:
		if len(x.Name) > 1 {
			return refused("qualified operators (OPERATOR(schema.op)) are not allowed")
		}
	case *pg.SubLink:
		if x.SubLinkType == pg.SubLinkType_CTE_SUBLINK || x.SubLinkType == pg.SubLinkType_MULTIEXPR_SUBLINK {
			return refused("this kind of subquery is not allowed")
		}
	}
	return r.children(m, ctes)
}

// children walks every message field of m.
func (r *pgRewriter) children(m protoreflect.Message, ctes []string) error {
	var err error
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Kind() != protoreflect.MessageKind {
			return true
		}
		if fd.IsList() {
			l := v.List()
			for i := 0; i < l.Len() && err == nil; i++ {
				err = r.walk(l.Get(i).Message(), ctes)
			}
		} else {
			err = r.walk(v.Message(), ctes)
		}
		return err == nil
	})
	return err
}

// selectStmt checks a SELECT's own clauses, brings its CTEs into scope (a recursive WITH
// sees all its names in every body; otherwise each CTE sees the ones before it) and walks
// the rest.
func (r *pgRewriter) selectStmt(s *pg.SelectStmt, ctes []string) error {
	if s.IntoClause != nil {
		return refused("SELECT INTO is not allowed")
	}
	if len(s.LockingClause) > 0 {
		return refused("FOR UPDATE/SHARE is not allowed")
	}
	if w := s.WithClause; w != nil {
		inner := slices.Clone(ctes)
		if w.Recursive {
			for _, c := range w.Ctes {
				inner = append(inner, c.GetCommonTableExpr().GetCtename())
			}
		}
		for _, c := range w.Ctes {
			cte := c.GetCommonTableExpr()
			if cte == nil {
				return refused("a WITH item that is not a CTE is not allowed")
			}
			if cte.SearchClause != nil || cte.CycleClause != nil {
				return refused("SEARCH and CYCLE in a recursive CTE are not allowed")
			}
			q := cte.Ctequery.GetSelectStmt()
			if q == nil {
				return refused("CTE %q is not a SELECT: writing CTEs (INSERT/UPDATE/DELETE in WITH) are not allowed", cte.Ctename)
			}
			if err := r.walk(q.ProtoReflect(), inner); err != nil {
				return err
			}
			if err := r.walkNodes(cte.Aliascolnames, inner); err != nil {
				return err
			}
			if !w.Recursive {
				inner = append(inner, cte.Ctename)
			}
		}
		ctes = inner
	}
	withClause := s.WithClause
	s.WithClause = nil // walked above
	err := r.children(s.ProtoReflect(), ctes)
	s.WithClause = withClause
	return err
}

func (r *pgRewriter) walkNodes(nodes []*pg.Node, ctes []string) error {
	for _, n := range nodes {
		if err := r.walk(n.ProtoReflect(), ctes); err != nil {
			return err
		}
	}
	return nil
}

// table handles a table reference: a visible CTE stays as it is; a catalog table becomes
// (SELECT * FROM analytics.t WHERE i_tenant_id = $1 AND <row filters>) AS alias.
func (r *pgRewriter) table(n *pg.Node, rv *pg.RangeVar, ctes []string) error {
	if rv.Catalogname != "" {
		return refused("database-qualified table names are not allowed")
	}
	if rv.Schemaname == "" && slices.Contains(ctes, rv.Relname) {
		return nil
	}
	if rv.Schemaname != "" && rv.Schemaname != warehouse.PostgresSchema {
		return refused("table %s.%s is not allowed: only the analytics tables (basic_*, diy_*) may be read", rv.Schemaname, rv.Relname)
	}
	t := r.cat.Table(rv.Relname)
	if t == nil {
		return refused("table %q is not allowed: only the analytics tables (basic_*, diy_*) may be read", rv.Relname)
	}
	r.tables[t.Name] = true
	if len(r.args) == 0 {
		r.args = append(r.args, r.scope.TenantID) // $1, on the first table
	}
	where := []*pg.Node{pg.MakeAExprNode(pg.A_Expr_Kind_AEXPR_OP, []*pg.Node{pg.MakeStrNode("=")},
		pg.MakeColumnRefNode([]*pg.Node{pg.MakeStrNode(catalog.TenantColumn)}, -1), pg.MakeParamRefNode(1, -1), -1)}
	for i, f := range r.scope.RowFilters {
		if len(filtersFor(t, []RowFilter{f})) == 0 {
			continue
		}
		where = append(where, pg.MakeAExprNode(pg.A_Expr_Kind_AEXPR_OP_ANY, []*pg.Node{pg.MakeStrNode("=")},
			pg.MakeColumnRefNode([]*pg.Node{pg.MakeStrNode(f.Column)}, -1), pg.MakeParamRefNode(r.param(i), -1), -1))
	}
	cond := where[0]
	if len(where) > 1 {
		cond = pg.MakeBoolExprNode(pg.BoolExprType_AND_EXPR, where, -1)
	}
	alias := rv.Alias
	if alias == nil {
		alias = &pg.Alias{Aliasname: rv.Relname}
	}
	sub := &pg.SelectStmt{
		TargetList: []*pg.Node{pg.MakeResTargetNodeWithVal(pg.MakeColumnRefNode([]*pg.Node{pg.MakeAStarNode()}, -1), -1)},
		FromClause: []*pg.Node{{Node: &pg.Node_RangeVar{RangeVar: &pg.RangeVar{
			Schemaname: warehouse.PostgresSchema, Relname: t.Name, Inh: true, Relpersistence: "p", Location: -1}}}},
		WhereClause: cond,
		LimitOption: pg.LimitOption_LIMIT_OPTION_DEFAULT,
		Op:          pg.SetOperation_SETOP_NONE,
	}
	n.Node = &pg.Node_RangeSubselect{RangeSubselect: &pg.RangeSubselect{
		Subquery: &pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: sub}}, Alias: alias}}
	return nil
}

// param is the parameter number of row filter i, adding its values on first use.
func (r *pgRewriter) param(i int) int32 {
	if p, ok := r.params[i]; ok {
		return p
	}
	r.args = append(r.args, filterArray(r.scope.RowFilters[i].Values))
	p := int32(len(r.args))
	r.params[i] = p
	return p
}

// filterArray is a row filter's values as one array parameter: []int64 when every value is
// an integer, []string otherwise (strings compare with text columns).
func filterArray(vals []any) any {
	ints := make([]int64, 0, len(vals))
	for _, v := range vals {
		switch x := v.(type) {
		case int64:
			ints = append(ints, x)
		case int:
			ints = append(ints, int64(x))
		default:
			strs := make([]string, len(vals))
			for i, v := range vals {
				strs[i] = toString(v)
			}
			return strs
		}
	}
	return ints
}

func checkFunc(f *pg.FuncCall) error {
	names := make([]string, 0, len(f.Funcname))
	for _, n := range f.Funcname {
		s := n.GetString_()
		if s == nil {
			return refused("a function name is not allowed")
		}
		names = append(names, s.Sval)
	}
	name := strings.Join(names, ".")
	switch {
	case len(names) == 2 && names[0] == "pg_catalog" && pgFunctions[names[1]]:
	case len(names) == 1 && pgFunctions[names[0]]:
	default:
		return refused("function %s is not allowed (see the sandbox's function list)", name)
	}
	if f.FuncVariadic {
		return refused("VARIADIC calls are not allowed")
	}
	return nil
}

func checkType(t *pg.TypeName) error {
	names := make([]string, 0, len(t.Names))
	for _, n := range t.Names {
		if s := n.GetString_(); s != nil {
			names = append(names, s.Sval)
		}
	}
	ok := len(names) == len(t.Names) && (len(names) == 1 && pgTypes[names[0]] ||
		len(names) == 2 && names[0] == "pg_catalog" && pgTypes[names[1]])
	if !ok || t.PctType || t.Setof {
		return refused("type %s is not allowed in a cast", strings.Join(names, "."))
	}
	return nil
}

// pgSystemColumns are the hidden columns every table has; they say nothing about the data
// and are refused to keep the answer's columns those of the catalog.
var pgSystemColumns = setOf("ctid", "xmin", "xmax", "cmin", "cmax", "tableoid")

func checkColumnRef(c *pg.ColumnRef) error {
	for i, f := range c.Fields {
		if s := f.GetString_(); s != nil {
			if pgSystemColumns[s.Sval] {
				return refused("system column %s is not allowed", s.Sval)
			}
			if i == 0 && len(c.Fields) > 2 {
				return refused("schema-qualified column references are not allowed")
			}
		}
	}
	return nil
}

// capLimit sets the top-level LIMIT to limit when it is missing, ALL or larger; a LIMIT
// that is not a plain number is refused.
func capLimit(s *pg.SelectStmt, limit int) error {
	if s.LimitOption == pg.LimitOption_LIMIT_OPTION_WITH_TIES {
		return refused("FETCH ... WITH TIES is not allowed at the top level (the row cap could not hold)")
	}
	set := func() {
		s.LimitCount = pg.MakeAConstIntNode(int64(limit), -1)
		s.LimitOption = pg.LimitOption_LIMIT_OPTION_COUNT
	}
	if s.LimitCount == nil {
		set()
		return nil
	}
	c := s.LimitCount.GetAConst()
	switch {
	case c == nil:
		return refused("LIMIT must be a number")
	case c.Isnull:
		set()
	case c.GetIval() != nil:
		if int(c.GetIval().Ival) > limit || c.GetIval().Ival < 0 {
			set()
		}
	default:
		return refused("LIMIT must be an integer")
	}
	return nil
}

// parseMessage is libpg_query's parse error in words of the statement's author
// ("unexpected text near "x"" rather than the server's "syntax error at or near").
func parseMessage(err error) string {
	msg := err.Error()
	msg = strings.Replace(msg, "syntax error at or near", "unexpected text near", 1)
	return strings.Replace(msg, "syntax error at end of input", "unexpected end of the statement", 1)
}

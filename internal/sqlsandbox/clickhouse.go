package sqlsandbox

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sqlc-dev/doubleclick/ast"
	"github.com/sqlc-dev/doubleclick/lexer"
	"github.com/sqlc-dev/doubleclick/parser"
	"github.com/sqlc-dev/doubleclick/token"

	"github.com/shopmind/shopmind/internal/analytics/catalog"
	"github.com/shopmind/shopmind/internal/apperr"
)

// ClickHouse: github.com/sqlc-dev/doubleclick parses the statement into its AST; it has no
// printer, so this file prints the tree itself. The printer is the allowlist: it knows a
// fixed subset of node types and fields, and any node or field it does not print is refused
// (fail closed). Table references are rewritten while printing; identifiers are printed in
// backquotes and must be plain names, literals are re-quoted.

// chFunctions are the functions a ClickHouse statement may call (exact names; ClickHouse's
// case-insensitive ones also in lower case).
var chFunctions = setOf(
	// aggregates
	"count", "sum", "avg", "min", "max", "uniq", "uniqExact", "uniqCombined", "uniqHLL12",
	"any", "anyLast", "argMin", "argMax", "quantile", "quantiles", "quantileExact",
	"quantileTiming", "median", "stddevPop", "stddevSamp", "varPop", "varSamp", "corr",
	"covarPop", "covarSamp", "groupArray", "groupUniqArray", "topK", "sumIf", "countIf",
	"avgIf", "minIf", "maxIf", "uniqIf", "uniqExactIf", "anyIf", "argMaxIf", "argMinIf",
	// conditionals and nulls
	"if", "multiIf", "ifNull", "coalesce", "nullIf", "isNull", "isNotNull", "assumeNotNull",
	"toNullable",
	// operators' function names
	"and", "or", "not", "xor", "equals", "notEquals", "less", "greater", "lessOrEquals",
	"greaterOrEquals", "plus", "minus", "multiply", "divide", "intDiv", "intDivOrZero",
	"modulo", "negate", "like", "notLike", "tuple", "array",
	// numbers
	"abs", "round", "roundBankers", "floor", "ceil", "trunc", "exp", "log", "ln", "log2",
	"log10", "sqrt", "pow", "power", "greatest", "least",
	"toInt8", "toInt16", "toInt32", "toInt64", "toUInt8", "toUInt16", "toUInt32", "toUInt64",
	"toFloat32", "toFloat64", "toDecimal32", "toDecimal64", "toString",
	"toInt64OrZero", "toFloat64OrZero", "toInt64OrNull", "toFloat64OrNull",
	// dates and times
	"toDate", "toDateTime", "toStartOfDay", "toStartOfWeek", "toMonday", "toStartOfMonth",
	"toStartOfQuarter", "toStartOfYear", "toStartOfHour", "toStartOfMinute",
	"toStartOfFiveMinute", "toStartOfFifteenMinutes", "toYear", "toMonth", "toQuarter",
	"toDayOfMonth", "toDayOfWeek", "toDayOfYear", "toHour", "toMinute", "toSecond",
	"toYYYYMM", "toYYYYMMDD", "toYYYYMMDDhhmmss", "toISOWeek", "toISOYear", "toRelativeDayNum",
	"toRelativeMonthNum", "toRelativeWeekNum", "now", "today", "yesterday", "dateDiff",
	"addDays", "addWeeks", "addMonths", "addQuarters", "addYears", "addHours",
	"subtractDays", "subtractWeeks", "subtractMonths", "subtractQuarters", "subtractYears",
	"subtractHours", "formatDateTime", "toIntervalDay", "toIntervalWeek", "toIntervalMonth",
	"toIntervalYear", "toIntervalHour", "toIntervalMinute", "toIntervalSecond",
	"toIntervalQuarter", "timeSlot",
	// strings
	"lower", "upper", "lowerUTF8", "upperUTF8", "length", "lengthUTF8", "concat", "substring",
	"substringUTF8", "trimBoth", "trimLeft", "trimRight", "replaceAll", "replaceOne",
	"replaceRegexpAll", "replaceRegexpOne", "position", "positionCaseInsensitive",
	"startsWith", "endsWith", "match", "extract", "lcase", "ucase", "reverse", "empty",
	"notEmpty", "leftPad", "rightPad", "splitByChar", "splitByString", "arrayStringConcat",
	// arrays
	"has", "hasAny", "hasAll", "indexOf", "arrayElement", "arraySort", "arrayReverseSort",
	"arraySlice", "arrayUniq", "arrayDistinct",
)

// chCaseInsensitive are the functions ClickHouse also accepts in any case.
var chCaseInsensitive = setOf("count", "sum", "avg", "min", "max", "if", "coalesce",
	"nullif", "ifnull", "abs", "round", "floor", "ceil", "lower", "upper", "length",
	"concat", "substring", "greatest", "least", "position", "trunc", "exp", "log", "ln",
	"sqrt", "pow", "power", "reverse")

// chTypes are the types a CAST may name.
var chTypes = setOf("Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64",
	"Float32", "Float64", "String", "Date", "DateTime", "Decimal", "Decimal32", "Decimal64",
	"Nullable")

// chOps are the binary operators printed as such.
var chOps = setOf("+", "-", "*", "/", "%", "=", "==", "!=", "<>", "<", ">", "<=", ">=",
	"AND", "OR", "||", "and", "or")

// chPrinter prints (and so checks and rewrites) one ClickHouse statement.
type chPrinter struct {
	b      strings.Builder
	cat    *catalog.Catalog
	scope  Scope
	tables map[string]bool
}

// ClickHouse parsing is guarded: doubleclick (v1.0.0) can loop forever on some malformed
// input (found by FuzzRewrite: "SELECT (A GROUP BY GROUPING SETS(!),(s"), and a goroutine
// cannot be stopped. So tokens the lexer calls illegal are refused before parsing, at most
// chParseSlots parses run at once, and a parse that has not finished after chParseTimeout is
// abandoned with a 400; its slot stays taken, so at most chParseSlots such loops can ever
// spin, after which ClickHouse statements answer 503 until the process restarts.
//
// A statement that finds every slot taken waits for one up to chSlotWait (a burst of
// statements queues: a parse takes microseconds), and only then answers 503.
const (
	chParseSlots   = 4
	chParseTimeout = 2 * time.Second
	chSlotWait     = time.Second
	chMaxTokens    = 20000
)

var chParsing = make(chan struct{}, chParseSlots)

func parseClickHouse(sql string) ([]ast.Statement, error) {
	lx := lexer.New(strings.NewReader(sql))
	for n := 0; ; n++ {
		it := lx.NextToken()
		if it.Token == token.EOF {
			break
		}
		if it.Token == token.ILLEGAL {
			return nil, refused("the statement does not parse as ClickHouse SQL: unexpected %q at line %d, column %d", it.Value, it.Pos.Line, it.Pos.Column)
		}
		if n > chMaxTokens {
			return nil, refused("the statement is too long (more than %d tokens)", chMaxTokens)
		}
	}
	select {
	case chParsing <- struct{}{}:
	default:
		wait := time.NewTimer(chSlotWait)
		select {
		case chParsing <- struct{}{}:
			wait.Stop()
		case <-wait.C:
			return nil, &apperr.Error{Kind: apperr.KindUnavailable, Message: "the ClickHouse SQL parser is busy or exhausted by statements it could not finish; retry, or restart the service"}
		}
	}
	type parsed struct {
		stmts []ast.Statement
		err   error
	}
	done := make(chan parsed, 1)
	go func() {
		stmts, err := parser.Parse(context.Background(), strings.NewReader(sql))
		<-chParsing // only a parse that finishes gives its slot back
		done <- parsed{stmts, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, refused("the statement does not parse as ClickHouse SQL: %v", r.err)
		}
		return r.stmts, nil
	case <-time.After(chParseTimeout):
		return nil, refused("the statement could not be parsed (the ClickHouse parser did not finish)")
	}
}

func rewriteClickHouse(cat *catalog.Catalog, scope Scope, sql string, limit int) (*Rewritten, error) {
	stmts, err := parseClickHouse(sql)
	if err != nil {
		return nil, err
	}
	switch len(stmts) {
	case 0:
		return nil, refused("the statement is empty")
	case 1:
	default:
		return nil, refused("exactly one statement is allowed, got %d", len(stmts))
	}
	top, ok := stmts[0].(*ast.SelectWithUnionQuery)
	if !ok {
		return nil, refused("only SELECT is allowed, got %s", chStatementName(stmts[0]))
	}
	p := &chPrinter{cat: cat, scope: scope, tables: map[string]bool{}}
	if err := p.topLevel(top, limit); err != nil {
		return nil, err
	}
	return &Rewritten{Dialect: ClickHouse, SQL: p.b.String(), Tables: slices.Sorted(maps.Keys(p.tables)), Limit: limit}, nil
}

func chStatementName(s ast.Statement) string {
	name := strings.TrimPrefix(fmt.Sprintf("%T", s), "*ast.")
	name = strings.TrimSuffix(name, "Query")
	return strings.ToUpper(name)
}

// topLevel prints the statement with its LIMIT capped: a single SELECT gets the cap as its
// LIMIT (a smaller number stays); a UNION is wrapped in SELECT * FROM (...) LIMIT cap.
func (p *chPrinter) topLevel(u *ast.SelectWithUnionQuery, limit int) error {
	if len(u.Selects) == 1 {
		if s, ok := u.Selects[0].(*ast.SelectQuery); ok {
			if err := p.checkUnion(u); err != nil {
				return err
			}
			if s.Limit != nil {
				n, ok := chIntLiteral(s.Limit)
				if !ok {
					return refused("LIMIT must be a number")
				}
				if n < 0 || n > int64(limit) {
					s.Limit = nil
				}
			}
			if s.Limit == nil {
				s.Limit = &ast.Literal{Type: ast.LiteralInteger, Value: int64(limit)}
			}
			return p.selectQuery(s, nil)
		}
	}
	p.b.WriteString("SELECT * FROM (")
	if err := p.union(u, nil); err != nil {
		return err
	}
	fmt.Fprintf(&p.b, ") LIMIT %d", limit)
	return nil
}

func chIntLiteral(e ast.Expression) (int64, bool) {
	l, ok := e.(*ast.Literal)
	if !ok || l.Type != ast.LiteralInteger {
		return 0, false
	}
	switch v := l.Value.(type) {
	case int64:
		return v, true
	case uint64:
		if v > math.MaxInt64 {
			return math.MaxInt64, true
		}
		return int64(v), true
	}
	return 0, false
}

func (p *chPrinter) checkUnion(u *ast.SelectWithUnionQuery) error {
	if len(u.Settings) > 0 {
		return refused("SETTINGS clauses are not allowed")
	}
	for _, m := range u.UnionModes {
		if m != "UNION ALL" && m != "UNION DISTINCT" && m != "" {
			return refused("%s is not allowed", m)
		}
	}
	return nil
}

func (p *chPrinter) union(u *ast.SelectWithUnionQuery, ctes []string) error {
	if err := p.checkUnion(u); err != nil {
		return err
	}
	for i, st := range u.Selects {
		if i > 0 {
			mode := "UNION ALL"
			if i-1 < len(u.UnionModes) && u.UnionModes[i-1] != "" {
				mode = u.UnionModes[i-1]
			}
			p.b.WriteString(" " + mode + " ")
		}
		switch s := st.(type) {
		case *ast.SelectQuery:
			if err := p.selectQuery(s, ctes); err != nil {
				return err
			}
		case *ast.SelectWithUnionQuery:
			p.b.WriteString("(")
			if err := p.union(s, ctes); err != nil {
				return err
			}
			p.b.WriteString(")")
		default:
			return refused("%s is not allowed", chStatementName(st))
		}
	}
	return nil
}

func (p *chPrinter) selectQuery(s *ast.SelectQuery, ctes []string) error {
	switch {
	case len(s.Settings) > 0:
		return refused("SETTINGS clauses are not allowed")
	case s.Format != nil:
		return refused("FORMAT clauses are not allowed")
	case s.IntoOutfile != nil:
		return refused("INTO OUTFILE is not allowed")
	case s.PreWhere != nil:
		return refused("PREWHERE is not allowed (tables are read through tenant-filtered subqueries): use WHERE")
	case len(s.DistinctOn) > 0, s.Top != nil, s.ArrayJoin != nil, s.GroupByAll, s.GroupingSets,
		s.WithRollup, s.WithCube, s.WithTotals, s.Qualify != nil, len(s.Window) > 0,
		len(s.Interpolate) > 0, s.LimitByOffset != nil, s.LimitByHasLimit && s.LimitByLimit == nil:
		return refused("this SELECT clause (DISTINCT ON, TOP, ARRAY JOIN, ROLLUP/CUBE/TOTALS, QUALIFY, WINDOW, INTERPOLATE) is not allowed")
	}
	if len(s.With) > 0 {
		p.b.WriteString("WITH ")
		inner := slices.Clone(ctes)
		for i, w := range s.With {
			if i > 0 {
				p.b.WriteString(", ")
			}
			name, err := p.withElement(w, inner)
			if err != nil {
				return err
			}
			if name != "" {
				inner = append(inner, name)
			}
		}
		ctes = inner
		p.b.WriteString(" ")
	}
	p.b.WriteString("SELECT ")
	if s.Distinct {
		p.b.WriteString("DISTINCT ")
	}
	if len(s.Columns) == 0 {
		return refused("a SELECT needs columns")
	}
	if err := p.exprList(s.Columns, ctes); err != nil {
		return err
	}
	if s.From != nil {
		p.b.WriteString(" FROM ")
		if err := p.from(s.From, ctes); err != nil {
			return err
		}
	}
	for _, c := range []struct {
		kw string
		e  ast.Expression
	}{{" WHERE ", s.Where}} {
		if c.e != nil {
			p.b.WriteString(c.kw)
			if err := p.expr(c.e, ctes); err != nil {
				return err
			}
		}
	}
	if len(s.GroupBy) > 0 {
		p.b.WriteString(" GROUP BY ")
		if err := p.exprList(s.GroupBy, ctes); err != nil {
			return err
		}
	}
	if s.Having != nil {
		p.b.WriteString(" HAVING ")
		if err := p.expr(s.Having, ctes); err != nil {
			return err
		}
	}
	if len(s.OrderBy) > 0 {
		p.b.WriteString(" ORDER BY ")
		if err := p.orderBy(s.OrderBy, ctes); err != nil {
			return err
		}
	}
	if len(s.LimitBy) > 0 {
		n, ok := chIntLiteral(s.LimitByLimit)
		if !ok {
			return refused("LIMIT n BY needs a number")
		}
		fmt.Fprintf(&p.b, " LIMIT %d BY ", n)
		if err := p.exprList(s.LimitBy, ctes); err != nil {
			return err
		}
	}
	if s.Limit != nil {
		n, ok := chIntLiteral(s.Limit)
		if !ok || n < 0 {
			return refused("LIMIT must be a number")
		}
		fmt.Fprintf(&p.b, " LIMIT %d", n)
	}
	if s.Offset != nil {
		n, ok := chIntLiteral(s.Offset)
		if !ok || n < 0 {
			return refused("OFFSET must be a number")
		}
		if s.Limit == nil {
			return refused("OFFSET needs a LIMIT")
		}
		fmt.Fprintf(&p.b, " OFFSET %d", n)
	}
	return nil
}

// withElement prints one WITH item: "(expr) AS name" or "name AS (SELECT ...)"; it returns
// the name when the item is a table (a CTE a FROM may reference).
func (p *chPrinter) withElement(e ast.Expression, ctes []string) (string, error) {
	w, ok := e.(*ast.WithElement)
	if !ok {
		return "", refused("this WITH item is not allowed")
	}
	if err := chIdentOK(w.Name); err != nil {
		return "", err
	}
	if !w.ScalarWith {
		if sq, ok := w.Query.(*ast.Subquery); ok && sq.Alias == "" {
			p.b.WriteString(chQuote(w.Name) + " AS (")
			if err := p.statement(sq.Query, ctes); err != nil {
				return "", err
			}
			p.b.WriteString(")")
			return w.Name, nil
		}
	}
	p.b.WriteString("(")
	if err := p.expr(w.Query, ctes); err != nil {
		return "", err
	}
	p.b.WriteString(") AS " + chQuote(w.Name))
	return "", nil
}

func (p *chPrinter) statement(st ast.Statement, ctes []string) error {
	switch s := st.(type) {
	case *ast.SelectWithUnionQuery:
		return p.union(s, ctes)
	case *ast.SelectQuery:
		return p.selectQuery(s, ctes)
	default:
		return refused("%s is not allowed in a subquery", chStatementName(st))
	}
}

func (p *chPrinter) from(f *ast.TablesInSelectQuery, ctes []string) error {
	for i, el := range f.Tables {
		if el.ArrayJoin != nil {
			return refused("ARRAY JOIN is not allowed")
		}
		if el.Table == nil {
			return refused("this FROM item is not allowed")
		}
		if j := el.Join; j != nil {
			if i == 0 {
				return refused("a JOIN needs a left table")
			}
			if j.Global {
				return refused("GLOBAL JOIN is not allowed")
			}
			p.b.WriteString(" ")
			if j.Strictness != "" {
				p.b.WriteString(string(j.Strictness) + " ")
			}
			switch j.Type {
			case ast.JoinInner, ast.JoinLeft, ast.JoinRight, ast.JoinFull, ast.JoinCross:
				p.b.WriteString(string(j.Type) + " JOIN ")
			case "":
				p.b.WriteString("JOIN ")
			default:
				return refused("%s JOIN is not allowed", j.Type)
			}
		} else if i > 0 {
			p.b.WriteString(", ")
		}
		if err := p.tableExpr(el.Table, ctes); err != nil {
			return err
		}
		if j := el.Join; j != nil {
			switch {
			case j.On != nil:
				p.b.WriteString(" ON ")
				if err := p.expr(j.On, ctes); err != nil {
					return err
				}
			case len(j.Using) > 0:
				p.b.WriteString(" USING (")
				if err := p.exprList(j.Using, ctes); err != nil {
					return err
				}
				p.b.WriteString(")")
			}
		}
	}
	return nil
}

// tableExpr prints a FROM item; a catalog table becomes its tenant-filtered subquery.
func (p *chPrinter) tableExpr(t *ast.TableExpression, ctes []string) error {
	if t.Sample != nil {
		return refused("SAMPLE is not allowed")
	}
	if t.Final {
		return refused("FINAL is not allowed (tables are read through tenant-filtered subqueries)")
	}
	alias := t.Alias
	switch x := t.Table.(type) {
	case *ast.TableIdentifier:
		if x.Alias != "" {
			alias = x.Alias
		}
		if x.Database != "" {
			return refused("table %s.%s is not allowed: only the analytics tables (basic_*, diy_*) may be read, without a database name", x.Database, x.Table)
		}
		if slices.Contains(ctes, x.Table) {
			p.b.WriteString(chQuote(x.Table))
			break
		}
		tbl := p.cat.Table(x.Table)
		if tbl == nil {
			return refused("table %q is not allowed: only the analytics tables (basic_*, diy_*) may be read", x.Table)
		}
		p.tables[tbl.Name] = true
		if alias == "" {
			alias = tbl.Name
		}
		p.b.WriteString("(SELECT * FROM " + chQuote(tbl.Name) + " WHERE " + chQuote(catalog.TenantColumn) + " = " +
			strconv.FormatInt(p.scope.TenantID, 10))
		for _, f := range filtersFor(tbl, p.scope.RowFilters) {
			p.b.WriteString(" AND " + chQuote(f.Column) + " IN (")
			if len(f.Values) == 0 {
				p.b.WriteString("NULL")
			}
			for i, v := range f.Values {
				if i > 0 {
					p.b.WriteString(", ")
				}
				p.b.WriteString(chValueLiteral(v))
			}
			p.b.WriteString(")")
		}
		p.b.WriteString(")")
	case *ast.Subquery:
		if x.Alias != "" {
			alias = x.Alias
		}
		p.b.WriteString("(")
		if err := p.statement(x.Query, ctes); err != nil {
			return err
		}
		p.b.WriteString(")")
	case *ast.FunctionCall:
		return refused("table function %s() is not allowed", x.Name)
	default:
		return refused("this FROM item is not allowed")
	}
	if alias != "" {
		if err := chIdentOK(alias); err != nil {
			return err
		}
		p.b.WriteString(" AS " + chQuote(alias))
	}
	return nil
}

func chValueLiteral(v any) string {
	switch x := v.(type) {
	case int64:
		return strconv.FormatInt(x, 10)
	case int:
		return strconv.Itoa(x)
	default:
		return chString(toString(v))
	}
}

func toString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}

// chString quotes s as a ClickHouse string literal (backslash and quote escaped).
func chString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

func chQuote(name string) string { return "`" + name + "`" }

// chIdentOK: identifiers are printed in backquotes and must be plain names.
func chIdentOK(name string) error {
	if name == "" || len(name) > 128 {
		return refused("an identifier is empty or too long")
	}
	for i, r := range name {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return refused("identifier %q is not allowed: use letters, digits and underscores", name)
		}
	}
	return nil
}

func (p *chPrinter) exprList(es []ast.Expression, ctes []string) error {
	for i, e := range es {
		if i > 0 {
			p.b.WriteString(", ")
		}
		if err := p.expr(e, ctes); err != nil {
			return err
		}
	}
	return nil
}

func (p *chPrinter) orderBy(els []*ast.OrderByElement, ctes []string) error {
	for i, o := range els {
		if i > 0 {
			p.b.WriteString(", ")
		}
		if o.WithFill || o.Collate != "" {
			return refused("WITH FILL and COLLATE in ORDER BY are not allowed")
		}
		if err := p.expr(o.Expression, ctes); err != nil {
			return err
		}
		if o.Descending {
			p.b.WriteString(" DESC")
		}
		if o.NullsFirst != nil {
			if *o.NullsFirst {
				p.b.WriteString(" NULLS FIRST")
			} else {
				p.b.WriteString(" NULLS LAST")
			}
		}
	}
	return nil
}

func (p *chPrinter) alias(a string) error {
	if a == "" {
		return nil
	}
	if err := chIdentOK(a); err != nil {
		return err
	}
	p.b.WriteString(" AS " + chQuote(a))
	return nil
}

// expr prints an expression; anything outside the known subset is refused.
func (p *chPrinter) expr(e ast.Expression, ctes []string) error {
	switch x := e.(type) {
	case *ast.Identifier:
		if len(x.Parts) == 0 || len(x.Parts) > 2 {
			return refused("identifier %s is not allowed", x.Name())
		}
		for i, part := range x.Parts {
			if err := chIdentOK(part); err != nil {
				return err
			}
			if i > 0 {
				p.b.WriteString(".")
			}
			p.b.WriteString(chQuote(part))
		}
		return p.alias(x.Alias)
	case *ast.Literal:
		return p.literal(x, ctes)
	case *ast.Asterisk:
		if len(x.Except) > 0 || len(x.Replace) > 0 || len(x.Apply) > 0 || len(x.Transformers) > 0 {
			return refused("* EXCEPT/REPLACE/APPLY is not allowed")
		}
		if x.Table != "" {
			if err := chIdentOK(x.Table); err != nil {
				return err
			}
			p.b.WriteString(chQuote(x.Table) + ".")
		}
		p.b.WriteString("*")
		return nil
	case *ast.FunctionCall:
		return p.function(x, ctes)
	case *ast.BinaryExpr:
		if !chOps[x.Op] {
			return refused("operator %s is not allowed", x.Op)
		}
		p.b.WriteString("(")
		if err := p.expr(x.Left, ctes); err != nil {
			return err
		}
		p.b.WriteString(" " + x.Op + " ")
		if err := p.expr(x.Right, ctes); err != nil {
			return err
		}
		p.b.WriteString(")")
		return nil
	case *ast.UnaryExpr:
		switch strings.ToUpper(x.Op) {
		case "-":
			p.b.WriteString("(-")
		case "NOT":
			p.b.WriteString("(NOT ")
		default:
			return refused("operator %s is not allowed", x.Op)
		}
		if err := p.expr(x.Operand, ctes); err != nil {
			return err
		}
		p.b.WriteString(")")
		return nil
	case *ast.TernaryExpr:
		return p.parts(ctes, "(", x.Condition, " ? ", x.Then, " : ", x.Else, ")")
	case *ast.CaseExpr:
		p.b.WriteString("CASE")
		if x.Operand != nil {
			p.b.WriteString(" ")
			if err := p.expr(x.Operand, ctes); err != nil {
				return err
			}
		}
		for _, w := range x.Whens {
			if err := p.parts(ctes, " WHEN ", w.Condition, " THEN ", w.Result); err != nil {
				return err
			}
		}
		if x.Else != nil {
			if err := p.parts(ctes, " ELSE ", x.Else); err != nil {
				return err
			}
		}
		p.b.WriteString(" END")
		return p.alias(x.Alias)
	case *ast.CastExpr:
		if x.Type == nil || x.TypeExpr != nil {
			return refused("CAST needs a type name")
		}
		typ, err := chType(x.Type)
		if err != nil {
			return err
		}
		p.b.WriteString("CAST(")
		if err := p.expr(x.Expr, ctes); err != nil {
			return err
		}
		p.b.WriteString(" AS " + typ + ")")
		return p.alias(x.Alias)
	case *ast.IntervalExpr:
		unit := strings.ToUpper(x.Unit)
		switch unit {
		case "SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "QUARTER", "YEAR":
		default:
			return refused("interval unit %s is not allowed", x.Unit)
		}
		return p.parts(ctes, "INTERVAL ", x.Value, " "+unit)
	case *ast.ExtractExpr:
		field := strings.ToUpper(x.Field)
		switch field {
		case "SECOND", "MINUTE", "HOUR", "DAY", "MONTH", "YEAR":
		default:
			return refused("EXTRACT(%s) is not allowed", x.Field)
		}
		if err := p.parts(ctes, "EXTRACT("+field+" FROM ", x.From, ")"); err != nil {
			return err
		}
		return p.alias(x.Alias)
	case *ast.AliasedExpr:
		if err := p.parts(ctes, "(", x.Expr, ")"); err != nil {
			return err
		}
		return p.alias(x.Alias)
	case *ast.BetweenExpr:
		not := ""
		if x.Not {
			not = " NOT"
		}
		return p.parts(ctes, "(", x.Expr, not+" BETWEEN ", x.Low, " AND ", x.High, ")")
	case *ast.InExpr:
		if x.Global {
			return refused("GLOBAL IN is not allowed")
		}
		p.b.WriteString("(")
		if err := p.expr(x.Expr, ctes); err != nil {
			return err
		}
		if x.Not {
			p.b.WriteString(" NOT")
		}
		p.b.WriteString(" IN (")
		if x.Query == nil && len(x.List) == 1 {
			if _, ok := x.List[0].(*ast.Identifier); ok {
				// ClickHouse reads "x IN t" and "x IN (db.t)" as a table, unfiltered.
				return refused("IN with a table name is not allowed: write IN (SELECT ... FROM table)")
			}
		}
		if x.Query != nil {
			if err := p.statement(x.Query, ctes); err != nil {
				return err
			}
		} else if err := p.exprList(x.List, ctes); err != nil {
			return err
		}
		p.b.WriteString("))")
		return nil
	case *ast.IsNullExpr:
		is := " IS NULL)"
		if x.Not {
			is = " IS NOT NULL)"
		}
		return p.parts(ctes, "(", x.Expr, is)
	case *ast.LikeExpr:
		op := " LIKE "
		if x.CaseInsensitive {
			op = " ILIKE "
		}
		if x.Not {
			op = " NOT" + op
		}
		if err := p.parts(ctes, "(", x.Expr, op, x.Pattern, ")"); err != nil {
			return err
		}
		return p.alias(x.Alias)
	case *ast.Subquery:
		p.b.WriteString("(")
		if err := p.statement(x.Query, ctes); err != nil {
			return err
		}
		p.b.WriteString(")")
		return p.alias(x.Alias)
	case *ast.ArrayAccess:
		return p.parts(ctes, "", x.Array, "[", x.Index, "]")
	default:
		return refused("%s is not allowed in the sandbox", strings.TrimPrefix(fmt.Sprintf("%T", e), "*ast."))
	}
}

// parts prints strings as they are and expressions through expr.
func (p *chPrinter) parts(ctes []string, items ...any) error {
	for _, it := range items {
		switch x := it.(type) {
		case string:
			p.b.WriteString(x)
		case ast.Expression:
			if err := p.expr(x, ctes); err != nil {
				return err
			}
		default:
			return refused("an expression is missing")
		}
	}
	return nil
}

func (p *chPrinter) function(f *ast.FunctionCall, ctes []string) error {
	if !chFunctions[f.Name] && !chCaseInsensitive[strings.ToLower(f.Name)] {
		return refused("function %s is not allowed (see the sandbox's function list)", f.Name)
	}
	if f.Over != nil || f.Filter != nil || len(f.Settings) > 0 {
		return refused("OVER, FILTER and SETTINGS on a function are not allowed")
	}
	p.b.WriteString(f.Name)
	if len(f.Parameters) > 0 {
		p.b.WriteString("(")
		if err := p.exprList(f.Parameters, ctes); err != nil {
			return err
		}
		p.b.WriteString(")")
	}
	p.b.WriteString("(")
	if f.Distinct {
		p.b.WriteString("DISTINCT ")
	}
	if err := p.exprList(f.Arguments, ctes); err != nil {
		return err
	}
	p.b.WriteString(")")
	return p.alias(f.Alias)
}

func (p *chPrinter) literal(l *ast.Literal, ctes []string) error {
	switch l.Type {
	case ast.LiteralString:
		s, ok := l.Value.(string)
		if !ok {
			return refused("a string literal is malformed")
		}
		p.b.WriteString(chString(s))
	case ast.LiteralInteger:
		switch v := l.Value.(type) {
		case int64:
			p.b.WriteString(strconv.FormatInt(v, 10))
		case uint64:
			p.b.WriteString(strconv.FormatUint(v, 10))
		default:
			return refused("an integer literal is out of range")
		}
	case ast.LiteralFloat:
		v, ok := l.Value.(float64)
		if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
			return refused("a number literal is malformed")
		}
		p.b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
	case ast.LiteralNull:
		p.b.WriteString("NULL")
	case ast.LiteralBoolean:
		if v, _ := l.Value.(bool); v {
			p.b.WriteString("1")
		} else {
			p.b.WriteString("0")
		}
	case ast.LiteralArray, ast.LiteralTuple:
		items, ok := l.Value.([]ast.Expression)
		if !ok {
			return refused("an array or tuple literal is malformed")
		}
		open, closing := "[", "]"
		if l.Type == ast.LiteralTuple {
			open, closing = "tuple(", ")"
		}
		p.b.WriteString(open)
		if err := p.exprList(items, ctes); err != nil {
			return err
		}
		p.b.WriteString(closing)
	default:
		return refused("literal of type %s is not allowed", l.Type)
	}
	return nil
}

func chType(t *ast.DataType) (string, error) {
	if !chTypes[t.Name] {
		return "", refused("type %s is not allowed in a cast", t.Name)
	}
	var args []string
	for _, prm := range t.Parameters {
		switch x := prm.(type) {
		case *ast.Literal:
			n, ok := chIntLiteral(x)
			if !ok {
				return "", refused("type %s: parameters must be numbers", t.Name)
			}
			args = append(args, strconv.FormatInt(n, 10))
		case *ast.DataType:
			s, err := chType(x)
			if err != nil {
				return "", err
			}
			args = append(args, s)
		default:
			return "", refused("type %s: parameters must be numbers or types", t.Name)
		}
	}
	if len(args) == 0 {
		return t.Name, nil
	}
	return t.Name + "(" + strings.Join(args, ", ") + ")", nil
}

package sqlsandbox_test

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	pg "github.com/pganalyze/pg_query_go/v6"
	"github.com/sqlc-dev/doubleclick/ast"
	"github.com/sqlc-dev/doubleclick/parser"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/shopmind/shopmind/internal/analytics/catalog"
	"github.com/shopmind/shopmind/internal/sqlsandbox"
)

// verifyRewritten parses the SQL the sandbox would run, independently of the rewriter, and
// reports every table it reads that is not the tenant-filtered subquery the rewrite makes.
func verifyRewritten(t testing.TB, dialect, sql string) {
	t.Helper()
	for _, p := range unfilteredTables(dialect, sql) {
		t.Errorf("%s\n%s", p, sql)
	}
}

// unfilteredTables lists the problems of sql: parse failures and tables read without the
// tenant filter.
func unfilteredTables(dialect, sql string) []string {
	var problems []string
	switch dialect {
	case sqlsandbox.Postgres:
		tree, err := pg.Parse(sql)
		if err != nil {
			return []string{"the rewritten SQL does not parse: " + err.Error()}
		}
		// ctes: the CTE names PostgreSQL resolves an unqualified name to at this point (a
		// non-recursive CTE is visible after its definition, a recursive one everywhere in
		// its WITH); any other unqualified name would resolve to a real table.
		var walk func(m protoreflect.Message, filtered bool, ctes []string)
		children := func(m protoreflect.Message, filtered bool, ctes []string, skip protoreflect.Name) {
			m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
				if fd.Kind() != protoreflect.MessageKind || fd.Name() == skip {
					return true
				}
				if fd.IsList() {
					for i := 0; i < v.List().Len(); i++ {
						walk(v.List().Get(i).Message(), filtered, ctes)
					}
				} else {
					walk(v.Message(), filtered, ctes)
				}
				return true
			})
		}
		walk = func(m protoreflect.Message, filtered bool, ctes []string) {
			if s, ok := m.Interface().(*pg.SelectStmt); ok {
				// The rewrite's subquery: SELECT * FROM analytics.t WHERE i_tenant_id = $1 ...
				filtered = false
				if len(s.FromClause) == 1 && s.FromClause[0].GetRangeVar() != nil && s.WhereClause != nil {
					w := s.WhereClause
					if b := w.GetBoolExpr(); b != nil && b.Boolop == pg.BoolExprType_AND_EXPR {
						w = b.Args[0]
					}
					e := w.GetAExpr()
					filtered = e != nil && len(e.Lexpr.GetColumnRef().GetFields()) == 1 &&
						e.Lexpr.GetColumnRef().GetFields()[0].GetString_().GetSval() == catalog.TenantColumn &&
						e.Rexpr.GetParamRef().GetNumber() == 1
				}
				if w := s.WithClause; w != nil {
					inner := append([]string(nil), ctes...)
					if w.Recursive {
						for _, c := range w.Ctes {
							inner = append(inner, c.GetCommonTableExpr().GetCtename())
						}
					}
					for _, c := range w.Ctes {
						walk(c.GetCommonTableExpr().GetCtequery().ProtoReflect(), false, inner)
						if !w.Recursive {
							inner = append(inner, c.GetCommonTableExpr().GetCtename())
						}
					}
					ctes = inner
				}
				children(m, filtered, ctes, "with_clause")
				return
			}
			if rv, ok := m.Interface().(*pg.RangeVar); ok {
				cte := rv.Schemaname == "" && slices.Contains(ctes, rv.Relname)
				if !cte && (!filtered || rv.Schemaname != "analytics") {
					problems = append(problems, "table "+rv.Schemaname+"."+rv.Relname+" is read without the tenant filter")
				}
			}
			children(m, filtered, ctes, "")
		}
		for _, st := range tree.Stmts {
			walk(st.ProtoReflect(), false, nil)
		}
	case sqlsandbox.ClickHouse:
		stmts, err := parser.Parse(context.Background(), strings.NewReader(sql))
		if err != nil || len(stmts) != 1 {
			return []string{"the rewritten SQL does not parse as one statement"}
		}
		ctes := map[string]bool{}
		var walk func(v reflect.Value, filtered bool)
		walk = func(v reflect.Value, filtered bool) {
			switch v.Kind() {
			case reflect.Pointer, reflect.Interface:
				if v.IsNil() {
					return
				}
				switch x := v.Interface().(type) {
				case *ast.SelectQuery:
					filtered = false
					if x.From != nil && len(x.From.Tables) == 1 && x.From.Tables[0].Table != nil {
						if _, ok := x.From.Tables[0].Table.Table.(*ast.TableIdentifier); ok {
							w, _ := x.Where.(*ast.BinaryExpr)
							for w != nil && strings.EqualFold(w.Op, "AND") {
								w, _ = w.Left.(*ast.BinaryExpr)
							}
							if w != nil && w.Op == "=" {
								id, _ := w.Left.(*ast.Identifier)
								filtered = id != nil && id.Name() == catalog.TenantColumn
							}
						}
					}
				case *ast.WithElement:
					ctes[x.Name] = true
				case *ast.TableIdentifier:
					if !filtered && !ctes[x.Table] {
						problems = append(problems, "table "+x.Database+"."+x.Table+" is read without the tenant filter")
					}
				}
				walk(v.Elem(), filtered)
			case reflect.Struct:
				for i := 0; i < v.NumField(); i++ {
					if v.Type().Field(i).IsExported() {
						walk(v.Field(i), filtered)
					}
				}
			case reflect.Slice:
				for i := 0; i < v.Len(); i++ {
					walk(v.Index(i), filtered)
				}
			}
		}
		walk(reflect.ValueOf(stmts[0]), false)
	}
	return problems
}

// The verifier itself catches what it must: tables read directly, a CTE name used out of its
// scope, a subquery filtered on something else.
func TestVerifierCatchesUnfilteredTables(t *testing.T) {
	for _, c := range []struct{ dialect, sql string }{
		{sqlsandbox.Postgres, "SELECT * FROM analytics.basic_orders"},
		{sqlsandbox.Postgres, "SELECT * FROM basic_orders"},
		{sqlsandbox.Postgres, "SELECT * FROM (SELECT * FROM analytics.basic_orders WHERE shop_id = $1) o"},
		{sqlsandbox.Postgres, "WITH a AS (SELECT * FROM a) SELECT * FROM a"},
		{sqlsandbox.Postgres, "SELECT * FROM (SELECT * FROM analytics.basic_orders WHERE i_tenant_id = $1) o, pg_user"},
		{sqlsandbox.ClickHouse, "SELECT * FROM basic_orders"},
		{sqlsandbox.ClickHouse, "SELECT * FROM (SELECT * FROM `basic_orders` WHERE `shop_id` = 5) AS o"},
		{sqlsandbox.ClickHouse, "SELECT * FROM (SELECT * FROM `basic_orders` WHERE `i_tenant_id` = 5) AS o ALL INNER JOIN system.one USING dummy"},
	} {
		if len(unfilteredTables(c.dialect, c.sql)) == 0 {
			t.Errorf("%s: %q passed the verifier", c.dialect, c.sql)
		}
	}
	if p := unfilteredTables(sqlsandbox.Postgres, "WITH a AS (SELECT * FROM (SELECT * FROM analytics.basic_orders WHERE i_tenant_id = $1) x) SELECT * FROM a"); len(p) > 0 {
		t.Errorf("a filtered CTE: %v", p)
	}
}

// TestRewrittenCorporaVerified re-parses the rewrite of every legitimate and neutral query
// and checks, without the rewriter's code, that each table is read through the tenant filter.
func TestRewrittenCorporaVerified(t *testing.T) {
	scope := sqlsandbox.Scope{TenantID: 5, RowFilters: []sqlsandbox.RowFilter{sqlsandbox.ShopFilter([]int64{1, 2})}}
	for _, dialect := range []string{sqlsandbox.Postgres, sqlsandbox.ClickHouse} {
		qs := loadLegit(t, dialect)
		for _, c := range loadEscapes(t) {
			if c.refuse == "" && c.dialect == dialect {
				qs = append(qs, c.sql)
			}
		}
		for _, q := range qs {
			rw, err := sqlsandbox.Rewrite(dialect, catalog.Base(), scope, q, 100)
			if err != nil {
				t.Fatalf("%s: %q: %v", dialect, q, err)
			}
			verifyRewritten(t, dialect, rw.SQL)
		}
	}
}

// FuzzRewrite: whatever the sandbox accepts, the SQL it would run reads every table through
// the tenant filter (checked by re-parsing, independently of the rewriter).
func FuzzRewrite(f *testing.F) {
	for _, d := range []string{sqlsandbox.Postgres, sqlsandbox.ClickHouse} {
		for _, q := range loadLegit(f, d) {
			f.Add(d == sqlsandbox.ClickHouse, q)
		}
	}
	for _, c := range loadEscapes(f) {
		f.Add(c.dialect == sqlsandbox.ClickHouse, c.sql)
	}
	f.Fuzz(func(t *testing.T, ch bool, sql string) {
		dialect := sqlsandbox.Postgres
		if ch {
			dialect = sqlsandbox.ClickHouse
		}
		rw, err := sqlsandbox.Rewrite(dialect, catalog.Base(), sqlsandbox.Scope{TenantID: 5}, sql, 100)
		if err != nil {
			return
		}
		verifyRewritten(t, dialect, rw.SQL)
	})
}

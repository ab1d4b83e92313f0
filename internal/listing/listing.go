// Package listing is what paged listings share: the spec's pagination defaults, the
// sort=<field>,<asc|desc> rule resolved against a whitelist, a PostgreSQL WHERE builder with
// $n placeholders, and the ILIKE "contains" pattern. The request rules (page_num,
// page_size, sort_spec in proto/shopmind/common) have already checked the shapes.
package listing

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/shopmind/shopmind/internal/apperr"
)

// Defaults of the spec's pagination.
const (
	DefaultPageNum  = 1
	DefaultPageSize = 10
)

// Page is a resolved page request.
type Page struct {
	Num, Size int32
}

// Offset is the number of rows before the page.
func (p Page) Offset() int64 { return int64(p.Num-1) * int64(p.Size) }

// PageOf applies the defaults to optional page_num and page_size.
func PageOf(num, size *int32) Page {
	p := Page{Num: DefaultPageNum, Size: DefaultPageSize}
	if num != nil {
		p.Num = *num
	}
	if size != nil {
		p.Size = *size
	}
	return p
}

// Sort is a resolved sort: the SQL expression of a whitelisted field and a direction.
type Sort struct {
	Field string // the API field name
	Expr  string // its SQL expression
	Desc  bool
}

// ParseSort resolves sort=<field>,<asc|desc> against whitelist (API field -> SQL
// expression). An empty spec is def (a field of the whitelist), descending when defDesc.
func ParseSort(spec string, whitelist map[string]string, def string, defDesc bool) (Sort, error) {
	if spec == "" {
		return Sort{Field: def, Expr: whitelist[def], Desc: defDesc}, nil
	}
	field, dir, _ := strings.Cut(spec, ",")
	expr, ok := whitelist[field]
	if !ok {
		return Sort{}, apperr.Invalid("sort", "sort.field",
			fmt.Sprintf("unknown sort field %q; one of: %s", field, strings.Join(slices.Sorted(maps.Keys(whitelist)), ", ")))
	}
	return Sort{Field: field, Expr: expr, Desc: dir != "asc"}, nil
}

// OrderBy is "ORDER BY <expr> <dir>, <tie> <dir>".
func (s Sort) OrderBy(tie string) string {
	dir := "ASC"
	if s.Desc {
		dir = "DESC"
	}
	if s.Expr == tie {
		return fmt.Sprintf("ORDER BY %s %s", tie, dir)
	}
	return fmt.Sprintf("ORDER BY %s %s, %s %s", s.Expr, dir, tie, dir)
}

// Where builds a PostgreSQL WHERE clause with $n placeholders.
type Where struct {
	conds []string
	Args  []any
}

// Arg adds a value and returns its placeholder.
func (w *Where) Arg(v any) string {
	w.Args = append(w.Args, v)
	return "$" + strconv.Itoa(len(w.Args))
}

// Add appends a condition; each %s in cond receives the placeholder of the next value.
func (w *Where) Add(cond string, vals ...any) {
	ph := make([]any, len(vals))
	for i, v := range vals {
		ph[i] = w.Arg(v)
	}
	w.conds = append(w.conds, fmt.Sprintf(cond, ph...))
}

// SQL is " WHERE c1 AND c2 ..." or "".
func (w *Where) SQL() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}

// Contains is a case-insensitive "contains" pattern for ILIKE (backslash escapes).
func Contains(keyword string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(keyword) + "%"
}

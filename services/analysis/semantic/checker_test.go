package semantic

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/shopmind/shopmind/internal/analytics/catalog"
)

// A small SQL tokenizer and structural checks of compiled statements: every table reference
// (FROM/JOIN <table>) has an `i_tenant_id = <placeholder bound to the tenant>` predicate in
// its own scope; placeholders and arguments match; no value is spliced into the text.

type sqlTok struct {
	kind  byte // 'i' quoted identifier, 'w' word, 's' string literal, 'n' number, 'p' placeholder, 'x' punctuation
	text  string
	scope int // parenthesised group / UNION branch the token is in
	depth int
}

func tokenize(sql string) ([]sqlTok, error) {
	var out []sqlTok
	stack := []int{0}
	next := 1
	for i := 0; i < len(sql); {
		c := sql[i]
		top := stack[len(stack)-1]
		switch {
		case c == ' ' || c == '\n' || c == '\t':
			i++
		case c == '"' || c == '`':
			j := i + 1
			for ; j < len(sql); j++ {
				if sql[j] == c {
					if j+1 < len(sql) && sql[j+1] == c {
						j++
						continue
					}
					break
				}
			}
			if j >= len(sql) {
				return nil, fmt.Errorf("unterminated identifier at %d", i)
			}
			out = append(out, sqlTok{'i', strings.ReplaceAll(sql[i+1:j], string(c)+string(c), string(c)), top, len(stack)})
			i = j + 1
		case c == '\'':
			j := strings.IndexByte(sql[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated string at %d", i)
			}
			out = append(out, sqlTok{'s', sql[i+1 : i+1+j], top, len(stack)})
			i += j + 2
		case c == '$' || c == '?':
			j := i + 1
			for j < len(sql) && sql[j] >= '0' && sql[j] <= '9' {
				j++
			}
			out = append(out, sqlTok{'p', sql[i:j], top, len(stack)})
			i = j
		case c >= '0' && c <= '9':
			j := i
			for j < len(sql) && (sql[j] >= '0' && sql[j] <= '9' || sql[j] == '.') {
				j++
			}
			out = append(out, sqlTok{'n', sql[i:j], top, len(stack)})
			i = j
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(sql) && (sql[j] == '_' || sql[j] >= 'a' && sql[j] <= 'z' || sql[j] >= 'A' && sql[j] <= 'Z' || sql[j] >= '0' && sql[j] <= '9') {
				j++
			}
			w := sql[i:j]
			if strings.EqualFold(w, "UNION") {
				stack[len(stack)-1] = next
				next++
				top = stack[len(stack)-1]
			}
			out = append(out, sqlTok{'w', w, top, len(stack)})
			i = j
		case c == '(':
			stack = append(stack, next)
			next++
			out = append(out, sqlTok{'x', "(", stack[len(stack)-1], len(stack)})
			i++
		case c == ')':
			if len(stack) == 1 {
				return nil, fmt.Errorf("unbalanced ) at %d", i)
			}
			out = append(out, sqlTok{'x', ")", top, len(stack)})
			stack = stack[:len(stack)-1]
			i++
		default:
			if c == '<' || c == '>' || c == '!' {
				if i+1 < len(sql) && (sql[i+1] == '=' || sql[i+1] == '>') {
					out = append(out, sqlTok{'x', sql[i : i+2], top, len(stack)})
					i += 2
					continue
				}
			}
			out = append(out, sqlTok{'x', string(c), top, len(stack)})
			i++
		}
	}
	if len(stack) != 1 {
		return nil, fmt.Errorf("unbalanced (")
	}
	return out, nil
}

// argOf maps each placeholder token to its argument.
func argOf(toks []sqlTok, args []any) (map[int]any, error) {
	out := map[int]any{}
	positional := 0
	maxN := 0
	used := map[int]bool{}
	for i, t := range toks {
		if t.kind != 'p' {
			continue
		}
		if t.text == "?" {
			if positional >= len(args) {
				return nil, fmt.Errorf("more ? than arguments (%d)", len(args))
			}
			out[i] = args[positional]
			positional++
			continue
		}
		n, err := strconv.Atoi(t.text[1:])
		if err != nil || n < 1 || n > len(args) {
			return nil, fmt.Errorf("placeholder %s out of range (%d args)", t.text, len(args))
		}
		out[i] = args[n-1]
		used[n] = true
		if n > maxN {
			maxN = n
		}
	}
	if positional > 0 && positional != len(args) {
		return nil, fmt.Errorf("%d ? placeholders for %d arguments", positional, len(args))
	}
	if positional == 0 {
		for n := 1; n <= len(args); n++ {
			if !used[n] {
				return nil, fmt.Errorf("argument $%d is never used", n)
			}
		}
	}
	return out, nil
}

// tableRef is one FROM/JOIN of a catalog table.
type tableRef struct {
	table, alias string
	scope        int
}

// checkSQL runs the structural checks on a compiled statement and returns the table
// references it found.
func checkSQL(c *Compiled, tenant int64, cat *catalog.Catalog) ([]tableRef, error) {
	toks, err := tokenize(c.SQL)
	if err != nil {
		return nil, err
	}
	args, err := argOf(toks, c.Args)
	if err != nil {
		return nil, err
	}
	// No value in the text: string literals are only the dialect's constants; numbers only
	// 0 (NULLIF, COALESCE) and PostgreSQL's GROUP BY / ORDER BY ordinals.
	for i, t := range toks {
		switch t.kind {
		case 's':
			switch t.text {
			case "UTC", "day", "week", "month":
			default:
				return nil, fmt.Errorf("string literal '%s' in SQL", t.text)
			}
		case 'n':
			if t.text == "0" {
				continue
			}
			ordinal := false
			for k := i - 1; k >= 0; k-- {
				if toks[k].kind == 'w' && strings.EqualFold(toks[k].text, "BY") {
					ordinal = true
					break
				}
				if !(toks[k].kind == 'n' || toks[k].kind == 'x' && toks[k].text == "," ||
					toks[k].kind == 'w' && (strings.EqualFold(toks[k].text, "ASC") || strings.EqualFold(toks[k].text, "DESC") ||
						strings.EqualFold(toks[k].text, "NULLS") || strings.EqualFold(toks[k].text, "LAST"))) {
					break
				}
			}
			if !ordinal {
				return nil, fmt.Errorf("number literal %s in SQL", t.text)
			}
		case 'i':
			if !knownIdent(t.text, c, cat) {
				return nil, fmt.Errorf("identifier %q is neither a catalog name, an output column nor an internal alias", t.text)
			}
		}
	}
	var refs []tableRef
	for i := 0; i+1 < len(toks); i++ {
		t := toks[i]
		if t.kind != 'w' || !(strings.EqualFold(t.text, "FROM") || strings.EqualFold(t.text, "JOIN")) {
			continue
		}
		n := toks[i+1]
		if n.kind == 'x' && n.text == "(" {
			continue
		}
		if n.kind != 'i' || cat.Table(n.text) == nil {
			return nil, fmt.Errorf("%s %q is not a quoted catalog table", t.text, n.text)
		}
		ref := tableRef{table: n.text, scope: n.scope}
		if i+3 < len(toks) && strings.EqualFold(toks[i+2].text, "AS") {
			ref.alias = toks[i+3].text
		}
		refs = append(refs, ref)
	}
	if len(refs) == 0 {
		return nil, fmt.Errorf("no table reference")
	}
	for _, r := range refs {
		peers := 0
		for _, o := range refs {
			if o.scope == r.scope {
				peers++
			}
		}
		if r.alias == "" && peers > 1 {
			return nil, fmt.Errorf("unaliased %s shares its scope with other tables", r.table)
		}
		found := false
		for i, t := range toks {
			if t.scope != r.scope || t.kind != 'i' || t.text != catalog.TenantColumn {
				continue
			}
			qualified := i >= 2 && toks[i-1].text == "."
			if r.alias != "" && (!qualified || toks[i-2].text != r.alias) {
				continue
			}
			if r.alias == "" && qualified {
				continue
			}
			if i+2 < len(toks) && toks[i+1].text == "=" && toks[i+2].kind == 'p' {
				if v, ok := args[i+2].(int64); ok && v == tenant {
					found = true
					break
				}
			}
		}
		if !found {
			return nil, fmt.Errorf("table %s (alias %q) has no %s = <tenant> predicate in its scope", r.table, r.alias, catalog.TenantColumn)
		}
	}
	return refs, nil
}

// knownIdent: identifiers come from the catalog, the output columns (validated names) or
// the compiler's internal aliases (_T, _D0, _M1, _U2, _C3, _K4, _L5).
func knownIdent(s string, c *Compiled, cat *catalog.Catalog) bool {
	if len(s) >= 2 && s[0] == '_' && s[1] >= 'A' && s[1] <= 'Z' {
		for _, r := range s[2:] {
			if r < '0' || r > '9' {
				return false
			}
		}
		return true
	}
	for _, oc := range c.Columns {
		if oc.Name == s {
			return true
		}
	}
	for _, t := range cat.Tables {
		if t.Name == s || t.Column(s) != nil {
			return true
		}
	}
	return false
}

package provider

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/shopmind/shopmind/internal/analytics/catalog"
	"github.com/shopmind/shopmind/services/nl2sql/asktable"
)

// How the built-in provider combines a role's policies on a datasource, as AskTable
// describes them (an allow policy grants the tables its patterns match, with the rows its
// filters select; a deny policy takes tables away):
//
//   - a table is readable when at least one allow policy's table pattern matches it (no
//     pattern: every table) and no deny policy's pattern does (deny wins);
//   - an allow policy's row filters hold together (AND) on the tables it covers that have
//     the filter's column;
//   - several allow policies covering one table grant the union of their rows (OR). The
//     sandbox applies ANDed IN lists, so the union is enforced exactly when the policies
//     filter that table on one same column (the values are merged: ShopMind's shop lists)
//     or one of them does not filter it (all the tenant's rows); other combinations are
//     refused with 403 rather than guessed;
//   - every policy's tenant filter must name the same one tenant, and some policy must name
//     it: no tenant, no answer.
//
// A deny policy with row filters, and a filter on a column no table has, are refused when
// the policy is created (checkPolicy), not silently dropped.

// policyScope is the scope a role's policies give on datasource dsID, variables substituted.
func policyScope(policies []asktable.Policy, dsID string, vars map[string]string, cat *catalog.Catalog) (Scope, error) {
	var sc Scope
	type grant struct {
		id      string
		filters map[string][]int64 // column -> values; tenant excluded
	}
	allowed := map[string][]grant{} // table -> the allow policies covering it
	denied := map[string]bool{}
	for _, p := range policies {
		if !slices.Contains(p.DatasetConfig.DatasourceIDs, dsID) {
			continue
		}
		match, err := tablePattern(p)
		if err != nil {
			return sc, httpErr{403, "policy " + p.ID + ": " + err.Error()}
		}
		if p.Permission == "deny" {
			for _, t := range cat.Tables {
				if match(t.Name) {
					denied[t.Name] = true
				}
			}
			continue
		}
		g := grant{id: p.ID, filters: map[string][]int64{}}
		for _, e := range p.DatasetConfig.RowsFilters[dsID] {
			f, err := parseFilter(e)
			if err != nil {
				return sc, httpErr{403, "policy " + p.ID + ": " + err.Error()}
			}
			vals, err := f.values(vars)
			if err != nil {
				return sc, httpErr{403, "policy " + p.ID + ": " + err.Error()}
			}
			if f.column == catalog.TenantColumn {
				if len(vals) != 1 || (sc.TenantID != 0 && sc.TenantID != vals[0]) {
					return sc, httpErr{403, "policy " + p.ID + ": the tenant filter must name one tenant"}
				}
				sc.TenantID = vals[0]
				continue
			}
			if prev, ok := g.filters[f.column]; ok { // two filters on one column within a policy: AND
				vals = slices.DeleteFunc(slices.Clone(vals), func(v int64) bool { return !slices.Contains(prev, v) })
			}
			g.filters[f.column] = vals
		}
		for _, t := range cat.Tables {
			if match(t.Name) {
				allowed[t.Name] = append(allowed[t.Name], g)
			}
		}
	}
	if sc.TenantID <= 0 {
		return sc, httpErr{403, "the chat's role does not restrict i_tenant_id: no answer"}
	}
	for _, t := range cat.Tables {
		grants := allowed[t.Name]
		if len(grants) == 0 || denied[t.Name] {
			continue
		}
		sc.Tables = append(sc.Tables, t.Name)
		filters, err := combine(t, grants[0].id, applicable(t, grants[0].filters))
		if err != nil {
			return sc, err
		}
		for _, g := range grants[1:] {
			next := applicable(t, g.filters)
			switch {
			case filters == nil:
			case len(next) == 0:
				filters = nil // this policy grants all the tenant's rows of the table
			case len(filters) == 1 && len(next) == 1 && sameKey(filters, next):
				for col, vals := range next {
					for _, v := range vals {
						if !slices.Contains(filters[col], v) {
							filters[col] = append(filters[col], v)
						}
					}
				}
			default:
				return sc, httpErr{403, fmt.Sprintf("policies %s and %s both cover table %s with row filters on different columns; the built-in provider cannot combine them (their union)", grants[0].id, g.id, t.Name)}
			}
		}
		for col, vals := range filters {
			slices.Sort(vals)
			sc.RowFilters = append(sc.RowFilters, RowFilter{Table: t.Name, Column: col, Values: vals})
		}
	}
	if len(sc.Tables) == 0 {
		return sc, httpErr{403, "the chat's role allows no table"}
	}
	slices.SortFunc(sc.RowFilters, func(a, b RowFilter) int {
		if a.Table != b.Table {
			return compare(a.Table, b.Table)
		}
		return compare(a.Column, b.Column)
	})
	return sc, nil
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// combine starts a table's filters from its first policy's (nil: unfiltered).
func combine(_ *catalog.Table, _ string, f map[string][]int64) (map[string][]int64, error) {
	if len(f) == 0 {
		return nil, nil
	}
	out := make(map[string][]int64, len(f))
	for c, v := range f {
		out[c] = slices.Clone(v)
	}
	return out, nil
}

// applicable are the filters of a policy that apply to t (those on columns t has).
func applicable(t *catalog.Table, f map[string][]int64) map[string][]int64 {
	out := map[string][]int64{}
	for c, v := range f {
		if t.Column(c) != nil {
			out[c] = v
		}
	}
	return out
}

func sameKey(a, b map[string][]int64) bool {
	for k := range a {
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return true
}

// tablePattern is a policy's table matcher (no pattern: every table).
func tablePattern(p asktable.Policy) (func(string) bool, error) {
	rp := p.DatasetConfig.RegexPatterns
	if rp == nil || rp.TablesRegexPattern == "" {
		return func(string) bool { return true }, nil
	}
	re, err := regexp.Compile(rp.TablesRegexPattern)
	if err != nil {
		return nil, fmt.Errorf("tables_regex_pattern: %v", err)
	}
	return re.MatchString, nil
}

// checkPolicy refuses, when a policy is created, what the built-in provider could not
// enforce: a deny policy with row filters (it denies whole tables), a filter on a column no
// table of the catalog has.
func checkPolicy(p asktable.Policy, cat *catalog.Catalog) error {
	if _, err := tablePattern(p); err != nil {
		return err
	}
	for _, exprs := range p.DatasetConfig.RowsFilters {
		if len(exprs) > 0 && p.Permission == "deny" {
			return fmt.Errorf("rows_filters: the built-in provider denies whole tables; a deny policy takes no row filters")
		}
		for _, e := range exprs {
			f, err := parseFilter(e)
			if err != nil {
				return fmt.Errorf("rows_filters: %v", err)
			}
			if !slices.ContainsFunc(cat.Tables, func(t *catalog.Table) bool { return t.Column(f.column) != nil }) {
				return fmt.Errorf("rows_filters: no table has a column %s", f.column)
			}
		}
	}
	return nil
}

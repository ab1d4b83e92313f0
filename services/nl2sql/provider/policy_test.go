package provider

import (
	"slices"
	"strings"
	"testing"

	"github.com/shopmind/shopmind/internal/analytics/catalog"
	"github.com/shopmind/shopmind/services/nl2sql/asktable"
)

func pol(id, perm, pattern string, filters ...string) asktable.Policy {
	p := asktable.Policy{ID: id, Permission: perm, DatasetConfig: asktable.DatasetConfig{DatasourceIDs: []string{"ds"},
		RowsFilters: map[string][]string{"ds": filters}}}
	if pattern != "" {
		p.DatasetConfig.RegexPatterns = &asktable.RegexPatterns{TablesRegexPattern: pattern}
	}
	return p
}

const tenant7 = "analytics.*.i_tenant_id = 7"

// A role's policies combine as AskTable's do (NL2SQL.md): a table is readable when an allow
// policy's pattern matches it and no deny policy's does; an allow policy's filters hold
// together (AND) on the tables it covers; several allow policies covering one table grant
// the union of their rows (OR).
func TestPolicyScope(t *testing.T) {
	cat := catalog.Base()
	all := func(sc Scope) []string { return slices.Sorted(slices.Values(sc.Tables)) }

	sc, err := policyScope([]asktable.Policy{pol("a", "allow", "^basic_orders$", tenant7, "analytics.*.shop_id IN (1, 2)")}, "ds", nil, cat)
	if err != nil || sc.TenantID != 7 || !slices.Equal(all(sc), []string{"basic_orders"}) {
		t.Fatalf("one policy: %+v %v", sc, err)
	}
	if len(sc.RowFilters) != 1 || sc.RowFilters[0].Table != "basic_orders" || !slices.Equal(sc.RowFilters[0].Values, []int64{1, 2}) {
		t.Errorf("one policy's filter: %+v", sc.RowFilters)
	}

	// deny wins over allow
	sc, err = policyScope([]asktable.Policy{pol("a", "allow", "", tenant7), pol("d", "deny", "^basic_order_items$")}, "ds", nil, cat)
	if err != nil || slices.Contains(sc.Tables, "basic_order_items") || !slices.Contains(sc.Tables, "basic_orders") {
		t.Fatalf("deny: %+v %v", sc, err)
	}

	// two allow policies on one column: the union of their values
	sc, err = policyScope([]asktable.Policy{pol("a", "allow", "^basic_orders$", tenant7, "analytics.*.shop_id IN (1)"),
		pol("b", "allow", "^basic_", tenant7, "analytics.*.shop_id IN (2)")}, "ds", nil, cat)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range sc.RowFilters {
		if f.Table == "basic_orders" && !slices.Equal(f.Values, []int64{1, 2}) {
			t.Errorf("basic_orders: %v, want shops 1 and 2", f.Values)
		}
		if f.Table == "basic_goods" && !slices.Equal(f.Values, []int64{2}) {
			t.Errorf("basic_goods: %v, want shop 2", f.Values)
		}
	}
	// an allow policy without a filter on a table: all the tenant's rows of it
	sc, err = policyScope([]asktable.Policy{pol("a", "allow", "^basic_orders$", tenant7, "analytics.*.shop_id IN (1)"),
		pol("b", "allow", "^basic_orders$", tenant7)}, "ds", nil, cat)
	if err != nil || len(sc.RowFilters) != 0 {
		t.Errorf("allow without filter: %+v %v", sc, err)
	}
	// nothing allowed, or no tenant: no answer
	if _, err := policyScope([]asktable.Policy{pol("d", "deny", "")}, "ds", nil, cat); err == nil {
		t.Error("deny only: want a refusal")
	}
	if _, err := policyScope([]asktable.Policy{pol("a", "allow", "")}, "ds", nil, cat); err == nil || !strings.Contains(err.Error(), "i_tenant_id") {
		t.Errorf("no tenant: %v", err)
	}
	// two tenants: refused
	if _, err := policyScope([]asktable.Policy{pol("a", "allow", "", tenant7), pol("b", "allow", "", "analytics.*.i_tenant_id = 8")}, "ds", nil, cat); err == nil {
		t.Error("two tenants: want a refusal")
	}
}

// A filter on a column no table of the catalog has is refused when the policy is made.
func TestCheckPolicyColumns(t *testing.T) {
	cat := catalog.Base()
	if err := checkPolicy(pol("a", "allow", "", tenant7, "analytics.*.shop_id IN (1)"), cat); err != nil {
		t.Errorf("shop_id: %v", err)
	}
	if err := checkPolicy(pol("a", "allow", "", tenant7, "analytics.*.no_such_column IN (1)"), cat); err == nil || !strings.Contains(err.Error(), "no_such_column") {
		t.Errorf("unknown column: %v", err)
	}
	if err := checkPolicy(pol("d", "deny", "^basic_orders$", "analytics.*.shop_id IN (1)"), cat); err == nil {
		t.Error("deny with row filters: want a refusal (the built-in provider denies whole tables)")
	}
}

package semantic

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/shopmind/shopmind/internal/apperr"
)

// wantErr asserts err is an *apperr.Error of kind and mentions each of want.
func wantErr(t *testing.T, what string, err error, kind apperr.Kind, want ...string) {
	t.Helper()
	var ae *apperr.Error
	if !errors.As(err, &ae) {
		t.Errorf("%s: error %v (%T), want *apperr.Error", what, err, err)
		return
	}
	if ae.Kind != kind {
		t.Errorf("%s: kind %d (%v), want %d", what, ae.Kind, err, kind)
	}
	for _, w := range want {
		if !strings.Contains(ae.Error(), w) {
			t.Errorf("%s: %q does not mention %q", what, ae.Error(), w)
		}
	}
}

func TestCheckDefinitionValid(t *testing.T) {
	ms := metricSet(testMetrics())
	for name, m := range ms {
		if err := CheckDefinition(m, baseCatalog, ms.byID, ms.byName); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// A count over any column; a derived metric whose range is on a joined table.
	for _, m := range []*Metric{
		{Name: "statuses", Type: TypeDerived, Derived: &DerivedConfig{SourceField: "basic_orders.status", Aggregation: "count_distinct"}},
		{Name: "shops", Type: TypeDerived, Derived: &DerivedConfig{SourceField: "shop_id", Aggregation: "count"}}, // key of basic_shops
		{Name: "paid_lines", Type: TypeDerived, Derived: &DerivedConfig{SourceField: "amount", Aggregation: "sum", TimeRangeField: "basic_orders.paid_at"}},
		{Name: "orders_by_no", Type: TypeOrder, Order: &OrderConfig{OrderField: "basic_orders.order_no", TimeBasis: "completed_at",
			Conditions: []Condition{{Field: "paid_at", Operator: "is_not_null"}, {Field: "paid_amount", Operator: "gte", Value: 10.0}, {Field: "order_id", Operator: "eq", Value: "123"}}}},
	} {
		if err := CheckDefinition(m, baseCatalog, ms.byID, ms.byName); err != nil {
			t.Errorf("%s: %v", m.Name, err)
		}
	}
}

func TestCheckDefinitionErrors(t *testing.T) {
	ms := metricSet(testMetrics())
	derived := func(src, agg, tr string) *Metric {
		return &Metric{Name: "m", Type: TypeDerived, Derived: &DerivedConfig{SourceField: src, Aggregation: agg, TimeRangeField: tr}}
	}
	order := func(field, basis string, conds ...Condition) *Metric {
		return &Metric{Name: "m", Type: TypeOrder, Order: &OrderConfig{OrderField: field, TimeBasis: basis, Conditions: conds}}
	}
	formula := func(name, expr string, ids ...int64) *Metric {
		return &Metric{Name: name, Type: TypeFormula, Formula: &FormulaConfig{Expression: expr, DependencyIDs: ids}}
	}
	cases := []struct {
		name string
		m    *Metric
		kind apperr.Kind
		want []string
	}{
		{"hostile source", derived("amount); DROP TABLE x; --", "sum", ""), apperr.KindInvalid, []string{"config.derived.source_field", `unknown column "amount); DROP TABLE x; --"`}},
		{"unknown source", derived("amountx", "sum", ""), apperr.KindInvalid, []string{"config.derived.source_field", "unknown column"}},
		{"unknown table", derived("nope.amount", "sum", ""), apperr.KindInvalid, []string{"config.derived.source_field"}},
		{"tenant column", derived("basic_orders.i_tenant_id", "count", ""), apperr.KindInvalid, []string{"config.derived.source_field"}},
		{"ambiguous source", derived("status", "count", ""), apperr.KindInvalid, []string{"several tables", "table.column"}},
		{"empty source", derived("", "sum", ""), apperr.KindInvalid, []string{"config.derived.source_field"}},
		{"bad aggregation", derived("amount", "median", ""), apperr.KindInvalid, []string{"config.derived.aggregation"}},
		{"sum of a dimension", derived("basic_orders.order_no", "sum", ""), apperr.KindRule, []string{"sum needs a numeric measure column"}},
		{"avg of a time", derived("basic_orders.paid_at", "avg", ""), apperr.KindRule, []string{"avg needs"}},
		{"max of an id", derived("basic_orders.buyer_id", "max", ""), apperr.KindRule, []string{"max needs"}},
		{"range not time", derived("amount", "sum", "quantity"), apperr.KindRule, []string{"config.derived.time_range_field", "not a time column"}},
		{"range unknown", derived("amount", "sum", "paid_at"), apperr.KindInvalid, []string{"config.derived.time_range_field", "unknown column"}},
		{"range hostile", derived("amount", "sum", "ordered_at; --"), apperr.KindInvalid, []string{"config.derived.time_range_field"}},
		{"range unreachable", derived("basic_orders.paid_amount", "sum", "basic_goods.created_at"), apperr.KindRule, []string{"not reachable"}},
		{"no time column", derived("basic_categories.level", "count", ""), apperr.KindRule, []string{"no default time column"}},
		{"config mismatch", &Metric{Name: "m", Type: TypeDerived, Order: &OrderConfig{}}, apperr.KindInvalid, []string{"config"}},
		{"unknown type", &Metric{Name: "m", Type: "ratio"}, apperr.KindInvalid, []string{"type"}},
		{"bad name", &Metric{Name: "Bad", Type: TypeDerived, Derived: &DerivedConfig{SourceField: "amount", Aggregation: "sum"}}, apperr.KindInvalid, []string{"name"}},

		{"order unknown field", order("amount", "ordered_at"), apperr.KindInvalid, []string{"config.order.order_field"}},
		{"order other table", order("basic_goods.price", "ordered_at"), apperr.KindInvalid, []string{"config.order.order_field", "not a column of basic_orders"}},
		{"order time field", order("paid_at", "ordered_at"), apperr.KindRule, []string{"config.order.order_field"}},
		{"order basis", order("paid_amount", "created_at"), apperr.KindInvalid, []string{"config.order.time_basis"}},
		{"order cond field", order("paid_amount", "ordered_at", Condition{Field: "amount", Operator: "eq", Value: 1.0}), apperr.KindInvalid, []string{"config.order.query_condition[0].field"}},
		{"order cond hostile", order("paid_amount", "ordered_at", Condition{Field: "status = 'x' OR 1=1 --", Operator: "eq", Value: "x"}), apperr.KindInvalid, []string{"config.order.query_condition[0].field"}},
		{"order cond operator", order("paid_amount", "ordered_at", Condition{Field: "status", Operator: "regexp", Value: "x"}), apperr.KindInvalid, []string{"query_condition[0].operator"}},
		{"order cond string for float", order("paid_amount", "ordered_at", Condition{Field: "paid_amount", Operator: "gt", Value: "100"}), apperr.KindInvalid, []string{"query_condition[0].value", "float"}},
		{"order cond number for string", order("paid_amount", "ordered_at", Condition{Field: "status", Operator: "eq", Value: 1.0}), apperr.KindInvalid, []string{"query_condition[0].value"}},
		{"order cond fraction for int", order("paid_amount", "ordered_at", Condition{Field: "shop_id", Operator: "eq", Value: 1.5}), apperr.KindInvalid, []string{"query_condition[0].value"}},
		{"order cond bad time", order("paid_amount", "ordered_at", Condition{Field: "paid_at", Operator: "gt", Value: "yesterday"}), apperr.KindInvalid, []string{"RFC 3339"}},
		{"order cond in empty", order("paid_amount", "ordered_at", Condition{Field: "status", Operator: "in", Value: []any{}}), apperr.KindInvalid, []string{"query_condition[0].value"}},
		{"order cond in too long", order("paid_amount", "ordered_at", Condition{Field: "status", Operator: "in", Value: make([]any, 1001)}), apperr.KindInvalid, []string{"1 to 1000"}},
		{"order cond in mixed", order("paid_amount", "ordered_at", Condition{Field: "status", Operator: "in", Value: []any{"paid", 2.0}}), apperr.KindInvalid, []string{"query_condition[0].value[1]"}},
		{"order cond like int", order("paid_amount", "ordered_at", Condition{Field: "shop_id", Operator: "like", Value: "1%"}), apperr.KindInvalid, []string{"like needs a string column"}},
		{"order cond null with value", order("paid_amount", "ordered_at", Condition{Field: "paid_at", Operator: "is_null", Value: "x"}), apperr.KindInvalid, []string{"must be absent"}},
		{"order cond missing value", order("paid_amount", "ordered_at", Condition{Field: "status", Operator: "eq"}), apperr.KindInvalid, []string{"required"}},

		{"formula parse", formula("f", "gmv +", 1), apperr.KindInvalid, []string{"config.formula.expression"}},
		{"formula unknown", formula("f", "gmv / visitors", 1), apperr.KindRule, []string{"formula references unknown metric visitors"}},
		{"formula unknown id", formula("f", "gmv", 1, 99), apperr.KindRule, []string{"unknown metric id 99"}},
		{"formula ids missing", formula("f", "gmv / order_count", 1), apperr.KindRule, []string{"order_count, not listed"}},
		{"formula ids extra", formula("f", "gmv", 1, 2), apperr.KindRule, []string{"listed but not used: order_count (id 2)"}},
		{"formula no ids", formula("f", "gmv"), apperr.KindInvalid, []string{"dependency_ids"}},
		{"formula self", formula("f", "f + 1"), apperr.KindRule, []string{"cycle: f -> f"}},
		{"formula self by id", &Metric{ID: 12, Name: "aov", Type: TypeFormula, Formula: &FormulaConfig{Expression: "gmv / order_count", DependencyIDs: []int64{1, 12}}}, apperr.KindRule, []string{"cycle"}},
		// aov_cents = aov * 100 is stored; redefining aov over aov_cents closes a loop.
		{"formula indirect", &Metric{ID: 12, Name: "aov", Type: TypeFormula, Formula: &FormulaConfig{Expression: "aov_cents / 100", DependencyIDs: []int64{15}}}, apperr.KindRule, []string{"cycle: aov -> aov_cents -> aov"}},
	}
	for _, c := range cases {
		err := CheckDefinition(c.m, baseCatalog, ms.byID, ms.byName)
		wantErr(t, c.name, err, c.kind, c.want...)
	}
}

func TestCheckDefinitionLongCycle(t *testing.T) {
	ms := metricSet(testMetrics())
	ms["fa"] = &Metric{ID: 101, Name: "fa", Type: TypeFormula, Formula: &FormulaConfig{Expression: "fb + 1", DependencyIDs: []int64{102}}}
	ms["fb"] = &Metric{ID: 102, Name: "fb", Type: TypeFormula, Formula: &FormulaConfig{Expression: "fc * 2", DependencyIDs: []int64{103}}}
	ms["fc"] = &Metric{ID: 103, Name: "fc", Type: TypeFormula, Formula: &FormulaConfig{Expression: "gmv", DependencyIDs: []int64{1}}}
	// fc now uses fa: fc -> fa -> fb -> fc.
	upd := &Metric{ID: 103, Name: "fc", Type: TypeFormula, Formula: &FormulaConfig{Expression: "gmv + fa", DependencyIDs: []int64{1, 101}}}
	wantErr(t, "3-cycle", CheckDefinition(upd, baseCatalog, ms.byID, ms.byName), apperr.KindRule, "cycle: fc -> fa -> fb -> fc")
	// Renaming fc breaks fb's reference: reported as unknown, not silently accepted.
	ren := &Metric{ID: 103, Name: "fc2", Type: TypeFormula, Formula: &FormulaConfig{Expression: "gmv + fa", DependencyIDs: []int64{1, 101}}}
	wantErr(t, "renamed", CheckDefinition(ren, baseCatalog, ms.byID, ms.byName), apperr.KindRule, "unknown metric fc")
	// A stored cycle not through the new metric is still found.
	ms["fb"].Formula.Expression = "fa * 2"
	ms["fb"].Formula.DependencyIDs = []int64{101}
	f := &Metric{Name: "g", Type: TypeFormula, Formula: &FormulaConfig{Expression: "fa", DependencyIDs: []int64{101}}}
	wantErr(t, "stored cycle", CheckDefinition(f, baseCatalog, ms.byID, ms.byName), apperr.KindRule, "cycle: fa -> fb -> fa")
}

// A derived metric's query_condition restricts the rows of its own table: checked like an
// order metric's (unknown column or value type: 400 naming the field), and compiled into the
// statement as a bound condition.
func TestDerivedConditions(t *testing.T) {
	ms := metricSet(testMetrics())
	sold := Condition{Field: "status", Operator: "in", Value: []any{"paid", "shipped", "completed"}}
	units := &Metric{ID: 90, Name: "sold_units", Type: TypeDerived, Derived: &DerivedConfig{SourceField: "basic_order_items.quantity", Aggregation: "sum", Conditions: []Condition{sold}}}
	if err := CheckDefinition(units, baseCatalog, ms.byID, ms.byName); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cond Condition
		want string
	}{
		{Condition{Field: "nope", Operator: "eq", Value: "x"}, "config.derived.query_condition[0].field"},
		{Condition{Field: "quantity", Operator: "eq", Value: "x"}, "config.derived.query_condition[0]"},
	} {
		cond, want := tc.cond, tc.want
		bad := &Metric{Name: "m", Type: TypeDerived, Derived: &DerivedConfig{SourceField: "basic_order_items.quantity", Aggregation: "sum", Conditions: []Condition{cond}}}
		err := CheckDefinition(bad, baseCatalog, ms.byID, ms.byName)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: %v", cond, err)
		}
	}
	ms["sold_units"] = units
	q := &Query{TenantID: 7, Resolve: ms.byName, Metrics: []*Metric{units}, Start: t0, End: t1}
	c, err := Compile(q, baseCatalog, Postgres())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(c.SQL, `"status" IN (`) || !slices.Contains(c.Args, any("paid")) {
		t.Fatalf("%s %v", c.SQL, c.Args)
	}
}

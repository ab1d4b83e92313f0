package semantic

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/shopmind/shopmind/internal/analytics/catalog"
	"github.com/shopmind/shopmind/internal/apperr"
)

// OrdersTable is the table order metrics aggregate.
const OrdersTable = "basic_orders"

// Metric types.
const (
	TypeDerived = "derived"
	TypeOrder   = "order"
	TypeFormula = "formula"
)

// Metric is a metric definition (analysis.proto Metric, the fields the semantic layer uses).
type Metric struct {
	ID      int64
	Name    string
	Type    string // derived, order or formula
	Derived *DerivedConfig
	Order   *OrderConfig
	Formula *FormulaConfig
}

// DerivedConfig: aggregation(source_field) over the source column's table, in the time range
// on time_range_field (default: the table's time column).
type DerivedConfig struct {
	SourceField, Aggregation, TimeRangeField string
	// Conditions a row of the source table must meet, ANDed (columns of that table).
	Conditions []Condition
}

// OrderConfig: an aggregation over basic_orders of order_field (measures summed, identifiers
// counted distinct), orders placed in the range by time_basis, conditions ANDed.
type OrderConfig struct {
	OrderField, TimeBasis string
	Conditions            []Condition
}

// FormulaConfig: arithmetic over other metrics by name; DependencyIDs lists their ids.
type FormulaConfig struct {
	Expression    string
	DependencyIDs []int64
}

// Condition is `field operator value`. Value is what google.protobuf.Value decodes to: nil,
// string, float64, bool or []any of those.
type Condition struct {
	Field, Operator string
	Value           any
}

var aggregations = map[string]bool{"sum": true, "count": true, "count_distinct": true, "avg": true, "min": true, "max": true}

var timeBases = map[string]bool{"ordered_at": true, "paid_at": true, "shipped_at": true, "completed_at": true}

// base is a resolved derived or order metric: aggregation agg of column col of table, placed
// in time by timeCol of timeTable (table itself or a table it reaches), rows filtered by conds.
type base struct {
	metric    *Metric
	table     *catalog.Table
	col       *catalog.Column
	agg       string
	timeTable *catalog.Table
	timeCol   *catalog.Column
	conds     []cond
	typ       catalog.Type // type of the value
	additive  bool         // sum and counts: 0 over no row
}

// cond is a resolved condition: a column, an operator, typed operands.
type cond struct {
	table *catalog.Table
	col   *catalog.Column
	op    string
	vals  []any
}

func unknownColumn(field, ref string) error {
	return apperr.Invalid(field, "catalog", fmt.Sprintf("unknown column %q", ref))
}

// findColumn resolves a `column` or `table.column` reference anywhere in the catalog. An
// unqualified name must be unique, or the key of exactly one table (order_id is the key of
// basic_orders).
func findColumn(cat *catalog.Catalog, field, ref string) (*catalog.Table, *catalog.Column, error) {
	if !validRef(ref) {
		return nil, nil, unknownColumn(field, ref)
	}
	if strings.IndexByte(ref, '.') >= 0 {
		t, c, err := cat.Resolve(ref, "")
		if err != nil {
			return nil, nil, unknownColumn(field, ref)
		}
		return t, c, nil
	}
	var hits []*catalog.Table
	for _, t := range cat.Tables {
		if c := t.Column(ref); c != nil && c.Name != catalog.TenantColumn {
			hits = append(hits, t)
		}
	}
	switch len(hits) {
	case 0:
		return nil, nil, unknownColumn(field, ref)
	case 1:
		return hits[0], hits[0].Column(ref), nil
	}
	var keyed *catalog.Table
	for _, t := range hits {
		if t.Key == ref {
			if keyed != nil {
				keyed = nil
				break
			}
			keyed = t
		}
	}
	if keyed != nil {
		return keyed, keyed.Column(ref), nil
	}
	names := make([]string, len(hits))
	for i, t := range hits {
		names[i] = t.Name
	}
	return nil, nil, apperr.Invalid(field, "catalog",
		fmt.Sprintf("column %q is in several tables (%s): write it as table.column", ref, strings.Join(names, ", ")))
}

// columnIn resolves a reference that must name a column of table (unqualified or qualified
// with that table).
func columnIn(t *catalog.Table, field, ref string) (*catalog.Column, error) {
	if !validRef(ref) {
		return nil, unknownColumn(field, ref)
	}
	name := ref
	if tn, cn, ok := strings.Cut(ref, "."); ok {
		if tn != t.Name {
			return nil, apperr.Invalid(field, "catalog", fmt.Sprintf("%q is not a column of %s", ref, t.Name))
		}
		name = cn
	}
	c := t.Column(name)
	if c == nil || c.Name == catalog.TenantColumn {
		return nil, unknownColumn(field, ref)
	}
	return c, nil
}

func numeric(t catalog.Type) bool { return t == catalog.TypeInt || t == catalog.TypeFloat }

// resolveBase checks a derived or order metric against the catalog.
func resolveBase(m *Metric, cat *catalog.Catalog) (*base, error) {
	switch m.Type {
	case TypeDerived:
		if m.Derived == nil || m.Order != nil || m.Formula != nil {
			return nil, apperr.Invalid("config", "metric.type_config", "config must hold the case named by type (derived)")
		}
		return resolveDerived(m, cat)
	case TypeOrder:
		if m.Order == nil || m.Derived != nil || m.Formula != nil {
			return nil, apperr.Invalid("config", "metric.type_config", "config must hold the case named by type (order)")
		}
		return resolveOrder(m, cat)
	case TypeFormula:
		return nil, apperr.New(apperr.KindInternal, "formula metric %s resolved as a base metric", m.Name)
	default:
		return nil, apperr.Invalid("type", "metric.type", fmt.Sprintf("unknown metric type %q (derived, order or formula)", m.Type))
	}
}

func resolveDerived(m *Metric, cat *catalog.Catalog) (*base, error) {
	d := m.Derived
	if d.SourceField == "" {
		return nil, apperr.Invalid("config.derived.source_field", "required", "required")
	}
	t, c, err := findColumn(cat, "config.derived.source_field", d.SourceField)
	if err != nil {
		return nil, err
	}
	if !aggregations[d.Aggregation] {
		return nil, apperr.Invalid("config.derived.aggregation", "aggregation",
			fmt.Sprintf("unknown aggregation %q (sum, count, count_distinct, avg, min or max)", d.Aggregation))
	}
	b := &base{metric: m, table: t, col: c, agg: d.Aggregation}
	if err := resolveConditions(b, t, "config.derived.query_condition", d.Conditions); err != nil {
		return nil, err
	}
	switch d.Aggregation {
	case "count", "count_distinct":
		b.typ, b.additive = catalog.TypeInt, true
	default:
		if c.Role != catalog.RoleMeasure || !numeric(c.Type) {
			return nil, apperr.New(apperr.KindRule,
				"config.derived.aggregation: %s needs a numeric measure column; %s.%s is a %s %s column (count and count_distinct take any column)",
				d.Aggregation, t.Name, c.Name, c.Type, c.Role)
		}
		b.typ = c.Type
		switch d.Aggregation {
		case "sum":
			b.additive = true
		case "avg":
			b.typ = catalog.TypeFloat
		}
	}
	if d.TimeRangeField == "" {
		if t.TimeColumn == "" || t.Column(t.TimeColumn) == nil {
			return nil, apperr.New(apperr.KindRule,
				"config.derived.time_range_field: table %s has no default time column; name one", t.Name)
		}
		b.timeTable, b.timeCol = t, t.Column(t.TimeColumn)
		return b, nil
	}
	if !validRef(d.TimeRangeField) {
		return nil, unknownColumn("config.derived.time_range_field", d.TimeRangeField)
	}
	tt, tc := t, (*catalog.Column)(nil)
	if strings.IndexByte(d.TimeRangeField, '.') >= 0 {
		var err error
		tt, tc, err = cat.Resolve(d.TimeRangeField, "")
		if err != nil {
			return nil, unknownColumn("config.derived.time_range_field", d.TimeRangeField)
		}
		if tt != t && newReach(cat, t).index(tt.Name) < 0 {
			return nil, apperr.New(apperr.KindRule,
				"config.derived.time_range_field: %s is not reachable from %s through the catalog's joins", tt.Name, t.Name)
		}
	} else if tc, err = columnIn(t, "config.derived.time_range_field", d.TimeRangeField); err != nil {
		return nil, err
	}
	if tc.Role != catalog.RoleTime || tc.Type != catalog.TypeTime {
		return nil, apperr.New(apperr.KindRule, "config.derived.time_range_field: %s.%s is not a time column", tt.Name, tc.Name)
	}
	b.timeTable, b.timeCol = tt, tc
	return b, nil
}

func resolveOrder(m *Metric, cat *catalog.Catalog) (*base, error) {
	o := m.Order
	t := cat.Table(OrdersTable)
	if t == nil {
		return nil, apperr.New(apperr.KindRule, "the catalog has no %s table", OrdersTable)
	}
	if o.OrderField == "" {
		return nil, apperr.Invalid("config.order.order_field", "required", "required")
	}
	ref := o.OrderField
	if (ref == "id" || ref == OrdersTable+".id") && t.Column("id") == nil && t.Key != "" {
		ref = t.Key // the contract's example "id" is the order key
	}
	c, err := columnIn(t, "config.order.order_field", ref)
	if err != nil {
		return nil, err
	}
	b := &base{metric: m, table: t, col: c, additive: true}
	switch {
	case c.Role == catalog.RoleMeasure && numeric(c.Type):
		b.agg, b.typ = "sum", c.Type
	case c.Role == catalog.RoleDimension:
		b.agg, b.typ = "count_distinct", catalog.TypeInt
	default:
		return nil, apperr.New(apperr.KindRule,
			"config.order.order_field: %s is a %s column; an order metric sums an amount or quantity column or counts an identifier column", c.Name, c.Role)
	}
	if !timeBases[o.TimeBasis] {
		return nil, apperr.Invalid("config.order.time_basis", "time_basis",
			fmt.Sprintf("unknown time basis %q (ordered_at, paid_at, shipped_at or completed_at)", o.TimeBasis))
	}
	tc := t.Column(o.TimeBasis)
	if tc == nil || tc.Type != catalog.TypeTime {
		return nil, apperr.New(apperr.KindRule, "config.order.time_basis: %s has no time column %s", t.Name, o.TimeBasis)
	}
	b.timeTable, b.timeCol = t, tc
	if err := resolveConditions(b, t, "config.order.query_condition", o.Conditions); err != nil {
		return nil, err
	}
	return b, nil
}

// resolveConditions checks a base metric's conditions on columns of its table t and adds
// them to b; path names the field in errors.
func resolveConditions(b *base, t *catalog.Table, path string, conds []Condition) error {
	if len(conds) > MaxConditions {
		return apperr.Invalid(path, "repeated.max_items", fmt.Sprintf("at most %d conditions", MaxConditions))
	}
	for i, cd := range conds {
		field := path + "[" + strconv.Itoa(i) + "]"
		cc, err := columnIn(t, field+".field", cd.Field)
		if err != nil {
			return err
		}
		vals, err := condValues(field, cc, cd.Operator, cd.Value)
		if err != nil {
			return err
		}
		b.conds = append(b.conds, cond{table: t, col: cc, op: cd.Operator, vals: vals})
	}
	return nil
}

// CheckDefinition checks a metric definition before it is stored: its config against the
// catalog, and for a formula its expression, its references (byName), its dependency_ids
// (byID) and the absence of cycles through other formulas. m may be an update of a stored
// metric (same ID): lookups that return the stored version of m see m instead.
//
// Errors: 400 (apperr.Invalid) for malformed fields, naming the field; 422 (KindRule) for
// unknown metrics, dependency_ids not matching the expression, cycles, and column roles
// that do not fit the aggregation.
func CheckDefinition(m *Metric, cat *catalog.Catalog, byID func(id int64) *Metric, byName func(name string) *Metric) error {
	if m == nil {
		return apperr.Invalid("metric", "required", "required")
	}
	if !validMetricName(m.Name) {
		return apperr.Invalid("name", "name", "a lowercase letter, then letters, digits or underscores, 1 to 64 characters")
	}
	if m.Type != TypeFormula {
		_, err := resolveBase(m, cat)
		return err
	}
	f := m.Formula
	if f == nil || m.Derived != nil || m.Order != nil {
		return apperr.Invalid("config", "metric.type_config", "config must hold the case named by type (formula)")
	}
	e, err := ParseFormula(f.Expression)
	if err != nil {
		return apperr.Invalid("config.formula.expression", "formula", err.Error())
	}
	if byID == nil {
		byID = func(int64) *Metric { return nil }
	}
	if byName == nil {
		byName = func(string) *Metric { return nil }
	}
	// Lookups as they will be once m is stored.
	lookup := func(name string) *Metric {
		if name == m.Name {
			return m
		}
		x := byName(name)
		if x != nil && m.ID != 0 && x.ID == m.ID {
			return nil // m's old name, gone once m is renamed
		}
		return x
	}
	refs := e.References()
	for _, r := range refs {
		if r == m.Name {
			return apperr.New(apperr.KindRule, "cycle: %s -> %s", m.Name, m.Name)
		}
		if lookup(r) == nil {
			return apperr.New(apperr.KindRule, "formula references unknown metric %s", r)
		}
	}
	if len(f.DependencyIDs) == 0 {
		return apperr.Invalid("config.formula.dependency_ids", "repeated.min_items", "list the ids of the metrics the expression uses")
	}
	depNames := map[string]int64{}
	for _, id := range f.DependencyIDs {
		if id <= 0 {
			return apperr.Invalid("config.formula.dependency_ids", "id", "each id must be greater than 0")
		}
		var d *Metric
		if m.ID != 0 && id == m.ID {
			d = m
		} else {
			d = byID(id)
		}
		if d == nil {
			return apperr.New(apperr.KindRule, "config.formula.dependency_ids: unknown metric id %d", id)
		}
		if d == m {
			return apperr.New(apperr.KindRule, "cycle: %s -> %s", m.Name, m.Name)
		}
		if _, dup := depNames[d.Name]; dup {
			return apperr.Invalid("config.formula.dependency_ids", "repeated.unique", fmt.Sprintf("metric id %d is listed twice", id))
		}
		depNames[d.Name] = id
	}
	var missing, extra []string
	for _, r := range refs {
		if _, ok := depNames[r]; !ok {
			missing = append(missing, r)
		}
	}
	for n, id := range depNames {
		found := false
		for _, r := range refs {
			if r == n {
				found = true
				break
			}
		}
		if !found {
			extra = append(extra, fmt.Sprintf("%s (id %d)", n, id))
		}
	}
	if len(missing) > 0 || len(extra) > 0 {
		sort.Strings(extra)
		var parts []string
		if len(missing) > 0 {
			parts = append(parts, "the expression uses "+strings.Join(missing, ", ")+", not listed")
		}
		if len(extra) > 0 {
			parts = append(parts, "listed but not used: "+strings.Join(extra, ", "))
		}
		return apperr.New(apperr.KindRule, "config.formula.dependency_ids do not match the expression: %s", strings.Join(parts, "; "))
	}
	// Cycles through other formulas, and the dependencies' own validity.
	g := &expander{cat: cat, resolve: lookup, parsed: map[string]*Expr{m.Name: e}}
	if _, err := g.visit(m, nil); err != nil {
		return err
	}
	return nil
}

// expander walks formula dependencies depth-first: it parses each formula once, finds
// cycles (naming them: "cycle: a -> b -> a") and collects the base metrics in order of
// first use.
type expander struct {
	cat     *catalog.Catalog
	resolve func(name string) *Metric
	parsed  map[string]*Expr
	done    map[string]bool
	bases   []*Metric
	seen    map[string]bool // base metrics collected
}

// visit returns m's parsed expression (nil for a base metric).
func (g *expander) visit(m *Metric, stack []string) (*Expr, error) {
	for i, s := range stack {
		if s == m.Name {
			return nil, apperr.New(apperr.KindRule, "cycle: %s -> %s", strings.Join(stack[i:], " -> "), m.Name)
		}
	}
	if m.Type != TypeFormula {
		if g.seen == nil {
			g.seen = map[string]bool{}
		}
		if !g.seen[m.Name] {
			g.seen[m.Name] = true
			g.bases = append(g.bases, m)
		}
		return nil, nil
	}
	e := g.parsed[m.Name]
	if e == nil {
		if m.Formula == nil {
			return nil, apperr.New(apperr.KindRule, "metric %s: formula metric without a formula config", m.Name)
		}
		var err error
		if e, err = parseCached(m.Formula.Expression); err != nil {
			return nil, apperr.New(apperr.KindRule, "metric %s: formula does not parse: %v", m.Name, err)
		}
		g.parsed[m.Name] = e
	}
	if g.done[m.Name] {
		return e, nil
	}
	if len(stack) > 64 {
		return nil, apperr.New(apperr.KindRule, "metric %s: formulas nested more than 64 deep", m.Name)
	}
	stack = append(stack, m.Name)
	for _, r := range e.References() {
		d := g.resolve(r)
		if d == nil {
			return nil, apperr.New(apperr.KindRule, "formula %s references unknown metric %s", m.Name, r)
		}
		if _, err := g.visit(d, stack); err != nil {
			return nil, err
		}
	}
	if g.done == nil {
		g.done = map[string]bool{}
	}
	g.done[m.Name] = true
	return e, nil
}

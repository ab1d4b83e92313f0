package semantic

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/shopmind/shopmind/internal/analytics/catalog"
	"github.com/shopmind/shopmind/internal/apperr"
)

// Query limits.
const (
	DefaultLimit  = 100
	MaxLimit      = 10000
	MaxMetrics    = 50
	MaxDimensions = 10
	MaxSortKeys   = 5
	// maxFormulaNodes bounds the size of a formula once the formulas it uses are expanded
	// (a chain of formulas each using the previous twice doubles at every step).
	maxFormulaNodes = 4096
)

// Granularities.
const (
	GranularityNone  = ""
	GranularityDay   = "day"
	GranularityWeek  = "week"
	GranularityMonth = "month"
)

// TimeColumn is the name of the time bucket column of a result.
const TimeColumn = "time"

// SortKey is one sort key: a metric name of the query, a dimension of the query (as
// written in Dimensions), or "time".
type SortKey struct {
	Field string
	Desc  bool
}

// Query is a structured analysis query.
type Query struct {
	TenantID int64
	// Metrics are the requested metrics, in output order.
	Metrics []*Metric
	// Resolve returns any live metric of the tenant by name (the dependencies of formulas).
	Resolve func(name string) *Metric
	// Dimensions are named dimensions (shop, goods, category, staff, platform, status) or
	// catalog dimension columns written `column` or `table.column`.
	Dimensions []string
	// Granularity is "", day, week or month.
	Granularity string
	// Start and End bound the period [Start, End); both required.
	Start, End time.Time
	// Filters are conditions on dimensions or catalog columns, ANDed.
	Filters []Condition
	// Sort keys, most significant first. Empty: time ascending, then the first metric
	// descending.
	Sort []SortKey
	// Limit is the maximum number of rows, 1..10000 (10001 is accepted: the preview asks for
	// one row more to tell whether the answer was cut); 0 means 100.
	Limit int
}

// OutputColumn describes one column of the compiled statement's result.
type OutputColumn struct {
	Name string
	Type catalog.Type
	Role catalog.Role // time, dimension or measure
}

// Compiled is one SQL statement and its bound parameters.
type Compiled struct {
	SQL     string
	Args    []any
	Columns []OutputColumn
	Dialect string
}

// dimension is a requested dimension, resolved against the catalog (per fact group later).
type dimension struct {
	name  string                  // as written; the output column name
	named *catalog.NamedDimension // a named dimension, or nil
	table *catalog.Table          // qualified column (or the named dimension's table)
	col   *catalog.Column         // its column
	bare  string                  // unqualified column name
	typ   catalog.Type
	label *label
}

// label is the human-readable column of a named dimension, joined after aggregation.
type label struct {
	table *catalog.Table
	key   *catalog.Column
	col   *catalog.Column
	name  string // the output column: the label column's name, or <dimension>_name for a LabelKey dimension
}

// place is where a fact group reads a column: a node of its reach tree and the column.
type place struct {
	node int
	col  *catalog.Column
}

type placedCond struct {
	place
	op   string
	vals []any
}

// group is a set of base metrics computed in one scan: same fact table, same time column.
// Their own conditions (order metrics) go to the WHERE clause when all share them;
// otherwise each metric aggregates under its conditions (FILTER / -If) and the WHERE
// clause keeps the rows any of them needs.
type group struct {
	key     string
	root    *catalog.Table
	reach   *reach
	used    []bool
	time    place
	conds   []placedCond   // conditions shared by every metric of the group
	mconds  [][]placedCond // per metric of the group (parallel to metrics), when not shared
	anyOf   bool           // every metric has conditions: WHERE (conds of one) OR (of another) ...
	filters []placedCond   // the query's filters
	dims    []place
	metrics []int // indexes into compiler.bases
}

// metricConds returns the conditions base metric i aggregates under, beyond the WHERE clause.
func (g *group) metricConds(i int) []placedCond {
	if g.mconds == nil {
		return nil
	}
	for k, mi := range g.metrics {
		if mi == i {
			return g.mconds[k]
		}
	}
	return nil
}

type compiler struct {
	q       *Query
	cat     *catalog.Catalog
	d       Dialect
	w       params
	bases   []*base
	exp     *expander
	dims    []dimension
	groups  []*group
	reaches map[string]*reach
}

// Compile turns a query into one SQL statement for dialect d. Every value is a bound
// parameter; every identifier comes from the catalog; every table reference is filtered on
// the tenant.
func Compile(q *Query, cat *catalog.Catalog, d Dialect) (*Compiled, error) {
	if q == nil || cat == nil || d == nil {
		return nil, apperr.New(apperr.KindInternal, "semantic.Compile: nil query, catalog or dialect")
	}
	c := &compiler{q: q, cat: cat, d: d, reaches: map[string]*reach{}}
	c.w.d = d
	if err := c.checkQuery(); err != nil {
		return nil, err
	}
	if err := c.collectMetrics(); err != nil {
		return nil, err
	}
	if err := c.resolveDimensions(); err != nil {
		return nil, err
	}
	if err := c.plan(); err != nil {
		return nil, err
	}
	return c.render()
}

func (c *compiler) checkQuery() error {
	q := c.q
	if q.TenantID <= 0 {
		return apperr.Invalid("tenant_id", "tenant", "a tenant is required")
	}
	if q.Start.IsZero() {
		return apperr.Invalid("start_time", "required", "required")
	}
	if q.End.IsZero() {
		return apperr.Invalid("end_time", "required", "required")
	}
	if !q.Start.Before(q.End) {
		return apperr.Invalid("start_time", "time_range", "start_time must be earlier than end_time")
	}
	switch q.Granularity {
	case GranularityNone, GranularityDay, GranularityWeek, GranularityMonth:
	default:
		return apperr.Invalid("time_granularity", "time_granularity", fmt.Sprintf("unknown granularity %q (day, week or month)", q.Granularity))
	}
	// One row over the cap is allowed: the preview asks for it to tell a cut answer.
	if q.Limit < 0 || q.Limit > MaxLimit+1 {
		return apperr.Invalid("limit", "limit", fmt.Sprintf("must be between 1 and %d", MaxLimit))
	}
	if len(q.Metrics) == 0 || len(q.Metrics) > MaxMetrics {
		return apperr.Invalid("metrics", "query.metrics", fmt.Sprintf("name 1 to %d metrics", MaxMetrics))
	}
	if len(q.Dimensions) > MaxDimensions {
		return apperr.Invalid("dimensions", "repeated.max_items", fmt.Sprintf("at most %d dimensions", MaxDimensions))
	}
	if len(q.Filters) > MaxConditions {
		return apperr.Invalid("filters", "repeated.max_items", fmt.Sprintf("at most %d filters", MaxConditions))
	}
	if len(q.Sort) > MaxSortKeys {
		return apperr.Invalid("sort", "repeated.max_items", fmt.Sprintf("at most %d sort keys", MaxSortKeys))
	}
	return nil
}

// metricError puts the metric's name in front of a definition error.
func metricError(m *Metric, err error) error {
	if ae, ok := err.(*apperr.Error); ok {
		cp := *ae
		cp.Message = "metric " + m.Name + ": " + ae.Message
		return &cp
	}
	return err
}

func (c *compiler) collectMetrics() error {
	resolve := c.q.Resolve
	if resolve == nil {
		resolve = func(string) *Metric { return nil }
	}
	c.exp = &expander{cat: c.cat, resolve: resolve, parsed: map[string]*Expr{}}
	seen := make(map[string]bool, len(c.q.Metrics))
	for i, m := range c.q.Metrics {
		if m == nil || !validMetricName(m.Name) {
			return apperr.Invalid("metrics["+strconv.Itoa(i)+"]", "metric", "unknown metric")
		}
		if seen[m.Name] {
			return apperr.Invalid("metrics["+strconv.Itoa(i)+"]", "repeated.unique", "metric "+m.Name+" is requested twice")
		}
		seen[m.Name] = true
		if m.Type == TypeFormula && (m.Formula == nil || m.Derived != nil || m.Order != nil) {
			return metricError(m, apperr.Invalid("config", "metric.type_config", "config must hold the case named by type (formula)"))
		}
		if _, err := c.exp.visit(m, nil); err != nil {
			return err
		}
	}
	c.bases = make([]*base, len(c.exp.bases))
	for i, m := range c.exp.bases {
		b, err := resolveBase(m, c.cat)
		if err != nil {
			return metricError(m, err)
		}
		c.bases[i] = b
	}
	// Bound the expanded size of every requested formula.
	for _, m := range c.q.Metrics {
		if m.Type == TypeFormula {
			if n := c.expandedSize(c.exp.parsed[m.Name], 0); n > maxFormulaNodes {
				return apperr.New(apperr.KindRule, "metric %s: formula too large once the formulas it uses are expanded (over %d terms)", m.Name, maxFormulaNodes)
			}
		}
	}
	return nil
}

func (c *compiler) expandedSize(e *Expr, acc int) int {
	if e == nil || acc > maxFormulaNodes {
		return acc
	}
	acc++
	if e.op == 'm' {
		if d := c.exp.resolve(e.name); d != nil && d.Type == TypeFormula {
			return c.expandedSize(c.exp.parsed[d.Name], acc)
		}
		return acc
	}
	return c.expandedSize(e.r, c.expandedSize(e.l, acc))
}

func (c *compiler) baseIndex(name string) int {
	for i, b := range c.bases {
		if b.metric.Name == name {
			return i
		}
	}
	return -1
}

// resolveDimensions checks the requested dimensions against the catalog.
func (c *compiler) resolveDimensions() error {
	c.dims = make([]dimension, len(c.q.Dimensions))
	for i, name := range c.q.Dimensions {
		field := "dimensions[" + strconv.Itoa(i) + "]"
		for k := 0; k < i; k++ {
			if c.q.Dimensions[k] == name {
				return apperr.Invalid(field, "repeated.unique", fmt.Sprintf("dimension %q is requested twice", name))
			}
		}
		d := &c.dims[i]
		d.name = name
		if err := c.resolveField(field, name, &d.named, &d.table, &d.col, &d.bare); err != nil {
			return err
		}
		if d.named != nil {
			nd := d.named
			if nd.LabelColumn != "" && nd.LabelColumn != nd.Column {
				lt := c.cat.Table(nd.LabelTable)
				lk := nd.Column
				if nd.LabelKey != "" {
					lk = nd.LabelKey
				}
				if lt != nil && lt.Key == lk && lt.Column(lk) != nil && lt.Column(nd.LabelColumn) != nil &&
					safeIdent(lt.Name) && safeIdent(nd.LabelColumn) {
					d.label = &label{table: lt, key: lt.Column(lk), col: lt.Column(nd.LabelColumn), name: nd.LabelColumn}
					if nd.LabelKey != "" { // root_category_name, not a second category_name
						d.label.name = nd.Name + "_name"
					}
				}
			}
		} else if d.col != nil {
			if err := dimensionRole(field, d.table, d.col); err != nil {
				return err
			}
		}
	}
	return nil
}

func dimensionRole(field string, t *catalog.Table, col *catalog.Column) error {
	if col.Role != catalog.RoleDimension {
		return apperr.New(apperr.KindRule, "%s: %s.%s is a %s column; group by dimension columns (and by time with time_granularity)",
			field, t.Name, col.Name, col.Role)
	}
	return nil
}

// resolveField resolves a dimension or filter field: a named dimension, a qualified column,
// or an unqualified column name (found per fact group, nearest first).
func (c *compiler) resolveField(field, name string, named **catalog.NamedDimension, table **catalog.Table, col **catalog.Column, bare *string) error {
	if nd := c.cat.Dimension(name); nd != nil {
		t := c.cat.Table(nd.Table)
		if t == nil || t.Column(nd.Column) == nil {
			return apperr.New(apperr.KindInternal, "catalog dimension %s names a missing column %s.%s", nd.Name, nd.Table, nd.Column)
		}
		*named, *table, *col = nd, t, t.Column(nd.Column)
		return nil
	}
	if !validRef(name) {
		return apperr.Invalid(field, "catalog", fmt.Sprintf("unknown dimension or column %q", name))
	}
	if strings.IndexByte(name, '.') >= 0 {
		t, cc, err := c.cat.Resolve(name, "")
		if err != nil {
			return apperr.Invalid(field, "catalog", fmt.Sprintf("unknown dimension or column %q", name))
		}
		*table, *col = t, cc
		return nil
	}
	for _, t := range c.cat.Tables {
		if cc := t.Column(name); cc != nil && cc.Name != catalog.TenantColumn {
			*bare = name
			return nil
		}
	}
	return apperr.Invalid(field, "catalog", fmt.Sprintf("unknown dimension or column %q", name))
}

func (c *compiler) reachOf(t *catalog.Table) *reach {
	r := c.reaches[t.Name]
	if r == nil {
		r = newReach(c.cat, t)
		c.reaches[t.Name] = r
	}
	return r
}

// locateIn finds where group g reads a dimension or filter field.
func (c *compiler) locateIn(g *group, field, what string, named *catalog.NamedDimension, table *catalog.Table, col *catalog.Column, bare string) (place, error) {
	who := c.bases[g.metrics[0]].metric.Name
	if bare != "" {
		n, cc, ambiguous := g.reach.nearest(bare)
		if n < 0 {
			return place{}, apperr.New(apperr.KindRule, "metric %s cannot be %s %s: no table reachable from %s has that column", who, what, bare, g.root.Name)
		}
		if ambiguous {
			return place{}, apperr.Invalid(field, "catalog",
				fmt.Sprintf("column %q is in several tables reachable from %s: write it as table.column", bare, g.root.Name))
		}
		return place{node: n, col: cc}, nil
	}
	n, cc := g.reach.locate(table.Name, col)
	if n < 0 {
		target := table.Name
		if named != nil {
			return place{}, apperr.New(apperr.KindRule, "metric %s cannot be %s %s: no join path from %s to %s", who, what, named.Name, g.root.Name, target)
		}
		return place{}, apperr.New(apperr.KindRule, "metric %s cannot be %s %s.%s: no join path from %s to %s", who, what, table.Name, col.Name, g.root.Name, target)
	}
	return place{node: n, col: cc}, nil
}

func (g *group) use(p place) {
	for n := p.node; n >= 0 && !g.used[n]; n = g.reach.nodes[n].parent {
		g.used[n] = true
	}
}

// plan groups the base metrics into scans and places dimensions and filters in each.
func (c *compiler) plan() error {
	for i, b := range c.bases {
		key := b.table.Name + "|" + b.timeTable.Name + "." + b.timeCol.Name
		var g *group
		for _, x := range c.groups {
			if x.key == key {
				g = x
				break
			}
		}
		if g == nil {
			r := c.reachOf(b.table)
			g = &group{key: key, root: b.table, reach: r, used: make([]bool, len(r.nodes))}
			g.used[0] = true
			tn := r.index(b.timeTable.Name)
			if tn < 0 {
				return metricError(b.metric, apperr.New(apperr.KindRule, "time column %s.%s is not reachable from %s", b.timeTable.Name, b.timeCol.Name, b.table.Name))
			}
			g.time = place{node: tn, col: b.timeCol}
			g.use(g.time)
			c.groups = append(c.groups, g)
		}
		g.metrics = append(g.metrics, i)
	}
	for _, g := range c.groups {
		first := condKey(c.bases[g.metrics[0]].conds)
		shared, all := true, true
		for _, mi := range g.metrics {
			shared = shared && condKey(c.bases[mi].conds) == first
			all = all && len(c.bases[mi].conds) > 0
		}
		placed := func(cs []cond) []placedCond {
			out := make([]placedCond, len(cs))
			for k, cd := range cs {
				out[k] = placedCond{place: place{node: 0, col: cd.col}, op: cd.op, vals: cd.vals}
			}
			return out
		}
		if shared {
			g.conds = placed(c.bases[g.metrics[0]].conds)
			continue
		}
		g.anyOf = all
		g.mconds = make([][]placedCond, len(g.metrics))
		for k, mi := range g.metrics {
			g.mconds[k] = placed(c.bases[mi].conds)
		}
	}
	// Filter fields resolve once; their values convert once (per group for unqualified
	// columns, whose table, hence type, depends on the group).
	type filter struct {
		field string
		named *catalog.NamedDimension
		table *catalog.Table
		col   *catalog.Column
		bare  string
		vals  []any
		err   error
	}
	filters := make([]filter, len(c.q.Filters))
	for i, f := range c.q.Filters {
		x := &filters[i]
		x.field = "filters[" + strconv.Itoa(i) + "]"
		if err := c.resolveField(x.field+".field", f.Field, &x.named, &x.table, &x.col, &x.bare); err != nil {
			return err
		}
		if x.col != nil {
			// The declared column's type (a foreign key standing for it has the same).
			x.vals, x.err = condValues(x.field, x.col, f.Operator, f.Value)
		}
	}
	for _, g := range c.groups {
		g.dims = make([]place, len(c.dims))
		for i := range c.dims {
			d := &c.dims[i]
			field := "dimensions[" + strconv.Itoa(i) + "]"
			p, err := c.locateIn(g, field, "split by", d.named, d.table, d.col, d.bare)
			if err != nil {
				return err
			}
			if d.bare != "" {
				if err := dimensionRole(field, g.reach.nodes[p.node].table, p.col); err != nil {
					return err
				}
			}
			typ := p.col.Type
			if d.col != nil {
				typ = d.col.Type
			}
			if d.typ == "" {
				d.typ = typ
			} else if d.typ != typ {
				return apperr.New(apperr.KindRule, "%s: %s is a %s column for some metrics and a %s column for others; qualify it as table.column", field, d.name, d.typ, typ)
			}
			g.dims[i] = p
			g.use(p)
		}
		for i := range filters {
			f := &filters[i]
			p, err := c.locateIn(g, f.field+".field", "filtered by", f.named, f.table, f.col, f.bare)
			if err != nil {
				return err
			}
			if f.err != nil {
				return f.err
			}
			vals := f.vals
			if f.col == nil { // unqualified: typed by the column found for this group
				if vals, err = condValues(f.field, p.col, c.q.Filters[i].Operator, c.q.Filters[i].Value); err != nil {
					return err
				}
			}
			g.filters = append(g.filters, placedCond{place: p, op: c.q.Filters[i].Operator, vals: vals})
			g.use(p)
		}
	}
	return c.checkIdents()
}

// checkIdents refuses catalog identifiers that are not plain names (defence in depth: they
// are quoted anyway).
func (c *compiler) checkIdents() error {
	bad := func(s string) error {
		return apperr.New(apperr.KindInternal, "catalog identifier %q is not a plain name", s)
	}
	for _, g := range c.groups {
		for i, n := range g.reach.nodes {
			if !g.used[i] {
				continue
			}
			if !safeIdent(n.table.Name) || i > 0 && (!safeIdent(n.join.FromColumn) || !safeIdent(n.join.ToColumn)) {
				return bad(n.table.Name)
			}
		}
		for _, p := range append(append([]place{g.time}, g.dims...), condPlaces(g)...) {
			if !safeIdent(p.col.Name) {
				return bad(p.col.Name)
			}
		}
		for _, mi := range g.metrics {
			if !safeIdent(c.bases[mi].col.Name) {
				return bad(c.bases[mi].col.Name)
			}
		}
	}
	return nil
}

func condPlaces(g *group) []place {
	out := make([]place, 0, len(g.conds)+len(g.filters))
	for _, x := range g.conds {
		out = append(out, x.place)
	}
	for _, cs := range g.mconds {
		for _, x := range cs {
			out = append(out, x.place)
		}
	}
	for _, x := range g.filters {
		out = append(out, x.place)
	}
	return out
}

package semantic

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/shopmind/shopmind/internal/analytics/catalog"
	"github.com/shopmind/shopmind/internal/apperr"
)

// params collects bound values. PostgreSQL placeholders are numbered and the tenant and
// period placeholders are reused; ClickHouse placeholders are positional, so fragments carry
// a marker (NUL, index, NUL) and finish() emits the arguments in text order.
type params struct {
	d                  Dialect
	args               []any
	tenant, start, end string
}

func (p *params) add(v any) string {
	if p.args == nil {
		p.args = make([]any, 0, 16)
	}
	p.args = append(p.args, v)
	if p.d.numbered() {
		return p.d.Placeholder(len(p.args))
	}
	return "\x00" + strconv.Itoa(len(p.args)-1) + "\x00"
}

func (p *params) once(slot *string, v any) string {
	if !p.d.numbered() {
		return p.add(v)
	}
	if *slot == "" {
		*slot = p.add(v)
	}
	return *slot
}

func (p *params) finish(sql string) (string, []any) {
	if p.d.numbered() {
		return sql, p.args
	}
	var b strings.Builder
	b.Grow(len(sql))
	args := make([]any, 0, len(p.args))
	for {
		i := strings.IndexByte(sql, 0)
		if i < 0 {
			b.WriteString(sql)
			break
		}
		j := strings.IndexByte(sql[i+1:], 0) + i + 1
		n, _ := strconv.Atoi(sql[i+1 : j])
		b.WriteString(sql[:i])
		b.WriteString(p.d.Placeholder(len(args) + 1))
		args = append(args, p.args[n])
		sql = sql[j+1:]
	}
	return b.String(), args
}

func (c *compiler) tenantParam() string { return c.w.once(&c.w.tenant, c.q.TenantID) }

// gctx is how one fact group reads its columns: the FROM clause, the conditions for the
// WHERE clause of the aggregating SELECT, and the SQL of a column in that SELECT.
type gctx struct {
	from  string
	where []string
	col   func(place) string
}

func (c *compiler) nested(g *group) bool {
	if !c.d.nestedJoins() {
		return false
	}
	for i := 1; i < len(g.used); i++ {
		if g.used[i] {
			return true
		}
	}
	return false
}

func (c *compiler) condSQL(col string, pc placedCond) string {
	switch pc.op {
	case "is_null":
		return col + " IS NULL"
	case "is_not_null":
		return col + " IS NOT NULL"
	case "like":
		return col + " LIKE " + c.w.add(pc.vals[0])
	case "in", "not_in":
		var b strings.Builder
		b.WriteString(col)
		if pc.op == "in" {
			b.WriteString(" IN (")
		} else {
			b.WriteString(" NOT IN (")
		}
		for i, v := range pc.vals {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(c.w.add(v))
		}
		b.WriteByte(')')
		return b.String()
	default:
		return col + " " + comparisons[pc.op] + " " + c.w.add(pc.vals[0])
	}
}

func (c *compiler) rangeSQL(col string) []string {
	return []string{
		col + " >= " + c.w.once(&c.w.start, c.q.Start.UTC()),
		col + " < " + c.w.once(&c.w.end, c.q.End.UTC()),
	}
}

func (c *compiler) groupContext(g *group) *gctx {
	q := c.d.Quote
	tenant := q(catalog.TenantColumn)
	if !c.d.nestedJoins() {
		// PostgreSQL: the fact table t0 and its LEFT JOINs t1.. with the tenant in each ON.
		col := func(p place) string { return "t" + strconv.Itoa(p.node) + "." + q(p.col.Name) }
		var from strings.Builder
		from.Grow(256)
		from.WriteString(q(g.root.Name))
		from.WriteString(" AS t0")
		for i := 1; i < len(g.used); i++ {
			if !g.used[i] {
				continue
			}
			n := &g.reach.nodes[i]
			a := "t" + strconv.Itoa(i)
			fmt.Fprintf(&from, " LEFT JOIN %s AS %s ON %s.%s = %s AND %s.%s = t%d.%s",
				q(n.table.Name), a, a, tenant, c.tenantParam(), a, q(n.join.ToColumn), n.parent, q(n.join.FromColumn))
		}
		x := &gctx{from: from.String(), col: col, where: make([]string, 0, 8)}
		x.where = append(x.where, "t0."+tenant+" = "+c.tenantParam())
		x.where = append(x.where, c.rangeSQL(col(g.time))...)
		x.where = append(x.where, c.metricCondsSQL(g, col)...)
		for _, pc := range g.filters {
			x.where = append(x.where, c.condSQL(col(pc.place), pc))
		}
		return x
	}
	bare := func(p place) string { return q(p.col.Name) }
	if !c.nested(g) {
		// ClickHouse, one table.
		x := &gctx{from: q(g.root.Name), col: bare, where: make([]string, 0, 8)}
		x.where = append(x.where, tenant+" = "+c.tenantParam())
		x.where = append(x.where, c.rangeSQL(bare(g.time))...)
		x.where = append(x.where, c.metricCondsSQL(g, bare)...)
		for _, pc := range g.filters {
			x.where = append(x.where, c.condSQL(bare(pc.place), pc))
		}
		return x
	}
	return c.chainContext(g)
}

// chainContext builds the ClickHouse join chain of a group: the fact table's columns under
// aliases _C.., then one ANY LEFT JOIN per reached table, each a subquery filtered on the
// tenant and joined USING the foreign key aliased _K<node> on both sides.
func (c *compiler) chainContext(g *group) *gctx {
	q := c.d.Quote
	tenant := q(catalog.TenantColumn)
	type alias struct {
		node int
		col  string
		as   string
	}
	aliases := make([]alias, 0, 8)
	find := func(p place) string {
		for _, a := range aliases {
			if a.node == p.node && a.col == p.col.Name {
				return a.as
			}
		}
		return ""
	}
	perNode := make([][]string, len(g.used)) // "col AS alias" items per node
	need := func(p place) {
		if find(p) != "" {
			return
		}
		a := q(iname('C', len(aliases)))
		aliases = append(aliases, alias{p.node, p.col.Name, a})
		perNode[p.node] = append(perNode[p.node], q(p.col.Name)+" AS "+a)
	}
	if c.q.Granularity != "" || g.time.node != 0 {
		need(g.time)
	}
	for _, mi := range g.metrics {
		need(place{node: 0, col: c.bases[mi].col})
	}
	for _, cs := range g.mconds {
		for _, pc := range cs {
			need(pc.place)
		}
	}
	for _, p := range g.dims {
		need(p)
	}
	for _, pc := range g.filters {
		if pc.node != 0 {
			need(pc.place)
		}
	}
	// Foreign keys of the joins, aliased _K<child> on the parent's side.
	for i := 1; i < len(g.used); i++ {
		if g.used[i] {
			n := &g.reach.nodes[i]
			perNode[n.parent] = append(perNode[n.parent], q(n.join.FromColumn)+" AS "+q(iname('K', i)))
		}
	}
	col := find
	bare := func(p place) string { return q(p.col.Name) }

	var b strings.Builder
	b.Grow(512)
	b.WriteString("SELECT ")
	b.WriteString(strings.Join(perNode[0], ", "))
	b.WriteString(" FROM ")
	b.WriteString(q(g.root.Name))
	b.WriteString(" WHERE ")
	where := []string{tenant + " = " + c.tenantParam()}
	if g.time.node == 0 {
		where = append(where, c.rangeSQL(bare(g.time))...)
	}
	where = append(where, c.metricCondsSQL(g, bare)...)
	for _, pc := range g.filters {
		if pc.node == 0 {
			where = append(where, c.condSQL(bare(pc.place), pc))
		}
	}
	b.WriteString(strings.Join(where, " AND "))
	chain := b.String()
	visible := make([]string, 0, 8)
	for _, item := range perNode[0] {
		visible = append(visible, item[strings.LastIndex(item, " AS ")+4:])
	}
	for i := 1; i < len(g.used); i++ {
		if !g.used[i] {
			continue
		}
		n := &g.reach.nodes[i]
		k := q(iname('K', i))
		right := "SELECT " + q(n.join.ToColumn) + " AS " + k
		for _, item := range perNode[i] {
			right += ", " + item
			visible = append(visible, item[strings.LastIndex(item, " AS ")+4:])
		}
		right += " FROM " + q(n.table.Name) + " WHERE " + tenant + " = " + c.tenantParam()
		// Current ClickHouse wants joined subqueries aliased (joined_subquery_requires_alias).
		chain = "SELECT " + strings.Join(visible, ", ") + " FROM (" + chain + ") AS " + q(iname('J', i)) +
			" ANY LEFT JOIN (" + right + ") AS " + q(iname('R', i)) + " USING (" + k + ")"
	}
	x := &gctx{from: "(" + chain + ")", col: col}
	if g.time.node != 0 {
		x.where = append(x.where, c.rangeSQL(col(g.time))...)
	}
	for _, pc := range g.filters {
		if pc.node != 0 {
			x.where = append(x.where, c.condSQL(col(pc.place), pc))
		}
	}
	return x
}

// metricCondsSQL is the WHERE part of the metrics' own conditions: the shared ones, or the
// disjunction of each metric's when every metric has some.
func (c *compiler) metricCondsSQL(g *group, col func(place) string) []string {
	var out []string
	for _, pc := range g.conds {
		out = append(out, c.condSQL(col(pc.place), pc))
	}
	if g.anyOf {
		parts := make([]string, len(g.mconds))
		for k, cs := range g.mconds {
			parts[k] = c.condsSQL(cs, col)
		}
		out = append(out, "("+strings.Join(parts, " OR ")+")")
	}
	return out
}

func (c *compiler) condsSQL(cs []placedCond, col func(place) string) string {
	parts := make([]string, len(cs))
	for k, pc := range cs {
		parts[k] = c.condSQL(col(pc.place), pc)
	}
	return "(" + strings.Join(parts, " AND ") + ")"
}

// aggregate is the SQL of base metric i of group g in context x.
func (c *compiler) aggregate(g *group, i int, x *gctx, totals bool) string {
	b := c.bases[i]
	arg := x.col(place{node: 0, col: b.col})
	if cs := g.metricConds(i); len(cs) > 0 {
		return c.d.aggregateIf(b.agg, arg, b.col.Type, totals, c.condsSQL(cs, x.col))
	}
	return c.d.aggregate(b.agg, arg, b.col.Type, totals)
}

type item struct{ expr, alias string }

// out says what an output column before the metrics is: a key (index into the key names)
// or a label (index into the labelled dimensions).
type out struct {
	kind int
	idx  int
}

const (
	outKey = iota
	outLabel
)

func (c *compiler) selectList(items []item) string {
	var b strings.Builder
	b.Grow(64 * len(items))
	for i, it := range items {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(it.expr)
		if it.alias != "" {
			b.WriteString(" AS ")
			b.WriteString(c.d.Quote(it.alias))
		}
	}
	return b.String()
}

// groupSQL is the aggregating SELECT of a group: items (the first nkeys are the keys).
func (c *compiler) groupSQL(x *gctx, items []item, nkeys int) string {
	var b strings.Builder
	b.Grow(256 + 64*len(items) + len(x.from) + 48*len(x.where))
	b.WriteString("SELECT ")
	b.WriteString(c.selectList(items))
	b.WriteString(" FROM ")
	b.WriteString(x.from)
	if len(x.where) > 0 {
		b.WriteString(" WHERE ")
		b.WriteString(strings.Join(x.where, " AND "))
	}
	c.groupBy(&b, items[:nkeys])
	return b.String()
}

func (c *compiler) groupBy(b *strings.Builder, keys []item) {
	for i, k := range keys {
		if i == 0 {
			b.WriteString(" GROUP BY ")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(c.d.groupKey(i+1, k.alias))
	}
}

// keyItems are the group keys of group g: the time bucket, then the dimensions.
func (c *compiler) keyItems(g *group, x *gctx, names []string) []item {
	out := make([]item, 0, len(g.dims)+1+len(g.metrics)+len(c.q.Metrics))
	k := 0
	if c.q.Granularity != "" {
		out = append(out, item{c.d.TimeBucket(c.q.Granularity, x.col(g.time)), names[k]})
		k++
	}
	for _, p := range g.dims {
		out = append(out, item{x.col(p), names[k]})
		k++
	}
	return out
}

// formula renders expression e; leaf renders base metric i as a float.
func (c *compiler) formula(e *Expr, leaf func(i int) string) string {
	switch e.op {
	case 'n':
		return c.d.floatParam(c.w.add(e.num))
	case 'm':
		if i := c.baseIndex(e.name); i >= 0 {
			return leaf(i)
		}
		return "(" + c.formula(c.exp.parsed[c.exp.resolve(e.name).Name], leaf) + ")"
	case '~':
		return "(-" + c.formula(e.l, leaf) + ")"
	case '/':
		return "(" + c.d.SafeDivide(c.formula(e.l, leaf), c.formula(e.r, leaf)) + ")"
	default:
		return "(" + c.formula(e.l, leaf) + " " + string(e.op) + " " + c.formula(e.r, leaf) + ")"
	}
}

// floatLeaf wraps a base metric's SQL into a float for formulas (integer division would
// truncate in PostgreSQL).
func (c *compiler) floatLeaf(ref func(i int) string) func(i int) string {
	return func(i int) string {
		if c.bases[i].typ == catalog.TypeFloat {
			return ref(i)
		}
		return c.d.toFloat(ref(i))
	}
}

func (c *compiler) render() (*Compiled, error) {
	q := c.q
	hasTime := q.Granularity != ""
	// Output columns.
	var cols []OutputColumn
	var outs []out        // what each output column before the metrics is
	var keyNames []string // internal key aliases
	if hasTime {
		cols = append(cols, OutputColumn{Name: TimeColumn, Type: catalog.TypeTime, Role: catalog.RoleTime})
		outs = append(outs, out{outKey, 0})
		keyNames = append(keyNames, "_T")
	}
	dimPos := make([]int, len(c.dims)) // output position (0-based) of each dimension
	var labels []int                   // dimensions with a label
	for i := range c.dims {
		d := &c.dims[i]
		dimPos[i] = len(cols)
		cols = append(cols, OutputColumn{Name: d.name, Type: d.typ, Role: catalog.RoleDimension})
		outs = append(outs, out{outKey, len(keyNames)})
		keyNames = append(keyNames, iname('D', i))
		if d.label != nil {
			cols = append(cols, OutputColumn{Name: d.label.name, Type: d.label.col.Type, Role: catalog.RoleDimension})
			outs = append(outs, out{outLabel, len(labels)})
			labels = append(labels, i)
		}
	}
	metricPos := len(cols)
	for _, m := range q.Metrics {
		t := catalog.TypeFloat
		if i := c.baseIndex(m.Name); i >= 0 {
			t = c.bases[i].typ
		}
		cols = append(cols, OutputColumn{Name: m.Name, Type: t, Role: catalog.RoleMeasure})
	}
	seen := make(map[string]bool, len(cols))
	for _, oc := range cols {
		if seen[oc.Name] {
			return nil, apperr.Invalid("dimensions", "output", fmt.Sprintf("two result columns would be named %q; leave one out", oc.Name))
		}
		seen[oc.Name] = true
	}
	order, err := c.orderKeys(cols, dimPos, metricPos)
	if err != nil {
		return nil, err
	}
	nkeys := len(keyNames)
	totals := nkeys == 0

	// Set up the shared placeholders first so PostgreSQL numbers them $1, $2, $3.
	c.tenantParam()
	c.w.once(&c.w.start, q.Start.UTC())
	c.w.once(&c.w.end, q.End.UTC())

	var sql strings.Builder
	sql.Grow(1024)
	if len(c.groups) == 1 && len(labels) == 0 && c.directOK(c.groups[0], cols) {
		// One scan, no label: a single aggregating SELECT, as one would write it by hand.
		g := c.groups[0]
		x := c.groupContext(g)
		names := make([]string, nkeys)
		for i := range names {
			names[i] = cols[i].Name
		}
		items := c.keyItems(g, x, names)
		for _, m := range q.Metrics {
			if i := c.baseIndex(m.Name); i >= 0 {
				items = append(items, item{c.aggregate(g, i, x, totals), m.Name})
				continue
			}
			e := c.formula(c.exp.parsed[m.Name], c.floatLeaf(func(i int) string { return c.aggregate(g, i, x, totals) }))
			items = append(items, item{e, m.Name})
		}
		sql.WriteString(c.groupSQL(x, items, nkeys))
	} else {
		inner := c.innerSQL(keyNames, totals)
		c.finalSQL(&sql, inner, cols, outs, keyNames, labels, metricPos)
	}
	c.orderLimit(&sql, order, cols)
	text, args := c.w.finish(sql.String())
	return &Compiled{SQL: text, Args: args, Columns: cols, Dialect: c.d.Name()}, nil
}

// directOK: a single SELECT can carry the output names. In ClickHouse an alias is visible
// in the whole SELECT, so an output named like a column of the scanned table (a metric
// named paid_amount) would shadow the column: such queries take the two-level shape.
func (c *compiler) directOK(g *group, cols []OutputColumn) bool {
	if !c.d.nestedJoins() || c.nested(g) {
		return true
	}
	for _, oc := range cols {
		if g.root.Column(oc.Name) != nil {
			return false
		}
	}
	return true
}

// innerSQL computes every base metric at the query's grain under internal names: _T, _D<i>
// keys and _M<i> values. One group: its aggregating SELECT. Several: UNION ALL of the
// groups (each filling its own metrics, NULL for the others) aggregated again by the keys.
func (c *compiler) innerSQL(keyNames []string, totals bool) string {
	nkeys := len(keyNames)
	if len(c.groups) == 1 {
		g := c.groups[0]
		x := c.groupContext(g)
		items := c.keyItems(g, x, keyNames)
		for _, mi := range g.metrics {
			items = append(items, item{c.aggregate(g, mi, x, totals), iname('M', mi)})
		}
		return c.groupSQL(x, items, nkeys)
	}
	var union strings.Builder
	union.Grow(1024 * len(c.groups))
	for gi, g := range c.groups {
		if gi > 0 {
			union.WriteString(" UNION ALL ")
		}
		x := c.groupContext(g)
		items := c.keyItems(g, x, keyNames)
		for i, b := range c.bases {
			in := false
			for _, mi := range g.metrics {
				if mi == i {
					in = true
					break
				}
			}
			if in {
				items = append(items, item{c.d.nullable(c.aggregate(g, i, x, totals), b.typ), iname('U', i)})
			} else {
				items = append(items, item{c.d.nullOf(b.typ), iname('U', i)})
			}
		}
		union.WriteString(c.groupSQL(x, items, nkeys))
	}
	q := c.d.Quote
	var b strings.Builder
	b.WriteString("SELECT ")
	outer := make([]item, 0, nkeys+len(c.bases))
	for _, k := range keyNames {
		outer = append(outer, item{q(k), ""})
	}
	for i, base := range c.bases {
		e := "max(" + q(iname('U', i)) + ")" // one row per key and metric: max picks it
		if base.additive {
			e = "COALESCE(" + e + ", 0)" // no row for a sum or count is 0
		}
		outer = append(outer, item{e, iname('M', i)})
	}
	b.WriteString(c.selectList(outer))
	b.WriteString(" FROM (")
	b.WriteString(union.String())
	b.WriteString(")")
	if !c.d.nestedJoins() {
		b.WriteString(" AS u")
	}
	keys := make([]item, nkeys)
	for i, k := range keyNames {
		keys[i] = item{alias: k}
	}
	c.groupBy(&b, keys)
	return b.String()
}

// finalSQL names the output columns, computes formulas from the base metrics and joins the
// labels of named dimensions, over the inner query.
func (c *compiler) finalSQL(b *strings.Builder, inner string, cols []OutputColumn, outs []out, keyNames []string, labels []int, metricPos int) {
	q := c.d.Quote
	pg := !c.d.nestedJoins()
	ref := func(name string) string {
		if pg {
			return "q." + q(name)
		}
		return q(name)
	}
	labelRef := func(j int) string {
		d := &c.dims[labels[j]]
		if pg {
			return "l" + strconv.Itoa(j) + "." + q(d.label.col.Name)
		}
		return q(iname('L', j))
	}
	items := make([]item, 0, len(cols))
	for i := 0; i < metricPos; i++ {
		switch o := outs[i]; o.kind {
		case outKey:
			items = append(items, item{ref(keyNames[o.idx]), cols[i].Name})
		case outLabel:
			items = append(items, item{labelRef(o.idx), cols[i].Name})
		}
	}
	mref := func(i int) string { return ref(iname('M', i)) }
	for _, m := range c.q.Metrics {
		if i := c.baseIndex(m.Name); i >= 0 {
			items = append(items, item{mref(i), m.Name})
			continue
		}
		items = append(items, item{c.formula(c.exp.parsed[m.Name], c.floatLeaf(mref)), m.Name})
	}
	tenant := q(catalog.TenantColumn)
	if pg {
		b.WriteString("SELECT ")
		b.WriteString(c.selectList(items))
		b.WriteString(" FROM (")
		b.WriteString(inner)
		b.WriteString(") AS q")
		for j, di := range labels {
			l := c.dims[di].label
			a := "l" + strconv.Itoa(j)
			fmt.Fprintf(b, " LEFT JOIN %s AS %s ON %s.%s = %s AND %s.%s = q.%s",
				q(l.table.Name), a, a, tenant, c.tenantParam(), a, q(l.key.Name), q(iname('D', di)))
		}
		return
	}
	// ClickHouse: one ANY LEFT JOIN per label, each level re-selecting what it carries.
	level := inner
	visible := make([]string, 0, len(keyNames)+len(c.bases)+len(labels))
	for _, k := range keyNames {
		visible = append(visible, q(k))
	}
	for i := range c.bases {
		visible = append(visible, q(iname('M', i)))
	}
	for j, di := range labels {
		l := c.dims[di].label
		key := q(iname('D', di))
		right := "SELECT " + q(l.key.Name) + " AS " + key + ", " + q(l.col.Name) + " AS " + q(iname('L', j)) +
			" FROM " + q(l.table.Name) + " WHERE " + tenant + " = " + c.tenantParam()
		join := " AS " + q(iname('Q', j)) + " ANY LEFT JOIN (" + right + ") AS " + q(iname('P', j)) + " USING (" + key + ")"
		if j < len(labels)-1 {
			visible = append(visible, q(iname('L', j)))
			level = "SELECT " + strings.Join(visible, ", ") + " FROM (" + level + ")" + join
			continue
		}
		level = "(" + level + ")" + join
	}
	if len(labels) == 0 {
		level = "(" + level + ")"
	}
	b.WriteString("SELECT ")
	b.WriteString(c.selectList(items))
	b.WriteString(" FROM ")
	b.WriteString(level)
}

type orderKey struct {
	pos  int
	desc bool
}

// orderKeys resolves the sort keys to output columns, then adds the time bucket and the
// dimensions as tie-breakers so LIMIT cuts a deterministic set of rows.
func (c *compiler) orderKeys(cols []OutputColumn, dimPos []int, metricPos int) ([]orderKey, error) {
	var out []orderKey
	used := map[int]bool{}
	add := func(pos int, desc bool) {
		if !used[pos] {
			used[pos] = true
			out = append(out, orderKey{pos, desc})
		}
	}
	hasTime := c.q.Granularity != ""
	if len(c.q.Sort) == 0 {
		if hasTime {
			add(0, false)
		}
		add(metricPos, true)
	}
	for i, s := range c.q.Sort {
		field := "sort[" + strconv.Itoa(i) + "].field"
		pos := -1
		switch {
		case s.Field == TimeColumn && hasTime:
			pos = 0
		default:
			for k, d := range c.dims {
				if d.name == s.Field {
					pos = dimPos[k]
				}
			}
			for k, m := range c.q.Metrics {
				if m.Name == s.Field {
					pos = metricPos + k
				}
			}
			for k := 0; pos < 0 && k < metricPos; k++ {
				if cols[k].Name == s.Field { // a label column
					pos = k
				}
			}
		}
		if pos < 0 {
			return nil, apperr.Invalid(field, "sort", fmt.Sprintf("%q is not a metric, dimension or label column of the query (or time, with a granularity)", s.Field))
		}
		if used[pos] {
			return nil, apperr.Invalid(field, "sort", fmt.Sprintf("%q is sorted on twice", s.Field))
		}
		add(pos, s.Desc)
	}
	if hasTime {
		add(0, false)
	}
	for _, p := range dimPos {
		add(p, false)
	}
	return out, nil
}

func (c *compiler) orderLimit(b *strings.Builder, order []orderKey, cols []OutputColumn) {
	for i, o := range order {
		if i == 0 {
			b.WriteString(" ORDER BY ")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(c.d.orderKey(o.pos+1, cols[o.pos].Name, o.desc))
	}
	limit := c.q.Limit
	if limit == 0 {
		limit = DefaultLimit
	}
	b.WriteString(" LIMIT ")
	b.WriteString(c.w.add(int64(limit)))
}

// iname is the internal alias _<kind><n> (_T, _D0, _M1, _U2, _C3, _K4, _L5, _J6, _R7, _Q8,
// _P9): upper case, so never a catalog column (lower case) nor an output name.
func iname(kind byte, n int) string {
	if n < len(inames[0]) && kind >= 'A' && kind <= 'Z' {
		return inames[kind-'A'][n]
	}
	return "_" + string(kind) + strconv.Itoa(n)
}

var inames = func() (t [26][64]string) {
	for k := range t {
		for n := range t[k] {
			t[k][n] = "_" + string(rune('A'+k)) + strconv.Itoa(n)
		}
	}
	return
}()

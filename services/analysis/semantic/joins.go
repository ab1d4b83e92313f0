package semantic

import (
	"github.com/shopmind/shopmind/internal/analytics/catalog"
)

// reach is the breadth-first tree of the tables a fact table reaches along the catalog's
// joins, in the many-to-one direction only (From -> To), so joining any of them to the
// fact rows never multiplies the rows. nodes[0] is the fact table; each table appears once,
// at its shortest distance (ties broken by catalog join order).
type reach struct {
	nodes []reachNode
	joins []catalog.Join
}

type reachNode struct {
	table  *catalog.Table
	parent int          // index of the parent node, -1 for the root
	join   catalog.Join // the join from the parent's table to this one
	depth  int
}

func newReach(cat *catalog.Catalog, root *catalog.Table) *reach {
	r := &reach{nodes: make([]reachNode, 1, 8), joins: cat.Joins}
	r.nodes[0] = reachNode{table: root, parent: -1}
	for i := 0; i < len(r.nodes); i++ {
		from := r.nodes[i].table.Name
		for _, j := range cat.Joins {
			if j.From != from {
				continue
			}
			if r.index(j.To) >= 0 {
				continue
			}
			t := cat.Table(j.To)
			if t == nil || r.nodes[i].table.Column(j.FromColumn) == nil || t.Column(j.ToColumn) == nil {
				continue
			}
			r.nodes = append(r.nodes, reachNode{table: t, parent: i, join: j, depth: r.nodes[i].depth + 1})
		}
	}
	return r
}

func (r *reach) index(table string) int {
	for i := range r.nodes {
		if r.nodes[i].table.Name == table {
			return i
		}
	}
	return -1
}

// locate finds the nearest place the fact rows carry column col of table: the table itself
// when reached, or — one join earlier — the foreign key of a join that points at exactly
// that column (orders.shop_id stands for shops.shop_id without joining shops). It returns
// the node and the column to read there, or -1.
func (r *reach) locate(table string, col *catalog.Column) (int, *catalog.Column) {
	for i := range r.nodes {
		n := &r.nodes[i]
		if n.table.Name == table {
			return i, col
		}
		// A join from here onto (table, col): its foreign key already holds the value.
		for _, j := range r.joins {
			if j.From == n.table.Name && j.To == table && j.ToColumn == col.Name {
				if fk := n.table.Column(j.FromColumn); fk != nil {
					return i, fk
				}
			}
		}
	}
	return -1, nil
}

// nearest finds the nearest table having a column named name (unqualified references):
// the node, the column, and whether another table at the same distance also has one.
func (r *reach) nearest(name string) (int, *catalog.Column, bool) {
	found := -1
	var col *catalog.Column
	for i := range r.nodes {
		n := &r.nodes[i]
		if found >= 0 && n.depth > r.nodes[found].depth {
			break
		}
		c := n.table.Column(name)
		if c == nil || c.Name == catalog.TenantColumn {
			continue
		}
		if found >= 0 {
			return found, col, true
		}
		found, col = i, c
	}
	return found, col, false
}

// The PostgreSQL graph store: chat.graph_nodes and chat.graph_edges (migration 00003 of the
// chat service), searched with a recursive CTE.

package graph

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/shopmind/shopmind/internal/listing"
)

// Postgres is the default Store.
type Postgres struct{ pool *pgxpool.Pool }

// NewPostgres returns the store over the chat service's database.
func NewPostgres(pool *pgxpool.Pool) *Postgres { return &Postgres{pool: pool} }

// Name implements Store.
func (p *Postgres) Name() string { return "postgres" }

// Replace implements Store: the tenant's graph is swapped in one transaction (COPY of the
// nodes and edges after deleting the old ones).
func (p *Postgres) Replace(ctx context.Context, tenantID int64, g *Graph) error {
	return pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM chat.graph_nodes WHERE tenant_id = $1`, tenantID); err != nil { // edges by cascade
			return err
		}
		nodes := make([][]any, len(g.Nodes))
		for i, n := range g.Nodes {
			props := n.Props
			if props == nil {
				props = map[string]any{}
			}
			nodes[i] = []any{tenantID, n.ID, n.Kind, n.Name, props}
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"chat", "graph_nodes"}, []string{"tenant_id", "id", "kind", "name", "props"},
			pgx.CopyFromRows(nodes)); err != nil {
			return err
		}
		edges := make([][]any, len(g.Edges))
		for i, e := range g.Edges {
			edges[i] = []any{tenantID, e.From, e.To, e.Kind, e.Weight}
		}
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"chat", "graph_edges"}, []string{"tenant_id", "src", "dst", "kind", "weight"},
			pgx.CopyFromRows(edges))
		return err
	})
}

// searchSQL: the seed nodes (an exact id, else names containing the keyword, exact names
// and short names first), then a walk along the edges in both directions up to $4 steps
// that never revisits a node on its path; each node at its smallest depth, nearest first.
const searchSQL = `
WITH RECURSIVE seed AS (
    SELECT id FROM chat.graph_nodes
    WHERE tenant_id = $1 AND (id = $2 OR name ILIKE $3)
    ORDER BY (id = $2) DESC, (lower(name) = lower($2)) DESC, length(name), id
    LIMIT $5
), walk (id, depth, path) AS (
    SELECT id, 0, ARRAY[id] FROM seed
  UNION ALL
    SELECT n.next, w.depth + 1, w.path || n.next
    FROM walk w
    CROSS JOIN LATERAL (
        SELECT dst AS next FROM chat.graph_edges WHERE tenant_id = $1 AND src = w.id
      UNION
        SELECT src FROM chat.graph_edges WHERE tenant_id = $1 AND dst = w.id
    ) n
    WHERE w.depth < $4 AND NOT n.next = ANY (w.path)
), reached AS (
    SELECT id, min(depth) AS depth FROM walk GROUP BY id
)
SELECT n.id, n.kind, n.name, n.props, r.depth
FROM reached r JOIN chat.graph_nodes n ON n.tenant_id = $1 AND n.id = r.id
ORDER BY r.depth, n.kind, n.name, n.id
LIMIT $6`

// Search implements Store.
func (p *Postgres) Search(ctx context.Context, tenantID int64, keyword string, limit, depth int) (*Result, error) {
	rows, err := p.pool.Query(ctx, searchSQL, tenantID, keyword, listing.Contains(keyword), depth, limit, 5*limit)
	if err != nil {
		return nil, err
	}
	res := &Result{Nodes: []Node{}, Edges: []Edge{}}
	var ids []string
	for rows.Next() {
		var n Node
		if err := rows.Scan(&n.ID, &n.Kind, &n.Name, &n.Props, &n.Depth); err != nil {
			rows.Close()
			return nil, err
		}
		res.Nodes = append(res.Nodes, n)
		ids = append(ids, n.ID)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(ids) == 0 {
		return res, err
	}
	erows, err := p.pool.Query(ctx, `SELECT src, dst, kind, weight FROM chat.graph_edges
		WHERE tenant_id = $1 AND src = ANY ($2) AND dst = ANY ($2) ORDER BY kind, src, dst`, tenantID, ids)
	if err != nil {
		return nil, err
	}
	defer erows.Close()
	for erows.Next() {
		var e Edge
		if err := erows.Scan(&e.From, &e.To, &e.Kind, &e.Weight); err != nil {
			return nil, err
		}
		res.Edges = append(res.Edges, e)
	}
	return res, erows.Err()
}

// The Neo4j graph store (github.com/neo4j/neo4j-go-driver/v5, Bolt). Nodes are
// (:ShopMindNode {tenant_id, id, kind, name, name_lower, props}) with props as JSON text
// (Neo4j properties cannot hold maps); edges are [:REL {kind, weight}]. Every statement
// filters on tenant_id.

package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/neo4j/neo4j-go-driver/v5/neo4j"
)

// The statements the Neo4j store sends (the Bolt fake of the tests answers exactly these).
const (
	Neo4jDeleteTenant = `MATCH (n:ShopMindNode {tenant_id: $tenant}) DETACH DELETE n`
	Neo4jCreateNodes  = `UNWIND $nodes AS n CREATE (:ShopMindNode {tenant_id: $tenant, id: n.id, kind: n.kind, name: n.name, name_lower: n.name_lower, props: n.props})`
	Neo4jCreateEdges  = `UNWIND $edges AS e MATCH (a:ShopMindNode {tenant_id: $tenant, id: e.from}), (b:ShopMindNode {tenant_id: $tenant, id: e.to}) CREATE (a)-[:REL {kind: e.kind, weight: e.weight}]->(b)`
	Neo4jSearch       = `MATCH (s:ShopMindNode {tenant_id: $tenant}) WHERE s.id = $keyword OR s.name_lower CONTAINS $lower ` +
		`WITH s ORDER BY (s.id = $keyword) DESC, (s.name_lower = $lower) DESC, size(s.name), s.id LIMIT $limit ` +
		`MATCH p = (s)-[:REL*0..2]-(m:ShopMindNode {tenant_id: $tenant}) ` +
		`WITH m, min(length(p)) AS depth WHERE depth <= $depth ` +
		`RETURN m.id AS id, m.kind AS kind, m.name AS name, m.props AS props, depth ORDER BY depth, kind, name, id LIMIT $max`
	Neo4jEdges = `MATCH (a:ShopMindNode {tenant_id: $tenant})-[r:REL]->(b:ShopMindNode {tenant_id: $tenant}) WHERE a.id IN $ids AND b.id IN $ids ` +
		`RETURN a.id AS from, b.id AS to, r.kind AS kind, r.weight AS weight ORDER BY kind, from, to`
)

// Neo4jBatch is the nodes or edges sent per UNWIND statement.
const Neo4jBatch = 1000

// Neo4jConfig locates the Neo4j server.
type Neo4jConfig struct {
	// URI is bolt://host:7687 (one server) or neo4j://host:7687 (a cluster, routed).
	URI      string
	User     string
	Password string
	// Database is the database name; empty: the server's default.
	Database string
}

// Neo4j is the Store on a Neo4j server.
type Neo4j struct {
	driver neo4j.DriverWithContext
	db     string
}

// NewNeo4j returns the store; the driver connects lazily.
func NewNeo4j(cfg Neo4jConfig) (*Neo4j, error) {
	auth := neo4j.NoAuth()
	if cfg.User != "" {
		auth = neo4j.BasicAuth(cfg.User, cfg.Password, "")
	}
	d, err := neo4j.NewDriverWithContext(cfg.URI, auth)
	if err != nil {
		return nil, fmt.Errorf("neo4j: %w", err)
	}
	return &Neo4j{driver: d, db: cfg.Database}, nil
}

// Close closes the driver's connections.
func (n *Neo4j) Close(ctx context.Context) error { return n.driver.Close(ctx) }

// Health reports whether the server answers.
func (n *Neo4j) Health(ctx context.Context) error { return n.driver.VerifyConnectivity(ctx) }

// Name implements Store.
func (n *Neo4j) Name() string { return "neo4j" }

func (n *Neo4j) session(ctx context.Context, mode neo4j.AccessMode) neo4j.SessionWithContext {
	return n.driver.NewSession(ctx, neo4j.SessionConfig{AccessMode: mode, DatabaseName: n.db})
}

// Replace implements Store: in one write transaction, the tenant's nodes are deleted and
// the graph created in batches.
func (n *Neo4j) Replace(ctx context.Context, tenantID int64, g *Graph) error {
	s := n.session(ctx, neo4j.AccessModeWrite)
	defer s.Close(ctx)
	nodes := make([]any, len(g.Nodes))
	for i, x := range g.Nodes {
		props, err := json.Marshal(x.Props)
		if err != nil {
			return err
		}
		nodes[i] = map[string]any{"id": x.ID, "kind": x.Kind, "name": x.Name, "name_lower": strings.ToLower(x.Name), "props": string(props)}
	}
	edges := make([]any, len(g.Edges))
	for i, e := range g.Edges {
		edges[i] = map[string]any{"from": e.From, "to": e.To, "kind": e.Kind, "weight": e.Weight}
	}
	_, err := s.ExecuteWrite(ctx, func(tx neo4j.ManagedTransaction) (any, error) {
		if err := consume(ctx, tx, Neo4jDeleteTenant, map[string]any{"tenant": tenantID}); err != nil {
			return nil, err
		}
		for _, b := range batches(nodes) {
			if err := consume(ctx, tx, Neo4jCreateNodes, map[string]any{"tenant": tenantID, "nodes": b}); err != nil {
				return nil, err
			}
		}
		for _, b := range batches(edges) {
			if err := consume(ctx, tx, Neo4jCreateEdges, map[string]any{"tenant": tenantID, "edges": b}); err != nil {
				return nil, err
			}
		}
		return nil, nil
	})
	return err
}

func batches(items []any) [][]any {
	var out [][]any
	for len(items) > 0 {
		k := min(Neo4jBatch, len(items))
		out = append(out, items[:k])
		items = items[k:]
	}
	return out
}

func consume(ctx context.Context, tx neo4j.ManagedTransaction, query string, params map[string]any) error {
	res, err := tx.Run(ctx, query, params)
	if err != nil {
		return err
	}
	_, err = res.Consume(ctx)
	return err
}

// Search implements Store.
func (n *Neo4j) Search(ctx context.Context, tenantID int64, keyword string, limit, depth int) (*Result, error) {
	s := n.session(ctx, neo4j.AccessModeRead)
	defer s.Close(ctx)
	out, err := s.ExecuteRead(ctx, func(tx neo4j.ManagedTransaction) (any, error) {
		res := &Result{Nodes: []Node{}, Edges: []Edge{}}
		rows, err := tx.Run(ctx, Neo4jSearch, map[string]any{"tenant": tenantID, "keyword": keyword, "lower": strings.ToLower(keyword),
			"limit": limit, "depth": depth, "max": 5 * limit})
		if err != nil {
			return nil, err
		}
		var ids []any
		for rows.Next(ctx) {
			r := rows.Record()
			node := Node{ID: str(r, "id"), Kind: str(r, "kind"), Name: str(r, "name"), Depth: int(num(r, "depth"))}
			if p := str(r, "props"); p != "" {
				if err := json.Unmarshal([]byte(p), &node.Props); err != nil {
					return nil, fmt.Errorf("neo4j: props of %s: %w", node.ID, err)
				}
			}
			res.Nodes = append(res.Nodes, node)
			ids = append(ids, node.ID)
		}
		if err := rows.Err(); err != nil || len(ids) == 0 {
			return res, err
		}
		rows, err = tx.Run(ctx, Neo4jEdges, map[string]any{"tenant": tenantID, "ids": ids})
		if err != nil {
			return nil, err
		}
		for rows.Next(ctx) {
			r := rows.Record()
			res.Edges = append(res.Edges, Edge{From: str(r, "from"), To: str(r, "to"), Kind: str(r, "kind"), Weight: num(r, "weight")})
		}
		return res, rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out.(*Result), nil
}

func str(r *neo4j.Record, key string) string {
	v, _ := r.Get(key)
	s, _ := v.(string)
	return s
}

func num(r *neo4j.Record, key string) float64 {
	v, _ := r.Get(key)
	switch x := v.(type) {
	case int64:
		return float64(x)
	case float64:
		return x
	}
	return 0
}

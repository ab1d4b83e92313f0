-- +goose Up
-- The knowledge graph's PostgreSQL store (services/chat/agent/graph): each tenant's business
-- as nodes (shops, goods, categories, staff, metrics, promotion plans) and edges (goods in a
-- category, sold by a shop, managed by a staff member; a category under its parent; a metric
-- depending on another; a plan targeting goods and watching metrics; goods bought together,
-- weighted by the orders holding both). Rebuilt per tenant when its data changes; searched
-- with recursive CTEs.
CREATE TABLE chat.graph_nodes (
    tenant_id bigint NOT NULL,
    id        text   NOT NULL,
    kind      text   NOT NULL,
    name      text   NOT NULL,
    props     jsonb  NOT NULL DEFAULT '{}',
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX graph_nodes_name ON chat.graph_nodes (tenant_id, lower(name));

CREATE TABLE chat.graph_edges (
    tenant_id bigint           NOT NULL,
    src       text             NOT NULL,
    dst       text             NOT NULL,
    kind      text             NOT NULL,
    weight    double precision NOT NULL DEFAULT 1,
    PRIMARY KEY (tenant_id, src, dst, kind),
    FOREIGN KEY (tenant_id, src) REFERENCES chat.graph_nodes (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, dst) REFERENCES chat.graph_nodes (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX graph_edges_dst ON chat.graph_edges (tenant_id, dst);

-- +goose Down
DROP TABLE chat.graph_edges;
DROP TABLE chat.graph_nodes;

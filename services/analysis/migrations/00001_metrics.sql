-- +goose Up
-- Metric definitions of each tenant. A deleted metric keeps its row (soft delete) but
-- leaves lists, queries and the name space: its name can be reused.
CREATE SCHEMA analysis;

CREATE TABLE analysis.metrics (
    id           bigserial   PRIMARY KEY,
    tenant_id    bigint      NOT NULL,
    name         text        NOT NULL,
    display_name text        NOT NULL,
    description  text        NOT NULL DEFAULT '',
    metric_group text        NOT NULL,
    type         text        NOT NULL CHECK (type IN ('derived', 'order', 'formula')),
    config       jsonb       NOT NULL,
    synonyms     text[]      NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    deleted_at   timestamptz
);
CREATE UNIQUE INDEX metrics_live_name ON analysis.metrics (tenant_id, name) WHERE deleted_at IS NULL;
CREATE INDEX metrics_tenant_group ON analysis.metrics (tenant_id, metric_group) WHERE deleted_at IS NULL;

-- Which metrics a formula uses, so deleting a dependency of a live formula can be refused.
CREATE TABLE analysis.metric_dependencies (
    metric_id  bigint NOT NULL REFERENCES analysis.metrics (id) ON DELETE CASCADE,
    depends_on bigint NOT NULL REFERENCES analysis.metrics (id) ON DELETE CASCADE,
    PRIMARY KEY (metric_id, depends_on)
);
CREATE INDEX metric_dependencies_on ON analysis.metric_dependencies (depends_on);

-- +goose Down
DROP SCHEMA analysis CASCADE;

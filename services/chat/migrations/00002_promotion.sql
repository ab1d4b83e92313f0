-- +goose Up
-- Promotion plans (services/chat/promotion): templates the agents create with
-- create_promotion_plan and the execution plans promotion_strategy links to them, per tenant.
-- product_ids are the basic service's goods ids, checked over gRPC when the plan is created
-- (no cross-schema foreign keys).
CREATE TABLE chat.promotion_plans (
    id              bigserial   PRIMARY KEY,
    tenant_id       bigint      NOT NULL,
    title           text        NOT NULL,
    goal            text        NOT NULL DEFAULT '',
    product_ids     bigint[]    NOT NULL CHECK (cardinality(product_ids) >= 1),
    product_names   text[]      NOT NULL DEFAULT '{}',
    mechanics       text        NOT NULL DEFAULT '',
    discount_rate   numeric(6, 4) NOT NULL DEFAULT 0 CHECK (discount_rate >= 0 AND discount_rate <= 1),
    budget          numeric(16, 2) NOT NULL DEFAULT 0 CHECK (budget >= 0),
    start_date      date        NOT NULL,
    end_date        date        NOT NULL,
    metrics         text[]      NOT NULL DEFAULT '{}',
    analysis_result text        NOT NULL DEFAULT '',
    status          text        NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'approved', 'active', 'completed', 'cancelled')),
    created_by      bigint      NOT NULL,
    conversation_id text        NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    CHECK (start_date <= end_date)
);
CREATE INDEX promotion_plans_tenant ON chat.promotion_plans (tenant_id, id DESC);
CREATE INDEX promotion_plans_products ON chat.promotion_plans USING gin (product_ids);

CREATE TABLE chat.promotion_executions (
    id          bigserial   PRIMARY KEY,
    tenant_id   bigint      NOT NULL,
    template_id bigint      NOT NULL REFERENCES chat.promotion_plans (id) ON DELETE CASCADE,
    name        text        NOT NULL,
    channel     text        NOT NULL DEFAULT '',
    start_date  date        NOT NULL,
    end_date    date        NOT NULL,
    budget      numeric(16, 2) NOT NULL DEFAULT 0 CHECK (budget >= 0),
    strategy    jsonb       NOT NULL DEFAULT '{}',
    status      text        NOT NULL DEFAULT 'planned' CHECK (status IN ('planned', 'running', 'paused', 'finished', 'cancelled')),
    created_by  bigint      NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    CHECK (start_date <= end_date)
);
CREATE INDEX promotion_executions_tenant ON chat.promotion_executions (tenant_id, id DESC);
CREATE INDEX promotion_executions_template ON chat.promotion_executions (template_id, id);

-- +goose Down
DROP TABLE chat.promotion_executions;
DROP TABLE chat.promotion_plans;

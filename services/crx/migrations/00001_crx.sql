-- +goose Up
-- The extension backend's own records. The collected metric values themselves live in the
-- analytical store (diy_crx_metrics, internal/analytics/warehouse/collected.go).
CREATE SCHEMA crx;

-- The extension configuration an administrator set for the tenant; no row: the defaults.
CREATE TABLE crx.tenant_configs (
    tenant_id  bigint      PRIMARY KEY,
    metrics    jsonb       NOT NULL,
    upload     jsonb       NOT NULL,
    version    bigint      NOT NULL,
    updated_by bigint      NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- Sync batches already answered, for idempotency: a retried batch id is answered with the
-- stored response for 7 days.
CREATE TABLE crx.sync_batches (
    tenant_id       bigint      NOT NULL,
    client_batch_id uuid        NOT NULL,
    user_id         bigint      NOT NULL,
    response        jsonb       NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, client_batch_id)
);
CREATE INDEX sync_batches_created ON crx.sync_batches (created_at);

-- Ad-hoc page data, per tenant and user; client_id makes uploads idempotent.
CREATE TABLE crx.adhoc (
    id           bigserial   PRIMARY KEY,
    tenant_id    bigint      NOT NULL,
    user_id      bigint      NOT NULL,
    client_id    uuid        NOT NULL,
    page_url     text        NOT NULL,
    page_title   text        NOT NULL DEFAULT '',
    platform     text        NOT NULL DEFAULT '',
    collected_at timestamptz NOT NULL,
    data         jsonb       NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, user_id, client_id)
);
CREATE INDEX adhoc_tenant_user_time ON crx.adhoc (tenant_id, user_id, created_at DESC, id DESC);
CREATE INDEX adhoc_tenant_time ON crx.adhoc (tenant_id, created_at DESC, id DESC);

-- Errors the extensions report.
CREATE TABLE crx.error_logs (
    id                bigserial   PRIMARY KEY,
    tenant_id         bigint      NOT NULL,
    user_id           bigint      NOT NULL,
    level             text        NOT NULL,
    message           text        NOT NULL,
    stack             text        NOT NULL DEFAULT '',
    extension_version text        NOT NULL DEFAULT '',
    url               text        NOT NULL DEFAULT '',
    user_agent        text        NOT NULL DEFAULT '',
    occurred_at       timestamptz NOT NULL,
    context           jsonb,
    created_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX error_logs_tenant_time ON crx.error_logs (tenant_id, created_at DESC, id DESC);
CREATE INDEX error_logs_user_time ON crx.error_logs (tenant_id, user_id, created_at);

-- +goose Down
DROP SCHEMA crx CASCADE;

-- +goose Up
-- The nl2sql bridge's schema: which tenant each provider token, chat, role and policy it
-- created belongs to (the provider knows nothing of ShopMind's tenants). Tokens are kept as
-- SHA-256 hashes only.
CREATE SCHEMA nl2sql;

CREATE TABLE nl2sql.tokens (
    token_hash text        PRIMARY KEY,
    tenant_id  bigint      NOT NULL,
    user_id    bigint      NOT NULL,
    role_id    text        NOT NULL,
    shop_ids   bigint[]    NOT NULL,
    expires_at timestamptz NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX tokens_expires_at ON nl2sql.tokens (expires_at);

CREATE TABLE nl2sql.chats (
    chat_id          text        PRIMARY KEY,
    tenant_id        bigint      NOT NULL,
    user_id          bigint      NOT NULL,
    bot_id           text        NOT NULL,
    shop_ids         bigint[]    NOT NULL,
    token_expires_at timestamptz NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX chats_tenant ON nl2sql.chats (tenant_id, created_at DESC);

CREATE TABLE nl2sql.roles (
    role_id    text        PRIMARY KEY,
    tenant_id  bigint      NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE nl2sql.policies (
    policy_id     text        PRIMARY KEY,
    tenant_id     bigint      NOT NULL,
    role_id       text        NOT NULL,
    datasource_id text        NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- +goose Down
DROP SCHEMA nl2sql CASCADE;

-- +goose Up
-- The built-in NL2SQL provider's objects (datasources, policies, roles, bots, chats,
-- messages and temporary tokens, the latter as SHA-256 hashes), each as the JSON the
-- provider API answers with. kind names the object type; name is its name (a chat's id for
-- a message).
CREATE SCHEMA nl2sql_provider;

CREATE TABLE nl2sql_provider.objects (
    kind       text        NOT NULL,
    id         text        NOT NULL,
    name       text        NOT NULL DEFAULT '',
    body       jsonb       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (kind, id)
);
CREATE INDEX objects_kind_name ON nl2sql_provider.objects (kind, name, created_at);

-- +goose Down
DROP SCHEMA nl2sql_provider CASCADE;

-- +goose Up
-- The chat agents' embedded vector store: one row per item of a tenant's collection, with
-- its embedding as float4[] (searched by brute-force cosine similarity in the service).
CREATE SCHEMA IF NOT EXISTS chatvec;

CREATE TABLE chatvec.items (
    tenant_id  bigint      NOT NULL,
    collection text        NOT NULL,
    id         text        NOT NULL,
    text       text        NOT NULL DEFAULT '',
    metadata   jsonb       NOT NULL DEFAULT '{}'::jsonb,
    dim        integer     NOT NULL CHECK (dim > 0),
    vector     float4[]    NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, collection, id)
);

-- +goose Down
DROP TABLE chatvec.items;
DROP SCHEMA chatvec;

-- +goose Up
-- The revocation list every process keeps in memory: a revoked access token id (jti) or a
-- whole refresh family, until the latest expiry of what it revokes. Changes are announced
-- with NOTIFY shopmind_revocations.
CREATE SCHEMA IF NOT EXISTS authn;
CREATE TABLE authn.revocations (
    kind       text        NOT NULL CHECK (kind IN ('token', 'family')),
    id         text        NOT NULL,
    expires_at timestamptz NOT NULL,
    revoked_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (kind, id)
);
CREATE INDEX revocations_expires_at ON authn.revocations (expires_at);

-- +goose Down
DROP SCHEMA authn CASCADE;

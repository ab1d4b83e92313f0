-- +goose Up
-- A policy's client-given name (unique per tenant) and a fingerprint of what it says, so a
-- CreatePolicy retried with the same name answers the policy already made.
ALTER TABLE nl2sql.policies ADD COLUMN name text NOT NULL DEFAULT '',
    ADD COLUMN fingerprint text NOT NULL DEFAULT '';
CREATE UNIQUE INDEX policies_tenant_name ON nl2sql.policies (tenant_id, name) WHERE name <> '';

-- +goose Down
DROP INDEX nl2sql.policies_tenant_name;
ALTER TABLE nl2sql.policies DROP COLUMN fingerprint, DROP COLUMN name;

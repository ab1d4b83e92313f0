-- +goose Up
-- A lease on a provider role while a policy is added to it: adding is a read-modify-write
-- of the role's policy list at the provider (which has no conditional update), so the
-- bridges (of every replica) take turns per role. An expired lease (its holder stopped)
-- is taken over.
CREATE TABLE nl2sql.role_leases (
    role_id text        PRIMARY KEY,
    holder  text        NOT NULL,
    until   timestamptz NOT NULL
);

-- +goose Down
DROP TABLE nl2sql.role_leases;

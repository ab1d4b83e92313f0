-- +goose Up
-- A batch id is claimed (response NULL) before its values are stored, so that identical
-- requests in flight at once (a retry sent while the first is still being stored) neither
-- store twice nor answer differently: the others wait for the claimant's answer.
ALTER TABLE crx.sync_batches ALTER COLUMN response DROP NOT NULL;

-- +goose Down
DELETE FROM crx.sync_batches WHERE response IS NULL;
ALTER TABLE crx.sync_batches ALTER COLUMN response SET NOT NULL;

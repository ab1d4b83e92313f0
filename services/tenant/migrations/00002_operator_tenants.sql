-- +goose Up
-- Operator tenants: their enabled administrators are platform operators (they manage
-- tenants through PlatformService). Set only by `shopmind tenant create --operator`, never
-- through the API; no tenant is one by default.
ALTER TABLE tenant.tenants ADD COLUMN is_operator boolean NOT NULL DEFAULT false;
-- Sessions of a user or of a tenant are ended together (a disabled user or tenant, a new
-- password): find their live refresh tokens without a scan.
CREATE INDEX refresh_tokens_user ON tenant.refresh_tokens (user_id) WHERE revoked_at IS NULL;
CREATE INDEX refresh_tokens_tenant ON tenant.refresh_tokens (tenant_id) WHERE revoked_at IS NULL;

-- +goose Down
DROP INDEX tenant.refresh_tokens_tenant;
DROP INDEX tenant.refresh_tokens_user;
ALTER TABLE tenant.tenants DROP COLUMN is_operator;

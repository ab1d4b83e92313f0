-- +goose Up
-- Notifications collected for each tenant. user_id is the recipient: 0 means every user of
-- the tenant. Read state is per user (notify.reads), so a tenant-wide notice read by one
-- user stays unread for the others.
CREATE SCHEMA notify;

CREATE TABLE notify.notifications (
    id         bigserial   PRIMARY KEY,
    tenant_id  bigint      NOT NULL,
    user_id    bigint      NOT NULL DEFAULT 0,
    type       text        NOT NULL,
    level      text        NOT NULL CHECK (level IN ('info', 'warning', 'error')),
    title      text        NOT NULL,
    content    text        NOT NULL DEFAULT '',
    source     text        NOT NULL,
    shop_id    bigint      NOT NULL DEFAULT 0,
    dedup_key  text,
    created_by bigint      NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX notifications_dedup ON notify.notifications (tenant_id, dedup_key) WHERE dedup_key IS NOT NULL;
CREATE INDEX notifications_tenant_time ON notify.notifications (tenant_id, created_at DESC, id DESC);

CREATE TABLE notify.reads (
    user_id         bigint      NOT NULL,
    notification_id bigint      NOT NULL REFERENCES notify.notifications (id) ON DELETE CASCADE,
    read_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, notification_id)
);

-- +goose Down
DROP SCHEMA notify CASCADE;

-- +goose Up
-- The chat service's schema: sessions (conversations) and their messages. Owners are the
-- tenant service's tenant and user ids (no cross-schema foreign keys: each service owns its
-- schema). Deleting a session deletes its messages.
CREATE SCHEMA chat;

CREATE TABLE chat.sessions (
    id          uuid        PRIMARY KEY,
    tenant_id   bigint      NOT NULL,
    user_id     bigint      NOT NULL,
    title       text        NOT NULL DEFAULT '',
    status      text        NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived')),
    favorite    boolean     NOT NULL DEFAULT false,
    preferences jsonb       NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX sessions_owner_updated ON chat.sessions (tenant_id, user_id, updated_at DESC, id DESC);

-- kind: text (user, assistant and system messages shown in the history), tool_use (an
-- assistant message calling tools; content_json {"tool_calls": [{"id", "name",
-- "arguments"}]}) and tool_result (role tool; content_json {"tool_call_id", "name"}).
-- Assistant replies keep their render and visualization events in content_json
-- {"renders": [...], "visualizations": [...]}.
CREATE TABLE chat.messages (
    id           uuid        PRIMARY KEY,
    session_id   uuid        NOT NULL REFERENCES chat.sessions (id) ON DELETE CASCADE,
    role         text        NOT NULL CHECK (role IN ('user', 'assistant', 'system', 'tool')),
    content      text        NOT NULL DEFAULT '',
    content_json jsonb,
    kind         text        NOT NULL DEFAULT 'text' CHECK (kind IN ('text', 'tool_use', 'tool_result')),
    status       text        NOT NULL DEFAULT 'complete' CHECK (status IN ('complete', 'interrupted')),
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX messages_session_created ON chat.messages (session_id, created_at, id);

-- +goose Down
DROP SCHEMA chat CASCADE;

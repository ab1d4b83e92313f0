-- +goose Up
-- v1 workflows: a task run by the agent team, detached from the client that started it.
-- The row is the workflow's current state (what GetWorkflow answers); chat.workflow_events
-- is its event log, numbered 1, 2, 3... by last_seq (each event is written with the state
-- change it describes, in one statement), which SSE and the WebSocket channel resume from.
-- lease_until is renewed by the process running the workflow; a pending or running
-- workflow whose lease ran out (its process died) is marked failed by the next sweep.
CREATE TABLE chat.workflows (
    id              uuid        PRIMARY KEY,
    tenant_id       bigint      NOT NULL,
    user_id         bigint      NOT NULL,
    conversation_id uuid        REFERENCES chat.sessions (id) ON DELETE SET NULL,
    task            text        NOT NULL,
    agents          text[]      NOT NULL DEFAULT '{}',
    input           jsonb,
    status          text        NOT NULL CHECK (status IN ('pending', 'running', 'completed', 'failed', 'cancelled')),
    progress        int         NOT NULL DEFAULT 0 CHECK (progress BETWEEN 0 AND 100),
    steps           jsonb       NOT NULL DEFAULT '[]',
    content         text        NOT NULL DEFAULT '',
    renders         jsonb       NOT NULL DEFAULT '[]',
    visualizations  jsonb       NOT NULL DEFAULT '[]',
    result          jsonb,
    error           text        NOT NULL DEFAULT '',
    last_seq        bigint      NOT NULL DEFAULT 0,
    lease_until     timestamptz NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    started_at      timestamptz,
    finished_at     timestamptz,
    updated_at      timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX workflows_owner ON chat.workflows (tenant_id, user_id, created_at DESC);
CREATE INDEX workflows_unfinished ON chat.workflows (lease_until) WHERE status IN ('pending', 'running');

-- payload: the protojson of StreamWorkflowEventsResponse without workflow_id and sequence.
CREATE TABLE chat.workflow_events (
    workflow_id uuid        NOT NULL REFERENCES chat.workflows (id) ON DELETE CASCADE,
    seq         bigint      NOT NULL,
    payload     jsonb       NOT NULL,
    occurred_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (workflow_id, seq)
);

-- +goose Down
DROP TABLE chat.workflow_events;
DROP TABLE chat.workflows;

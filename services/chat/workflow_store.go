package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	chatv1 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v1"
)

// Workflow statuses (chat.workflows.status, the contract's vocabulary).
const (
	wfPending   = "pending"
	wfRunning   = "running"
	wfCompleted = "completed"
	wfFailed    = "failed"
	wfCancelled = "cancelled"
)

func finalStatus(s string) bool { return s == wfCompleted || s == wfFailed || s == wfCancelled }

// errWorkflowFinished reports a write to a workflow that is no longer pending or running
// (cancelled, or failed by the sweep, meanwhile).
var errWorkflowFinished = errors.New("chat: the workflow already reached a final status")

// workflowRecord is a new workflow.
type workflowRecord struct {
	ID             string
	Owner          owner
	ConversationID string // "": none
	Task           string
	Agents         []string
	Input          []byte // JSON object or nil
	Lease          time.Duration
}

// workflowSnapshot is the state written with each event.
type workflowSnapshot struct {
	Status         string
	Progress       int32
	Steps          []*chatv1.WorkflowStep
	Content        string
	Renders        []*chatv1.RenderEvent
	Visualizations []*chatv1.VisualizationEvent
	Result         *structpb.Struct
	Error          string

	// written is what the last event stored of each column, so an event writes only the
	// columns that changed: an unchanged large value keeps its stored (TOAST) copy instead of
	// being written again with every event.
	written struct {
		ok                  bool
		steps, renders, vis []byte
		result              []byte
		content, errorText  string
	}
}

// changed returns b when it differs from what was last written (then nil: unchanged).
func changed(b, last []byte, first bool) []byte {
	if first || !bytes.Equal(b, last) {
		return b
	}
	return nil
}

var storeJSON = protojson.MarshalOptions{UseProtoNames: true}

func jsonArray[M proto.Message](items []M) []byte {
	out := make([]json.RawMessage, 0, len(items))
	for _, it := range items {
		b, _ := storeJSON.Marshal(it)
		out = append(out, b)
	}
	b, _ := json.Marshal(out)
	return b
}

func parseArray[M proto.Message](b []byte, newM func() M) ([]M, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	out := make([]M, 0, len(raw))
	for _, r := range raw {
		m := newM()
		if err := protojson.Unmarshal(r, m); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// createWorkflow stores a new pending workflow with its first event (sequence 1, the
// "status" event) and the lease of this process.
func (st *store) createWorkflow(ctx context.Context, w *workflowRecord) (time.Time, error) {
	var conv any
	if w.ConversationID != "" {
		conv = w.ConversationID
	}
	first, _ := storeJSON.Marshal(&chatv1.StreamWorkflowEventsResponse{Type: "status", Status: wfPending})
	var created time.Time
	err := st.pool.QueryRow(ctx, `WITH w AS (
			INSERT INTO chat.workflows (id, tenant_id, user_id, conversation_id, task, agents, input, status, last_seq, lease_until)
			VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', 1, clock_timestamp() + $8::interval) RETURNING id, created_at)
		INSERT INTO chat.workflow_events (workflow_id, seq, payload, occurred_at) SELECT id, 1, $9, created_at FROM w
		RETURNING occurred_at`,
		w.ID, w.Owner.tenantID, w.Owner.userID, conv, w.Task, w.Agents, w.Input, w.Lease.String(), first).Scan(&created)
	return created, err
}

// appendWorkflowEvent writes ev with the workflow's new state in one statement, unless the
// workflow already reached a final status (errWorkflowFinished). It fills ev's sequence and
// time.
func (st *store) appendWorkflowEvent(ctx context.Context, id string, s *workflowSnapshot, ev *chatv1.StreamWorkflowEventsResponse) error {
	ev.Status, ev.Progress = s.Status, s.Progress
	payload, err := storeJSON.Marshal(ev)
	if err != nil {
		return err
	}
	var result []byte
	if s.Result != nil {
		if result, err = storeJSON.Marshal(s.Result); err != nil {
			return err
		}
	}
	// Only what changed since the last event is sent; NULL keeps the stored value.
	first := !s.written.ok
	steps, renders, vis := jsonArray(s.Steps), jsonArray(s.Renders), jsonArray(s.Visualizations)
	var content, errText any
	if first || s.Content != s.written.content {
		content = s.Content
	}
	if first || s.Error != s.written.errorText {
		errText = s.Error
	}
	resultChanged := first || !bytes.Equal(result, s.written.result)
	var seq int64
	var at time.Time
	err = st.pool.QueryRow(ctx, `WITH w AS (
			UPDATE chat.workflows SET last_seq = last_seq + 1, status = $2, progress = $3, steps = coalesce($4, steps),
				content = coalesce($5, content), renders = coalesce($6, renders), visualizations = coalesce($7, visualizations),
				result = CASE WHEN $11 THEN $8 ELSE result END, error = coalesce($9, error),
				started_at = CASE WHEN started_at IS NULL AND $2 <> 'pending' THEN clock_timestamp() ELSE started_at END,
				finished_at = CASE WHEN $2 IN ('completed', 'failed', 'cancelled') THEN clock_timestamp() END,
				updated_at = clock_timestamp()
			WHERE id = $1 AND status IN ('pending', 'running') RETURNING last_seq, updated_at)
		INSERT INTO chat.workflow_events (workflow_id, seq, payload, occurred_at) SELECT $1, last_seq, $10, updated_at FROM w
		RETURNING seq, occurred_at`,
		id, s.Status, s.Progress, changed(steps, s.written.steps, first), content, changed(renders, s.written.renders, first),
		changed(vis, s.written.vis, first), result, errText, payload, resultChanged).Scan(&seq, &at)
	if errors.Is(err, pgx.ErrNoRows) {
		return errWorkflowFinished
	}
	if err != nil {
		return err
	}
	w := &s.written
	w.ok, w.steps, w.renders, w.vis, w.result, w.content, w.errorText = true, steps, renders, vis, result, s.Content, s.Error
	ev.WorkflowId, ev.Sequence, ev.OccurredAt = id, seq, timestamppb.New(at)
	return nil
}

// finishWorkflowOutside ends a pending or running workflow that no runner of this process
// ends: cancelled by a caller, or failed because its runner's lease ran out. Steps not
// finished are marked like the workflow. It returns false when the workflow was already
// final.
func (st *store) finishWorkflowOutside(ctx context.Context, id, status, reason string) (bool, error) {
	typ := "status"
	if status == wfFailed {
		typ = "error"
	}
	tag, err := st.pool.Exec(ctx, `WITH w AS (
			UPDATE chat.workflows SET last_seq = last_seq + 1, status = $2, error = $3,
				steps = COALESCE((SELECT jsonb_agg(CASE WHEN s->>'status' IN ('pending', 'running')
					THEN jsonb_set(s, '{status}', to_jsonb($2::text)) ELSE s END ORDER BY n) FROM jsonb_array_elements(steps) WITH ORDINALITY AS e(s, n)), '[]'),
				finished_at = clock_timestamp(), updated_at = clock_timestamp()
			WHERE id = $1 AND status IN ('pending', 'running') RETURNING last_seq, progress, updated_at)
		INSERT INTO chat.workflow_events (workflow_id, seq, payload, occurred_at)
		SELECT $1, last_seq, jsonb_strip_nulls(jsonb_build_object('type', $4::text, 'status', $2::text, 'progress', progress, 'error', NULLIF($3, ''))), updated_at FROM w`,
		id, status, reason, typ)
	return tag.RowsAffected() == 1, err
}

// renewLeases extends the lease of the given workflows (those this process runs) and
// returns those still pending or running.
func (st *store) renewLeases(ctx context.Context, ids []string, lease time.Duration) ([]string, error) {
	rows, err := st.pool.Query(ctx, `UPDATE chat.workflows SET lease_until = clock_timestamp() + $2::interval
		WHERE id = ANY($1::uuid[]) AND status IN ('pending', 'running') RETURNING id::text`, ids, lease.String())
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// expiredWorkflows lists pending or running workflows whose lease ran out, except those
// this process runs (running).
func (st *store) expiredWorkflows(ctx context.Context, running []string) ([]string, error) {
	rows, err := st.pool.Query(ctx, `SELECT id FROM chat.workflows
		WHERE status IN ('pending', 'running') AND lease_until < clock_timestamp() AND NOT id = ANY($1::uuid[]) LIMIT 1000`, running)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// getWorkflow returns the caller's workflow, nil when the caller has none with that id.
func (st *store) getWorkflow(ctx context.Context, o owner, id string) (*chatv1.GetWorkflowResponse, error) {
	var (
		w                           = &chatv1.GetWorkflowResponse{WorkflowId: id}
		conv                        *string
		steps, renders, vis, result []byte
		created, updated            time.Time
		started, finished           *time.Time
	)
	err := st.pool.QueryRow(ctx, `SELECT conversation_id::text, task, status, progress, steps, content, renders, visualizations,
			result, error, last_seq, created_at, started_at, finished_at, updated_at
		FROM chat.workflows WHERE id = $1 AND tenant_id = $2 AND user_id = $3`, id, o.tenantID, o.userID).Scan(
		&conv, &w.TaskDescription, &w.Status, &w.Progress, &steps, &w.Content, &renders, &vis, &result, &w.Error, &w.LastSequence,
		&created, &started, &finished, &updated)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if conv != nil {
		w.ConversationId = *conv
	}
	if w.Steps, err = parseArray(steps, func() *chatv1.WorkflowStep { return &chatv1.WorkflowStep{} }); err != nil {
		return nil, err
	}
	if w.Renders, err = parseArray(renders, func() *chatv1.RenderEvent { return &chatv1.RenderEvent{} }); err != nil {
		return nil, err
	}
	if w.Visualizations, err = parseArray(vis, func() *chatv1.VisualizationEvent { return &chatv1.VisualizationEvent{} }); err != nil {
		return nil, err
	}
	if result != nil {
		w.Result = &structpb.Struct{}
		if err := protojson.Unmarshal(result, w.Result); err != nil {
			return nil, err
		}
	}
	w.CreatedAt, w.UpdatedAt = timestamppb.New(created), timestamppb.New(updated)
	if started != nil {
		w.StartedAt = timestamppb.New(*started)
	}
	if finished != nil {
		w.FinishedAt = timestamppb.New(*finished)
	}
	return w, nil
}

// workflowEvents returns the stored events of a workflow after sequence after, at most
// limit, in order.
func (st *store) workflowEvents(ctx context.Context, id string, after int64, limit int) ([]*chatv1.StreamWorkflowEventsResponse, error) {
	rows, err := st.pool.Query(ctx, `SELECT seq, payload, occurred_at FROM chat.workflow_events
		WHERE workflow_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, id, after, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*chatv1.StreamWorkflowEventsResponse
	for rows.Next() {
		var seq int64
		var payload []byte
		var at time.Time
		if err := rows.Scan(&seq, &payload, &at); err != nil {
			return nil, err
		}
		ev := &chatv1.StreamWorkflowEventsResponse{}
		if err := protojson.Unmarshal(payload, ev); err != nil {
			return nil, err
		}
		ev.WorkflowId, ev.Sequence, ev.OccurredAt = id, seq, timestamppb.New(at)
		out = append(out, ev)
	}
	return out, rows.Err()
}

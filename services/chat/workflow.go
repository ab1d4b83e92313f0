package chat

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	chatv1 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v1"
	chatv2 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v2"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/agent/team"
)

// Workflows (v1 StartWorkflow, GetWorkflow, StreamWorkflowEvents, CancelWorkflow): a task
// answered by the same agent that answers messages (the agent team once it has one), run in
// the background, detached from the client. Every change is one stored event
// (workflow_store.go) and the workflow's row holds the state; followers read the stored
// events and then the live ones of this process (a feed), or poll the database when another
// process runs the workflow. CHAT.md describes the rules.

// expertNames are the names agents_to_use may hold: the agent team's experts.
var expertNames = sync.OnceValue(func() []string {
	var names []string
	for _, x := range team.DefaultExperts() {
		names = append(names, x.Name)
	}
	return names
})

// Limits of a workflow.
const (
	maxWorkflowInputBytes = 64 << 10
	maxStepSummary        = 2000
	// textFlushBytes and textFlushEvery coalesce the agent's text chunks into "text" events.
	textFlushBytes = 2048
	textFlushEvery = 200 * time.Millisecond
	// remotePoll is how often a follower polls the database for a workflow that another
	// process runs.
	remotePoll = time.Second
	// eventPage bounds one read of stored events.
	eventPage = 500
)

// workflows runs the workflows of this process.
type workflows struct {
	store   *store
	agent   agent.Agent
	log     *slog.Logger
	timeout time.Duration
	lease   time.Duration
	runner  *messageRunner // stores a workflow's report into its conversation

	mu       sync.Mutex
	runs     map[string]*workflowRun
	stopping bool // no new runs
	wg       sync.WaitGroup
}

// workflowRun is one workflow running in this process.
type workflowRun struct {
	w      *workflows
	id     string
	cancel context.CancelCauseFunc
	done   chan struct{}
	feed   *feed[*chatv1.StreamWorkflowEventsResponse]

	mu          sync.Mutex // serializes writes; guards what follows
	snap        workflowSnapshot
	renderIndex map[string]int
	pending     strings.Builder // text not yet written
	failedWrite error           // the first write that failed: the run stops
}

var (
	errCancelled = errors.New("the workflow was cancelled")
	errShutdown  = errors.New("the service stopped before the workflow finished")
)

// start validates and stores a workflow, then runs it in the background.
func (ws *workflows) start(ctx context.Context, req *chatv1.StartWorkflowRequest) (*chatv1.StartWorkflowResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	task := strings.TrimSpace(req.GetTaskDescription())
	if task == "" {
		return nil, apperr.InvalidFields([]apperr.FieldViolation{{Field: "task_description", Rule: "task_description.not_blank", Message: "must not be empty or only whitespace"}})
	}
	if req.GetInput() != nil && proto.Size(req.GetInput()) > maxWorkflowInputBytes {
		return nil, apperr.InvalidFields([]apperr.FieldViolation{{Field: "input", Rule: "input.max_size", Message: "must be at most 64 KiB"}})
	}
	if len(req.GetAgentsToUse()) > 0 {
		known := expertNames()
		for i, name := range req.GetAgentsToUse() {
			if !slices.Contains(known, name) {
				msg := "the agents have no named experts"
				if len(known) > 0 {
					msg = "unknown expert; known: " + strings.Join(known, ", ")
				}
				return nil, apperr.InvalidFields([]apperr.FieldViolation{{Field: "agents_to_use[" + strconv.Itoa(i) + "]", Rule: "agents_to_use.known", Message: msg}})
			}
		}
	}
	o := owner{tenantID: id.TenantID, userID: id.UserID}
	if c := req.GetConversationId(); c != "" {
		sess, err := ws.store.getSession(ctx, o, c)
		if err != nil {
			return nil, apperr.Internal(err)
		}
		if sess == nil {
			return nil, apperr.NotFound("conversation", c)
		}
	}
	rec := &workflowRecord{ID: uuid.NewString(), Owner: o, ConversationID: req.GetConversationId(), Task: task,
		Agents: slices.Clone(req.GetAgentsToUse()), Lease: ws.lease}
	if rec.Agents == nil {
		rec.Agents = []string{}
	}
	if req.GetInput() != nil {
		rec.Input, _ = storeJSON.Marshal(req.GetInput())
	}
	created, err := ws.store.createWorkflow(ctx, rec)
	if err != nil {
		return nil, apperr.Internal(err)
	}
	run := &workflowRun{w: ws, id: rec.ID, done: make(chan struct{}), feed: newFeed[*chatv1.StreamWorkflowEventsResponse](1, 0),
		renderIndex: map[string]int{}}
	run.snap.Status = wfPending
	run.feed.add(&chatv1.StreamWorkflowEventsResponse{WorkflowId: rec.ID, Type: "status", Status: wfPending, Sequence: 1, OccurredAt: timestamppb.New(created)})

	pageInfo, _ := structpb.NewStruct(map[string]any{"workflow": map[string]any{"id": rec.ID, "agents_to_use": toAny(rec.Agents)}})
	if req.GetInput() != nil {
		pageInfo.Fields["workflow"].GetStructValue().Fields["input"] = structpb.NewStructValue(req.GetInput())
	}
	convID := rec.ConversationID
	if convID == "" {
		convID = rec.ID
	}
	areq := &agent.Request{Identity: id, ConversationID: convID, Message: task, CurrentPageInfo: pageInfo,
		CurrentUser: &chatv2.CurrentUser{UserId: id.UserID, Username: id.Username}}

	ws.mu.Lock()
	if ws.stopping {
		ws.mu.Unlock()
		_, _ = ws.store.finishWorkflowOutside(context.WithoutCancel(ctx), rec.ID, wfFailed, errShutdown.Error())
		return nil, apperr.New(apperr.KindUnavailable, "the service is stopping")
	}
	// Not derived from the request: the workflow runs whether or not the caller stays. The
	// service's end cancels it (the run then marks it failed).
	runCtx, cancel := context.WithCancelCause(authn.WithIdentity(context.Background(), id))
	run.cancel = cancel
	ws.runs[rec.ID] = run
	ws.wg.Add(1)
	ws.mu.Unlock()
	go run.execute(runCtx, areq, rec)
	return &chatv1.StartWorkflowResponse{WorkflowId: rec.ID, Status: wfPending, CreatedAt: timestamppb.New(created)}, nil
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// execute runs the agent and writes the final event.
func (r *workflowRun) execute(ctx context.Context, req *agent.Request, rec *workflowRecord) {
	ws := r.w
	defer ws.wg.Done()
	defer func() {
		ws.mu.Lock()
		delete(ws.runs, r.id)
		ws.mu.Unlock()
		r.feed.close()
		close(r.done)
	}()
	defer r.cancel(nil)
	writeCtx := context.Background()
	r.mu.Lock()
	r.snap.Status = wfRunning
	err := r.writeLocked(writeCtx, &chatv1.StreamWorkflowEventsResponse{Type: "status"})
	r.mu.Unlock()
	if err != nil {
		return
	}
	stopFlusher := r.flushEvery(textFlushEvery)
	actx, cancelTimeout := context.WithTimeout(ctx, ws.timeout)
	err = answerSafely(actx, ws.agent, req, r.emit)
	cancelTimeout()
	stopFlusher()

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.flushLocked(writeCtx) != nil || r.failedWrite != nil {
		return // cancelled or failed from outside; nothing more to write
	}
	if cause := context.Cause(ctx); cause != nil {
		err = cause
	} else if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("the workflow did not finish within %s", ws.timeout)
	}
	switch {
	case errors.Is(err, errWorkflowFinished):
		return // ended from outside meanwhile
	case err == nil:
		r.snap.Status, r.snap.Progress = wfCompleted, 100
		r.snap.Result = r.resultLocked()
		_ = r.writeLocked(writeCtx, &chatv1.StreamWorkflowEventsResponse{Type: "result", Result: r.snap.Result})
		if rec.ConversationID != "" {
			ws.storeInConversation(rec, r.snap.Content, richContent(convertRenders(r.snap.Renders), convertVis(r.snap.Visualizations)))
		}
	case errors.Is(err, errCancelled):
		r.markStepsLocked(wfCancelled)
		r.snap.Status = wfCancelled
		_ = r.writeLocked(writeCtx, &chatv1.StreamWorkflowEventsResponse{Type: "status"})
	default:
		msg := err.Error()
		if !errors.Is(err, errShutdown) && !strings.HasPrefix(msg, "the workflow did not finish") {
			env := apperr.FromError(err)
			msg = env.Message
			if env.Code == 500 || env.Code < 400 {
				msg = "the agents failed while working on the task"
			}
			ws.log.Warn("chat: workflow failed", "workflow_id", r.id, "error", err)
		}
		r.markStepsLocked(wfFailed)
		r.snap.Status, r.snap.Error = wfFailed, msg
		_ = r.writeLocked(writeCtx, &chatv1.StreamWorkflowEventsResponse{Type: "error", Error: msg})
	}
}

// answerSafely calls the agent, turning a panic into an error.
func answerSafely(ctx context.Context, a agent.Agent, req *agent.Request, emit agent.Emit) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("agent panicked: %v", p)
		}
	}()
	return a.Answer(ctx, req, emit)
}

// flushEvery writes pending text every interval until the returned stop is called.
func (r *workflowRun) flushEvery(every time.Duration) (stop func()) {
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				r.mu.Lock()
				_ = r.flushLocked(context.Background())
				r.mu.Unlock()
			}
		}
	}()
	return func() { close(quit); wg.Wait() }
}

// emit is the agent.Emit of a workflow: text is coalesced into "text" events, renders and
// visualizations are events of their own, a TaskPlanCard also updates the steps.
func (r *workflowRun) emit(ev *chatv2.SendMessageResponse) error {
	if ev == nil {
		return nil
	}
	ctx := context.Background()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failedWrite != nil {
		return r.failedWrite
	}
	switch e := ev.Event.(type) {
	case *chatv2.SendMessageResponse_Chunk:
		for _, c := range e.Chunk.GetChoices() {
			r.pending.WriteString(c.GetDelta().GetContent())
		}
		if r.pending.Len() >= textFlushBytes {
			return r.flushLocked(ctx)
		}
		return nil
	case *chatv2.SendMessageResponse_Render:
		if err := r.flushLocked(ctx); err != nil {
			return err
		}
		rv := convertRender(e.Render)
		if rv.Id == "" {
			rv.Id = "r" + strconv.Itoa(len(r.snap.Renders)+1)
		}
		if i, ok := r.renderIndex[rv.Id]; ok {
			r.snap.Renders[i] = rv
		} else {
			r.renderIndex[rv.Id] = len(r.snap.Renders)
			r.snap.Renders = append(r.snap.Renders, rv)
		}
		if rv.GetComponent() == agent.ComponentTaskPlan {
			for _, step := range r.updateStepsLocked(rv.GetProps()) {
				if err := r.writeLocked(ctx, &chatv1.StreamWorkflowEventsResponse{Type: "step", Step: step}); err != nil {
					return err
				}
			}
		}
		return r.writeLocked(ctx, &chatv1.StreamWorkflowEventsResponse{Type: "render", Render: rv})
	case *chatv2.SendMessageResponse_Visualization:
		if err := r.flushLocked(ctx); err != nil {
			return err
		}
		v := convertVisualization(e.Visualization)
		if v.Id == "" {
			v.Id = "v" + strconv.Itoa(len(r.snap.Visualizations)+1)
		}
		if len(v.Rows) > maxRows {
			v.Rows = v.Rows[:maxRows]
		}
		r.snap.Visualizations = append(r.snap.Visualizations, v)
		return r.writeLocked(ctx, &chatv1.StreamWorkflowEventsResponse{Type: "visualization", Visualization: v})
	case *chatv2.SendMessageResponse_Done, *chatv2.SendMessageResponse_Error:
		return errors.New("chat: agents must not emit done or error events; return from Answer instead")
	default:
		return errors.New("chat: event without payload")
	}
}

// flushLocked writes the pending text as one "text" event.
func (r *workflowRun) flushLocked(ctx context.Context) error {
	if r.failedWrite != nil {
		return r.failedWrite
	}
	if r.pending.Len() == 0 {
		return nil
	}
	delta := r.pending.String()
	r.pending.Reset()
	r.snap.Content += delta
	return r.writeLocked(ctx, &chatv1.StreamWorkflowEventsResponse{Type: "text", Delta: delta})
}

// writeLocked stores ev with the current state and hands it to the followers. A failed
// write (the workflow was cancelled or failed from outside, or the database failed) stops
// the run.
func (r *workflowRun) writeLocked(ctx context.Context, ev *chatv1.StreamWorkflowEventsResponse) error {
	if r.failedWrite != nil {
		return r.failedWrite
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	if err := r.w.store.appendWorkflowEvent(ctx, r.id, &r.snap, ev); err != nil {
		if !errors.Is(err, errWorkflowFinished) {
			r.w.log.Error("chat: storing a workflow event failed", "workflow_id", r.id, "error", err)
		}
		r.failedWrite = err
		r.cancel(err)
		return err
	}
	r.feed.add(ev)
	return nil
}

// updateStepsLocked takes the tasks of a TaskPlanCard's props ("tasks" or "subtasks", each
// with id, title or description, status, and optionally agent, summary or detail, error)
// as the workflow's steps and returns the steps that changed. Progress is the share of
// steps finished (at most 99 until the workflow completes).
func (r *workflowRun) updateStepsLocked(props *structpb.Struct) []*chatv1.WorkflowStep {
	list := props.GetFields()["tasks"].GetListValue()
	if list == nil {
		list = props.GetFields()["subtasks"].GetListValue()
	}
	if list == nil {
		return nil
	}
	now := timestamppb.Now()
	var changed []*chatv1.WorkflowStep
	for i, v := range list.GetValues() {
		f := v.GetStructValue().GetFields()
		str := func(keys ...string) string {
			for _, k := range keys {
				if s := f[k].GetStringValue(); s != "" {
					return s
				}
			}
			return ""
		}
		id := str("id")
		if id == "" {
			id = strconv.Itoa(i + 1)
		}
		next := &chatv1.WorkflowStep{Id: id, Agent: str("agent", "expert"), Description: str("description", "title", "task"),
			Status: stepStatus(str("status")), Summary: truncateRunes(str("summary", "result", "detail"), maxStepSummary), Error: str("error")}
		if next.Agent == "" && slices.Contains(expertNames(), id) {
			next.Agent = id // the team's tasks are named after their experts
		}
		var old *chatv1.WorkflowStep
		for _, s := range r.snap.Steps {
			if s.Id == id {
				old = s
			}
		}
		if old == nil {
			if next.Status != wfPending {
				next.StartedAt = now
			}
			if finalStatus(next.Status) {
				next.FinishedAt = now
			}
			r.snap.Steps = append(r.snap.Steps, next)
			changed = append(changed, next)
			continue
		}
		next.StartedAt, next.FinishedAt = old.StartedAt, old.FinishedAt
		if next.StartedAt == nil && next.Status != wfPending {
			next.StartedAt = now
		}
		if next.FinishedAt == nil && finalStatus(next.Status) {
			next.FinishedAt = now
		}
		if !proto.Equal(old, next) {
			proto.Reset(old)
			proto.Merge(old, next)
			changed = append(changed, old)
		}
	}
	done := 0
	for _, s := range r.snap.Steps {
		if finalStatus(s.Status) {
			done++
		}
	}
	if n := len(r.snap.Steps); n > 0 {
		r.snap.Progress = min(int32(done*100/n), 99)
	}
	out := make([]*chatv1.WorkflowStep, len(changed))
	for i, s := range changed {
		out[i] = proto.CloneOf(s)
	}
	return out
}

// stepStatus maps a TaskPlanCard task status to a step status.
func stepStatus(s string) string {
	switch strings.ToLower(s) {
	case "in_progress", "running", "started":
		return wfRunning
	case "done", "completed", "complete", "success", "succeeded":
		return wfCompleted
	case "failed", "error":
		return wfFailed
	case "cancelled", "canceled", "skipped":
		return wfCancelled
	default: // todo, pending, unknown
		return wfPending
	}
}

// markStepsLocked ends the steps still pending or running with status.
func (r *workflowRun) markStepsLocked(status string) {
	now := timestamppb.Now()
	for _, s := range r.snap.Steps {
		if !finalStatus(s.Status) {
			s.Status, s.FinishedAt = status, now
		}
	}
}

// resultLocked is the merged result: the report and its renders and visualizations.
func (r *workflowRun) resultLocked() *structpb.Struct {
	renders := make([]any, 0, len(r.snap.Renders))
	for _, rv := range r.snap.Renders {
		renders = append(renders, jsonValue(rv))
	}
	vis := make([]any, 0, len(r.snap.Visualizations))
	for _, v := range r.snap.Visualizations {
		vis = append(vis, jsonValue(v))
	}
	s, err := structpb.NewStruct(map[string]any{"content": r.snap.Content, "renders": renders, "visualizations": vis})
	if err != nil {
		return &structpb.Struct{Fields: map[string]*structpb.Value{"content": structpb.NewStringValue(r.snap.Content)}}
	}
	return s
}

func jsonValue(m proto.Message) any {
	b, _ := storeJSON.Marshal(m)
	v := &structpb.Value{}
	if err := v.UnmarshalJSON(b); err != nil {
		return nil
	}
	return v.AsInterface()
}

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// The v1 and v2 render and visualization messages share field numbers and types.
func convertRender(in *chatv2.RenderEvent) *chatv1.RenderEvent {
	out := &chatv1.RenderEvent{}
	b, _ := proto.Marshal(in)
	_ = proto.Unmarshal(b, out)
	return out
}

func convertVisualization(in *chatv2.VisualizationEvent) *chatv1.VisualizationEvent {
	out := &chatv1.VisualizationEvent{}
	b, _ := proto.Marshal(in)
	_ = proto.Unmarshal(b, out)
	return out
}

func convertRenders(in []*chatv1.RenderEvent) []*chatv2.RenderEvent {
	out := make([]*chatv2.RenderEvent, len(in))
	for i, r := range in {
		out[i] = &chatv2.RenderEvent{}
		b, _ := proto.Marshal(r)
		_ = proto.Unmarshal(b, out[i])
	}
	return out
}

func convertVis(in []*chatv1.VisualizationEvent) []*chatv2.VisualizationEvent {
	out := make([]*chatv2.VisualizationEvent, len(in))
	for i, v := range in {
		out[i] = &chatv2.VisualizationEvent{}
		b, _ := proto.Marshal(v)
		_ = proto.Unmarshal(b, out[i])
	}
	return out
}

// storeInConversation adds the task and the report to the workflow's conversation, in the
// conversation's turn (after any message being answered).
func (ws *workflows) storeInConversation(rec *workflowRecord, content string, contentJSON []byte) {
	x := ws.runner
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	st := x.sessions.acquire(rec.ConversationID)
	defer x.sessions.release(st)
	if err := st.acquireTurn(ctx); err != nil {
		ws.log.Warn("chat: workflow report not added to its conversation", "workflow_id", rec.ID, "error", err)
		return
	}
	defer st.releaseTurn()
	st.forget()
	_, _, err := x.store.addUserMessage(ctx, rec.Owner, rec.ConversationID, false,
		&messageRecord{ID: uuid.NewString(), Role: agent.RoleUser, Content: rec.Task}, titleFrom(rec.Task))
	if err == nil {
		_, err = x.store.addReply(ctx, rec.ConversationID, &messageRecord{ID: uuid.NewString(), Role: agent.RoleAssistant,
			Content: content, ContentJSON: contentJSON, Kind: kindText, Status: statusComplete})
	}
	if err != nil {
		ws.log.Warn("chat: workflow report not added to its conversation", "workflow_id", rec.ID, "error", err)
	}
}

// get answers GetWorkflow.
func (ws *workflows) get(ctx context.Context, workflowID string) (*chatv1.GetWorkflowResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	w, err := ws.store.getWorkflow(ctx, owner{tenantID: id.TenantID, userID: id.UserID}, workflowID)
	if err != nil {
		return nil, apperr.Internal(err)
	}
	if w == nil {
		return nil, apperr.NotFound("workflow", workflowID)
	}
	return w, nil
}

// cancelWorkflow answers CancelWorkflow: the run of this process is stopped and writes
// "cancelled" itself; a workflow no process here runs is ended in the database.
func (ws *workflows) cancelWorkflow(ctx context.Context, workflowID string) (*chatv1.GetWorkflowResponse, error) {
	w, err := ws.get(ctx, workflowID)
	if err != nil || finalStatus(w.Status) {
		return w, err
	}
	ws.mu.Lock()
	run := ws.runs[workflowID]
	ws.mu.Unlock()
	if run != nil {
		run.cancel(errCancelled)
		select {
		case <-run.done:
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	} else if _, err := ws.store.finishWorkflowOutside(ctx, workflowID, wfCancelled, ""); err != nil {
		return nil, apperr.Internal(err)
	}
	return ws.get(ctx, workflowID)
}

// follow sends the events of a workflow after sequence after until the one with a final
// status, or until ctx ends. The caller checked that the workflow is the caller's.
func (ws *workflows) follow(ctx context.Context, workflowID string, after int64, send func(*chatv1.StreamWorkflowEventsResponse) error) error {
	for {
		ws.mu.Lock()
		run := ws.runs[workflowID]
		ws.mu.Unlock()
		if run != nil {
			// Running here: the feed has every event of the run.
			rd := run.feed.since(after)
			for _, ev := range rd.items {
				if err := send(ev); err != nil {
					return err
				}
				if finalStatus(ev.Status) {
					return nil
				}
			}
			after = rd.last
			if len(rd.items) > 0 {
				continue
			}
			if !rd.done {
				select {
				case <-rd.wait:
				case <-ctx.Done():
					return ctx.Err()
				}
				continue
			}
			// Ended: the rest is in the database.
		}
		evs, err := ws.store.workflowEvents(ctx, workflowID, after, eventPage)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			if err := send(ev); err != nil {
				return err
			}
			if finalStatus(ev.Status) {
				return nil
			}
			after = ev.Sequence
		}
		if len(evs) == eventPage {
			continue
		}
		ws.mu.Lock()
		_, local := ws.runs[workflowID]
		ws.mu.Unlock()
		if local {
			continue
		}
		// Run by another process (or between its start and its registration): poll.
		select {
		case <-time.After(remotePoll):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// maintain renews the leases of the runs of this process and fails the workflows whose
// runner is gone (lease run out), every lease/3, until ctx ends; then it stops the runs and
// marks them failed.
func (ws *workflows) maintain(ctx context.Context) {
	ws.sweep(ctx)
	t := time.NewTicker(ws.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			ws.stopAll()
			return
		case <-t.C:
			if ids := ws.running(); len(ids) > 0 {
				active, err := ws.store.renewLeases(ctx, ids, ws.lease)
				if err != nil && ctx.Err() == nil {
					ws.log.Warn("chat: renewing workflow leases failed", "error", err)
				}
				if err == nil { // ended from outside (cancelled by another process): stop
					ws.mu.Lock()
					for _, id := range ids {
						if r := ws.runs[id]; r != nil && !slices.Contains(active, id) {
							r.cancel(errWorkflowFinished)
						}
					}
					ws.mu.Unlock()
				}
			}
			ws.sweep(ctx)
		}
	}
}

func (ws *workflows) running() []string {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ids := make([]string, 0, len(ws.runs))
	for id := range ws.runs {
		ids = append(ids, id)
	}
	return ids
}

// sweep fails the pending or running workflows whose runner's lease ran out: their process
// ended without finishing them (a crash; a clean stop marks its own).
func (ws *workflows) sweep(ctx context.Context) {
	ids, err := ws.store.expiredWorkflows(ctx, ws.running())
	if err != nil {
		if ctx.Err() == nil {
			ws.log.Warn("chat: looking for abandoned workflows failed", "error", err)
		}
		return
	}
	for _, id := range ids {
		ok, err := ws.store.finishWorkflowOutside(ctx, id, wfFailed, "the workflow was interrupted: the service running it stopped; start it again")
		if err != nil {
			ws.log.Warn("chat: failing an abandoned workflow failed", "workflow_id", id, "error", err)
		} else if ok {
			ws.log.Info("chat: abandoned workflow marked failed", "workflow_id", id)
		}
	}
}

// stopAll stops the runs of this process (the service stops) and refuses new ones; each
// run marks its workflow failed before it returns.
func (ws *workflows) stopAll() {
	ws.mu.Lock()
	ws.stopping = true
	for _, r := range ws.runs {
		r.cancel(errShutdown)
	}
	ws.mu.Unlock()
	ws.wg.Wait()
}

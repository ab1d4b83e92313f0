package chat

import (
	"context"
	"encoding/json"
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
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	chatv1 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v1"
	chatv2 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v2"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/chatconfig"
)

// Limits of a chat message request (the proto comments document them).
const (
	maxMessageChars   = 32768
	maxPageInfoBytes  = 64 << 10
	maxUserExtraBytes = 16 << 10
	maxRows           = 10000
)

// ConversationHeader is the gRPC response header (and, through the gateway, the HTTP
// response header X-Conversation-Id) naming the conversation of an accepted message. It is
// sent before the first event, once the message is validated and stored.
const ConversationHeader = "x-conversation-id"

// Event types of the reply stream.
const (
	eventChunk         = "chunk"
	eventRender        = "render"
	eventVisualization = "visualization"
	eventDone          = "done"
	eventPipelineEnd   = "pipeline_end"
	eventError         = "error"
)

// defaultModel names the producer of text chunks when the agent names none.
const defaultModel = "shopmind-agents"

// eventBuffer is how many events the pipeline may run ahead of a slow client.
const eventBuffer = 64

// storeTimeout bounds the writes made after the reply (they use their own context: the
// request may be long gone).
const storeTimeout = 10 * time.Second

// messageRunner runs message exchanges for both API versions: validation, the conversation's
// turn, storage, and a pipeline per message whose events stream to the caller.
type messageRunner struct {
	store    *store
	agent    agent.Agent
	sessions *sessions
	cfg      chatconfig.ChatConfig
	log      *slog.Logger
}

// exchangeRequest is one user message, whatever the API version.
type exchangeRequest struct {
	conversationID  string
	message         string
	currentUser     *chatv2.CurrentUser
	currentPageInfo *structpb.Struct
	// endType is the type of the final event: pipeline_end (v2, the agent team) or done (v1,
	// the single agent).
	endType string
}

// run validates and accepts the message, then streams the reply's events to send until the
// pipeline ends or the caller goes away (the pipeline then finishes on its own). Errors
// returned before sendHeader is called are the caller's answer (400, 404...); once the
// header is sent, failures are error events.
func (x *messageRunner) run(ctx context.Context, req exchangeRequest, sendHeader func(metadata.MD) error,
	send func(*chatv2.SendMessageResponse) error) error {
	id, err := authn.Caller(ctx)
	if err != nil {
		return err
	}
	text := strings.TrimSpace(req.message)
	switch {
	case text == "":
		return apperr.InvalidFields([]apperr.FieldViolation{{Field: "message", Rule: "message.not_blank", Message: "must not be empty or only whitespace"}})
	case utf8.RuneCountInString(req.message) > maxMessageChars:
		return apperr.InvalidFields([]apperr.FieldViolation{{Field: "message", Rule: "string.max_len", Message: fmt.Sprintf("must be at most %d characters", maxMessageChars)}})
	case req.currentPageInfo != nil && proto.Size(req.currentPageInfo) > maxPageInfoBytes:
		return apperr.InvalidFields([]apperr.FieldViolation{{Field: "current_page_info", Rule: "current_page_info.max_size", Message: "must be at most 64 KiB"}})
	case req.currentUser.GetExtra() != nil && proto.Size(req.currentUser.GetExtra()) > maxUserExtraBytes:
		return apperr.InvalidFields([]apperr.FieldViolation{{Field: "current_user.extra", Rule: "current_user.extra.max_size", Message: "must be at most 16 KiB"}})
	}
	o := owner{tenantID: id.TenantID, userID: id.UserID}
	convID, create := req.conversationID, req.conversationID == ""
	if create {
		convID = uuid.NewString()
	} else {
		sess, err := x.store.getSession(ctx, o, convID)
		if err != nil {
			return apperr.Internal(err)
		}
		if sess == nil {
			return apperr.NotFound("conversation", convID)
		}
	}

	// One message of a conversation at a time: the next waits for the previous reply.
	st := x.sessions.acquire(convID)
	if err := st.acquireTurn(ctx); err != nil {
		x.sessions.release(st)
		return status.FromContextError(err).Err()
	}
	started := false
	defer func() {
		if !started {
			st.releaseTurn()
			x.sessions.release(st)
		}
	}()
	userMsg := &messageRecord{ID: uuid.NewString(), Role: agent.RoleUser, Content: text}
	before, after, err := x.store.addUserMessage(ctx, o, convID, create, userMsg, titleFrom(text))
	if errors.Is(err, errNoSession) {
		return apperr.NotFound("conversation", convID)
	}
	if err != nil {
		return apperr.Internal(err)
	}
	history, cached := st.cachedHistory(before)
	if !cached && !create {
		msgs, err := x.store.listMessages(ctx, convID, x.cfg.HistoryMessages+1, false)
		if err != nil {
			return apperr.Internal(err)
		}
		msgs = slices.DeleteFunc(msgs, func(m *messageRecord) bool { return m.ID == userMsg.ID })
		if len(msgs) > x.cfg.HistoryMessages {
			msgs = msgs[len(msgs)-x.cfg.HistoryMessages:]
		}
		history = formatHistory(msgs)
	}
	st.remember(append(slices.Clip(history), agent.Message{Role: agent.RoleUser, Content: text}), after, x.cfg.HistoryMessages)
	st.publish(&chatv1.StreamSessionEventsResponse{Type: "message", Message: text})

	// Accepted: the caller learns the conversation id before the first event.
	if err := sendHeader(metadata.Pairs(ConversationHeader, convID)); err != nil {
		x.log.DebugContext(ctx, "chat: caller left before the reply started", "conversation_id", convID, "error", err)
	}
	cu := &chatv2.CurrentUser{}
	if req.currentUser != nil {
		cu = proto.CloneOf(req.currentUser)
	}
	cu.UserId = id.UserID // the token is authoritative
	if cu.Username == "" {
		cu.Username = id.Username
	}
	p := x.start(id, st, &agent.Request{Identity: id, ConversationID: convID, Message: text,
		History: slices.Clone(history), CurrentUser: cu, CurrentPageInfo: req.currentPageInfo}, req.endType)
	started = true
	return p.forward(ctx, send)
}

// pipeline is one reply: the agent runs in its own goroutine, bounded by the pipeline
// timeout and independent of the caller; its events are recorded into the reply and passed
// through a buffered channel to the caller's stream while the caller is there.
type pipeline struct {
	x       *messageRunner
	st      *sessionState
	convID  string
	msgID   string
	endType string
	created int64
	// events carries the events to the caller's stream; closed after the last one.
	events chan *chatv2.SendMessageResponse
	// gone is closed when the caller's stream ended (or stopped reading for too long).
	gone     chan struct{}
	goneOnce sync.Once
	// deliverBy bounds how long delivery waits for a caller that stays connected but stops
	// reading: the pipeline timeout plus a grace period.
	deliverBy context.Context
	// usage collects the model tokens the agents report (agent.WithUsage).
	usage agent.Usage

	mu       sync.Mutex // serializes emits and guards the reply
	finished bool
	reply    reply
}

// reply is what the pipeline records of the events.
type reply struct {
	content        strings.Builder
	chunks         int
	finishReason   string // from the agent's chunks ("length"); empty: stop
	renders        []*chatv2.RenderEvent
	renderIndex    map[string]int
	visualizations []*chatv2.VisualizationEvent
}

var errReplyFinished = errors.New("chat: the reply is already finished")

func (x *messageRunner) start(id *authn.Identity, st *sessionState, req *agent.Request, endType string) *pipeline {
	p := &pipeline{x: x, st: st, convID: req.ConversationID, msgID: uuid.NewString(), endType: endType,
		created: time.Now().Unix(), events: make(chan *chatv2.SendMessageResponse, eventBuffer), gone: make(chan struct{})}
	p.reply.renderIndex = map[string]int{}
	// Not derived from the request: the reply is produced and stored even when the caller
	// leaves. The caller's identity goes along for the agents' calls to other services.
	ctx, cancel := context.WithTimeout(authn.WithIdentity(context.Background(), id), x.cfg.PipelineTimeout)
	ctx = agent.WithUsage(ctx, &p.usage)
	var cancelDeliver context.CancelFunc
	p.deliverBy, cancelDeliver = context.WithTimeout(context.Background(), x.cfg.PipelineTimeout+storeTimeout+5*time.Second)
	go func() {
		defer cancelDeliver()
		defer x.sessions.release(st)
		defer st.releaseTurn()
		err := x.answer(ctx, req, p.emit)
		cancel()
		p.finish(err)
	}()
	return p
}

// answer calls the agent, turning a panic into an error.
func (x *messageRunner) answer(ctx context.Context, req *agent.Request, emit agent.Emit) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("agent panicked: %v", r)
		}
	}()
	return x.agent.Answer(ctx, req, emit)
}

// emit is the agent.Emit of the pipeline: it completes the event (conversation id, type,
// chunk fields), records it into the reply and passes it on to the caller.
func (p *pipeline) emit(ev *chatv2.SendMessageResponse) error {
	if ev == nil {
		return nil
	}
	ev = proto.CloneOf(ev) // the agent may reuse its value
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return errReplyFinished
	}
	r := &p.reply
	ev.ConversationId = p.convID
	switch e := ev.Event.(type) {
	case *chatv2.SendMessageResponse_Chunk:
		ev.Type = eventChunk
		c := e.Chunk
		if c == nil {
			c = &chatv2.ChatCompletionChunk{}
			e.Chunk = c
		}
		var choice *chatv2.ChunkChoice
		if len(c.Choices) > 0 {
			choice = c.Choices[0]
		}
		if choice == nil {
			choice = &chatv2.ChunkChoice{}
		}
		if choice.Delta == nil {
			choice.Delta = &chatv2.ChunkDelta{}
		}
		if choice.FinishReason != "" && choice.FinishReason != "stop" {
			r.finishReason = choice.FinishReason // the service sends it on the last chunk
		}
		choice.Index, choice.FinishReason, choice.Delta.Role = 0, "", ""
		if r.chunks == 0 {
			choice.Delta.Role = agent.RoleAssistant
		}
		c.Choices = []*chatv2.ChunkChoice{choice}
		p.completeChunk(c)
		r.chunks++
		r.content.WriteString(choice.Delta.Content)
	case *chatv2.SendMessageResponse_Render:
		ev.Type = eventRender
		if e.Render == nil {
			e.Render = &chatv2.RenderEvent{}
		}
		if e.Render.Id == "" {
			e.Render.Id = "r" + strconv.Itoa(len(r.renders)+1)
		}
		if i, ok := r.renderIndex[e.Render.Id]; ok {
			r.renders[i] = e.Render // an update replaces the instance
		} else {
			r.renderIndex[e.Render.Id] = len(r.renders)
			r.renders = append(r.renders, e.Render)
		}
	case *chatv2.SendMessageResponse_Visualization:
		ev.Type = eventVisualization
		if e.Visualization == nil {
			e.Visualization = &chatv2.VisualizationEvent{}
		}
		v := e.Visualization
		if v.Id == "" {
			v.Id = "v" + strconv.Itoa(len(r.visualizations)+1)
		}
		if len(v.Rows) > maxRows {
			v.Rows = v.Rows[:maxRows]
		}
		r.visualizations = append(r.visualizations, v)
	case *chatv2.SendMessageResponse_Done, *chatv2.SendMessageResponse_Error:
		return errors.New("chat: agents must not emit done or error events; return from Answer instead")
	default:
		return errors.New("chat: event without payload")
	}
	p.deliver(ev)
	return nil
}

// completeChunk fills the OpenAI fields every chunk of the reply shares.
func (p *pipeline) completeChunk(c *chatv2.ChatCompletionChunk) {
	c.Id, c.Object, c.Created = "chatcmpl-"+p.msgID, "chat.completion.chunk", p.created
	if c.Model == "" {
		c.Model = defaultModel
	}
}

// deliver passes an event to the caller's stream, unless the caller is gone, and to the
// session's followers.
func (p *pipeline) deliver(ev *chatv2.SendMessageResponse) {
	if v1, err := toV1(ev); err == nil {
		p.st.publish(&chatv1.StreamSessionEventsResponse{Type: "reply", Event: v1})
	}
	select {
	case p.events <- ev:
	case <-p.gone:
	case <-p.deliverBy.Done():
		p.leave()
	}
}

// leave records that nobody reads the events any more.
func (p *pipeline) leave() { p.goneOnce.Do(func() { close(p.gone) }) }

// forward sends the events to the caller until the last one or until the caller leaves.
func (p *pipeline) forward(ctx context.Context, send func(*chatv2.SendMessageResponse) error) error {
	for {
		select {
		case ev, ok := <-p.events:
			if !ok {
				return nil
			}
			if err := send(ev); err != nil {
				p.leave()
				return err
			}
		case <-ctx.Done():
			p.leave()
			return status.FromContextError(ctx.Err()).Err()
		}
	}
}

// finish ends the reply after the agent returned: the last chunk, the stored assistant
// message, the error event when the agent failed, the done event.
func (p *pipeline) finish(agentErr error) {
	x := p.x
	p.mu.Lock()
	p.finished = true // late emits fail from here on
	r := &p.reply
	p.mu.Unlock()

	finishReason := "stop"
	if r.finishReason != "" {
		finishReason = r.finishReason
	}
	var errEv *chatv2.ErrorEvent
	if agentErr != nil {
		errEv = x.errorEvent(p.convID, agentErr)
		finishReason = "error"
	} else {
		c := &chatv2.ChatCompletionChunk{Choices: []*chatv2.ChunkChoice{{Delta: &chatv2.ChunkDelta{}, FinishReason: finishReason}}}
		if r.chunks == 0 {
			c.Choices[0].Delta.Role = agent.RoleAssistant
		}
		p.completeChunk(c)
		p.deliver(&chatv2.SendMessageResponse{ConversationId: p.convID, Type: eventChunk,
			Event: &chatv2.SendMessageResponse_Chunk{Chunk: c}})
	}

	msg := &messageRecord{ID: p.msgID, Role: agent.RoleAssistant, Content: r.content.String(), Kind: kindText, Status: statusComplete}
	if agentErr != nil {
		msg.Status = statusInterrupted
	}
	msg.ContentJSON = richContent(r.renders, r.visualizations)
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	after, err := x.store.addReply(ctx, p.convID, msg)
	cancel()
	messageID := p.msgID
	if err != nil {
		x.log.Error("chat: storing the reply failed", "conversation_id", p.convID, "error", err)
		p.st.forget()
		messageID, finishReason = "", "error"
		if errEv == nil {
			errEv = &chatv2.ErrorEvent{Code: 500, Message: "the reply could not be saved", Retryable: true}
		}
	} else if hist, ok := p.st.cachedHistory(p.st.version); ok {
		if strings.TrimSpace(msg.Content) != "" {
			hist = append(slices.Clip(hist), agent.Message{Role: agent.RoleAssistant, Content: msg.Content})
		}
		p.st.remember(hist, after, x.cfg.HistoryMessages)
	}
	if errEv != nil {
		p.deliver(&chatv2.SendMessageResponse{ConversationId: p.convID, Type: eventError,
			Event: &chatv2.SendMessageResponse_Error{Error: errEv}})
	}
	done := &chatv2.DoneEvent{MessageId: messageID, FinishReason: finishReason}
	if prompt, completion, total := p.usage.Totals(); total > 0 {
		done.Usage = &chatv2.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: total}
	}
	p.deliver(&chatv2.SendMessageResponse{ConversationId: p.convID, Type: p.endType,
		Event: &chatv2.SendMessageResponse_Done{Done: done}})
	close(p.events)
}

// errorEvent describes an agent failure in terms safe to show.
func (x *messageRunner) errorEvent(convID string, err error) *chatv2.ErrorEvent {
	if errors.Is(err, context.DeadlineExceeded) {
		return &chatv2.ErrorEvent{Code: 504, Retryable: true,
			Message: fmt.Sprintf("the assistant did not finish within %s", x.cfg.PipelineTimeout)}
	}
	env := apperr.FromError(err)
	ev := &chatv2.ErrorEvent{Code: int32(env.Code), Message: env.Message}
	switch env.Code {
	case 429, 502, 503, 504:
		ev.Retryable = true
	}
	if env.Code == 500 || env.Code < 400 {
		ev.Code, ev.Message = 500, "the assistant failed while answering"
	}
	x.log.Warn("chat: agent failed", "conversation_id", convID, "code", ev.Code, "error", err)
	return ev
}

// richContentJSON is content_json of an assistant reply.
type richContentJSON struct {
	Renders        []json.RawMessage `json:"renders,omitempty"`
	Visualizations []json.RawMessage `json:"visualizations,omitempty"`
}

var eventJSON = protojson.MarshalOptions{UseProtoNames: true}

// richContent is the stored form of a reply's render and visualization events; nil when it
// has none.
func richContent(renders []*chatv2.RenderEvent, vis []*chatv2.VisualizationEvent) []byte {
	if len(renders) == 0 && len(vis) == 0 {
		return nil
	}
	var j richContentJSON
	for _, r := range renders {
		b, _ := eventJSON.Marshal(r)
		j.Renders = append(j.Renders, b)
	}
	for _, v := range vis {
		b, _ := eventJSON.Marshal(v)
		j.Visualizations = append(j.Visualizations, b)
	}
	out, _ := json.Marshal(j)
	return out
}

// chatV2 is the v2 ChatService: the agent team's streamed reply.
type chatV2 struct {
	chatv2.UnimplementedChatServiceServer
	x *messageRunner
}

func (s *chatV2) SendMessage(req *chatv2.SendMessageRequest, stream grpc.ServerStreamingServer[chatv2.SendMessageResponse]) error {
	return s.x.run(stream.Context(), exchangeRequest{conversationID: req.GetConversationId(), message: req.GetMessage(),
		currentUser: req.GetCurrentUser(), currentPageInfo: req.GetCurrentPageInfo(), endType: eventPipelineEnd},
		stream.SendHeader, stream.Send)
}

// chatV1 is the v1 ChatService: the single agent's streamed reply (same events, v1 types)
// and the workflows (workflow.go).
type chatV1 struct {
	chatv1.UnimplementedChatServiceServer
	x  *messageRunner
	wf *workflows
}

func (s *chatV1) StartWorkflow(ctx context.Context, req *chatv1.StartWorkflowRequest) (*chatv1.StartWorkflowResponse, error) {
	return s.wf.start(ctx, req)
}

func (s *chatV1) GetWorkflow(ctx context.Context, req *chatv1.GetWorkflowRequest) (*chatv1.GetWorkflowResponse, error) {
	return s.wf.get(ctx, req.GetWorkflowId())
}

func (s *chatV1) CancelWorkflow(ctx context.Context, req *chatv1.CancelWorkflowRequest) (*chatv1.CancelWorkflowResponse, error) {
	w, err := s.wf.cancelWorkflow(ctx, req.GetWorkflowId())
	if err != nil {
		return nil, err
	}
	return &chatv1.CancelWorkflowResponse{Workflow: w}, nil
}

// WorkflowHeader names the followed workflow (X-Workflow-Id over SSE), sent once the
// caller's access to it is checked.
const WorkflowHeader = "x-workflow-id"

func (s *chatV1) StreamWorkflowEvents(req *chatv1.StreamWorkflowEventsRequest, stream grpc.ServerStreamingServer[chatv1.StreamWorkflowEventsResponse]) error {
	ctx := stream.Context()
	if _, err := s.wf.get(ctx, req.GetWorkflowId()); err != nil {
		return err
	}
	if err := stream.SendHeader(metadata.Pairs(WorkflowHeader, req.GetWorkflowId())); err != nil {
		return err
	}
	err := s.wf.follow(ctx, req.GetWorkflowId(), req.GetAfterSequence(), stream.Send)
	if ctx.Err() != nil {
		return status.FromContextError(ctx.Err()).Err()
	}
	if err != nil && status.Code(err) == codes.Unknown {
		return apperr.Internal(err)
	}
	return err
}

func (s *chatV1) SendMessages(req *chatv1.SendMessagesRequest, stream grpc.ServerStreamingServer[chatv1.SendMessagesResponse]) error {
	return s.x.run(stream.Context(), exchangeRequest{conversationID: req.GetConversationId(), message: req.GetMessage(),
		currentPageInfo: req.GetCurrentPageInfo(), endType: eventDone},
		stream.SendHeader, func(ev *chatv2.SendMessageResponse) error {
			out, err := toV1(ev)
			if err != nil {
				return err
			}
			return stream.Send(out)
		})
}

// toV1 converts an event to its v1 twin: the two messages share field numbers and types,
// so the wire form carries over.
func toV1(ev *chatv2.SendMessageResponse) (*chatv1.SendMessagesResponse, error) {
	b, err := proto.Marshal(ev)
	if err != nil {
		return nil, err
	}
	out := &chatv1.SendMessagesResponse{}
	return out, proto.Unmarshal(b, out)
}

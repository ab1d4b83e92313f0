package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	chatv1 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v1"
	chatv2 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v2"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/pbjson"
)

// The chat SSE bridge. grpc-gateway would answer a server-streaming RPC with
// newline-delimited {"result": ...} objects, which browsers' EventSource cannot read; the
// chat streams are served by this handler instead, registered on each environment's mux
// (so the whole edge chain and the mux middleware apply as to any route):
//
//   - the JSON body is decoded like any route's (unknown fields and malformed JSON: 400) and
//     capped at ChatBodyLimit (413);
//   - the RPC is called over the environment's connection to the chat backend with the
//     metadata grpc-gateway would send (authorization, x-env, the identity metadata);
//   - nothing is written until the backend accepts the message: it validates (400), checks
//     the conversation (404) and stores the message, then sends its x-conversation-id
//     header; a failure before that is the ordinary error envelope;
//   - then `Content-Type: text/event-stream`, `Cache-Control: no-cache`,
//     `X-Accel-Buffering: no` and `X-Conversation-Id`, and each event as one
//     `data: <json>\n\n`, flushed at once; `: keep-alive\n\n` comments while idle; a
//     backend failure mid-stream becomes an "error" event; `data: [DONE]\n\n` ends it;
//   - the client leaving cancels the gRPC call (the chat service finishes and stores the
//     reply on its own);
//   - POST /api/v2/chat/message with "stream": false answers one ChatReply envelope.

// ChatBodyLimit bounds the body of a chat message request (1 MiB): a message is at most
// 32768 characters, the page description 64 KiB.
const ChatBodyLimit = 1 << 20

// DefaultSSEKeepAlive is the interval of keep-alive comments on an idle event stream.
const DefaultSSEKeepAlive = 15 * time.Second

// ConversationIDHeader names the conversation of a chat answer (streamed or not).
const ConversationIDHeader = "X-Conversation-Id"

// conversationMetadata is the chat service's gRPC response header carrying the conversation
// id of an accepted message.
const conversationMetadata = "x-conversation-id"

// chatTarget is the backend serving the chat streams.
const chatTarget = "chat"

var (
	keepAliveLine = []byte(": keep-alive\n\n")
	doneLine      = []byte("data: [DONE]\n\n")
)

// eventStream is the client side of a chat server stream.
type eventStream[E proto.Message] interface {
	Header() (metadata.MD, error)
	Recv() (E, error)
}

// sseRoute is one server-streaming chat RPC served as server-sent events. Events of every
// version are handled in the v2 shape (the versions share field numbers and types).
type sseRoute[Req, E proto.Message] struct {
	path string // REST path, also the route template
	rpc  string // full gRPC method name
	// newRequest returns an empty request message.
	newRequest func() Req
	// collect reports whether the request asks for one JSON reply instead of a stream; nil:
	// always streamed.
	collect func(Req) bool
	open    func(ctx context.Context, conn grpc.ClientConnInterface, req Req) (eventStream[E], error)
	// event converts a streamed message to the v2 event.
	event func(E) (*chatv2.SendMessageResponse, error)
}

// registerChatStreams serves the chat streams on an environment's mux, when the
// environment has a chat backend.
func (g *Gateway) registerChatStreams(e *environment) error {
	var conn grpc.ClientConnInterface
	for _, b := range e.backends {
		if b.Target == chatTarget {
			conn = g.withMetadata(e.name, b.Conn)
		}
	}
	if conn == nil {
		return nil
	}
	v2 := sseRoute[*chatv2.SendMessageRequest, *chatv2.SendMessageResponse]{
		path:       "/api/v2/chat/message",
		rpc:        "/shopmind.chat.v2.ChatService/SendMessage",
		newRequest: func() *chatv2.SendMessageRequest { return &chatv2.SendMessageRequest{} },
		collect:    func(r *chatv2.SendMessageRequest) bool { return r.Stream != nil && !r.GetStream() },
		open: func(ctx context.Context, conn grpc.ClientConnInterface, req *chatv2.SendMessageRequest) (eventStream[*chatv2.SendMessageResponse], error) {
			return chatv2.NewChatServiceClient(conn).SendMessage(ctx, req)
		},
		event: func(ev *chatv2.SendMessageResponse) (*chatv2.SendMessageResponse, error) { return ev, nil },
	}
	v1 := sseRoute[*chatv1.SendMessagesRequest, *chatv1.SendMessagesResponse]{
		path:       "/api/v1/chat/messages",
		rpc:        "/shopmind.chat.v1.ChatService/SendMessages",
		newRequest: func() *chatv1.SendMessagesRequest { return &chatv1.SendMessagesRequest{} },
		open: func(ctx context.Context, conn grpc.ClientConnInterface, req *chatv1.SendMessagesRequest) (eventStream[*chatv1.SendMessagesResponse], error) {
			return chatv1.NewChatServiceClient(conn).SendMessages(ctx, req)
		},
		event: func(ev *chatv1.SendMessagesResponse) (*chatv2.SendMessageResponse, error) {
			b, err := proto.Marshal(ev)
			if err != nil {
				return nil, err
			}
			out := &chatv2.SendMessageResponse{}
			return out, proto.Unmarshal(b, out)
		},
	}
	if err := handleSSE(g, e.mux, conn, v2); err != nil {
		return err
	}
	return handleSSE(g, e.mux, conn, v1)
}

// handleSSE registers the bridge of one route on the mux.
func handleSSE[Req, E proto.Message](g *Gateway, mux *runtime.ServeMux, conn grpc.ClientConnInterface, rt sseRoute[Req, E]) error {
	return mux.HandlePath(http.MethodPost, rt.path, func(w http.ResponseWriter, r *http.Request, _ map[string]string) {
		serveSSE(g, mux, conn, rt, w, r)
	})
}

func serveSSE[Req, E proto.Message](g *Gateway, mux *runtime.ServeMux, conn grpc.ClientConnInterface, rt sseRoute[Req, E],
	w http.ResponseWriter, r *http.Request) {
	inbound, outbound := runtime.MarshalerForRequest(mux, r)
	fail := func(err error) { g.env.errorHandler(r.Context(), mux, outbound, w, r, err) }
	if r.ContentLength > ChatBodyLimit {
		g.env.writeKind(w, r, apperr.KindTooLarge, "request body too large: a chat message request is at most 1 MiB")
		return
	}
	req := rt.newRequest()
	if r.Body != nil {
		r.Body = http.MaxBytesReader(w, r.Body, ChatBodyLimit)
		if err := inbound.NewDecoder(r.Body).Decode(req); err != nil && !errors.Is(err, io.EOF) {
			fail(status.Error(codes.InvalidArgument, err.Error()))
			return
		}
	}
	ctx, err := runtime.AnnotateContext(r.Context(), mux, r, rt.rpc, runtime.WithHTTPPathPattern(rt.path))
	if err != nil {
		fail(err)
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := rt.open(ctx, conn, req)
	if err != nil {
		fail(err)
		return
	}
	if rt.collect != nil && rt.collect(req) {
		collectReply(g, rt, stream, w, r, outbound, fail)
		return
	}

	// Wait for the backend to accept the message; until then every failure is an envelope.
	md, _ := stream.Header()
	convID := firstValue(md, conversationMetadata)
	var first *chatv2.SendMessageResponse
	if convID == "" { // no header: the status (or a first event) tells
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			err = status.Error(codes.Internal, "the chat stream ended without an answer")
		}
		if err != nil {
			fail(err)
			return
		}
		if first, err = rt.event(ev); err != nil {
			fail(err)
			return
		}
		convID = first.GetConversationId()
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	h.Set(ConversationIDHeader, convID)
	w.WriteHeader(http.StatusOK)
	sw := newSSEWriter(w, cancel, g.sseKeepAlive())
	defer sw.close()
	if sw.flush() != nil {
		return
	}
	if first != nil && sw.event(first) != nil {
		return
	}
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			_ = sw.write(doneLine)
			return
		}
		var ev *chatv2.SendMessageResponse
		if err == nil {
			ev, err = rt.event(msg)
		}
		if err != nil {
			if ctx.Err() != nil {
				return // the client left
			}
			if sw.event(errorEvent(convID, err)) == nil {
				_ = sw.write(doneLine)
			}
			return
		}
		if sw.event(ev) != nil {
			return
		}
	}
}

func (g *Gateway) sseKeepAlive() time.Duration {
	if g.opts.SSEKeepAlive > 0 {
		return g.opts.SSEKeepAlive
	}
	return DefaultSSEKeepAlive
}

func firstValue(md metadata.MD, key string) string {
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// errorEvent turns a failure of the stream itself (the backend went away) into an event.
func errorEvent(convID string, err error) *chatv2.SendMessageResponse {
	env := apperr.FromError(err)
	ev := &chatv2.ErrorEvent{Code: int32(env.Code), Message: env.Message}
	switch env.Code {
	case 429, 502, 503, 504:
		ev.Retryable = true
	}
	return &chatv2.SendMessageResponse{ConversationId: convID, Type: "error", Event: &chatv2.SendMessageResponse_Error{Error: ev}}
}

// collectReply answers stream = false: the events collected into one ChatReply envelope.
func collectReply[Req, E proto.Message](g *Gateway, rt sseRoute[Req, E], stream eventStream[E], w http.ResponseWriter,
	r *http.Request, outbound runtime.Marshaler, fail func(error)) {
	reply := &chatv2.ChatReply{}
	var content strings.Builder
	var failed *chatv2.ErrorEvent
	renders := map[string]int{}
	for n := 0; ; n++ {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		var ev *chatv2.SendMessageResponse
		if err == nil {
			ev, err = rt.event(msg)
		}
		if err != nil {
			if n == 0 { // nothing accepted yet: the ordinary error envelope
				fail(err)
				return
			}
			failed = errorEvent(reply.ConversationId, err).GetError()
			break
		}
		if reply.ConversationId == "" {
			reply.ConversationId = ev.GetConversationId()
		}
		switch e := ev.Event.(type) {
		case *chatv2.SendMessageResponse_Chunk:
			for _, c := range e.Chunk.GetChoices() {
				content.WriteString(c.GetDelta().GetContent())
			}
		case *chatv2.SendMessageResponse_Render:
			if i, ok := renders[e.Render.GetId()]; ok && e.Render.GetId() != "" {
				reply.Renders[i] = e.Render
			} else {
				renders[e.Render.GetId()] = len(reply.Renders)
				reply.Renders = append(reply.Renders, e.Render)
			}
		case *chatv2.SendMessageResponse_Visualization:
			reply.Visualizations = append(reply.Visualizations, e.Visualization)
		case *chatv2.SendMessageResponse_Done:
			reply.MessageId, reply.FinishReason, reply.Usage = e.Done.GetMessageId(), e.Done.GetFinishReason(), e.Done.GetUsage()
		case *chatv2.SendMessageResponse_Error:
			failed = e.Error
		}
	}
	reply.Content = content.String()
	if failed != nil && reply.Content == "" {
		g.env.write(w, r, apperr.Envelope{Code: int(failed.GetCode()), Message: failed.GetMessage()})
		return
	}
	switch reply.FinishReason {
	case "interrupted", "error":
		reply.Interrupted = true
	}
	if failed != nil {
		reply.Interrupted = true
		if reply.FinishReason == "" {
			reply.FinishReason = "error"
		}
	}
	body, err := outbound.Marshal(reply)
	if err != nil {
		fail(err)
		return
	}
	w.Header().Set("Content-Type", outbound.ContentType(reply))
	w.Header().Set(ConversationIDHeader, reply.ConversationId)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// sseWriter writes the event stream: events, keep-alive comments while idle (a timer, no
// goroutine per stream), each flushed at once. A failed write ends the stream's context.
type sseWriter struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	cancel context.CancelFunc
	every  time.Duration

	mu     sync.Mutex
	timer  *time.Timer
	closed bool
	buf    []byte
}

func newSSEWriter(w http.ResponseWriter, cancel context.CancelFunc, every time.Duration) *sseWriter {
	s := &sseWriter{w: w, rc: http.NewResponseController(w), cancel: cancel, every: every}
	s.mu.Lock()
	s.timer = time.AfterFunc(every, s.keepAlive)
	s.mu.Unlock()
	return s
}

func (s *sseWriter) keepAlive() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if s.writeLocked(keepAliveLine) == nil {
		s.timer.Reset(s.every)
	}
}

var errStreamClosed = errors.New("event stream closed")

// write sends raw lines and restarts the idle timer.
func (s *sseWriter) write(b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errStreamClosed
	}
	if err := s.writeLocked(b); err != nil {
		return err
	}
	s.timer.Reset(s.every)
	return nil
}

func (s *sseWriter) flush() error { return s.write(nil) }

// event writes one event as a data line.
func (s *sseWriter) event(ev *chatv2.SendMessageResponse) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errStreamClosed
	}
	var err error
	s.buf = append(s.buf[:0], "data: "...)
	if s.buf, err = AppendEventJSON(s.buf, ev); err != nil {
		s.buf = append(s.buf[:0], "data: "...)
		s.buf, _ = AppendEventJSON(s.buf, errorEvent(ev.GetConversationId(), apperr.Internal(err)))
	}
	s.buf = append(s.buf, "\n\n"...)
	if err := s.writeLocked(s.buf); err != nil {
		return err
	}
	if cap(s.buf) > 64<<10 { // do not keep a large visualization's buffer for the stream's life
		s.buf = nil
	}
	s.timer.Reset(s.every)
	return nil
}

func (s *sseWriter) writeLocked(b []byte) error {
	if len(b) > 0 {
		if _, err := s.w.Write(b); err != nil {
			s.failLocked()
			return err
		}
	}
	if err := s.rc.Flush(); err != nil {
		s.failLocked()
		return err
	}
	return nil
}

// failLocked ends the stream after a failed write: the client is gone.
func (s *sseWriter) failLocked() {
	s.closed = true
	s.timer.Stop()
	s.cancel()
}

// close stops the keep-alives; nothing is written afterwards.
func (s *sseWriter) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.timer.Stop()
}

// The SSE JSON of events (proto comments of chat v2): a text increment is the OpenAI
// chat.completion.chunk (created as a number, finish_reason null until the last chunk) with
// the conversation id added; every other event is {"type", "conversation_id", <the fields
// of the oneof member as protojson with proto names>}.

type chunkJSON struct {
	ID             string       `json:"id"`
	Object         string       `json:"object"`
	Created        int64        `json:"created"`
	Model          string       `json:"model"`
	Choices        []choiceJSON `json:"choices"`
	ConversationID string       `json:"conversation_id"`
}

type choiceJSON struct {
	Index        int32     `json:"index"`
	Delta        deltaJSON `json:"delta"`
	FinishReason *string   `json:"finish_reason"`
}

type deltaJSON struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

// AppendEventJSON appends the SSE JSON of one chat event to buf.
func AppendEventJSON(buf []byte, ev *chatv2.SendMessageResponse) ([]byte, error) {
	var member proto.Message
	typ := ev.GetType()
	switch e := ev.Event.(type) {
	case *chatv2.SendMessageResponse_Chunk:
		return appendChunkJSON(buf, ev.GetConversationId(), e.Chunk)
	case *chatv2.SendMessageResponse_Render:
		member, typ = e.Render, orDefault(typ, "render")
	case *chatv2.SendMessageResponse_Visualization:
		member, typ = e.Visualization, orDefault(typ, "visualization")
	case *chatv2.SendMessageResponse_Done:
		member, typ = e.Done, orDefault(typ, "done")
	case *chatv2.SendMessageResponse_Error:
		member, typ = e.Error, orDefault(typ, "error")
	default:
		return buf, errors.New("chat event without payload")
	}
	body, err := pbjson.Marshal(member) // protojson's JSON (proto names, unpopulated fields)
	if err != nil {
		return buf, err
	}
	buf = append(buf, `{"type":`...)
	buf = appendJSONString(buf, typ)
	buf = append(buf, `,"conversation_id":`...)
	buf = appendJSONString(buf, ev.GetConversationId())
	if rest := bytes.TrimSpace(bytes.TrimPrefix(bytes.TrimSpace(body), []byte("{"))); len(rest) > 0 && rest[0] != '}' {
		buf = append(buf, ',')
		return append(buf, rest...), nil
	}
	return append(buf, '}'), nil
}

func appendChunkJSON(buf []byte, convID string, c *chatv2.ChatCompletionChunk) ([]byte, error) {
	out := chunkJSON{ID: c.GetId(), Object: c.GetObject(), Created: c.GetCreated(), Model: c.GetModel(),
		Choices: make([]choiceJSON, 0, len(c.GetChoices())), ConversationID: convID}
	if out.Object == "" {
		out.Object = "chat.completion.chunk"
	}
	for _, ch := range c.GetChoices() {
		cj := choiceJSON{Index: ch.GetIndex(), Delta: deltaJSON{Role: ch.GetDelta().GetRole()}}
		if fr := ch.GetFinishReason(); fr != "" {
			cj.FinishReason = &fr
		}
		// The last chunk carries an empty delta, as OpenAI's does; the others their text.
		if content := ch.GetDelta().GetContent(); content != "" || cj.FinishReason == nil || cj.Delta.Role != "" {
			cj.Delta.Content = &content
		}
		out.Choices = append(out.Choices, cj)
	}
	return appendJSON(buf, out)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// appendJSON appends v as JSON without HTML escaping (Markdown keeps its < and &).
func appendJSON(buf []byte, v any) ([]byte, error) {
	b := bytes.NewBuffer(buf)
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return buf, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func appendJSONString(buf []byte, s string) []byte {
	out, _ := appendJSON(buf, s)
	return out
}

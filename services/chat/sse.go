package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	chatv1 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v1"
	chatv2 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v2"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/pbjson"
	"github.com/shopmind/shopmind/internal/restapi"
)

// The chat streams as the gateway's generic bridge serves them (gateway/sse.go), described
// here so that the gateway knows nothing of chat:
//
//   - POST /api/v2/chat/message (SendMessage) and POST /api/v1/chat/messages (SendMessages);
//     the body is at most MessageBodyLimit;
//   - the conversation id, sent by the service as its ConversationHeader once it accepted
//     the message, is answered as X-Conversation-Id;
//   - events of both versions are written in the v2 shape (the versions share field numbers
//     and types), as described below appendEventJSON;
//   - "stream": false (v2) answers one ChatReply envelope collected from the events.

// MessageBodyLimit bounds the body of a chat message request (1 MiB): a message is at most
// 32768 characters, the page description 64 KiB.
const MessageBodyLimit = 1 << 20

// streams lists the chat streams, v2 first.
func streams() []restapi.Stream {
	route := func(path, rpc string) restapi.StreamRoute {
		return restapi.StreamRoute{Path: path, RPC: rpc, MaxBody: MessageBodyLimit,
			TooLarge: "request body too large: a chat message request is at most 1 MiB", Header: "X-Conversation-Id",
			Event: chatEvent}
	}
	v2 := restapi.ServerStream[*chatv2.SendMessageRequest, chatv2.SendMessageResponse]{
		StreamRoute: withReply(route("/api/v2/chat/message", "/shopmind.chat.v2.ChatService/SendMessage"), "shopmind.chat.v2.ChatReply"),
		Empty:       func() *chatv2.SendMessageRequest { return &chatv2.SendMessageRequest{} },
		Call: func(ctx context.Context, conn grpc.ClientConnInterface, req *chatv2.SendMessageRequest) (grpc.ServerStreamingClient[chatv2.SendMessageResponse], error) {
			return chatv2.NewChatServiceClient(conn).SendMessage(ctx, req)
		},
		Convert: func(ev *chatv2.SendMessageResponse) (restapi.Event, error) { return event{ev}, nil },
		Reply: func(req *chatv2.SendMessageRequest) restapi.Collector {
			if req.Stream != nil && !req.GetStream() {
				return &replyCollector{reply: &chatv2.ChatReply{}, renders: map[string]int{}}
			}
			return nil
		},
		Failure: errorEvent,
	}
	v1 := restapi.ServerStream[*chatv1.SendMessagesRequest, chatv1.SendMessagesResponse]{
		StreamRoute: route("/api/v1/chat/messages", "/shopmind.chat.v1.ChatService/SendMessages"),
		Empty:       func() *chatv1.SendMessagesRequest { return &chatv1.SendMessagesRequest{} },
		Call: func(ctx context.Context, conn grpc.ClientConnInterface, req *chatv1.SendMessagesRequest) (grpc.ServerStreamingClient[chatv1.SendMessagesResponse], error) {
			return chatv1.NewChatServiceClient(conn).SendMessages(ctx, req)
		},
		Convert: func(ev *chatv1.SendMessagesResponse) (restapi.Event, error) {
			out, err := toV2(ev)
			return event{out}, err
		},
		Failure: errorEvent,
	}
	workflow, session := followedStreams()
	return []restapi.Stream{v2, v1, workflow, session}
}

// toV2 converts a v1 event to its v2 twin (the same fields and numbers).
func toV2(ev *chatv1.SendMessagesResponse) (*chatv2.SendMessageResponse, error) {
	b, err := proto.Marshal(ev)
	if err != nil {
		return nil, err
	}
	out := &chatv2.SendMessageResponse{}
	return out, proto.Unmarshal(b, out)
}

// withReply names the message a stream answers for "stream": false.
func withReply(r restapi.StreamRoute, reply string) restapi.StreamRoute {
	r.Reply = reply
	return r
}

// event is a chat event as the bridge writes it: the v2 message.
type event struct{ *chatv2.SendMessageResponse }

func (e event) StreamID() string { return e.GetConversationId() }
func (e event) AppendJSON(buf []byte) ([]byte, error) {
	return appendEventJSON(buf, e.SendMessageResponse)
}

// errorEvent turns a failure of the stream itself (the backend went away) into an event.
func errorEvent(convID string, err error) restapi.Event {
	env := apperr.FromError(err)
	ev := &chatv2.ErrorEvent{Code: int32(env.Code), Message: env.Message}
	switch env.Code {
	case 429, 502, 503, 504:
		ev.Retryable = true
	}
	return event{&chatv2.SendMessageResponse{ConversationId: convID, Type: "error", Event: &chatv2.SendMessageResponse_Error{Error: ev}}}
}

// replyCollector answers stream = false: the events collected into one ChatReply.
type replyCollector struct {
	reply   *chatv2.ChatReply
	content strings.Builder
	failed  *chatv2.ErrorEvent
	renders map[string]int // render id -> index in reply.Renders
}

func (c *replyCollector) Add(e restapi.Event) {
	ev, ok := e.(event)
	if !ok {
		return
	}
	reply := c.reply
	if reply.ConversationId == "" {
		reply.ConversationId = ev.GetConversationId()
	}
	switch e := ev.Event.(type) {
	case *chatv2.SendMessageResponse_Chunk:
		for _, ch := range e.Chunk.GetChoices() {
			c.content.WriteString(ch.GetDelta().GetContent())
		}
	case *chatv2.SendMessageResponse_Render:
		if i, ok := c.renders[e.Render.GetId()]; ok && e.Render.GetId() != "" {
			reply.Renders[i] = e.Render
		} else {
			c.renders[e.Render.GetId()] = len(reply.Renders)
			reply.Renders = append(reply.Renders, e.Render)
		}
	case *chatv2.SendMessageResponse_Visualization:
		reply.Visualizations = append(reply.Visualizations, e.Visualization)
	case *chatv2.SendMessageResponse_Done:
		reply.MessageId, reply.FinishReason, reply.Usage = e.Done.GetMessageId(), e.Done.GetFinishReason(), e.Done.GetUsage()
	case *chatv2.SendMessageResponse_Error:
		c.failed = e.Error
	}
}

// Reply is the ChatReply; a failure with no text is answered as its error envelope.
func (c *replyCollector) Reply() (proto.Message, string, *apperr.Envelope) {
	reply := c.reply
	reply.Content = c.content.String()
	if c.failed != nil && reply.Content == "" {
		return nil, "", &apperr.Envelope{Code: int(c.failed.GetCode()), Message: c.failed.GetMessage()}
	}
	switch reply.FinishReason {
	case "interrupted", "error":
		reply.Interrupted = true
	}
	if c.failed != nil {
		reply.Interrupted = true
		if reply.FinishReason == "" {
			reply.FinishReason = "error"
		}
	}
	return reply, reply.ConversationId, nil
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

// appendEventJSON appends the SSE JSON of one chat event to buf.
func appendEventJSON(buf []byte, ev *chatv2.SendMessageResponse) ([]byte, error) {
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

package chat

import (
	"context"
	"strconv"

	"google.golang.org/grpc"

	chatv1 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v1"
	chatv2 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v2"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/pbjson"
	"github.com/shopmind/shopmind/internal/restapi"
)

// The followed streams, served by the gateway as SSE (GET, resumable with Last-Event-ID)
// and as topics of its WebSocket channel:
//
//   - GET /api/v1/chat/workflows/{workflow_id}/events, topic "workflow:<id>": the stored
//     events of a workflow (StreamWorkflowEventsResponse as protojson with proto names),
//     offset = sequence;
//   - GET /api/v1/sessions/{conversation_id}/events, topic "session:<id>": a session's
//     events (StreamSessionEventsResponse; a reply event in the chat stream's shape).

func followedStreams() (workflow, session restapi.Stream) {
	workflow = restapi.ServerStream[*chatv1.StreamWorkflowEventsRequest, chatv1.StreamWorkflowEventsResponse]{
		StreamRoute: restapi.StreamRoute{Method: "GET", Path: "/api/v1/chat/workflows/{workflow_id}/events",
			RPC: "/shopmind.chat.v1.ChatService/StreamWorkflowEvents", Header: "X-Workflow-Id", Resume: "after_sequence",
			Event: workflowEventDoc},
		Empty: func() *chatv1.StreamWorkflowEventsRequest { return &chatv1.StreamWorkflowEventsRequest{} },
		Call: func(ctx context.Context, conn grpc.ClientConnInterface, req *chatv1.StreamWorkflowEventsRequest) (grpc.ServerStreamingClient[chatv1.StreamWorkflowEventsResponse], error) {
			return chatv1.NewChatServiceClient(conn).StreamWorkflowEvents(ctx, req)
		},
		Convert: func(ev *chatv1.StreamWorkflowEventsResponse) (restapi.Event, error) { return workflowEvent{ev}, nil },
		Failure: func(id string, err error) restapi.Event {
			env := apperr.FromError(err)
			return workflowEvent{&chatv1.StreamWorkflowEventsResponse{WorkflowId: id, Type: "error", Error: env.Message}}
		},
	}
	session = restapi.ServerStream[*chatv1.StreamSessionEventsRequest, chatv1.StreamSessionEventsResponse]{
		StreamRoute: restapi.StreamRoute{Method: "GET", Path: "/api/v1/sessions/{conversation_id}/events",
			RPC: "/shopmind.chat.v1.SessionService/StreamSessionEvents", Header: "X-Conversation-Id", Resume: "after_offset",
			Event: sessionEventDoc},
		Empty: func() *chatv1.StreamSessionEventsRequest { return &chatv1.StreamSessionEventsRequest{} },
		Call: func(ctx context.Context, conn grpc.ClientConnInterface, req *chatv1.StreamSessionEventsRequest) (grpc.ServerStreamingClient[chatv1.StreamSessionEventsResponse], error) {
			return chatv1.NewSessionServiceClient(conn).StreamSessionEvents(ctx, req)
		},
		Convert: func(ev *chatv1.StreamSessionEventsResponse) (restapi.Event, error) { return sessionEvent{ev}, nil },
		Failure: func(id string, err error) restapi.Event {
			return sessionEvent{&chatv1.StreamSessionEventsResponse{ConversationId: id, Type: "reply",
				Event: mustV1(errorEvent(id, err).(event).SendMessageResponse)}}
		},
	}
	return workflow, session
}

// topics are the chat's topics on the gateway's WebSocket channel.
func topics() []restapi.Topic {
	workflow, session := followedStreams()
	return []restapi.Topic{{Kind: "workflow", Stream: workflow, IDField: "workflow_id"},
		{Kind: "session", Stream: session, IDField: "conversation_id"}}
}

func mustV1(ev *chatv2.SendMessageResponse) *chatv1.SendMessagesResponse {
	out, _ := toV1(ev)
	return out
}

// workflowEvent is a workflow event as the gateway writes it: protojson with proto names;
// its offset is its sequence.
type workflowEvent struct {
	*chatv1.StreamWorkflowEventsResponse
}

func (e workflowEvent) StreamID() string { return e.GetWorkflowId() }
func (e workflowEvent) Offset() int64    { return e.GetSequence() }
func (e workflowEvent) AppendJSON(buf []byte) ([]byte, error) {
	return pbjson.MarshalAppend(buf, e.StreamWorkflowEventsResponse)
}

// sessionEvent is a session event as the gateway writes it:
// {"conversation_id", "offset" (a number), "type", "message"} for a user message,
// {"conversation_id", "offset", "type", "event": <the chat stream's event>} for a reply
// event.
type sessionEvent struct {
	*chatv1.StreamSessionEventsResponse
}

func (e sessionEvent) StreamID() string { return e.GetConversationId() }
func (e sessionEvent) Offset() int64    { return e.GetOffset() }
func (e sessionEvent) AppendJSON(buf []byte) ([]byte, error) {
	buf = append(buf, `{"conversation_id":`...)
	buf = appendJSONString(buf, e.GetConversationId())
	buf = append(buf, `,"offset":`...)
	buf = strconv.AppendInt(buf, e.GetOffset(), 10)
	buf = append(buf, `,"type":`...)
	buf = appendJSONString(buf, e.GetType())
	if e.GetEvent() == nil {
		buf = append(buf, `,"message":`...)
		buf = appendJSONString(buf, e.GetMessage())
		return append(buf, '}'), nil
	}
	v2, err := toV2(e.GetEvent())
	if err != nil {
		return buf, err
	}
	buf = append(buf, `,"event":`...)
	if buf, err = appendEventJSON(buf, v2); err != nil {
		return buf, err
	}
	return append(buf, '}'), nil
}

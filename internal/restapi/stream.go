package restapi

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/shopmind/shopmind/internal/apperr"
)

// Stream is a server-streaming RPC that the gateway answers as server-sent events (SSE):
// grpc-gateway would answer it with newline-delimited JSON, which browsers' EventSource
// cannot read. A service lists its streams in its service.Def, the gateway serves those of
// every backend, and what an event looks like stays with the service. ServerStream builds a
// Stream from a service's typed functions.
type Stream interface {
	// Route is the HTTP side of the stream.
	Route() StreamRoute
	// NewRequest returns the empty request message the body is decoded into.
	NewRequest() proto.Message
	// Open calls the RPC with that request.
	Open(ctx context.Context, conn grpc.ClientConnInterface, req proto.Message) (EventReader, error)
	// Collector returns what answers req with one reply instead of a stream, nil to stream.
	Collector(req proto.Message) Collector
	// ErrorEvent turns a failure of the stream itself (the backend went away, an event that
	// cannot be encoded) into an event of the stream named id.
	ErrorEvent(id string, err error) Event
}

// StreamRoute is the HTTP side of a Stream.
type StreamRoute struct {
	// Method is POST (the default: the JSON body is the request) or GET (the request is
	// built from the path variables and the query parameters).
	Method string
	// Path is the path, also the route template.
	Path string
	// RPC is the full gRPC method name (/package.Service/Method).
	RPC string
	// MaxBody bounds the request body; a larger one is answered 413 with TooLarge.
	MaxBody  int64
	TooLarge string
	// Header is the response header naming the stream (X-Conversation-Id). The backend sends
	// it, in lower case, as a gRPC response header once it accepted the request; a backend
	// that sends none has its first event's StreamID used instead.
	Header string
	// Resume names the request field (an integer) that the Last-Event-ID header sets, for
	// a stream whose events are Sequenced; "" for none.
	Resume string
	// Event documents the stream for the OpenAPI document (cmd/openapigen): the schema of
	// one event's JSON, as the stream's Event.AppendJSON writes it.
	Event EventDoc
	// Reply is the full name of the message answered, in the envelope's data, when the
	// Collector takes the request (chat v2's "stream": false); empty when none does.
	Reply string
}

// HTTPMethod is the route's method (POST when unset).
func (r StreamRoute) HTTPMethod() string {
	if r.Method == "" {
		return "POST"
	}
	return r.Method
}

// Sequenced is an Event with a position in its stream, growing from event to event. The
// SSE bridge writes it as the event's `id:` line (a client resumes with Last-Event-ID),
// the WebSocket channel as the frame's offset.
type Sequenced interface {
	Event
	Offset() int64
}

// Topic is a kind of topic of the gateway's real-time WebSocket channel: a client follows
// "<Kind>:<id>" from an offset, and the gateway serves it with Stream (a GET stream whose
// Resume field takes the offset and whose events are Sequenced), the topic's id going to
// the request field IDField. The backend decides who may follow what (the call carries the
// caller's token and identity): a refusal is the call's error (404 for another user's or
// tenant's topic), a position it no longer has is KindGone (410).
type Topic struct {
	Kind    string
	Stream  Stream
	IDField string
}

// EventDoc names and describes the JSON of a stream's events.
type EventDoc struct {
	// Name is the schema's name in the document (a full proto-style name, for example
	// shopmind.chat.v2.ChatEvent).
	Name string
	// Schema is a JSON Schema object in the subset OpenAPI 2 and 3.1 share (type,
	// properties, items, enum, required, description, format, additionalProperties,
	// "x-nullable" for a value that may be null): self-contained, no $ref.
	Schema string
}

// EventReader reads the events of one call.
type EventReader interface {
	// Header waits for the backend's response header.
	Header() (metadata.MD, error)
	// Recv returns the next event, io.EOF after the last.
	Recv() (Event, error)
}

// Event is one event of a stream, as the gateway writes it.
type Event interface {
	// StreamID is the name of the stream the event carries (the conversation id), or "".
	StreamID() string
	// AppendJSON appends the event's JSON, the data of one SSE message.
	AppendJSON(buf []byte) ([]byte, error)
}

// Collector gathers the events of a stream into one reply, for a request that asks for no
// stream.
type Collector interface {
	// Add takes the events in order. A failure after the first event arrives last, as the
	// stream's ErrorEvent.
	Add(Event)
	// Reply returns the reply and the stream's name for Header, or, when the stream failed
	// with nothing to reply, the envelope answering the failure.
	Reply() (reply proto.Message, id string, failed *apperr.Envelope)
}

// ServerStream is a Stream from typed functions: Req is the request message, Res the
// streamed one (as the generated client's grpc.ServerStreamingClient[Res] reads it).
type ServerStream[Req proto.Message, Res any] struct {
	StreamRoute
	// Empty returns an empty request.
	Empty func() Req
	// Call calls the RPC, usually through the generated client.
	Call func(ctx context.Context, conn grpc.ClientConnInterface, req Req) (grpc.ServerStreamingClient[Res], error)
	// Convert turns a streamed message into its event.
	Convert func(*Res) (Event, error)
	// Reply, when set, returns the Collector answering req with one reply, or nil to stream.
	Reply func(req Req) Collector
	// Failure is the stream's ErrorEvent.
	Failure func(id string, err error) Event
}

// Route implements Stream.
func (s ServerStream[Req, Res]) Route() StreamRoute { return s.StreamRoute }

// NewRequest implements Stream.
func (s ServerStream[Req, Res]) NewRequest() proto.Message { return s.Empty() }

// Open implements Stream. req is the message NewRequest returned.
func (s ServerStream[Req, Res]) Open(ctx context.Context, conn grpc.ClientConnInterface, req proto.Message) (EventReader, error) {
	stream, err := s.Call(ctx, conn, req.(Req))
	if err != nil {
		return nil, err
	}
	return eventReader[Res]{stream: stream, convert: s.Convert}, nil
}

// Collector implements Stream.
func (s ServerStream[Req, Res]) Collector(req proto.Message) Collector {
	if s.Reply == nil {
		return nil
	}
	return s.Reply(req.(Req))
}

// ErrorEvent implements Stream.
func (s ServerStream[Req, Res]) ErrorEvent(id string, err error) Event { return s.Failure(id, err) }

type eventReader[Res any] struct {
	stream  grpc.ServerStreamingClient[Res]
	convert func(*Res) (Event, error)
}

func (r eventReader[Res]) Header() (metadata.MD, error) { return r.stream.Header() }

func (r eventReader[Res]) Recv() (Event, error) {
	msg, err := r.stream.Recv()
	if err != nil {
		return nil, err
	}
	return r.convert(msg)
}

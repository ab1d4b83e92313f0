package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/shopmind/shopmind/gateway"
	chatv1 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v1"
	chatv2 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v2"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/grpcserver"
	"github.com/shopmind/shopmind/internal/restapi"
	"github.com/shopmind/shopmind/internal/testutil"
	"github.com/shopmind/shopmind/services/chat"
)

const convID = "7b0d3c52-0a4f-4f5e-9d8e-2f1f3b9c1a77"

// fakeChat is a stand-in chat backend whose behaviour the message chooses.
type fakeChat struct {
	chatv2.UnimplementedChatServiceServer
	mu       sync.Mutex
	md       metadata.MD
	canceled chan struct{}
}

func textChunk(role, text, finish string) *chatv2.SendMessageResponse {
	return &chatv2.SendMessageResponse{ConversationId: convID, Type: "chunk", Event: &chatv2.SendMessageResponse_Chunk{
		Chunk: &chatv2.ChatCompletionChunk{Id: "chatcmpl-1", Object: "chat.completion.chunk", Created: 1767225600, Model: "shopmind-agents",
			Choices: []*chatv2.ChunkChoice{{Delta: &chatv2.ChunkDelta{Role: role, Content: text}, FinishReason: finish}}}}}
}

func (f *fakeChat) SendMessage(req *chatv2.SendMessageRequest, stream grpc.ServerStreamingServer[chatv2.SendMessageResponse]) error {
	ctx := stream.Context()
	f.mu.Lock()
	f.md, _ = metadata.FromIncomingContext(ctx)
	f.mu.Unlock()
	accept := func() error { return stream.SendHeader(metadata.Pairs("x-conversation-id", convID)) }
	switch req.GetMessage() {
	case "invalid":
		return apperr.Invalid("message", "message.not_blank", "must not be empty or only whitespace")
	case "missing":
		return apperr.NotFound("conversation", convID)
	case "wait":
		_ = accept()
		<-ctx.Done()
		close(f.canceled)
		return ctx.Err()
	case "slow":
		_ = accept()
		time.Sleep(250 * time.Millisecond)
		return stream.Send(textChunk("assistant", "late", ""))
	case "break":
		_ = accept()
		_ = stream.Send(textChunk("assistant", "half", ""))
		return apperr.New(apperr.KindUnavailable, "backend going away")
	case "noheader":
		return stream.Send(textChunk("assistant", "no header", "stop"))
	}
	props, _ := structpb.NewStruct(map[string]any{"step": 1})
	for _, ev := range []*chatv2.SendMessageResponse{
		textChunk("assistant", "", ""),
		{ConversationId: convID, Type: "render", Event: &chatv2.SendMessageResponse_Render{Render: &chatv2.RenderEvent{Id: "r1", Component: "TaskPlanCard", Props: props}}},
		textChunk("", "Sales <b>up</b>", ""),
		{ConversationId: convID, Type: "error", Event: &chatv2.SendMessageResponse_Error{Error: &chatv2.ErrorEvent{Code: 502, Message: "model down", Retryable: true}}},
		textChunk("", "", "stop"),
		{ConversationId: convID, Type: "pipeline_end", Event: &chatv2.SendMessageResponse_Done{Done: &chatv2.DoneEvent{MessageId: "m1", FinishReason: "error"}}},
	} {
		if err := stream.Send(ev); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeChat) lastMD() metadata.MD {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.md
}

// fakeChatV1 answers the v1 endpoint with v1 types.
type fakeChatV1 struct {
	chatv1.UnimplementedChatServiceServer
}

func (fakeChatV1) SendMessages(req *chatv1.SendMessagesRequest, stream grpc.ServerStreamingServer[chatv1.SendMessagesResponse]) error {
	_ = stream.SendHeader(metadata.Pairs("x-conversation-id", convID))
	_ = stream.Send(&chatv1.SendMessagesResponse{ConversationId: convID, Type: "chunk", Event: &chatv1.SendMessagesResponse_Chunk{
		Chunk: &chatv1.ChatCompletionChunk{Id: "c", Object: "chat.completion.chunk", Created: 1, Model: "m",
			Choices: []*chatv1.ChunkChoice{{Delta: &chatv1.ChunkDelta{Role: "assistant", Content: "v1 says " + req.GetMessage()}}}}}})
	return stream.Send(&chatv1.SendMessagesResponse{ConversationId: convID, Type: "done", Event: &chatv1.SendMessagesResponse_Done{
		Done: &chatv1.DoneEvent{MessageId: "m2", FinishReason: "stop"}}})
}

func startChat(t *testing.T, opts gateway.Options) (*httptest.Server, *fakeChat) {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	srv, err := grpcserver.New(grpcserver.Options{Logger: log, Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	fake := &fakeChat{canceled: make(chan struct{})}
	chatv2.RegisterChatServiceServer(srv, fake)
	chatv1.RegisterChatServiceServer(srv, fakeChatV1{})
	conn := testutil.ServeGRPC(t, srv.Serve, srv.Server.Stop)
	opts.Backends = append(opts.Backends, gateway.Backend{Target: "chat", Conn: conn,
		Register: restapi.Routes(restapi.Route(chatv2.RegisterChatServiceHandlerClient, chatv2.NewChatServiceClient), restapi.Route(chatv1.RegisterChatServiceHandlerClient, chatv1.NewChatServiceClient)),
		Streams:  chat.Service().Streams}) // the chat service's own description of its streams
	return startEdge(t, opts), fake
}

type sseResult struct {
	status   int
	header   http.Header
	body     string
	events   []string // data of each event
	comments int
}

// post sends a chat message and reads the whole answer, parsing it as server-sent events
// when it is a stream.
func post(t *testing.T, hs *httptest.Server, path, body string, header ...string) sseResult {
	t.Helper()
	req, _ := http.NewRequest("POST", hs.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	res := sseResult{status: resp.StatusCode, header: resp.Header, body: string(raw)}
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		return res
	}
	for _, block := range strings.Split(strings.TrimSuffix(res.body, "\n\n"), "\n\n") {
		switch {
		case strings.HasPrefix(block, ": "):
			res.comments++
		case strings.HasPrefix(block, "data: ") && !strings.Contains(block, "\n"):
			res.events = append(res.events, strings.TrimPrefix(block, "data: "))
		default:
			t.Fatalf("not an SSE block: %q in %q", block, res.body)
		}
	}
	return res
}

func jsonEqual(t *testing.T, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("not JSON: %s", got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want: %s", want)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// The bridge writes the SSE headers and every event in the documented JSON, [DONE] last,
// and calls the backend with the metadata grpc-gateway routes get: authorization, x-env of
// the routed environment, the Metadata hook's identity, the request id.
func TestSSEBridgeStream(t *testing.T) {
	hs, fake := startChat(t, gateway.Options{Metadata: func(context.Context) []string {
		return []string{"x-user-id", "7", "x-http-path", "/forged"} // the gateway's own x-http-path wins
	}})
	res := post(t, hs, "/test/api/v2/chat/message", `{"message":"hello"}`, "Authorization", "Bearer tok", "X-Request-Id", "req-1")
	h := res.header
	if res.status != 200 || h.Get("Cache-Control") != "no-cache" || h.Get("X-Accel-Buffering") != "no" ||
		h.Get("X-Conversation-Id") != convID || h.Get("X-Request-Id") != "req-1" {
		t.Fatalf("answer: %d %v %s", res.status, h, res.body)
	}
	want := []string{
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1767225600,"model":"shopmind-agents","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"conversation_id":"` + convID + `"}`,
		`{"type":"render","conversation_id":"` + convID + `","id":"r1","component":"TaskPlanCard","props":{"step":1}}`,
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1767225600,"model":"shopmind-agents","choices":[{"index":0,"delta":{"content":"Sales <b>up</b>"},"finish_reason":null}],"conversation_id":"` + convID + `"}`,
		`{"type":"error","conversation_id":"` + convID + `","code":502,"message":"model down","retryable":true}`,
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1767225600,"model":"shopmind-agents","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"conversation_id":"` + convID + `"}`,
		`{"type":"pipeline_end","conversation_id":"` + convID + `","message_id":"m1","finish_reason":"error","usage":null}`,
	}
	if len(res.events) != len(want)+1 || res.events[len(want)] != "[DONE]" {
		t.Fatalf("events: %q", res.events)
	}
	for i, w := range want {
		jsonEqual(t, res.events[i], w)
	}
	if !strings.Contains(res.events[2], "<b>up</b>") {
		t.Fatalf("HTML-escaped text: %s", res.events[2])
	}
	md := fake.lastMD()
	for k, v := range map[string]string{"authorization": "Bearer tok", "x-env": "test", "x-user-id": "7",
		"x-http-path": "/api/v2/chat/message", "x-request-id": "req-1"} {
		if got := md.Get(k); len(got) != 1 || got[0] != v {
			t.Errorf("metadata %s = %v, want %s", k, got, v)
		}
	}

	// Browser scripts may read the stream's naming header.
	res = post(t, hs, "/api/v2/chat/message", `{"message":"hello"}`, "Origin", "http://localhost:5173")
	if !strings.Contains(res.header.Get("Access-Control-Expose-Headers"), "X-Conversation-Id") {
		t.Fatalf("exposed headers: %q", res.header.Get("Access-Control-Expose-Headers"))
	}

	// The v1 endpoint, its own types, through the same bridge.
	res = post(t, hs, "/api/v1/chat/messages", `{"message":"hi"}`)
	if res.status != 200 || len(res.events) != 3 || res.events[2] != "[DONE]" {
		t.Fatalf("v1: %d %s", res.status, res.body)
	}
	jsonEqual(t, res.events[1], `{"type":"done","conversation_id":"`+convID+`","message_id":"m2","finish_reason":"stop","usage":null}`)
	if !strings.Contains(res.events[0], `"content":"v1 says hi"`) {
		t.Fatalf("v1 chunk: %s", res.events[0])
	}
}

// Before the backend accepts the message, every failure is an ordinary envelope: the
// backend's own (400, 404), the body's (400, 413), the edge's (401).
func TestSSEBridgeErrorsBeforeTheStream(t *testing.T) {
	hs, _ := startChat(t, gateway.Options{MaxBodyBytes: 4 << 20, Authenticate: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") == "" {
				gateway.WriteError(w, r, apperr.KindUnauthenticated, "missing bearer token")
				return
			}
			next.ServeHTTP(w, r)
		})
	}})
	big := `{"message":"hi","current_page_info":{"x":"` + strings.Repeat("a", 1<<20) + `"}}`
	auth := []string{"Authorization", "Bearer t"}
	for _, c := range []struct {
		name, path, body string
		header           []string
		code             int
		contains         string
	}{
		{"backend 400", "/api/v2/chat/message", `{"message":"invalid"}`, auth, 400, "message: must not be empty"},
		{"backend 404", "/api/v2/chat/message", `{"message":"missing"}`, auth, 404, "not found"},
		{"unknown field", "/api/v2/chat/message", `{"mesage":"x"}`, auth, 400, "mesage"},
		{"wrong type", "/api/v2/chat/message", `{"message":1}`, auth, 400, "message"},
		{"declared body above 1 MiB", "/api/v2/chat/message", big, auth, 413, "1 MiB"},
		{"no token", "/api/v2/chat/message", `{"message":"hello"}`, nil, 401, "token"},
		{"stream=false, backend 400", "/api/v2/chat/message", `{"message":"invalid","stream":false}`, auth, 400, "message"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := post(t, hs, c.path, c.body, c.header...)
			var env struct {
				Code    int             `json:"code"`
				Message string          `json:"message"`
				Data    json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal([]byte(res.body), &env); err != nil || res.status != c.code || env.Code != c.code ||
				!strings.Contains(env.Message, c.contains) || string(env.Data) != "null" {
				t.Fatalf("got %d %s", res.status, res.body)
			}
		})
	}
	// An undeclared (chunked) body is capped too.
	req, _ := http.NewRequest("POST", hs.URL+"/api/v2/chat/message", io.MultiReader(strings.NewReader(big)))
	req.Header.Set("Authorization", "Bearer t")
	req.ContentLength = -1
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 413 || !strings.Contains(string(b), `"code":413`) {
		t.Fatalf("chunked body: %d %s", resp.StatusCode, b)
	}
}

// The client leaving cancels the gRPC stream.
func TestSSEBridgeDisconnectCancelsTheCall(t *testing.T) {
	hs, fake := startChat(t, gateway.Options{})
	req, _ := http.NewRequest("POST", hs.URL+"/api/v2/chat/message", strings.NewReader(`{"message":"wait"}`))
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get("X-Conversation-Id") != convID {
		t.Fatalf("headers before the first event: %v", resp.Header)
	}
	resp.Body.Close()
	select {
	case <-fake.canceled:
	case <-time.After(5 * time.Second):
		t.Fatal("the backend stream was not canceled")
	}
}

// Keep-alive comments while idle; a backend failing mid-stream yields an error event, then
// [DONE]; a backend that sends no header still streams.
func TestSSEBridgeKeepAliveAndFailures(t *testing.T) {
	hs, _ := startChat(t, gateway.Options{SSEKeepAlive: 40 * time.Millisecond})
	res := post(t, hs, "/api/v2/chat/message", `{"message":"slow"}`)
	if res.comments < 3 || !strings.HasPrefix(res.body, ": keep-alive\n\n") || len(res.events) != 2 {
		t.Fatalf("keep-alive: %q", res.body)
	}
	res = post(t, hs, "/api/v2/chat/message", `{"message":"break"}`)
	if len(res.events) != 3 || res.events[2] != "[DONE]" {
		t.Fatalf("break: %q", res.body)
	}
	jsonEqual(t, res.events[1], `{"type":"error","conversation_id":"`+convID+`","code":503,"message":"backend going away","retryable":true}`)
	res = post(t, hs, "/api/v2/chat/message", `{"message":"noheader"}`)
	if res.header.Get("X-Conversation-Id") != convID || len(res.events) != 2 || !strings.Contains(res.events[0], "no header") {
		t.Fatalf("no header: %v %q", res.header, res.body)
	}
}

// stream = false collects the events into one ChatReply envelope.
func TestSSEBridgeNonStreaming(t *testing.T) {
	hs, _ := startChat(t, gateway.Options{})
	res := post(t, hs, "/api/v2/chat/message", `{"message":"hello","stream":false}`)
	if res.status != 200 || !strings.HasPrefix(res.header.Get("Content-Type"), "application/json") || res.header.Get("X-Conversation-Id") != convID {
		t.Fatalf("reply: %d %v %s", res.status, res.header, res.body)
	}
	jsonEqual(t, res.body, `{"code":0,"message":"success","data":{"conversation_id":"`+convID+`","message_id":"m1",
		"content":"Sales <b>up</b>","renders":[{"id":"r1","component":"TaskPlanCard","props":{"step":1}}],"visualizations":[],
		"interrupted":true,"finish_reason":"error","usage":null}}`)
}

// Without a chat backend the routes do not exist.
func TestSSEBridgeNeedsAChatBackend(t *testing.T) {
	conn, _ := startBackend(t, "dev")
	hs := startEdge(t, gateway.Options{Backends: backend(conn)})
	res := post(t, hs, "/api/v2/chat/message", `{"message":"hi"}`)
	if res.status != 404 {
		t.Fatalf("got %d %s", res.status, res.body)
	}
}

// The stream is readable as it is written: each event arrives on its own.
func TestSSEBridgeFlushesEachEvent(t *testing.T) {
	hs, _ := startChat(t, gateway.Options{SSEKeepAlive: time.Hour})
	req, _ := http.NewRequest("POST", hs.URL+"/api/v2/chat/message", strings.NewReader(`{"message":"slow"}`))
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	start := time.Now()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "data: ") || time.Since(start) > 2*time.Second {
		t.Fatalf("first line %q after %s: %v", line, time.Since(start), err)
	}
}

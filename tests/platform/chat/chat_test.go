//go:build platform

package chat

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	"google.golang.org/protobuf/types/known/structpb"

	chatv2 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v2"
	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/service"
	"github.com/shopmind/shopmind/internal/testutil"
	"github.com/shopmind/shopmind/internal/testutil/stack"
	"github.com/shopmind/shopmind/services/chat"
	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/llm"
	"github.com/shopmind/shopmind/services/chat/llm/llmtest"
)

// scripted is a test agent: the test writes its behaviour.
type scripted func(ctx context.Context, req *agent.Request, emit agent.Emit) error

func (f scripted) Answer(ctx context.Context, req *agent.Request, emit agent.Emit) error {
	return f(ctx, req, emit)
}

// start runs the platform with the chat service answering through a.
func start(t testing.TB, a agent.Agent, opts ...stack.Option) *stack.Stack {
	t.Helper()
	def := chat.ServiceWith(chat.Options{NewAgent: func(context.Context, service.Deps) (agent.Agent, []chat.HealthChecker, error) {
		return a, nil, nil
	}})
	return stack.StartWith(t, []service.Def{def}, opts...)
}

func chunk(text string) *chatv2.SendMessageResponse {
	return &chatv2.SendMessageResponse{Event: &chatv2.SendMessageResponse_Chunk{Chunk: &chatv2.ChatCompletionChunk{
		Choices: []*chatv2.ChunkChoice{{Delta: &chatv2.ChunkDelta{Content: text}}}}}}
}

func render(id, component string, props map[string]any) *chatv2.SendMessageResponse {
	p, _ := structpb.NewStruct(props)
	return &chatv2.SendMessageResponse{Event: &chatv2.SendMessageResponse_Render{Render: &chatv2.RenderEvent{Id: id, Component: component, Props: p}}}
}

func visualization(id, chartType string) *chatv2.SendMessageResponse {
	row, _ := structpb.NewList([]any{"shop A", 42})
	return &chatv2.SendMessageResponse{Event: &chatv2.SendMessageResponse_Visualization{Visualization: &chatv2.VisualizationEvent{
		Id: id, ChartType: chartType, Title: "GMV by shop", Columns: []string{"shop", "gmv"}, Rows: []*structpb.ListValue{row}}}}
}

// answer is an agent that emits the given events and returns err.
func answer(err error, events ...*chatv2.SendMessageResponse) scripted {
	return func(_ context.Context, _ *agent.Request, emit agent.Emit) error {
		for _, ev := range events {
			if e := emit(ev); e != nil {
				return e
			}
		}
		return err
	}
}

type envelope = testutil.Envelope

// call sends a JSON request and decodes the envelope.
func call(t testing.TB, s *stack.Stack, method, path, body, token string) (int, envelope) {
	t.Helper()
	return (&stack.User{Stack: s, Token: token}).Call(t, method, path, body)
}

// expect is stack.User.Expect's data.
func expect(t testing.TB, s *stack.Stack, method, path, body, token string, code int, contains string) json.RawMessage {
	t.Helper()
	return (&stack.User{Stack: s, Token: token}).Expect(t, method, path, body, code, contains).Data
}

func decode[T any](t testing.TB, raw json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return v
}

// eventSource reads a text/event-stream the way a browser's EventSource does: lines
// "field: value" (one optional space after the colon), comment lines starting with ":",
// data lines of one event joined with "\n", an empty line dispatching the event.
type eventSource struct {
	resp     *http.Response
	r        *bufio.Reader
	comments int
	raw      strings.Builder
}

// next returns the next event's data; ok is false at the end of the stream.
func (es *eventSource) next() (data string, ok bool, err error) {
	var buf []string
	for {
		line, err := es.r.ReadString('\n')
		es.raw.WriteString(line)
		if err != nil {
			if errors.Is(err, io.EOF) && line == "" {
				return "", false, nil
			}
			return "", false, err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if buf != nil {
				return strings.Join(buf, "\n"), true, nil
			}
		case strings.HasPrefix(line, ":"):
			es.comments++
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			if field == "data" {
				buf = append(buf, value)
			}
		}
	}
}

func (es *eventSource) Close() { _ = es.resp.Body.Close() }

// openStream posts a chat message and returns the event stream, or the error envelope.
func openStream(t testing.TB, s *stack.Stack, path, body, token string) (*eventSource, *envelope) {
	t.Helper()
	req, _ := http.NewRequest("POST", s.BaseURL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var env envelope
		if err := json.Unmarshal(b, &env); err != nil {
			t.Fatalf("neither a stream nor an envelope (HTTP %d): %s", resp.StatusCode, b)
		}
		if resp.StatusCode != env.Code {
			t.Fatalf("HTTP %d for envelope code %d", resp.StatusCode, env.Code)
		}
		return nil, &env
	}
	return &eventSource{resp: resp, r: bufio.NewReader(resp.Body)}, nil
}

// readAll reads every event of a stream (the [DONE] marker included) as JSON objects.
func readAll(t testing.TB, es *eventSource) (events []map[string]any, done bool) {
	t.Helper()
	defer es.Close()
	for {
		data, ok, err := es.next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return events, done
		}
		if done {
			t.Fatalf("data after [DONE]: %s", data)
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event is not JSON: %q", data)
		}
		events = append(events, ev)
	}
}

func stream(t testing.TB, s *stack.Stack, path, body, token string) (*eventSource, []map[string]any) {
	t.Helper()
	es, env := openStream(t, s, path, body, token)
	if env != nil {
		t.Fatalf("no stream: %+v", env)
	}
	events, done := readAll(t, es)
	if !done {
		t.Fatalf("stream without [DONE]: %s", es.raw.String())
	}
	return es, events
}

func str(v any) string { s, _ := v.(string); return s }

// textOf concatenates the chunks' text; it checks the chunk shape on the way.
func textOf(t testing.TB, events []map[string]any) string {
	t.Helper()
	var b strings.Builder
	for _, ev := range events {
		if ev["object"] != "chat.completion.chunk" {
			continue
		}
		choices, _ := ev["choices"].([]any)
		if len(choices) != 1 {
			t.Fatalf("chunk choices: %v", ev)
		}
		delta, _ := choices[0].(map[string]any)["delta"].(map[string]any)
		b.WriteString(str(delta["content"]))
	}
	return b.String()
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

type storedMessage struct {
	ID          string         `json:"id"`
	Role        string         `json:"role"`
	Content     string         `json:"content"`
	ContentJSON map[string]any `json:"content_json"`
	Status      string         `json:"status"`
	CreatedAt   string         `json:"created_at"`
}

func messages(t testing.TB, s *stack.Stack, convID, token string) []storedMessage {
	t.Helper()
	data := expect(t, s, "GET", "/api/v1/sessions/"+convID+"/messages", "", token, 0, "")
	return decode[struct {
		Messages []storedMessage `json:"messages"`
	}](t, data).Messages
}

// waitMessages polls the history until it has n messages.
func waitMessages(t testing.TB, s *stack.Stack, convID, token string, n int) []storedMessage {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := messages(t, s, convID, token)
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("history has %d messages, want %d: %+v", len(got), n, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The v2 stream end to end: headers, the OpenAI chunk shape, flattened render,
// visualization and pipeline_end events with the conversation id, [DONE] last; then both
// messages stored and the next message's agent seeing them as history.
func TestStreamV2(t *testing.T) {
	var mu sync.Mutex
	var seen []*agent.Request
	a := scripted(func(ctx context.Context, req *agent.Request, emit agent.Emit) error {
		mu.Lock()
		seen = append(seen, req)
		mu.Unlock()
		for _, ev := range []*chatv2.SendMessageResponse{
			render("think", "ThinkingProcess", map[string]any{"step": "planning"}),
			chunk("Sales "),
			render("think", "ThinkingProcess", map[string]any{"step": "done"}),
			chunk("were <b>42</b> & rising."),
			visualization("", "bar"),
		} {
			if err := emit(ev); err != nil {
				return err
			}
		}
		return nil
	})
	s := start(t, a)
	token := s.Admin(t).Access
	es, events := stream(t, s, "/api/v2/chat/message", `{"message":"  What were sales last week?  ","current_page_info":{"route":"/dashboard"}}`, token)
	h := es.resp.Header
	convID := h.Get("X-Conversation-Id")
	if es.resp.StatusCode != 200 || h.Get("Cache-Control") != "no-cache" || h.Get("X-Accel-Buffering") != "no" || !uuidRE.MatchString(convID) {
		t.Fatalf("headers: %d %v", es.resp.StatusCode, h)
	}
	for _, ev := range events {
		if ev["conversation_id"] != convID {
			t.Fatalf("event without the conversation id: %v", ev)
		}
	}
	if len(events) != 7 {
		t.Fatalf("events: %v", events)
	}
	// Chunks: the OpenAI shape, role on the first, finish_reason null until the last.
	var chunks []map[string]any
	for _, ev := range events {
		if _, ok := ev["type"]; !ok {
			chunks = append(chunks, ev)
		}
	}
	if len(chunks) != 3 {
		t.Fatalf("chunks: %v", chunks)
	}
	for i, c := range chunks {
		choice := c["choices"].([]any)[0].(map[string]any)
		delta := choice["delta"].(map[string]any)
		created, isNumber := c["created"].(float64)
		if !strings.HasPrefix(str(c["id"]), "chatcmpl-") || c["id"] != chunks[0]["id"] || c["model"] != "shopmind-agents" ||
			!isNumber || time.Since(time.Unix(int64(created), 0)) > time.Minute || choice["index"] != 0.0 {
			t.Fatalf("chunk %d: %v", i, c)
		}
		if fr, present := choice["finish_reason"]; !present || (i < 2 && fr != nil) || (i == 2 && fr != "stop") {
			t.Fatalf("chunk %d finish_reason: %v", i, c)
		}
		if (i == 0) != (delta["role"] == "assistant") {
			t.Fatalf("chunk %d role: %v", i, c)
		}
	}
	if got := textOf(t, events); got != "Sales were <b>42</b> & rising." {
		t.Fatalf("text: %q", got)
	}
	if events[0]["type"] != "render" || events[0]["component"] != "ThinkingProcess" || events[0]["id"] != "think" ||
		events[0]["props"].(map[string]any)["step"] != "planning" {
		t.Fatalf("render: %v", events[0])
	}
	vis := events[4]
	if vis["type"] != "visualization" || vis["chart_type"] != "bar" || vis["id"] != "v1" || vis["title"] != "GMV by shop" ||
		fmt.Sprint(vis["columns"]) != "[shop gmv]" || fmt.Sprint(vis["rows"]) != "[[shop A 42]]" {
		t.Fatalf("visualization: %v", vis)
	}
	end := events[6]
	if end["type"] != "pipeline_end" || end["finish_reason"] != "stop" || !uuidRE.MatchString(str(end["message_id"])) {
		t.Fatalf("end: %v", end)
	}
	// The raw bytes: one "data: <json>" line per event, a blank line after each, [DONE] last.
	raw := es.raw.String()
	if !strings.HasSuffix(raw, "\n\ndata: [DONE]\n\n") || !regexp.MustCompile(`^(data: \{[^\n]*\}\n\n)+data: \[DONE\]\n\n$`).MatchString(raw) {
		t.Fatalf("raw stream:\n%s", raw)
	}

	// Stored: the user message (trimmed) and the reply with its rich content.
	msgs := messages(t, s, convID, token)
	if len(msgs) != 2 || msgs[0].Role != "user" || msgs[0].Content != "What were sales last week?" || msgs[0].ContentJSON != nil ||
		msgs[1].Role != "assistant" || msgs[1].Content != "Sales were <b>42</b> & rising." || msgs[1].Status != "complete" ||
		msgs[1].ID != end["message_id"] {
		t.Fatalf("stored: %+v", msgs)
	}
	renders, _ := msgs[1].ContentJSON["renders"].([]any)
	visuals, _ := msgs[1].ContentJSON["visualizations"].([]any)
	if len(renders) != 1 || renders[0].(map[string]any)["props"].(map[string]any)["step"] != "done" || len(visuals) != 1 {
		t.Fatalf("content_json: %v", msgs[1].ContentJSON)
	}
	sess := decode[struct {
		Session struct {
			Title        string `json:"title"`
			MessageCount int    `json:"message_count"`
		} `json:"session"`
	}](t, expect(t, s, "GET", "/api/v1/sessions/"+convID, "", token, 0, ""))
	if sess.Session.Title != "What were sales last week?" || sess.Session.MessageCount != 2 {
		t.Fatalf("session: %+v", sess)
	}

	// The next message of the conversation: the agents get the history.
	_, events = stream(t, s, "/api/v2/chat/message", `{"message":"And the week before?","conversation_id":"`+convID+`","current_user":{"user_id":"999","username":"someone","dept_id":3}}`, token)
	if events[len(events)-1]["type"] != "pipeline_end" {
		t.Fatalf("second exchange: %v", events)
	}
	mu.Lock()
	defer mu.Unlock()
	first, second := seen[0], seen[1]
	if len(first.History) != 0 || first.Message != "What were sales last week?" || first.CurrentPageInfo.GetFields()["route"].GetStringValue() != "/dashboard" {
		t.Fatalf("first request: %+v", first)
	}
	if len(second.History) != 2 || second.History[0].Content != "What were sales last week?" || second.History[1].Role != "assistant" ||
		second.History[1].Content != "Sales were <b>42</b> & rising." || second.ConversationID != convID {
		t.Fatalf("second request history: %+v", second.History)
	}
	if second.Identity == nil || second.CurrentUser.GetUserId() != second.Identity.UserID || second.CurrentUser.GetUsername() != "someone" ||
		second.CurrentUser.GetDeptId() != 3 {
		t.Fatalf("current user: %+v (identity %+v)", second.CurrentUser, second.Identity)
	}
}

// The v1 single-agent endpoint goes through the same bridge with its own types; its end
// event is "done".
func TestStreamV1(t *testing.T) {
	s := start(t, answer(nil, chunk("v1 "), chunk("answer")))
	token := s.Admin(t).Access
	es, events := stream(t, s, "/api/v1/chat/messages", `{"message":"hello"}`, token)
	convID := es.resp.Header.Get("X-Conversation-Id")
	if textOf(t, events) != "v1 answer" || events[len(events)-1]["type"] != "done" || events[len(events)-1]["conversation_id"] != convID {
		t.Fatalf("v1 events: %v", events)
	}
	if msgs := messages(t, s, convID, token); len(msgs) != 2 || msgs[1].Content != "v1 answer" {
		t.Fatalf("v1 stored: %+v", msgs)
	}
}

// Every refusal is an ordinary envelope before any stream starts, and the agent never runs.
func TestRejectedBeforeTheStream(t *testing.T) {
	var calls atomic.Int32
	s := start(t, scripted(func(_ context.Context, _ *agent.Request, emit agent.Emit) error {
		calls.Add(1)
		return emit(chunk("ok"))
	}))
	token := s.Admin(t).Access
	other := addUser(t, s, "demo", "bob")
	_, events := stream(t, s, "/api/v2/chat/message", `{"message":"mine"}`, other)
	bobConv := str(events[0]["conversation_id"])
	calls.Store(0)

	long := strings.Repeat("é", 32769)
	cases := []struct {
		name, path, body, token string
		code                    int
		contains                string
	}{
		{"empty message", "/api/v2/chat/message", `{"message":""}`, token, 400, "message"},
		{"no message", "/api/v2/chat/message", `{}`, token, 400, "message"},
		{"empty body", "/api/v2/chat/message", ``, token, 400, "message"},
		{"whitespace only", "/api/v2/chat/message", `{"message":" \n\t "}`, token, 400, "message: must not be empty"},
		{"too long", "/api/v2/chat/message", `{"message":"` + long + `"}`, token, 400, "message"},
		{"v1 too long", "/api/v1/chat/messages", `{"message":"` + long + `"}`, token, 400, "message"},
		{"not a UUID", "/api/v2/chat/message", `{"message":"hi","conversation_id":"42"}`, token, 400, "conversation_id"},
		{"v1 not a UUID", "/api/v1/chat/messages", `{"message":"hi","conversation_id":"x"}`, token, 400, "conversation_id"},
		{"unknown conversation", "/api/v2/chat/message", `{"message":"hi","conversation_id":"7b0d3c52-0a4f-4f5e-9d8e-2f1f3b9c1a77"}`, token, 404, "not found"},
		{"another user's conversation", "/api/v2/chat/message", `{"message":"hi","conversation_id":"` + bobConv + `"}`, token, 404, "not found"},
		{"v1 another user's conversation", "/api/v1/chat/messages", `{"message":"hi","conversation_id":"` + bobConv + `"}`, token, 404, "not found"},
		{"unknown field", "/api/v2/chat/message", `{"message":"hi","temperature":2}`, token, 400, "temperature"},
		{"malformed JSON", "/api/v2/chat/message", `{"message":`, token, 400, "malformed"},
		{"no token", "/api/v2/chat/message", `{"message":"hi"}`, "", 401, "token"},
		{"body above 1 MiB", "/api/v2/chat/message", `{"message":"hi","current_page_info":{"x":"` + strings.Repeat("a", 1<<20) + `"}}`, token, 413, "too large"},
		{"page info above 64 KiB", "/api/v2/chat/message", `{"message":"hi","current_page_info":{"x":"` + strings.Repeat("a", 70<<10) + `"}}`, token, 400, "current_page_info"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			es, env := openStream(t, s, c.path, c.body, c.token)
			if es != nil {
				es.Close()
				t.Fatal("a stream started")
			}
			if env.Code != c.code || !strings.Contains(env.Message, c.contains) || string(env.Data) != "null" {
				t.Fatalf("want %d containing %q, got %+v", c.code, c.contains, env)
			}
		})
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("the agent ran %d times for refused messages", n)
	}
	// Bob's conversation was not touched.
	if msgs := messages(t, s, bobConv, other); len(msgs) != 2 {
		t.Fatalf("bob's history: %+v", msgs)
	}
	// Exactly at the limit is fine.
	_, events = stream(t, s, "/api/v2/chat/message", `{"message":"`+strings.Repeat("é", 32768)+`"}`, token)
	if textOf(t, events) != "ok" {
		t.Fatalf("32768 characters: %v", events)
	}
}

// stream = false: one ChatReply envelope; an error before any text is an error envelope,
// after text the partial reply marked interrupted.
func TestNonStreaming(t *testing.T) {
	a := scripted(func(_ context.Context, req *agent.Request, emit agent.Emit) error {
		switch req.Message {
		case "fail at once":
			return apperr.New(apperr.KindUpstream, "the model provider failed")
		case "fail later":
			_ = emit(chunk("half an "))
			return apperr.New(apperr.KindUpstream, "the model provider failed")
		}
		for _, ev := range []*chatv2.SendMessageResponse{
			render("plan", "TaskPlanCard", map[string]any{"progress": 0}), chunk("Sales "),
			render("plan", "TaskPlanCard", map[string]any{"progress": 100}), chunk("were 42."), visualization("v", "line"),
		} {
			_ = emit(ev)
		}
		return nil
	})
	s := start(t, a)
	token := s.Admin(t).Access
	r := s.Do(t, "POST", "/api/v2/chat/message", `{"message":"sales?","stream":false}`, stack.Bearer(token)...)
	var env envelope
	_ = json.Unmarshal(r.Body, &env)
	if r.Status != 200 || env.Code != 0 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("reply: %d %s", r.Status, r.Body)
	}
	reply := decode[struct {
		ConversationID string           `json:"conversation_id"`
		MessageID      string           `json:"message_id"`
		Content        string           `json:"content"`
		Renders        []map[string]any `json:"renders"`
		Visualizations []map[string]any `json:"visualizations"`
		Interrupted    bool             `json:"interrupted"`
		FinishReason   string           `json:"finish_reason"`
	}](t, env.Data)
	if reply.Content != "Sales were 42." || len(reply.Renders) != 1 || reply.Renders[0]["props"].(map[string]any)["progress"] != 100.0 ||
		len(reply.Visualizations) != 1 || reply.Interrupted || reply.FinishReason != "stop" || !uuidRE.MatchString(reply.MessageID) ||
		reply.ConversationID != r.Header.Get("X-Conversation-Id") {
		t.Fatalf("reply: %s", env.Data)
	}
	if msgs := messages(t, s, reply.ConversationID, token); len(msgs) != 2 || msgs[1].ID != reply.MessageID {
		t.Fatalf("stored: %+v", msgs)
	}
	expect(t, s, "POST", "/api/v2/chat/message", `{"message":"fail at once","stream":false}`, token, 502, "the model provider failed")
	data := expect(t, s, "POST", "/api/v2/chat/message", `{"message":"fail later","stream":false}`, token, 0, "")
	partial := decode[map[string]any](t, data)
	if partial["content"] != "half an " || partial["interrupted"] != true || partial["finish_reason"] != "error" {
		t.Fatalf("partial reply: %s", data)
	}
	// Validation is the same as streamed.
	expect(t, s, "POST", "/api/v2/chat/message", `{"message":" ","stream":false}`, token, 400, "message")
}

// A client leaving mid-stream cancels its stream, not the pipeline: the reply is finished
// and stored, complete.
func TestDisconnectStillStores(t *testing.T) {
	release := make(chan struct{})
	agentErr := make(chan error, 1)
	s := start(t, scripted(func(ctx context.Context, _ *agent.Request, emit agent.Emit) error {
		if err := emit(chunk("part one, ")); err != nil {
			return err
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
		agentErr <- ctx.Err()
		return emit(chunk("part two."))
	}))
	token := s.Admin(t).Access
	es, env := openStream(t, s, "/api/v2/chat/message", `{"message":"long question"}`, token)
	if env != nil {
		t.Fatal(env)
	}
	convID := es.resp.Header.Get("X-Conversation-Id")
	if data, _, err := es.next(); err != nil || !strings.Contains(data, "part one") {
		t.Fatalf("first event: %q %v", data, err)
	}
	es.Close()
	time.Sleep(200 * time.Millisecond) // the gateway and the service notice the disconnect
	close(release)
	if err := <-agentErr; err != nil {
		t.Fatalf("the pipeline's context ended with the client: %v", err)
	}
	msgs := waitMessages(t, s, convID, token, 2)
	if msgs[1].Content != "part one, part two." || msgs[1].Status != "complete" {
		t.Fatalf("stored reply: %+v", msgs)
	}
}

// An agent failure mid-stream: an error event, the end event, [DONE]; the partial reply is
// stored as interrupted. An untyped failure shows a generic message.
func TestAgentErrorMidStream(t *testing.T) {
	s := start(t, scripted(func(_ context.Context, req *agent.Request, emit agent.Emit) error {
		_ = emit(chunk("Partial "))
		_ = emit(chunk("answer"))
		if req.Message == "plain" {
			return errors.New("tool crashed: pq: password authentication failed for user secret")
		}
		return &apperr.Error{Kind: apperr.KindUpstream, Message: "the model provider failed"}
	}))
	token := s.Admin(t).Access
	es, events := stream(t, s, "/api/v2/chat/message", `{"message":"typed"}`, token)
	convID := es.resp.Header.Get("X-Conversation-Id")
	n := len(events)
	if n != 4 || textOf(t, events) != "Partial answer" {
		t.Fatalf("events: %v", events)
	}
	errEv, end := events[n-2], events[n-1]
	if errEv["type"] != "error" || errEv["code"] != 502.0 || errEv["message"] != "the model provider failed" || errEv["retryable"] != true ||
		errEv["conversation_id"] != convID {
		t.Fatalf("error event: %v", errEv)
	}
	if end["type"] != "pipeline_end" || end["finish_reason"] != "error" || !uuidRE.MatchString(str(end["message_id"])) {
		t.Fatalf("end event: %v", end)
	}
	for _, c := range events[:2] {
		if fr := c["choices"].([]any)[0].(map[string]any)["finish_reason"]; fr != nil {
			t.Fatalf("a failed reply's chunk has finish_reason %v", fr)
		}
	}
	msgs := messages(t, s, convID, token)
	if len(msgs) != 2 || msgs[1].Content != "Partial answer" || msgs[1].Status != "interrupted" || msgs[1].ID != end["message_id"] {
		t.Fatalf("stored: %+v", msgs)
	}
	_, events = stream(t, s, "/api/v1/chat/messages", `{"message":"plain"}`, token)
	errEv = events[len(events)-2]
	if errEv["code"] != 500.0 || errEv["message"] != "the assistant failed while answering" || errEv["retryable"] != false ||
		events[len(events)-1]["type"] != "done" {
		t.Fatalf("untyped failure: %v", events)
	}
}

// The pipeline timeout ends a reply that takes too long: error 504, retryable, stored
// as interrupted.
func TestPipelineTimeout(t *testing.T) {
	s := start(t, scripted(func(ctx context.Context, _ *agent.Request, emit agent.Emit) error {
		_ = emit(chunk("thinking..."))
		<-ctx.Done()
		return ctx.Err()
	}), func(c *app.Config) {
		app.ServiceConfig[chat.Config](c, "chat").Chat.PipelineTimeout = 300 * time.Millisecond
	})
	token := s.Admin(t).Access
	es, events := stream(t, s, "/api/v2/chat/message", `{"message":"slow"}`, token)
	errEv := events[len(events)-2]
	if errEv["type"] != "error" || errEv["code"] != 504.0 || errEv["retryable"] != true {
		t.Fatalf("events: %v", events)
	}
	msgs := messages(t, s, es.resp.Header.Get("X-Conversation-Id"), token)
	if msgs[1].Status != "interrupted" || msgs[1].Content != "thinking..." {
		t.Fatalf("stored: %+v", msgs)
	}
}

// Keep-alive comments flow while the agents are silent; EventSource ignores them.
func TestKeepAlive(t *testing.T) {
	s := start(t, scripted(func(ctx context.Context, _ *agent.Request, emit agent.Emit) error {
		time.Sleep(350 * time.Millisecond)
		return emit(chunk("late"))
	}), func(c *app.Config) { c.Edge.SSEKeepAlive = 50 * time.Millisecond })
	token := s.Admin(t).Access
	es, events := stream(t, s, "/api/v2/chat/message", `{"message":"slow"}`, token)
	if es.comments < 4 || textOf(t, events) != "late" {
		t.Fatalf("%d keep-alives, events %v", es.comments, events)
	}
	raw := es.raw.String()
	if !strings.HasPrefix(raw, ": keep-alive\n\n: keep-alive\n\n") {
		t.Fatalf("raw: %q", raw)
	}
}

// Messages of one conversation run one at a time: the second waits for the first reply,
// and sees it in its history.
func TestOneMessageAtATimePerConversation(t *testing.T) {
	var running, maxRunning atomic.Int32
	var mu sync.Mutex
	histories := map[string]int{}
	s := start(t, scripted(func(_ context.Context, req *agent.Request, emit agent.Emit) error {
		n := running.Add(1)
		defer running.Add(-1)
		if n > maxRunning.Load() {
			maxRunning.Store(n)
		}
		mu.Lock()
		histories[req.Message] = len(req.History)
		mu.Unlock()
		time.Sleep(150 * time.Millisecond)
		return emit(chunk("reply to " + req.Message))
	}))
	token := s.Admin(t).Access
	created := decode[struct {
		ConversationID string `json:"conversation_id"`
		Status         string `json:"status"`
	}](t, expect(t, s, "POST", "/api/v1/sessions", `{}`, token, 0, ""))
	t.Run("at once", func(t *testing.T) {
		for _, m := range []string{"one", "two", "three"} {
			t.Run(m, func(t *testing.T) {
				t.Parallel()
				stream(t, s, "/api/v2/chat/message", `{"message":"`+m+`","conversation_id":"`+created.ConversationID+`"}`, token)
			})
		}
	})
	if maxRunning.Load() != 1 {
		t.Fatalf("%d messages of one conversation ran at once", maxRunning.Load())
	}
	msgs := messages(t, s, created.ConversationID, token)
	if len(msgs) != 6 {
		t.Fatalf("history: %+v", msgs)
	}
	for i := 0; i < 6; i += 2 {
		if msgs[i].Role != "user" || msgs[i+1].Content != "reply to "+msgs[i].Content {
			t.Fatalf("interleaved history: %+v", msgs)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if histories[msgs[0].Content] != 0 || histories[msgs[2].Content] != 2 || histories[msgs[4].Content] != 4 {
		t.Fatalf("histories seen: %v", histories)
	}
}

// The idle cleanup releases a conversation's in-memory state (its cached history); the next
// message rebuilds it from storage. A change made straight in the database proves which one
// the agent saw: the cache before the cleanup, storage after.
func TestIdleCleanupRebuildsFromStorage(t *testing.T) {
	var mu sync.Mutex
	var seen [][]agent.Message
	s := start(t, scripted(func(_ context.Context, req *agent.Request, emit agent.Emit) error {
		mu.Lock()
		seen = append(seen, req.History)
		mu.Unlock()
		return emit(chunk("answer to " + req.Message))
	}), func(c *app.Config) {
		cc := app.ServiceConfig[chat.Config](c, "chat")
		cc.Chat.SessionIdleTimeout = 700 * time.Millisecond
		cc.Chat.CleanupInterval = 50 * time.Millisecond
	})
	token := s.Admin(t).Access
	es, _ := stream(t, s, "/api/v2/chat/message", `{"message":"first"}`, token)
	convID := es.resp.Header.Get("X-Conversation-Id")
	if _, err := s.DB.Pool.Exec(context.Background(), `UPDATE chat.messages SET content = 'edited in storage' WHERE role = 'assistant'`); err != nil {
		t.Fatal(err)
	}
	stream(t, s, "/api/v2/chat/message", `{"message":"second","conversation_id":"`+convID+`"}`, token)
	time.Sleep(1200 * time.Millisecond) // idle past the timeout, swept
	stream(t, s, "/api/v2/chat/message", `{"message":"third","conversation_id":"`+convID+`"}`, token)
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 3 || len(seen[1]) != 2 || seen[1][1].Content != "answer to first" {
		t.Fatalf("before the cleanup the cached history was expected: %+v", seen)
	}
	if len(seen[2]) != 4 || seen[2][1].Content != "edited in storage" || seen[2][3].Content != "answer to second" {
		t.Fatalf("after the cleanup the history must come from storage: %+v", seen[2])
	}
}

// The agents get the most recent N messages (SHOPMIND_CHAT_HISTORY_MESSAGES), repaired:
// stored tool exchanges reach them, dangling tool calls do not.
func TestHistoryWindowAndRepair(t *testing.T) {
	var mu sync.Mutex
	var last []agent.Message
	s := start(t, scripted(func(_ context.Context, req *agent.Request, emit agent.Emit) error {
		mu.Lock()
		last = req.History
		mu.Unlock()
		return emit(chunk("ok"))
	}), func(c *app.Config) { app.ServiceConfig[chat.Config](c, "chat").Chat.HistoryMessages = 4 })
	token := s.Admin(t).Access
	es, _ := stream(t, s, "/api/v2/chat/message", `{"message":"q1"}`, token)
	convID := es.resp.Header.Get("X-Conversation-Id")
	ctx := context.Background()
	for _, q := range []string{
		`INSERT INTO chat.messages (id, session_id, role, content, content_json, kind) VALUES (gen_random_uuid(), $1, 'assistant', '', '{"tool_calls":[{"id":"c1","name":"execute_sql","arguments":"{}"}]}', 'tool_use')`,
		`INSERT INTO chat.messages (id, session_id, role, content, content_json, kind) VALUES (gen_random_uuid(), $1, 'tool', '[[42]]', '{"tool_call_id":"c1","name":"execute_sql"}', 'tool_result')`,
		`INSERT INTO chat.messages (id, session_id, role, content, kind) VALUES (gen_random_uuid(), $1, 'assistant', 'It is 42.', 'text')`,
		`INSERT INTO chat.messages (id, session_id, role, content, content_json, kind) VALUES (gen_random_uuid(), $1, 'assistant', '', '{"tool_calls":[{"id":"c2","name":"execute_sql","arguments":"{}"}]}', 'tool_use')`,
		`UPDATE chat.sessions SET updated_at = clock_timestamp() WHERE id = $1`, // as a writer elsewhere would
	} {
		if _, err := s.DB.Pool.Exec(ctx, q, convID); err != nil {
			t.Fatal(err)
		}
	}
	stream(t, s, "/api/v2/chat/message", `{"message":"q2","conversation_id":"`+convID+`"}`, token)
	mu.Lock()
	defer mu.Unlock()
	// Before q2: q1, ok, tool_use c1, tool c1, "It is 42.", tool_use c2. The window of 4 is
	// the last four; the dangling c2 call (nothing else in its message) is removed.
	if len(last) != 3 || last[0].Role != "assistant" || len(last[0].ToolCalls) != 1 || last[0].ToolCalls[0].ID != "c1" ||
		last[1].Role != "tool" || last[1].ToolCallID != "c1" || last[2].Content != "It is 42." {
		t.Fatalf("history: %+v", last)
	}
	// The frontend history leaves the tool messages out.
	for _, m := range messages(t, s, convID, token) {
		if m.Role == "tool" || (m.Role == "assistant" && m.Content == "") {
			t.Fatalf("tool message in the history: %+v", m)
		}
	}
}

func TestHealth(t *testing.T) {
	s := start(t, answer(nil))
	data := expect(t, s, "GET", "/api/v1/health/health", "", "", 0, "")
	h := decode[struct {
		Status   string `json:"status"`
		Services []struct {
			Name, Status, Error string
		} `json:"services"`
		CheckedAt string `json:"checked_at"`
	}](t, data)
	if h.Status != "healthy" || len(h.Services) < 1 || h.Services[0].Name != "postgres" || h.Services[0].Status != "healthy" || h.CheckedAt == "" {
		t.Fatalf("health: %s", data)
	}
}

// addUser creates an administrator in a tenant (the tenant too when missing) and signs in.
func addUser(t testing.TB, s *stack.Stack, tenant, username string) string {
	t.Helper()
	ctx := context.Background()
	hash, _ := bcrypt.GenerateFromPassword([]byte("pw-"+username), 4)
	var tid int64
	if err := s.DB.Pool.QueryRow(ctx, `INSERT INTO tenant.tenants (code, name) VALUES ($1, $1)
		ON CONFLICT (code) DO UPDATE SET code = excluded.code RETURNING id`, tenant).Scan(&tid); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB.Pool.Exec(ctx, `INSERT INTO tenant.users (tenant_id, username, password_hash, is_admin) VALUES ($1, $2, $3, true)`,
		tid, username, string(hash)); err != nil {
		t.Fatal(err)
	}
	return s.Login(t, tenant, username, "pw-"+username).Access
}

type sessionJSON struct {
	ID             string         `json:"id"`
	ConversationID string         `json:"conversation_id"`
	UserID         string         `json:"user_id"`
	Title          string         `json:"title"`
	Status         string         `json:"status"`
	Favorite       bool           `json:"favorite"`
	Preferences    map[string]any `json:"preferences"`
	MessageCount   int            `json:"message_count"`
	CreatedAt      string         `json:"created_at"`
	UpdatedAt      string         `json:"updated_at"`
}

type sessionList struct {
	Total    string        `json:"total"`
	Sessions []sessionJSON `json:"sessions"`
}

type sessionDetail struct {
	Session        sessionJSON `json:"session"`
	RecentMessages []struct {
		ID             string `json:"id"`
		Role           string `json:"role"`
		ContentPreview string `json:"content_preview"`
		CreatedAt      string `json:"created_at"`
	} `json:"recent_messages"`
}

func updated(t testing.TB, s *stack.Stack, id, body, token string) sessionJSON {
	t.Helper()
	return decode[struct {
		Session sessionJSON `json:"session"`
	}](t, expect(t, s, "PUT", "/api/v1/sessions/"+id, body, token, 0, "")).Session
}

// Sessions: create, list with filters and paging, get with the recent messages, update
// with and without update_mask, history limits, delete (success, then warning).
func TestSessions(t *testing.T) {
	s := start(t, scripted(func(_ context.Context, req *agent.Request, emit agent.Emit) error {
		return emit(chunk("answer to " + req.Message))
	}))
	token := s.Admin(t).Access
	created := decode[map[string]string](t, expect(t, s, "POST", "/api/v1/sessions", `{"current_user":{"username":"admin"}}`, token, 0, ""))
	empty := created["conversation_id"]
	if !uuidRE.MatchString(empty) || created["status"] != "active" {
		t.Fatalf("create: %v", created)
	}
	_, events := stream(t, s, "/api/v2/chat/message", `{"message":"m1"}`, token)
	busy := str(events[0]["conversation_id"])
	long := strings.Repeat("x", 250)
	for i := 2; i <= 4; i++ {
		stream(t, s, "/api/v2/chat/message", fmt.Sprintf(`{"message":"m%d %s","conversation_id":"%s"}`, i, long, busy), token)
	}

	// List: most recently updated first, total over all pages.
	list := decode[sessionList](t, expect(t, s, "GET", "/api/v1/sessions", "", token, 0, ""))
	if list.Total != "2" || len(list.Sessions) != 2 || list.Sessions[0].ID != busy || list.Sessions[1].ID != empty ||
		list.Sessions[0].ConversationID != busy || list.Sessions[0].MessageCount != 8 || list.Sessions[0].Title != "m1" ||
		list.Sessions[1].Title != "" || list.Sessions[1].MessageCount != 0 || list.Sessions[0].Status != "active" ||
		list.Sessions[0].Preferences == nil || list.Sessions[0].CreatedAt == "" || list.Sessions[0].UpdatedAt <= list.Sessions[0].CreatedAt {
		t.Fatalf("list: %+v", list)
	}
	page := decode[sessionList](t, expect(t, s, "GET", "/api/v1/sessions?limit=1&offset=1", "", token, 0, ""))
	if page.Total != "2" || len(page.Sessions) != 1 || page.Sessions[0].ID != empty {
		t.Fatalf("page: %+v", page)
	}
	own := list.Sessions[0].UserID
	expect(t, s, "GET", "/api/v1/sessions?user_id="+own, "", token, 0, busy)
	expect(t, s, "GET", "/api/v1/sessions?user_id=999", "", token, 403, "user_id")
	expect(t, s, "GET", "/api/v1/sessions?limit=0", "", token, 400, "limit")
	expect(t, s, "GET", "/api/v1/sessions?limit=101", "", token, 400, "limit")
	expect(t, s, "GET", "/api/v1/sessions?status=deleted", "", token, 400, "status")

	// Get: metadata and the last 5 messages, ascending, previews of 200 characters.
	got := decode[sessionDetail](t, expect(t, s, "GET", "/api/v1/sessions/"+busy, "", token, 0, ""))
	rm := got.RecentMessages
	if got.Session.ID != busy || got.Session.MessageCount != 8 || len(rm) != 5 || rm[0].Role != "assistant" || rm[1].Role != "user" ||
		rm[1].ContentPreview != "m3 "+strings.Repeat("x", 197)+"…" || !strings.HasPrefix(rm[4].ContentPreview, "answer to m4") ||
		rm[0].CreatedAt > rm[4].CreatedAt {
		t.Fatalf("get: %+v", got)
	}
	expect(t, s, "GET", "/api/v1/sessions/not-a-uuid", "", token, 400, "conversation_id")
	expect(t, s, "GET", "/api/v1/sessions/7b0d3c52-0a4f-4f5e-9d8e-2f1f3b9c1a77", "", token, 404, "not found")

	// Update without a mask: the fields present change.
	u := updated(t, s, busy, `{"title":"Weekly sales","favorite":true}`, token)
	if u.Title != "Weekly sales" || !u.Favorite || u.Status != "active" || len(u.Preferences) != 0 || u.MessageCount != 8 {
		t.Fatalf("rename: %+v", u)
	}
	u = updated(t, s, busy, `{"preferences":{"shop":"A","range":"7d"},"update_mask":"preferences"}`, token)
	if u.Title != "Weekly sales" || !u.Favorite || u.Preferences["shop"] != "A" {
		t.Fatalf("preferences: %+v", u)
	}
	// With a mask: exactly the named fields; named but unset means cleared.
	u = updated(t, s, busy, `{"title":"ignored","update_mask":"favorite"}`, token)
	if u.Title != "Weekly sales" || u.Favorite {
		t.Fatalf("mask favorite: %+v", u)
	}
	u = updated(t, s, busy, `{"update_mask":"title,preferences"}`, token)
	if u.Title != "" || len(u.Preferences) != 0 {
		t.Fatalf("mask clears: %+v", u)
	}
	u = updated(t, s, busy, `{"status":"archived"}`, token)
	if u.Status != "archived" {
		t.Fatalf("archive: %+v", u)
	}
	archived := decode[sessionList](t, expect(t, s, "GET", "/api/v1/sessions?status=archived", "", token, 0, ""))
	active := decode[sessionList](t, expect(t, s, "GET", "/api/v1/sessions?status=active", "", token, 0, ""))
	if archived.Total != "1" || archived.Sessions[0].ID != busy || active.Total != "1" || active.Sessions[0].ID != empty {
		t.Fatalf("status filter: %+v %+v", archived, active)
	}
	expect(t, s, "PUT", "/api/v1/sessions/"+busy, `{"update_mask":"status"}`, token, 400, "status must be set")
	expect(t, s, "PUT", "/api/v1/sessions/"+busy, `{"status":"gone"}`, token, 400, "status")
	expect(t, s, "PUT", "/api/v1/sessions/"+busy, `{"title":"`+strings.Repeat("t", 201)+`"}`, token, 400, "title")
	expect(t, s, "PUT", "/api/v1/sessions/"+busy, `{"update_mask":"owner"}`, token, 400, "update_mask")
	expect(t, s, "PUT", "/api/v1/sessions/"+busy, `{"preferences":{"x":"`+strings.Repeat("p", 17<<10)+`"}}`, token, 400, "preferences")
	expect(t, s, "PUT", "/api/v1/sessions/7b0d3c52-0a4f-4f5e-9d8e-2f1f3b9c1a77", `{"title":"x"}`, token, 404, "not found")

	// History: ascending, the most recent `limit`, bounds checked.
	msgs := messages(t, s, busy, token)
	if len(msgs) != 8 || msgs[0].Content != "m1" || msgs[7].Content != "answer to m4 "+long {
		t.Fatalf("history: %+v", msgs)
	}
	two := decode[struct {
		Messages []storedMessage `json:"messages"`
	}](t, expect(t, s, "GET", "/api/v1/sessions/"+busy+"/messages?limit=2", "", token, 0, "")).Messages
	if len(two) != 2 || two[0].Role != "user" || two[0].Content != "m4 "+long || two[1].Role != "assistant" {
		t.Fatalf("limit 2: %+v", two)
	}
	expect(t, s, "GET", "/api/v1/sessions/"+busy+"/messages?limit=0", "", token, 400, "limit")
	expect(t, s, "GET", "/api/v1/sessions/"+busy+"/messages?limit=10001", "", token, 400, "limit")
	expect(t, s, "GET", "/api/v1/sessions/"+busy+"/messages?limit=10000", "", token, 0, "m1")

	// Delete: the session and, by cascade, its messages; a second delete finds nothing.
	del := decode[map[string]string](t, expect(t, s, "DELETE", "/api/v1/sessions/"+busy, "", token, 0, ""))
	if del["status"] != "success" || del["message"] == "" {
		t.Fatalf("delete: %v", del)
	}
	var left int
	if err := s.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM chat.messages WHERE session_id = $1`, busy).Scan(&left); err != nil || left != 0 {
		t.Fatalf("messages left after delete: %d %v", left, err)
	}
	expect(t, s, "GET", "/api/v1/sessions/"+busy, "", token, 404, "not found")
	expect(t, s, "GET", "/api/v1/sessions/"+busy+"/messages", "", token, 404, "not found")
	del = decode[map[string]string](t, expect(t, s, "DELETE", "/api/v1/sessions/"+busy, "", token, 0, ""))
	if del["status"] != "warning" || !strings.Contains(del["message"], busy) {
		t.Fatalf("second delete: %v", del)
	}
	expect(t, s, "POST", "/api/v2/chat/message", `{"message":"hi","conversation_id":"`+busy+`","stream":false}`, token, 404, "not found")
}

// A user sees only their own sessions in their tenant: another user's session, in the same
// tenant or another, is a 404 everywhere (never 403: ids do not leak), and their delete is
// a no-op warning.
func TestSessionIsolation(t *testing.T) {
	s := start(t, answer(nil, chunk("private answer")))
	admin := s.Admin(t).Access
	bob := addUser(t, s, "demo", "bob")
	carol := addUser(t, s, "acme", "admin")
	_, events := stream(t, s, "/api/v2/chat/message", `{"message":"secret question"}`, admin)
	conv := str(events[0]["conversation_id"])
	_, events = stream(t, s, "/api/v2/chat/message", `{"message":"bob's question"}`, bob)
	bobConv := str(events[0]["conversation_id"])
	adminID := decode[sessionList](t, expect(t, s, "GET", "/api/v1/sessions", "", admin, 0, "")).Sessions[0].UserID

	for name, token := range map[string]string{"same tenant": bob, "other tenant": carol} {
		t.Run(name, func(t *testing.T) {
			expect(t, s, "GET", "/api/v1/sessions/"+conv, "", token, 404, "not found")
			expect(t, s, "GET", "/api/v1/sessions/"+conv+"/messages", "", token, 404, "not found")
			expect(t, s, "PUT", "/api/v1/sessions/"+conv, `{"title":"mine now"}`, token, 404, "not found")
			expect(t, s, "POST", "/api/v2/chat/message", `{"message":"hi","conversation_id":"`+conv+`","stream":false}`, token, 404, "not found")
			del := decode[map[string]string](t, expect(t, s, "DELETE", "/api/v1/sessions/"+conv, "", token, 0, ""))
			if del["status"] != "warning" {
				t.Fatalf("delete of another's session: %v", del)
			}
			list := decode[sessionList](t, expect(t, s, "GET", "/api/v1/sessions", "", token, 0, ""))
			for _, sess := range list.Sessions {
				if sess.ID == conv {
					t.Fatal("another user's session listed")
				}
			}
			if adminID != "" {
				expect(t, s, "GET", "/api/v1/sessions?user_id="+adminID, "", token, 403, "user_id")
			}
		})
	}
	// Nothing of the admin's session changed, and bob's stays invisible to the admin.
	if msgs := messages(t, s, conv, admin); len(msgs) != 2 || msgs[0].Content != "secret question" {
		t.Fatalf("admin's history: %+v", msgs)
	}
	got := decode[sessionDetail](t, expect(t, s, "GET", "/api/v1/sessions/"+conv, "", admin, 0, ""))
	if got.Session.Title != "secret question" {
		t.Fatalf("admin's session: %+v", got.Session)
	}
	expect(t, s, "GET", "/api/v1/sessions/"+bobConv, "", admin, 404, "not found")
	if list := decode[sessionList](t, expect(t, s, "GET", "/api/v1/sessions", "", carol, 0, "")); list.Total != "0" {
		t.Fatalf("carol's list: %+v", list)
	}
}

// The production wiring end to end: the agent package's agent (the offline analyst without
// an LLM endpoint) answers through the bridge and is stored; the health endpoint reports
// PostgreSQL and the vector store.
func TestProductionWiring(t *testing.T) {
	s := stack.Start(t, func(c *app.Config) { c.DemoData = true })
	token := s.Admin(t).Access
	data := expect(t, s, "GET", "/api/v1/health/health", "", "", 0, "")
	h := decode[struct {
		Status   string `json:"status"`
		Services []struct {
			Name   string `json:"name"`
			Status string `json:"status"`
		} `json:"services"`
	}](t, data)
	if h.Status != "healthy" || len(h.Services) != 2 || h.Services[0].Name != "postgres" || h.Services[1].Name != "vector_store" ||
		h.Services[1].Status != "healthy" {
		t.Fatalf("health: %s", data)
	}
	es, events := stream(t, s, "/api/v2/chat/message", `{"message":"What was the GMV of the last 7 days?"}`, token)
	end := events[len(events)-1]
	if end["type"] != "pipeline_end" || textOf(t, events) == "" {
		t.Fatalf("events: %v", events)
	}
	msgs := messages(t, s, es.resp.Header.Get("X-Conversation-Id"), token)
	if len(msgs) != 2 || msgs[1].ID != end["message_id"] || msgs[1].Content != textOf(t, events) {
		t.Fatalf("stored: %+v", msgs)
	}
	t.Logf("offline analyst: %d events, finish %v: %.200s", len(events), end["finish_reason"], textOf(t, events))
}

// With an LLM endpoint configured, the LLM agent streams its text through the bridge, the
// model's token usage reaches the end event, the history reaches the model, and a provider
// failure mid-stream is an error event with the partial reply stored as interrupted.
func TestLLMAgentThroughTheBridge(t *testing.T) {
	fake := llmtest.New(t,
		llmtest.Reply{Text: []string{"Hello ", "there."}, Usage: &llm.Usage{PromptTokens: 12, CompletionTokens: 3, TotalTokens: 15}},
		llmtest.Reply{Text: []string{"Second ", "answer ", "cut"}, FailAfter: 2, ErrorMessage: "overloaded"},
	)
	s := stack.Start(t, func(c *app.Config) {
		cc := app.ServiceConfig[chat.Config](c, "chat")
		cc.LLM.BaseURL, cc.LLM.MaxRetries = fake.BaseURL(), 0
	})
	token := s.Admin(t).Access
	es, events := stream(t, s, "/api/v2/chat/message", `{"message":"hi"}`, token)
	convID := es.resp.Header.Get("X-Conversation-Id")
	end := events[len(events)-1]
	usage, _ := end["usage"].(map[string]any)
	if textOf(t, events) != "Hello there." || end["finish_reason"] != "stop" || usage["prompt_tokens"] != "12" || usage["total_tokens"] != "15" {
		t.Fatalf("events: %v", events)
	}
	_, events = stream(t, s, "/api/v2/chat/message", `{"message":"and then?","conversation_id":"`+convID+`"}`, token)
	errEv := events[len(events)-2]
	if textOf(t, events) != "Second answer " || errEv["type"] != "error" || errEv["code"] != 502.0 || errEv["retryable"] != true {
		t.Fatalf("failing provider: %v", events)
	}
	reqs := fake.Requests()
	last := reqs[len(reqs)-1].Messages
	var contents []string
	for _, m := range last {
		if m.Role != "system" {
			contents = append(contents, m.Role+":"+fmt.Sprint(m.Content))
		}
	}
	if strings.Join(contents, "|") != "user:hi|assistant:Hello there.|user:and then?" {
		t.Fatalf("model saw: %q", contents)
	}
	msgs := messages(t, s, convID, token)
	if len(msgs) != 4 || msgs[3].Content != "Second answer " || msgs[3].Status != "interrupted" {
		t.Fatalf("stored: %+v", msgs)
	}
}

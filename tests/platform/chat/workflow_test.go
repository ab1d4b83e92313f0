//go:build platform

package chat

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	chatv2 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v2"
	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/testutil/stack"
	"github.com/shopmind/shopmind/services/chat"
	"github.com/shopmind/shopmind/services/chat/agent"
)

// planAgent works on a task like the agent team: a TaskPlanCard whose tasks move from todo
// to done, text and a chart; it waits on gate half-way (the test decides when it goes on).
type planAgent struct {
	gate chan struct{}
}

func planCard(sales, goods string) map[string]any {
	return map[string]any{"title": "Analysis plan", "tasks": []any{
		map[string]any{"id": "sales", "title": "Sales of last month", "agent": "sales", "status": sales},
		map[string]any{"id": "goods", "title": "Best-selling goods", "agent": "goods", "status": goods},
	}}
}

func (a *planAgent) Answer(ctx context.Context, _ *agent.Request, emit agent.Emit) error {
	first := []*chatv2.SendMessageResponse{render("plan", agent.ComponentTaskPlan, planCard("in_progress", "todo")), chunk("Sales grew 12%. ")}
	for _, ev := range first {
		if err := emit(ev); err != nil {
			return err
		}
	}
	select {
	case <-a.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	rest := []*chatv2.SendMessageResponse{render("plan", agent.ComponentTaskPlan, planCard("done", "in_progress")),
		visualization("v1", "bar"), chunk("Goods sold well."), render("plan", agent.ComponentTaskPlan, planCard("done", "done"))}
	for _, ev := range rest {
		if err := emit(ev); err != nil {
			return err
		}
	}
	return nil
}

type workflowJSON struct {
	WorkflowID     string           `json:"workflow_id"`
	ConversationID string           `json:"conversation_id"`
	Status         string           `json:"status"`
	Progress       int              `json:"progress"`
	Content        string           `json:"content"`
	Error          string           `json:"error"`
	LastSequence   string           `json:"last_sequence"`
	Steps          []map[string]any `json:"steps"`
	Result         map[string]any   `json:"result"`
	Renders        []map[string]any `json:"renders"`
	Visualizations []map[string]any `json:"visualizations"`
}

func startWorkflow(t testing.TB, s *stack.Stack, token, body string) string {
	t.Helper()
	started := decode[map[string]any](t, expect(t, s, "POST", "/api/v1/chat/workflows", body, token, 0, ""))
	if started["status"] != "pending" || str(started["workflow_id"]) == "" {
		t.Fatalf("start: %v", started)
	}
	return str(started["workflow_id"])
}

func getWorkflow(t testing.TB, s *stack.Stack, token, id string) workflowJSON {
	t.Helper()
	return decode[workflowJSON](t, expect(t, s, "GET", "/api/v1/chat/workflows/"+id, "", token, 0, ""))
}

// waitWorkflow polls until the workflow has status (a client that went away and came back).
func waitWorkflow(t testing.TB, s *stack.Stack, token, id, status string) workflowJSON {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		w := getWorkflow(t, s, token, id)
		if w.Status == status {
			return w
		}
		if time.Now().After(deadline) {
			t.Fatalf("workflow %s: still %s (want %s): %+v", id, w.Status, status, w)
		}
	}
}

// openEvents opens a workflow's SSE stream, resuming after lastID when it is not "".
func openEvents(t testing.TB, s *stack.Stack, path, token, lastID string) (*eventSource, *envelope) {
	t.Helper()
	req, _ := http.NewRequest("GET", s.BaseURL+path, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		defer resp.Body.Close()
		var env envelope
		if err := json.NewDecoder(resp.Body).Decode(&env); err != nil || resp.StatusCode != env.Code {
			t.Fatalf("neither a stream nor an envelope (HTTP %d): %v", resp.StatusCode, err)
		}
		return nil, &env
	}
	return &eventSource{resp: resp, r: bufio.NewReader(resp.Body)}, nil
}

func seq(ev map[string]any) int64 {
	n, _ := strconv.ParseInt(str(ev["sequence"]), 10, 64)
	return n
}

// checkSequence fails unless the events are numbered from, from+1, ... without a gap or a
// repeat.
func checkSequence(t testing.TB, events []map[string]any, from int64) {
	t.Helper()
	for i, ev := range events {
		if seq(ev) != from+int64(i) {
			t.Fatalf("event %d has sequence %d, want %d: %v", i, seq(ev), from+int64(i), events)
		}
	}
}

// rtClient is a Go client of the WebSocket channel.
type rtClient struct {
	t *testing.T
	c *websocket.Conn
}

type rtFrame struct {
	Type      string          `json:"type"`
	Topic     string          `json:"topic"`
	Offset    *int64          `json:"offset"`
	Data      json.RawMessage `json:"data"`
	Code      int             `json:"code"`
	Message   string          `json:"message"`
	Retryable *bool           `json:"retryable"`
}

func dialRealtime(t *testing.T, s *stack.Stack, token string) *rtClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, strings.Replace(s.BaseURL, "http", "ws", 1)+"/api/v1/realtime",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}, Subprotocols: []string{"shopmind.realtime.v1"}})
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	if c.Subprotocol() != "shopmind.realtime.v1" {
		t.Fatalf("subprotocol %q", c.Subprotocol())
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	return &rtClient{t: t, c: c}
}

func (r *rtClient) send(v any) {
	r.t.Helper()
	b, _ := json.Marshal(v)
	if err := r.c.Write(context.Background(), websocket.MessageText, b); err != nil {
		r.t.Fatal(err)
	}
}

// next returns the next frame that is not a heartbeat.
func (r *rtClient) next() rtFrame {
	r.t.Helper()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, b, err := r.c.Read(ctx)
		cancel()
		if err != nil {
			r.t.Fatalf("read: %v", err)
		}
		var f rtFrame
		if err := json.Unmarshal(b, &f); err != nil {
			r.t.Fatalf("frame %s: %v", b, err)
		}
		if f.Type != "heartbeat" {
			return f
		}
	}
}

func (r *rtClient) subscribe(topic string, offset int64) rtFrame {
	r.t.Helper()
	r.send(map[string]any{"type": "subscribe", "topic": topic, "offset": offset})
	return r.next()
}

// collect reads event frames of topic until its end frame.
func (r *rtClient) collect(topic string) []rtFrame {
	r.t.Helper()
	var out []rtFrame
	for {
		f := r.next()
		if f.Topic != topic {
			r.t.Fatalf("frame of another topic: %+v", f)
		}
		switch f.Type {
		case "event":
			out = append(out, f)
		case "end":
			return out
		default:
			r.t.Fatalf("unexpected frame %+v", f)
		}
	}
}

// A workflow started, its client gone, the workflow finished and readable later; its
// events resumed by SSE (Last-Event-ID) and by the WebSocket channel, without loss or
// repeats.
func TestWorkflowOutlivesItsClient(t *testing.T) {
	a := &planAgent{gate: make(chan struct{})}
	s := start(t, a)
	token := s.Admin(t).Access
	id := startWorkflow(t, s, token, `{"task_description":"analyse last month's sales and goods"}`)
	path := "/api/v1/chat/workflows/" + id + "/events"

	// Follow until the first text arrives, then leave.
	es, env := openEvents(t, s, path, token, "")
	if env != nil {
		t.Fatalf("events: %+v", env)
	}
	if es.resp.Header.Get("X-Workflow-Id") != id {
		t.Fatalf("X-Workflow-Id %q", es.resp.Header.Get("X-Workflow-Id"))
	}
	var seen []map[string]any
	for len(seen) == 0 || seen[len(seen)-1]["type"] != "text" {
		data, ok, err := es.next()
		if err != nil || !ok {
			t.Fatalf("stream ended early: %v %s", err, es.raw.String())
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatal(err)
		}
		seen = append(seen, ev)
	}
	es.Close()
	checkSequence(t, seen, 1)
	if !strings.Contains(es.raw.String(), "id: 1\n") {
		t.Fatalf("no event ids: %s", es.raw.String())
	}
	running := getWorkflow(t, s, token, id)
	if running.Status != "running" || running.Content != "Sales grew 12%. " || len(running.Steps) != 2 ||
		running.Steps[0]["status"] != "running" || running.Steps[1]["status"] != "pending" {
		t.Fatalf("partial state: %+v", running)
	}

	close(a.gate) // nobody follows any more; the workflow goes on
	w := waitWorkflow(t, s, token, id, "completed")
	if w.Content != "Sales grew 12%. Goods sold well." || w.Progress != 100 || w.Result["content"] != w.Content ||
		len(w.Visualizations) != 1 || len(w.Renders) != 1 || w.Steps[0]["status"] != "completed" || w.Steps[1]["status"] != "completed" ||
		w.Steps[1]["agent"] != "goods" || str(w.Steps[1]["finished_at"]) == "" {
		t.Fatalf("finished: %+v", w)
	}
	last, _ := strconv.ParseInt(w.LastSequence, 10, 64)

	// Resumed by SSE after the last event seen: the rest, then the end of the stream.
	lastSeen := seq(seen[len(seen)-1])
	es, env = openEvents(t, s, path, token, strconv.FormatInt(lastSeen, 10))
	if env != nil {
		t.Fatalf("resume: %+v", env)
	}
	rest, done := readAll(t, es)
	if !done || len(rest) == 0 {
		t.Fatalf("resumed stream: %s", es.raw.String())
	}
	checkSequence(t, rest, lastSeen+1)
	if end := rest[len(rest)-1]; seq(end) != last || end["type"] != "result" || end["status"] != "completed" {
		t.Fatalf("last event %v, last sequence %d", end, last)
	}
	all := append(append([]map[string]any{}, seen...), rest...)

	// From the start (query parameter): the same events.
	es, env = openEvents(t, s, path+"?after_sequence=0", token, "")
	if env != nil {
		t.Fatalf("replay: %+v", env)
	}
	if replay, _ := readAll(t, es); !reflect.DeepEqual(replay, all) {
		t.Fatalf("replay differs:\n%v\n%v", replay, all)
	}

	// Resumed on the WebSocket channel from the same position: the same events.
	rt := dialRealtime(t, s, token)
	topic := "workflow:" + id
	if f := rt.subscribe(topic, lastSeen); f.Type != "subscribed" || f.Topic != topic {
		t.Fatalf("subscribe: %+v", f)
	}
	frames := rt.collect(topic)
	if len(frames) != len(rest) {
		t.Fatalf("%d frames, %d events", len(frames), len(rest))
	}
	for i, f := range frames {
		var ev map[string]any
		if err := json.Unmarshal(f.Data, &ev); err != nil {
			t.Fatal(err)
		}
		if *f.Offset != seq(rest[i]) || !reflect.DeepEqual(ev, rest[i]) {
			t.Fatalf("frame %d: %+v, event %v", i, f, rest[i])
		}
	}

	// The steps' changes are events of their own.
	var steps []string
	for _, ev := range all {
		if ev["type"] == "step" {
			st := ev["step"].(map[string]any)
			steps = append(steps, str(st["id"])+":"+str(st["status"]))
		}
	}
	if want := "sales:running goods:pending sales:completed goods:running goods:completed"; strings.Join(steps, " ") != want {
		t.Fatalf("step events %v, want %s", steps, want)
	}
}

// Live events reach a WebSocket subscriber as they happen, and a resubscription after a
// reconnect continues from the last offset seen.
func TestWorkflowLiveOverWebSocket(t *testing.T) {
	a := &planAgent{gate: make(chan struct{})}
	s := start(t, a)
	token := s.Admin(t).Access
	rt := dialRealtime(t, s, token)
	id := startWorkflow(t, s, token, `{"task_description":"analyse"}`)
	topic := "workflow:" + id
	if f := rt.subscribe(topic, 0); f.Type != "subscribed" {
		t.Fatalf("subscribe: %+v", f)
	}
	var got []rtFrame
	for len(got) == 0 || !strings.Contains(string(got[len(got)-1].Data), `"type":"text"`) {
		f := rt.next()
		if f.Type != "event" {
			t.Fatalf("frame %+v", f)
		}
		got = append(got, f)
	}
	_ = rt.c.Close(websocket.StatusNormalClosure, "reconnecting")
	close(a.gate)
	rt = dialRealtime(t, s, token)
	if f := rt.subscribe(topic, *got[len(got)-1].Offset); f.Type != "subscribed" {
		t.Fatalf("resubscribe: %+v", f)
	}
	got = append(got, rt.collect(topic)...)
	for i, f := range got {
		if *f.Offset != int64(i+1) {
			t.Fatalf("frame %d has offset %d", i, *f.Offset)
		}
	}
	if !strings.Contains(string(got[len(got)-1].Data), `"status":"completed"`) {
		t.Fatalf("last frame %s", got[len(got)-1].Data)
	}
}

func TestWorkflowCancel(t *testing.T) {
	a := &planAgent{gate: make(chan struct{})}
	s := start(t, a)
	token := s.Admin(t).Access
	id := startWorkflow(t, s, token, `{"task_description":"analyse"}`)
	for getWorkflow(t, s, token, id).Content == "" {
		time.Sleep(20 * time.Millisecond)
	}
	w := decode[struct{ Workflow workflowJSON }](t, expect(t, s, "POST", "/api/v1/chat/workflows/"+id+"/cancel", `{}`, token, 0, "")).Workflow
	if w.Status != "cancelled" || w.Steps[0]["status"] != "cancelled" || w.Steps[1]["status"] != "cancelled" {
		t.Fatalf("cancelled: %+v", w)
	}
	again := decode[struct{ Workflow workflowJSON }](t, expect(t, s, "POST", "/api/v1/chat/workflows/"+id+"/cancel", `{}`, token, 0, "")).Workflow
	if again.Status != "cancelled" || again.LastSequence != w.LastSequence {
		t.Fatalf("second cancel changed it: %+v", again)
	}
	es, _ := openEvents(t, s, "/api/v1/chat/workflows/"+id+"/events", token, "")
	events, done := readAll(t, es)
	if end := events[len(events)-1]; !done || end["status"] != "cancelled" || end["type"] != "status" {
		t.Fatalf("events: %v", events)
	}

	// A workflow another process runs (its lease held) is ended in the database.
	other := "9b2e4f1a-3c5d-4e6f-8a7b-1c2d3e4f5a6b"
	if _, err := s.DB.Pool.Exec(context.Background(), `INSERT INTO chat.workflows (id, tenant_id, user_id, task, status, last_seq, lease_until, steps)
		SELECT $1, tenant_id, id, 'elsewhere', 'running', 1, now() + interval '1 hour',
			'[{"id":"a","status":"running"},{"id":"b","status":"completed"}]' FROM tenant.users WHERE username = 'admin' ORDER BY id LIMIT 1`, other); err != nil {
		t.Fatal(err)
	}
	w = decode[struct{ Workflow workflowJSON }](t, expect(t, s, "POST", "/api/v1/chat/workflows/"+other+"/cancel", `{}`, token, 0, "")).Workflow
	if w.Status != "cancelled" || w.LastSequence != "2" || w.Steps[0]["status"] != "cancelled" || w.Steps[1]["status"] != "completed" {
		t.Fatalf("remote cancel: %+v", w)
	}
}

func TestWorkflowValidation(t *testing.T) {
	s := start(t, answer(nil, chunk("done")))
	token := s.Admin(t).Access
	expect(t, s, "POST", "/api/v1/chat/workflows", `{"task_description":"   "}`, token, 400, "task_description")
	expect(t, s, "POST", "/api/v1/chat/workflows", `{}`, token, 400, "task_description")
	expect(t, s, "POST", "/api/v1/chat/workflows", `{"task_description":"x","agents_to_use":["sales","astrology"]}`, token, 400, "agents_to_use[1]")
	expect(t, s, "POST", "/api/v1/chat/workflows", `{"task_description":"x","agents_to_use":["Bad Name"]}`, token, 400, "agents_to_use")
	expect(t, s, "POST", "/api/v1/chat/workflows", `{"task_description":"x","conversation_id":"3fa85f64-5717-4562-b3fc-2c963f66afa6"}`, token, 404, "not found")
	expect(t, s, "POST", "/api/v1/chat/workflows", `{"task_description":"x","conversation_id":"nope"}`, token, 400, "conversation_id")
	expect(t, s, "GET", "/api/v1/chat/workflows/3fa85f64-5717-4562-b3fc-2c963f66afa6", "", token, 404, "not found")
	expect(t, s, "GET", "/api/v1/chat/workflows/3fa85f64-5717-4562-b3fc-2c963f66afa6/events", "", token, 404, "not found")
	expect(t, s, "POST", "/api/v1/chat/workflows", `{"task_description":"x"}`, "", 401, "")
	r := s.Do(t, "GET", "/api/v1/chat/workflows/3fa85f64-5717-4562-b3fc-2c963f66afa6/events", "", "Authorization", "Bearer "+token, "Last-Event-ID", "abc")
	if r.Status != 400 || !strings.Contains(string(r.Body), "Last-Event-ID") {
		t.Fatalf("bad Last-Event-ID: %d %s", r.Status, r.Body)
	}

	// A workflow in a conversation adds the task and its report to the history.
	conv := decode[map[string]any](t, expect(t, s, "POST", "/api/v1/sessions", `{}`, token, 0, ""))["conversation_id"].(string)
	id := startWorkflow(t, s, token, `{"task_description":"analyse shops","conversation_id":"`+conv+`","input":{"period":"last_month"}}`)
	waitWorkflow(t, s, token, id, "completed")
	msgs := waitMessages(t, s, conv, token, 2)
	if msgs[0].Content != "analyse shops" || msgs[1].Content != "done" {
		t.Fatalf("history: %+v", msgs)
	}
}

// Another user's or tenant's workflow or session cannot be read, followed or cancelled,
// over REST, SSE or the WebSocket channel.
func TestRealtimeIsolation(t *testing.T) {
	a := &planAgent{gate: make(chan struct{})}
	defer close(a.gate)
	s := start(t, a)
	admin := s.Admin(t).Access
	bob := addUser(t, s, "demo", "bob")
	carol := addUser(t, s, "acme", "admin")
	id := startWorkflow(t, s, admin, `{"task_description":"secret analysis"}`)
	waitWorkflow(t, s, admin, id, "running")
	conv := decode[map[string]any](t, expect(t, s, "POST", "/api/v1/sessions", `{}`, admin, 0, ""))["conversation_id"].(string)

	for name, token := range map[string]string{"same tenant": bob, "other tenant": carol} {
		t.Run(name, func(t *testing.T) {
			expect(t, s, "GET", "/api/v1/chat/workflows/"+id, "", token, 404, "not found")
			expect(t, s, "GET", "/api/v1/chat/workflows/"+id+"/events", "", token, 404, "not found")
			expect(t, s, "POST", "/api/v1/chat/workflows/"+id+"/cancel", `{}`, token, 404, "not found")
			expect(t, s, "GET", "/api/v1/sessions/"+conv+"/events", "", token, 404, "not found")
			rt := dialRealtime(t, s, token)
			for _, topic := range []string{"workflow:" + id, "session:" + conv} {
				if f := rt.subscribe(topic, 0); f.Type != "error" || f.Code != 404 || f.Topic != topic {
					t.Fatalf("%s: %+v", topic, f)
				}
			}
		})
	}
	if w := getWorkflow(t, s, admin, id); w.Status != "running" {
		t.Fatalf("the workflow was touched: %+v", w)
	}

	// No token, a bad token: the upgrade is refused with the envelope.
	for _, hdr := range []http.Header{{}, {"Authorization": {"Bearer nope"}}} {
		_, resp, err := websocket.Dial(context.Background(), strings.Replace(s.BaseURL, "http", "ws", 1)+"/api/v1/realtime",
			&websocket.DialOptions{HTTPHeader: hdr})
		if err == nil || resp == nil || resp.StatusCode != 401 {
			t.Fatalf("unauthenticated upgrade: %v %v", err, resp)
		}
	}
	// The WAF inspects the upgrade request like any other.
	_, resp, err := websocket.Dial(context.Background(), strings.Replace(s.BaseURL, "http", "ws", 1)+"/api/v1/realtime?q=%3Cscript%3Ealert(1)%3C%2Fscript%3E",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + admin}}})
	if err == nil || resp == nil || resp.StatusCode != 403 {
		t.Fatalf("attack in the upgrade request: %v %v", err, resp)
	}
	// A browser's token as a subprotocol; an origin the edge does not allow is refused.
	ctx := context.Background()
	c, _, err := websocket.Dial(ctx, strings.Replace(s.BaseURL, "http", "ws", 1)+"/api/v1/realtime",
		&websocket.DialOptions{Subprotocols: []string{"shopmind.realtime.v1", "bearer." + admin}})
	if err != nil || c.Subprotocol() != "shopmind.realtime.v1" {
		t.Fatalf("subprotocol token: %v", err)
	}
	_ = c.CloseNow()
	_, resp, err = websocket.Dial(ctx, strings.Replace(s.BaseURL, "http", "ws", 1)+"/api/v1/realtime",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + admin}, "Origin": {"https://evil.example"}}})
	if err == nil || resp == nil || resp.StatusCode != 403 {
		t.Fatalf("foreign origin: %v %v", err, resp)
	}
	// Frames the channel does not take.
	rt := dialRealtime(t, s, admin)
	for topic, code := range map[string]int{"nope:1": 400, "workflow": 400, "workflow:not-a-uuid": 400} {
		if f := rt.subscribe(topic, 0); f.Type != "error" || f.Code != code {
			t.Fatalf("%s: %+v", topic, f)
		}
	}
	rt.send(map[string]any{"type": "dance"})
	if f := rt.next(); f.Type != "error" || f.Code != 400 {
		t.Fatalf("unknown frame: %+v", f)
	}
	rt.send(map[string]any{"type": "ping"})
	if f := rt.next(); f.Type != "pong" {
		t.Fatalf("ping: %+v", f)
	}
	// A loop of subscribes: past a burst of 100, at most 10 a second, the rest answered 429
	// (retryable); the connection stays usable.
	rt = dialRealtime(t, s, admin)
	const sent = 150
	for i := 0; i < sent; i++ {
		rt.send(map[string]any{"type": "subscribe", "topic": "nope:1", "offset": 0})
	}
	limited := 0
	for i := 0; i < sent; i++ {
		f := rt.next()
		switch {
		case f.Type == "error" && f.Code == 429 && f.Retryable != nil && *f.Retryable && strings.Contains(f.Message, "subscribes per second"):
			limited++
		case f.Type == "error" && f.Code == 400:
		default:
			t.Fatalf("subscribe %d: %+v", i, f)
		}
	}
	if limited == 0 || limited > sent-100 {
		t.Fatalf("%d of %d subscribes limited; want some, and none of the first 100", limited, sent)
	}
	rt.send(map[string]any{"type": "ping"})
	if f := rt.next(); f.Type != "pong" {
		t.Fatalf("ping after the limit: %+v", f)
	}
}

// The gateway's stop closes the channel with 1001 (going away) and a reason, so that clients
// reconnect and resume.
func TestRealtimeClosesGoingAwayOnStop(t *testing.T) {
	s := start(t, answer(nil, chunk("done")))
	rt := dialRealtime(t, s, s.Admin(t).Access)
	rt.send(map[string]any{"type": "ping"})
	if f := rt.next(); f.Type != "pong" {
		t.Fatalf("ping: %+v", f)
	}
	stopped := make(chan struct{})
	go func() { defer close(stopped); s.Stop() }()
	var err error
	for err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, _, err = rt.c.Read(ctx)
		cancel()
	}
	if websocket.CloseStatus(err) != websocket.StatusGoingAway || !strings.Contains(err.Error(), "reconnect and resume") {
		t.Fatalf("closed with %v", err)
	}
	<-stopped
}

// A session's events reach its followers from whichever client sends the message; a
// follower resumes from its offset, and an offset no longer kept is "gone".
func TestSessionTopic(t *testing.T) {
	s := start(t, answer(nil, render("think", agent.ComponentThinking, map[string]any{"step": "x"}), chunk("Hello "), chunk("there.")))
	token := s.Admin(t).Access
	conv := decode[map[string]any](t, expect(t, s, "POST", "/api/v1/sessions", `{}`, token, 0, ""))["conversation_id"].(string)
	topic := "session:" + conv
	rt := dialRealtime(t, s, token)
	if f := rt.subscribe(topic, 0); f.Type != "subscribed" {
		t.Fatalf("subscribe: %+v", f)
	}
	stream(t, s, "/api/v2/chat/message", `{"message":"hi","conversation_id":"`+conv+`"}`, token)
	var frames []rtFrame
	for len(frames) == 0 || !strings.Contains(string(frames[len(frames)-1].Data), "pipeline_end") {
		f := rt.next()
		if f.Type != "event" {
			t.Fatalf("frame %+v", f)
		}
		frames = append(frames, f)
	}
	if !strings.Contains(string(frames[0].Data), `"type":"message","message":"hi"`) || len(frames) != 6 {
		t.Fatalf("frames: %d, first %s", len(frames), frames[0].Data)
	}
	for i := 1; i < len(frames); i++ {
		if *frames[i].Offset != *frames[i-1].Offset+1 {
			t.Fatalf("offsets %d then %d", *frames[i-1].Offset, *frames[i].Offset)
		}
	}
	// Resume from the second event over the channel and over SSE.
	rt2 := dialRealtime(t, s, token)
	if f := rt2.subscribe(topic, *frames[1].Offset); f.Type != "subscribed" {
		t.Fatalf("resubscribe: %+v", f)
	}
	for _, want := range frames[2:] {
		if f := rt2.next(); *f.Offset != *want.Offset || string(f.Data) != string(want.Data) {
			t.Fatalf("resumed %+v, want %+v", f, want)
		}
	}
	es, env := openEvents(t, s, "/api/v1/sessions/"+conv+"/events", token, strconv.FormatInt(*frames[4].Offset, 10))
	if env != nil {
		t.Fatalf("sse: %+v", env)
	}
	data, ok, err := es.next()
	es.Close()
	if err != nil || !ok || data != string(frames[5].Data) {
		t.Fatalf("sse resumed %q, want %s", data, frames[5].Data)
	}
	if f := rt2.subscribe(topic, 5); f.Type != "gone" || f.Topic != topic {
		t.Fatalf("old offset: %+v", f)
	}
	expect(t, s, "GET", "/api/v1/sessions/"+conv+"/events?after_offset=5", "", token, 410, "refetch the history")
}

// A workflow whose process died (its lease ran out) is marked failed, never left running;
// one running when the platform stops is failed too, and readable after the restart.
func TestWorkflowAfterRestart(t *testing.T) {
	lease := func(c *app.Config) { app.ServiceConfig[chat.Config](c, "chat").Chat.WorkflowLease = 3 * time.Second }
	a := &planAgent{gate: make(chan struct{})}
	defer close(a.gate)
	s := start(t, a, lease)
	token := s.Admin(t).Access

	// A crashed process's workflow: running, its lease run out.
	ctx := context.Background()
	crashed := "7c9e6679-7425-40de-944b-e07fc1f90ae7"
	if _, err := s.DB.Pool.Exec(ctx, `INSERT INTO chat.workflows (id, tenant_id, user_id, task, status, last_seq, lease_until)
		SELECT $1, tenant_id, id, 'orphan', 'running', 1, now() - interval '1 minute' FROM tenant.users WHERE username = 'admin' ORDER BY id LIMIT 1`, crashed); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB.Pool.Exec(ctx, `INSERT INTO chat.workflow_events (workflow_id, seq, payload) VALUES ($1, 1, '{"type":"status","status":"running"}')`, crashed); err != nil {
		t.Fatal(err)
	}
	w := waitWorkflow(t, s, token, crashed, "failed")
	if !strings.Contains(w.Error, "interrupted") || w.LastSequence != "2" {
		t.Fatalf("orphan: %+v", w)
	}

	id := startWorkflow(t, s, token, `{"task_description":"analyse"}`)
	waitWorkflow(t, s, token, id, "running")
	s.Stop()
	s2 := stack.StartOn(t, s.DB, lease)
	token = s2.Admin(t).Access
	w = getWorkflow(t, s2, token, id)
	if w.Status != "failed" || !strings.Contains(w.Error, "stopped") {
		t.Fatalf("after restart: %+v", w)
	}
	es, _ := openEvents(t, s2, "/api/v1/chat/workflows/"+id+"/events", token, "")
	events, done := readAll(t, es)
	checkSequence(t, events, 1)
	if end := events[len(events)-1]; !done || end["type"] != "error" || end["status"] != "failed" {
		t.Fatalf("events after restart: %v", events)
	}
}

// The production agent (the agent team's planner, offline, on the demo data) runs a workflow
// unchanged: its TaskPlanCard becomes the workflow's steps, one per expert, and its report
// the result.
func TestWorkflowWithTheAgentTeam(t *testing.T) {
	s := stack.Start(t, func(c *app.Config) { c.DemoData = true })
	token := s.Admin(t).Access
	id := startWorkflow(t, s, token, `{"task_description":"analyse last month's sales, goods and shops","agents_to_use":["sales","goods","shops"]}`)
	var w workflowJSON
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if w = getWorkflow(t, s, token, id); w.Status == "completed" || w.Status == "failed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still %s: %+v", w.Status, w)
		}
	}
	if w.Status != "completed" || w.Content == "" || len(w.Steps) != 3 {
		t.Fatalf("team workflow: %+v", w)
	}
	for i, want := range []string{"sales", "goods", "shops"} {
		if st := w.Steps[i]; st["agent"] != want || st["status"] != "completed" {
			t.Fatalf("step %d: %v", i, st)
		}
	}
}

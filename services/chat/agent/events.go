package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	chatv2 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v2"
)

// Event types.
const (
	EventChunk         = "chunk"
	EventRender        = "render"
	EventVisualization = "visualization"
)

// Render components.
const (
	ComponentThinking = "ThinkingProcess"
	ComponentTaskPlan = "TaskPlanCard"
)

// emitter builds the events of one reply.
type emitter struct {
	emit    Emit
	convID  string
	chunkID string
	created int64
	model   string
	started bool // a text chunk was sent
	text    []byte
}

func newEmitter(emit Emit, convID, model string, now time.Time) *emitter {
	return &emitter{emit: emit, convID: convID, chunkID: "chatcmpl-" + randomHex(12), created: now.Unix(), model: model}
}

func randomHex(n int) string {
	b := make([]byte, n/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (e *emitter) chunk(content, finish string) error {
	delta := &chatv2.ChunkDelta{Content: content}
	if !e.started {
		delta.Role = "assistant"
		e.started = true
	}
	e.text = append(e.text, content...)
	return e.emit(&chatv2.SendMessageResponse{ConversationId: e.convID, Type: EventChunk, Event: &chatv2.SendMessageResponse_Chunk{
		Chunk: &chatv2.ChatCompletionChunk{Id: e.chunkID, Object: "chat.completion.chunk", Created: e.created, Model: e.model,
			Choices: []*chatv2.ChunkChoice{{Index: 0, Delta: delta, FinishReason: finish}}}}})
}

// text sends a text increment (nothing for an empty one).
func (e *emitter) textDelta(s string) error {
	if s == "" {
		return nil
	}
	return e.chunk(s, "")
}

// finish ends the text: the chat service sends the closing chunk (finish_reason "stop"),
// so only another reason ("length": the loop bound) is sent, as an empty last chunk whose
// finish_reason the service takes over.
func (e *emitter) finish(reason string) error {
	if reason == "" || reason == "stop" {
		return nil
	}
	return e.chunk("", reason)
}

func (e *emitter) render(id, component string, props any) error {
	s, err := toStruct(props)
	if err != nil {
		return err
	}
	return e.emit(&chatv2.SendMessageResponse{ConversationId: e.convID, Type: EventRender, Event: &chatv2.SendMessageResponse_Render{
		Render: &chatv2.RenderEvent{Id: id, Component: component, Props: s}}})
}

func (e *emitter) visualization(v *chatv2.VisualizationEvent) error {
	if v == nil {
		return nil
	}
	return e.emit(&chatv2.SendMessageResponse{ConversationId: e.convID, Type: EventVisualization,
		Event: &chatv2.SendMessageResponse_Visualization{Visualization: v}})
}

// toStruct turns a JSON-marshalable value (an object) into a Struct.
func toStruct(v any) (*structpb.Struct, error) {
	if s, ok := v.(*structpb.Struct); ok {
		return s, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("render props: %w", err)
	}
	s := &structpb.Struct{}
	if err := protojson.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("render props: %w", err)
	}
	return s, nil
}

// Step is one line of a ThinkingProcess or a task of a TaskPlanCard.
type Step struct {
	ID     string `json:"id,omitempty"`
	Title  string `json:"title"`
	Detail string `json:"detail,omitempty"`
	// Status is pending, running, done or error.
	Status string `json:"status"`
	Tool   string `json:"tool,omitempty"`
}

// Step statuses.
const (
	StatusPending = "pending"
	StatusRunning = "running"
	StatusDone    = "done"
	StatusError   = "error"
)

// thinking is a ThinkingProcess render updated in place (same id) as steps progress.
// Props: {"title", "status", "steps": [{"title","detail","status","tool"}]}.
type thinking struct {
	e     *emitter
	id    string
	title string
	steps []Step
}

func (t *thinking) props(status string) map[string]any {
	return map[string]any{"title": t.title, "status": status, "steps": t.steps}
}

func (t *thinking) add(s Step) error {
	t.steps = append(t.steps, s)
	return t.e.render(t.id, ComponentThinking, t.props(StatusRunning))
}

// update changes the last step.
func (t *thinking) update(status, detail string) error {
	if n := len(t.steps); n > 0 {
		t.steps[n-1].Status = status
		if detail != "" {
			t.steps[n-1].Detail = detail
		}
	}
	return t.e.render(t.id, ComponentThinking, t.props(StatusRunning))
}

func (t *thinking) done(status string) error {
	return t.e.render(t.id, ComponentThinking, t.props(status))
}

// plan is a TaskPlanCard render. Props: {"title", "tasks": [{"id","title","status"}],
// "completed", "total", "progress" (0..1)}.
type plan struct {
	e     *emitter
	id    string
	title string
	tasks []Step
}

func (p *plan) send() error {
	done := 0
	for _, t := range p.tasks {
		if t.Status == StatusDone {
			done++
		}
	}
	progress := 0.0
	if len(p.tasks) > 0 {
		progress = float64(done) / float64(len(p.tasks))
	}
	return p.e.render(p.id, ComponentTaskPlan, map[string]any{"title": p.title, "tasks": p.tasks,
		"completed": done, "total": len(p.tasks), "progress": progress})
}

func (p *plan) set(id, status string) error {
	for i := range p.tasks {
		if p.tasks[i].ID == id {
			p.tasks[i].Status = status
		}
	}
	return p.send()
}

// Usage is the model token usage of a reply.
type Usage struct {
	mu                                  sync.Mutex
	PromptTokens, CompletionTokens, Sum int64
}

// Add counts the usage of one model call.
func (u *Usage) Add(prompt, completion int64) {
	u.mu.Lock()
	u.PromptTokens += prompt
	u.CompletionTokens += completion
	u.Sum += prompt + completion
	u.mu.Unlock()
}

// Totals returns the prompt, completion and total tokens.
func (u *Usage) Totals() (prompt, completion, total int64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.PromptTokens, u.CompletionTokens, u.Sum
}

type usageKey struct{}

// WithUsage asks the agents to add the model usage of the reply to u (the chat service
// puts it in the done event). Optional: agents work without it.
func WithUsage(ctx context.Context, u *Usage) context.Context {
	return context.WithValue(ctx, usageKey{}, u)
}

func usageFrom(ctx context.Context) *Usage {
	u, _ := ctx.Value(usageKey{}).(*Usage)
	return u
}

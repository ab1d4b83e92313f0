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

// Emitter builds the events of one reply: text chunks of one completion id, renders and
// visualizations. The agents of the subpackages (llmagent, offline, team) share it.
type Emitter struct {
	emit    Emit
	convID  string
	chunkID string
	created int64
	model   string
	started bool // a text chunk was sent
	text    []byte
}

// NewEmitter returns the emitter of one reply of model, created at now.
func NewEmitter(emit Emit, convID, model string, now time.Time) *Emitter {
	return &Emitter{emit: emit, convID: convID, chunkID: "chatcmpl-" + randomHex(12), created: now.Unix(), model: model}
}

func randomHex(n int) string {
	b := make([]byte, n/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Chunk sends a chunk event with content and finish reason.
func (e *Emitter) Chunk(content, finish string) error {
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

// TextDelta sends a text increment (nothing for an empty one).
func (e *Emitter) TextDelta(s string) error {
	if s == "" {
		return nil
	}
	return e.Chunk(s, "")
}

// Finish ends the text: the chat service sends the closing chunk (finish_reason "stop"),
// so only another reason ("length": the loop bound) is sent, as an empty last chunk whose
// finish_reason the service takes over.
func (e *Emitter) Finish(reason string) error {
	if reason == "" || reason == "stop" {
		return nil
	}
	return e.Chunk("", reason)
}

// Render sends a render event of component with props (a JSON object).
func (e *Emitter) Render(id, component string, props any) error {
	s, err := toStruct(props)
	if err != nil {
		return err
	}
	return e.emit(&chatv2.SendMessageResponse{ConversationId: e.convID, Type: EventRender, Event: &chatv2.SendMessageResponse_Render{
		Render: &chatv2.RenderEvent{Id: id, Component: component, Props: s}}})
}

// Visualization sends a visualization event (nothing for nil).
func (e *Emitter) Visualization(v *chatv2.VisualizationEvent) error {
	if v == nil {
		return nil
	}
	return e.emit(&chatv2.SendMessageResponse{ConversationId: e.convID, Type: EventVisualization,
		Event: &chatv2.SendMessageResponse_Visualization{Visualization: v}})
}

// Started reports whether a text chunk was sent.
func (e *Emitter) Started() bool { return e.started }

// Sent is the text sent so far.
func (e *Emitter) Sent() string { return string(e.text) }

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

// Thinking is a ThinkingProcess render updated in place (same id) as steps progress.
// Props: {"title", "status", "steps": [{"title","detail","status","tool"}]}.
type Thinking struct {
	e     *Emitter
	id    string
	title string
	// Steps are the lines shown; Done sends them as they are.
	Steps []Step
}

// NewThinking returns a ThinkingProcess render with render id id (nothing is sent yet).
func NewThinking(e *Emitter, id, title string) *Thinking {
	return &Thinking{e: e, id: id, title: title}
}

func (t *Thinking) props(status string) map[string]any {
	return map[string]any{"title": t.title, "status": status, "steps": t.Steps}
}

// Add appends a step and sends the render (running).
func (t *Thinking) Add(s Step) error {
	t.Steps = append(t.Steps, s)
	return t.e.Render(t.id, ComponentThinking, t.props(StatusRunning))
}

// Update changes the last step and sends the render.
func (t *Thinking) Update(status, detail string) error {
	if n := len(t.Steps); n > 0 {
		t.Steps[n-1].Status = status
		if detail != "" {
			t.Steps[n-1].Detail = detail
		}
	}
	return t.e.Render(t.id, ComponentThinking, t.props(StatusRunning))
}

// Done sends the render with the overall status (done or error).
func (t *Thinking) Done(status string) error {
	return t.e.Render(t.id, ComponentThinking, t.props(status))
}

// Plan is a TaskPlanCard render. Props: {"title", "tasks": [{"id","title","status","tool"}],
// "completed", "total", "progress" (0..1)}.
type Plan struct {
	e     *Emitter
	id    string
	title string
	tasks []Step
}

// NewPlan returns a TaskPlanCard render with render id id and its tasks (nothing is sent yet).
func NewPlan(e *Emitter, id, title string, tasks []Step) *Plan {
	return &Plan{e: e, id: id, title: title, tasks: tasks}
}

// Send sends the card as it is.
func (p *Plan) Send() error {
	done := 0
	for _, t := range p.tasks {
		if t.Status == TaskDone {
			done++
		}
	}
	progress := 0.0
	if len(p.tasks) > 0 {
		progress = float64(done) / float64(len(p.tasks))
	}
	return p.e.Render(p.id, ComponentTaskPlan, map[string]any{"title": p.title, "tasks": p.tasks,
		"completed": done, "total": len(p.tasks), "progress": progress})
}

// Set changes a task's status and sends the card.
func (p *Plan) Set(id, status string) error {
	for i := range p.tasks {
		if p.tasks[i].ID == id {
			p.tasks[i].Status = status
		}
	}
	return p.Send()
}

// Task states of a TaskPlanCard (Plan.Set): todo, then in_progress, then done or failed.
const (
	TaskTodo       = "todo"
	TaskInProgress = "in_progress"
	TaskDone       = "done"
	TaskFailed     = "failed"
)

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

// UsageFrom is the Usage put in the context with WithUsage, or nil.
func UsageFrom(ctx context.Context) *Usage {
	u, _ := ctx.Value(usageKey{}).(*Usage)
	return u
}

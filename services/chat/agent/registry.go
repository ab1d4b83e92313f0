// The tool registry: tools by name, their definitions for the model, argument checks and
// truncated results.

package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"google.golang.org/grpc/status"

	chatv2 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v2"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/services/chat/llm"
)

// DefaultToolResultMaxChars is the truncation threshold of tool results.
const DefaultToolResultMaxChars = 8000

// TruncationMarker starts the note appended to a truncated tool result.
const TruncationMarker = "…[truncated:"

// Tool is a function the agents may call.
type Tool interface {
	// Name is the function name the model calls (lowercase, underscores).
	Name() string
	// Description tells the model what the tool is for.
	Description() string
	// Parameters is the JSON schema of the arguments (an object).
	Parameters() *Schema
	// Call runs the tool. args has been checked against Parameters. A returned error becomes
	// the result {"status":"error","message":...}.
	Call(ctx context.Context, env *ToolEnv, args json.RawMessage) (*ToolResult, error)
}

// ToolEnv is what a tool knows of the request it serves.
type ToolEnv struct {
	// Request is the message being answered (identity, page info, user).
	Request *Request
	// Emitter, when set, is the reply's emitter: a tool may send render and visualization
	// events through it (trigger_parallel_analysis sends its TaskPlanCard). Tools run on
	// the answering goroutine, so they may use it directly.
	Emitter *Emitter
}

// Caller is the request of the signed-in caller the tool answers, or ErrNoIdentity: every
// tool works in the caller's tenant.
func (env *ToolEnv) Caller() (*Request, error) {
	if env == nil || env.Request == nil || env.Request.Identity == nil {
		return nil, ErrNoIdentity
	}
	return env.Request, nil
}

// DecodeCall is the start of a tool's Call: the caller's request (env.Caller), then the
// call's arguments decoded into args.
func DecodeCall(env *ToolEnv, raw json.RawMessage, args any) (*Request, error) {
	req, err := env.Caller()
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, args); err != nil {
		return nil, err
	}
	return req, nil
}

// ToolResult is a tool's answer: Text, or else JSON marshalled into the content the model
// reads. Data and Visualization stay in the process.
type ToolResult struct {
	Text string
	JSON any
	// Data is the structured result for in-process callers (the offline analyst).
	Data any
	// Visualization is a chart of the result the agents may show.
	Visualization *chatv2.VisualizationEvent
	// Summary is a one-line description for the thinking display.
	Summary string
}

// Registry holds the tools by name.
type Registry struct {
	tools    map[string]Tool
	order    []string
	maxChars int
}

// NewRegistry returns a registry truncating results above maxChars characters
// (DefaultToolResultMaxChars when maxChars <= 0).
func NewRegistry(maxChars int, tools ...Tool) *Registry {
	if maxChars <= 0 {
		maxChars = DefaultToolResultMaxChars
	}
	r := &Registry{tools: map[string]Tool{}, maxChars: maxChars}
	for _, t := range tools {
		r.Add(t)
	}
	return r
}

// Add registers a tool (replacing one of the same name).
func (r *Registry) Add(t Tool) {
	if _, ok := r.tools[t.Name()]; !ok {
		r.order = append(r.order, t.Name())
	}
	r.tools[t.Name()] = t
}

// Names lists the tools in registration order.
func (r *Registry) Names() []string { return append([]string(nil), r.order...) }

// Subset is a registry with the named tools of r (those it has), the same threshold.
func (r *Registry) Subset(names ...string) *Registry {
	out := NewRegistry(r.maxChars)
	for _, n := range names {
		if t, ok := r.tools[n]; ok {
			out.Add(t)
		}
	}
	return out
}

// Get returns a tool by name.
func (r *Registry) Get(name string) (Tool, bool) {
	t, ok := r.tools[name]
	return t, ok
}

// Definitions are the tools in the OpenAI function-calling shape.
func (r *Registry) Definitions() []llm.Tool {
	out := make([]llm.Tool, 0, len(r.order))
	for _, n := range r.order {
		t := r.tools[n]
		out = append(out, llm.Tool{Type: "function", Function: llm.FunctionDef{
			Name: t.Name(), Description: t.Description(), Parameters: t.Parameters().JSON()}})
	}
	return out
}

// ErrorContent is the result content of a failed tool call.
func ErrorContent(msg string) string {
	b, _ := json.Marshal(map[string]string{"status": "error", "message": msg})
	return string(b)
}

// Run calls a tool with JSON arguments and returns the content for the model (truncated
// above the threshold, {"status":"error",...} on failure), the tool's result (nil on
// failure) and the failure. Context cancellation is returned as the error with an error
// content.
func (r *Registry) Run(ctx context.Context, env *ToolEnv, name, args string) (string, *ToolResult, error) {
	t, ok := r.tools[name]
	if !ok {
		err := fmt.Errorf("unknown tool %q; available: %s", name, strings.Join(r.order, ", "))
		return ErrorContent(err.Error()), nil, err
	}
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	var decoded any
	if err := json.Unmarshal([]byte(args), &decoded); err != nil {
		err = fmt.Errorf("arguments are not valid JSON: %v", err)
		return ErrorContent(err.Error()), nil, err
	}
	if errs := t.Parameters().Validate(decoded); len(errs) > 0 {
		err := errors.New("invalid arguments: " + strings.Join(errs, "; "))
		return ErrorContent(err.Error()), nil, err
	}
	res, err := t.Call(ctx, env, json.RawMessage(args))
	if err != nil {
		return ErrorContent(ToolErrorMessage(err)), nil, err
	}
	if res == nil {
		res = &ToolResult{Text: ""}
	}
	content := res.Text
	if content == "" && res.JSON != nil {
		b, err := json.Marshal(res.JSON)
		if err != nil {
			return ErrorContent("result not serialisable: " + err.Error()), nil, err
		}
		content = string(b)
	}
	return r.truncate(content), res, nil
}

// truncate keeps a result within the threshold: a JSON result is shortened by its structure
// (ShrinkJSON: fewer list items with how many were left out, shorter strings) and stays valid
// JSON; one that cannot be becomes {"truncated": true, "characters": N, "preview": "..."}.
// Plain text is cut with the TruncationMarker note.
func (r *Registry) truncate(s string) string {
	n := utf8.RuneCountInString(s)
	if n <= r.maxChars {
		return s
	}
	if t := strings.TrimSpace(s); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		if out, ok := ShrinkJSON(t, r.maxChars); ok {
			return out
		}
		if json.Valid([]byte(t)) {
			keep := max(r.maxChars-80, 1)
			b, _ := marshalNoEscape(map[string]any{"truncated": true, "characters": n, "preview": string([]rune(t)[:min(keep, n)])})
			for utf8.RuneCount(b) > r.maxChars && keep > 1 {
				keep /= 2
				b, _ = marshalNoEscape(map[string]any{"truncated": true, "characters": n, "preview": string([]rune(t)[:min(keep, n)])})
			}
			return string(b)
		}
	}
	runes := []rune(s)
	return string(runes[:r.maxChars]) + fmt.Sprintf("\n%s %d of %d characters shown]", TruncationMarker, r.maxChars, n)
}

// ToolErrorMessage is the message of a tool failure as the model and the user see it: the
// status message of gRPC errors, the message of typed errors.
func ToolErrorMessage(err error) string {
	var ae *apperr.Error
	if errors.As(err, &ae) {
		return ae.Message
	}
	if st, ok := status.FromError(err); ok {
		return st.Message()
	}
	return err.Error()
}

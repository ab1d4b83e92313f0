package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/agent/agenttest"
)

type echoTool struct {
	out  string
	fail error
}

func (t *echoTool) Name() string        { return "echo" }
func (t *echoTool) Description() string { return "echoes" }
func (t *echoTool) Parameters() *agent.Schema {
	return agent.Object(map[string]*agent.Schema{
		"text":  {Type: "string", MaxLength: ptr(10)},
		"n":     {Type: "integer", Minimum: ptr(1.0), Maximum: ptr(5.0)},
		"mode":  {Type: "string", Enum: []any{"a", "b"}},
		"items": {Type: "array", Items: &agent.Schema{Type: "string"}, MaxItems: ptr(2)},
	}, "text")
}
func (t *echoTool) Call(_ context.Context, _ *agent.ToolEnv, args json.RawMessage) (*agent.ToolResult, error) {
	if t.fail != nil {
		return nil, t.fail
	}
	if t.out != "" {
		return &agent.ToolResult{Text: t.out}, nil
	}
	var a map[string]any
	_ = json.Unmarshal(args, &a)
	return &agent.ToolResult{JSON: map[string]any{"echo": a["text"]}}, nil
}

func TestRegistry(t *testing.T) {
	ctx := context.Background()
	r := agent.NewRegistry(40, &echoTool{})
	content, res, err := r.Run(ctx, nil, "echo", `{"text":"hi","n":2,"mode":"a","items":["x"],"extra":true}`)
	if err != nil || content != `{"echo":"hi"}` || res == nil {
		t.Fatalf("%v %s", err, content)
	}
	for args, want := range map[string]string{
		`{}`:                                 "text: is required",
		`{"text":5}`:                         "text: must be a string",
		`{"text":"01234567890"}`:             "at most 10 characters",
		`{"text":"a","n":1.5}`:               "n: must be an integer",
		`{"text":"a","n":9}`:                 "n: must be at most 5",
		`{"text":"a","mode":"c"}`:            "mode: must be one of a, b",
		`{"text":"a","items":[1]}`:           "items[0]: must be a string",
		`{"text":"a","items":["a","b","c"]}`: "at most 2 items",
		`[1]`:                                "must be an object",
		`{"text":`:                           "not valid JSON",
	} {
		content, res, err := r.Run(ctx, nil, "echo", args)
		if err == nil || res != nil || !strings.Contains(agenttest.ErrorMessage(t, content), want) {
			t.Errorf("%s: %v %s", args, err, content)
		}
	}
	content, _, err = r.Run(ctx, nil, "nope", `{}`)
	if err == nil || !strings.Contains(agenttest.ErrorMessage(t, content), "unknown tool") {
		t.Fatal(content)
	}
	// failures: {"status":"error","message":...}, gRPC messages without the code prefix
	r = agent.NewRegistry(40, &echoTool{fail: status.Error(codes.InvalidArgument, "bad metric")})
	content, _, err = r.Run(ctx, nil, "echo", `{"text":"a"}`)
	if err == nil || agenttest.ErrorMessage(t, content) != "bad metric" {
		t.Fatal(content)
	}
	// truncation with a marker
	long := strings.Repeat("销", 100)
	r = agent.NewRegistry(40, &echoTool{out: long})
	content, _, _ = r.Run(ctx, nil, "echo", `{"text":"a"}`)
	if !strings.HasPrefix(content, strings.Repeat("销", 40)) || !strings.Contains(content, agent.TruncationMarker+" 40 of 100 characters shown]") {
		t.Fatal(content)
	}
	content, _, _ = agent.NewRegistry(0, &echoTool{out: strings.Repeat("x", agent.DefaultToolResultMaxChars+1)}).Run(ctx, nil, "echo", `{"text":"a"}`)
	if !strings.Contains(content, fmt.Sprintf("%d of %d characters shown", agent.DefaultToolResultMaxChars, agent.DefaultToolResultMaxChars+1)) {
		t.Fatal("default threshold")
	}
	// definitions in the OpenAI shape
	defs := agent.NewRegistry(0, &echoTool{}).Definitions()
	b, _ := json.Marshal(defs)
	if !strings.Contains(string(b), `"type":"function","function":{"name":"echo","description":"echoes","parameters":{"type":"object"`) ||
		!strings.Contains(string(b), `"required":["text"]`) {
		t.Fatal(string(b))
	}
}

func ptr[T any](v T) *T { return &v }

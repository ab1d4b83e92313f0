package chat

import (
	"encoding/json"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	chatv1 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v1"
	chatv2 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v2"
	genopenapi "github.com/shopmind/shopmind/gen/openapi"
)

// Every kind of chat event, as appendEventJSON writes it, matches the event schema the
// published OpenAPI document carries (chatEvent, via make generate).
func TestEventSchema(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(genopenapi.V31)
	if err != nil {
		t.Fatal(err)
	}
	ref := doc.Components.Schemas[chatEvent.Name]
	if ref == nil {
		t.Fatalf("the OpenAPI document has no schema %s", chatEvent.Name)
	}
	props, _ := structpb.NewStruct(map[string]any{"progress": 50})
	row, _ := structpb.NewList([]any{"shop A", 42.5, nil, true})
	chunk := func(role, content, finish string) *chatv2.SendMessageResponse {
		return &chatv2.SendMessageResponse{ConversationId: "c", Type: "chunk", Event: &chatv2.SendMessageResponse_Chunk{Chunk: &chatv2.ChatCompletionChunk{
			Id: "chatcmpl-1", Created: 1767225600, Model: "analyst",
			Choices: []*chatv2.ChunkChoice{{Delta: &chatv2.ChunkDelta{Role: role, Content: content}, FinishReason: finish}}}}}
	}
	events := map[string]*chatv2.SendMessageResponse{
		"first chunk":          chunk("assistant", "", ""),
		"chunk":                chunk("", "Sales were **42**.", ""),
		"last chunk":           chunk("", "", "stop"),
		"render":               {ConversationId: "c", Type: "render", Event: &chatv2.SendMessageResponse_Render{Render: &chatv2.RenderEvent{Id: "plan", Component: "TaskPlanCard", Props: props}}},
		"render without props": {ConversationId: "c", Event: &chatv2.SendMessageResponse_Render{Render: &chatv2.RenderEvent{Id: "p", Component: "ThinkingProcess"}}},
		"visualization": {ConversationId: "c", Type: "visualization", Event: &chatv2.SendMessageResponse_Visualization{Visualization: &chatv2.VisualizationEvent{
			Id: "v", ChartType: "bar", Title: "GMV", Columns: []string{"shop", "gmv", "x", "y"}, Rows: []*structpb.ListValue{row}}}},
		"done":         {ConversationId: "c", Type: "done", Event: &chatv2.SendMessageResponse_Done{Done: &chatv2.DoneEvent{MessageId: "m", FinishReason: "stop", Usage: &chatv2.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15}}}},
		"pipeline_end": {ConversationId: "c", Type: "pipeline_end", Event: &chatv2.SendMessageResponse_Done{Done: &chatv2.DoneEvent{MessageId: "m", FinishReason: "stop"}}},
		"error":        errorEvent("c", errTest{}).(event).SendMessageResponse,
	}
	for name, ev := range events {
		b, err := appendEventJSON(nil, ev)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v: %s", name, err, b)
		}
		if err := ref.Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
			t.Errorf("%s: %s does not match the document's %s: %v", name, b, chatEvent.Name, err)
		}
	}
	// The schema is not vacuous: an event without its conversation, or a chunk whose
	// created time is a string, is refused.
	for _, bad := range []string{`{"type":"done","message_id":"m"}`, `{"conversation_id":"c","object":"chat.completion.chunk","created":"1"}`} {
		var v any
		_ = json.Unmarshal([]byte(bad), &v)
		if ref.Value.VisitJSON(v, openapi3.EnableJSONSchema2020()) == nil {
			t.Errorf("%s matches the event schema", bad)
		}
	}
}

type errTest struct{}

func (errTest) Error() string { return "backend went away" }

// Workflow and session events, as the gateway writes them, match the event schemas the
// published OpenAPI document carries.
func TestFollowedEventSchemas(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(genopenapi.V31)
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, doc *openapi3.SchemaRef, b []byte) {
		t.Helper()
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v: %s", name, err, b)
		}
		if err := doc.Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
			t.Errorf("%s: %s does not match the document: %v", name, b, err)
		}
	}
	wf := doc.Components.Schemas[workflowEventDoc.Name]
	sess := doc.Components.Schemas[sessionEventDoc.Name]
	if wf == nil || sess == nil {
		t.Fatalf("the OpenAPI document lacks %s or %s", workflowEventDoc.Name, sessionEventDoc.Name)
	}
	props, _ := structpb.NewStruct(map[string]any{"tasks": []any{}})
	result, _ := structpb.NewStruct(map[string]any{"content": "report", "renders": []any{}, "visualizations": []any{}})
	for name, ev := range map[string]*chatv1.StreamWorkflowEventsResponse{
		"status": {WorkflowId: "w", Type: "status", Status: "pending", Sequence: 1, OccurredAt: timestamppb.Now()},
		"step":   {WorkflowId: "w", Type: "step", Status: "running", Progress: 50, Sequence: 2, Step: &chatv1.WorkflowStep{Id: "sales", Status: "running", StartedAt: timestamppb.Now()}},
		"text":   {WorkflowId: "w", Type: "text", Status: "running", Sequence: 3, Delta: "Sales grew."},
		"render": {WorkflowId: "w", Type: "render", Status: "running", Sequence: 4, Render: &chatv1.RenderEvent{Id: "plan", Component: "TaskPlanCard", Props: props}},
		"result": {WorkflowId: "w", Type: "result", Status: "completed", Progress: 100, Sequence: 5, Result: result},
		"error":  {WorkflowId: "w", Type: "error", Status: "failed", Sequence: 6, Error: "stopped"},
	} {
		b, err := workflowEvent{ev}.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		check("workflow "+name, wf, b)
	}
	for name, ev := range map[string]*chatv1.StreamSessionEventsResponse{
		"message": {ConversationId: "c", Offset: 1767225600000001, Type: "message", Message: "hi"},
		"reply": {ConversationId: "c", Offset: 1767225600000002, Type: "reply", Event: &chatv1.SendMessagesResponse{ConversationId: "c", Type: "render",
			Event: &chatv1.SendMessagesResponse_Render{Render: &chatv1.RenderEvent{Id: "plan", Component: "TaskPlanCard", Props: props}}}},
	} {
		b, err := sessionEvent{ev}.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		check("session "+name, sess, b)
	}
	for _, bad := range []string{`{"type":"text","status":"running","sequence":"1"}`, `{"workflow_id":"w","type":"nope","status":"running","sequence":"1"}`} {
		var v any
		_ = json.Unmarshal([]byte(bad), &v)
		if wf.Value.VisitJSON(v, openapi3.EnableJSONSchema2020()) == nil {
			t.Errorf("%s matches the workflow event schema", bad)
		}
	}
}

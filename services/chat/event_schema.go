package chat

import "github.com/shopmind/shopmind/internal/restapi"

// chatEvent documents the SSE JSON of a chat event (appendEventJSON) for the OpenAPI
// document: one object for every event type, since OpenAPI 2 has no oneOf. A text increment
// ("object": "chat.completion.chunk", no "type") carries id, object, created, model and
// choices; every other event carries "type" and the fields of its member (render:
// id, component, props; visualization: id, chart_type, title, spec, columns, rows; done and
// pipeline_end: message_id, finish_reason, usage; error: code, message, retryable). Every
// event carries conversation_id. TestEventSchema checks each kind against it.
var chatEvent = restapi.EventDoc{Name: "shopmind.chat.v2.ChatEvent", Schema: `{
  "type": "object",
  "description": "One chat event, the data of one server-sent event. A text increment has object = \"chat.completion.chunk\" and no type (OpenAI's chat.completion.chunk); every other event has type: render, visualization, done, pipeline_end or error. The stream ends with data: [DONE], which is not an event.",
  "required": ["conversation_id"],
  "properties": {
    "conversation_id": {"type": "string", "description": "Conversation id (UUID), on every event."},
    "type": {"type": "string", "enum": ["render", "visualization", "done", "pipeline_end", "error"], "description": "Event type; absent on text increments."},
    "id": {"type": "string", "description": "chunk: completion id; render: component instance id; visualization: visualization id."},
    "object": {"type": "string", "enum": ["chat.completion.chunk"], "description": "chunk only."},
    "created": {"type": "integer", "format": "int64", "description": "chunk: creation time, Unix seconds."},
    "model": {"type": "string", "description": "chunk: model or agent team."},
    "choices": {"type": "array", "description": "chunk: exactly one choice, index 0.", "items": {
      "type": "object",
      "required": ["index", "delta", "finish_reason"],
      "properties": {
        "index": {"type": "integer", "format": "int32"},
        "delta": {"type": "object", "properties": {
          "role": {"type": "string", "description": "\"assistant\" on the first chunk."},
          "content": {"type": "string", "description": "The text increment (Markdown); absent on the last chunk."}
        }},
        "finish_reason": {"type": "string", "x-nullable": true, "description": "null until the last chunk, then stop or length."}
      }
    }},
    "component": {"type": "string", "description": "render: component name (ThinkingProcess, TaskPlanCard...)."},
    "props": {"type": "object", "x-nullable": true, "description": "render: component properties, free-form."},
    "chart_type": {"type": "string", "description": "visualization: line, bar, pie or table."},
    "title": {"type": "string", "description": "visualization: chart title."},
    "spec": {"type": "object", "x-nullable": true, "description": "visualization: chart specification, free-form."},
    "columns": {"type": "array", "items": {"type": "string"}, "description": "visualization: column names."},
    "rows": {"type": "array", "items": {"type": "array", "items": {}}, "description": "visualization: data rows, cells in the order of columns."},
    "message_id": {"type": "string", "description": "done: id (UUID) of the stored assistant message."},
    "finish_reason": {"type": "string", "description": "done: stop, length, interrupted or error."},
    "usage": {"type": "object", "x-nullable": true, "description": "done: token usage, when the model reports it.", "properties": {
      "prompt_tokens": {"type": "string", "format": "int64"},
      "completion_tokens": {"type": "string", "format": "int64"},
      "total_tokens": {"type": "string", "format": "int64"}
    }},
    "code": {"type": "integer", "format": "int32", "description": "error: envelope code of the failure class."},
    "message": {"type": "string", "description": "error: description, safe to show."},
    "retryable": {"type": "boolean", "description": "error: sending the same message again may succeed."}
  }
}`}

// workflowEventDoc documents the SSE JSON of a workflow event (StreamWorkflowEventsResponse as
// protojson with proto names, every field present); TestFollowedEventSchemas checks it.
var workflowEventDoc = restapi.EventDoc{Name: "shopmind.chat.v1.WorkflowEvent", Schema: `{
  "type": "object",
  "description": "One workflow event, the data of one server-sent event (its id: line is the sequence). The stream ends after the event with a final status (completed, failed, cancelled), then data: [DONE].",
  "required": ["workflow_id", "type", "status", "sequence"],
  "properties": {
    "workflow_id": {"type": "string", "description": "Workflow id (UUID)."},
    "type": {"type": "string", "enum": ["status", "progress", "step", "text", "render", "visualization", "result", "error"], "description": "Event type."},
    "status": {"type": "string", "enum": ["pending", "running", "completed", "failed", "cancelled"], "description": "Workflow status after the event."},
    "progress": {"type": "integer", "format": "int32", "description": "Progress after the event, percent."},
    "step": {"type": "object", "x-nullable": true, "description": "step: the changed step (WorkflowStep)."},
    "result": {"type": "object", "x-nullable": true, "description": "result: {content, renders, visualizations}."},
    "error": {"type": "string", "description": "error: why the workflow failed."},
    "sequence": {"type": "string", "format": "int64", "description": "Sequence number, 1, 2, 3... (a JSON string, as protojson writes int64)."},
    "occurred_at": {"type": "string", "format": "date-time", "x-nullable": true, "description": "When the event happened."},
    "delta": {"type": "string", "description": "text: the report's increment (Markdown)."},
    "render": {"type": "object", "x-nullable": true, "description": "render: id, component, props."},
    "visualization": {"type": "object", "x-nullable": true, "description": "visualization: id, chart_type, title, spec, columns, rows."}
  }
}`}

// sessionEventDoc documents the SSE JSON of a session event (sessionEvent.AppendJSON).
var sessionEventDoc = restapi.EventDoc{Name: "shopmind.chat.v1.SessionEvent", Schema: `{
  "type": "object",
  "description": "One event of a session, the data of one server-sent event (its id: line is the offset): a user message accepted (type message) or an event of its reply (type reply, event is a shopmind.chat.v2.ChatEvent).",
  "required": ["conversation_id", "offset", "type"],
  "properties": {
    "conversation_id": {"type": "string", "description": "Conversation id (UUID)."},
    "offset": {"type": "integer", "format": "int64", "description": "The event's offset; larger for every later event of the session."},
    "type": {"type": "string", "enum": ["message", "reply"]},
    "message": {"type": "string", "description": "message: the user's message."},
    "event": {"type": "object", "description": "reply: the chat stream's event (shopmind.chat.v2.ChatEvent)."}
  }
}`}

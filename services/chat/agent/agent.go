// Package agent is the chat service's agent runtime. Its contract (this file): an Agent
// answers one user message, given the conversation's history, by emitting typed events
// (text chunks, render and visualization events); the chat service stores and streams them
// and closes the reply with done or error. Beside it, shared by the agents: the events an
// answer emits (Emitter, Thinking, Plan), the tool registry and the tools over the analysis
// service. The agents live in subpackages (llmagent, offline; charts and period are their
// helpers) and build.New assembles the configured one. AGENTS.md in this folder says which
// package and file hold what.
package agent

import (
	"context"

	"google.golang.org/protobuf/types/known/structpb"

	chatv2 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v2"
	"github.com/shopmind/shopmind/internal/authn"
)

// Roles of history messages.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleSystem    = "system"
	RoleTool      = "tool"
)

// ToolCall is an assistant's request to run a tool (OpenAI shape).
type ToolCall struct {
	ID        string
	Name      string
	Arguments string // JSON text
}

// Message is one history message as the agents see it.
type Message struct {
	Role       string
	Content    string
	ToolCalls  []ToolCall // assistant messages that called tools
	ToolCallID string     // tool messages: the call they answer
	Name       string     // tool messages: the tool's name
}

// Request is one user message to answer.
type Request struct {
	// Identity is the caller; tools call other services (the semantic layer) with it.
	Identity       *authn.Identity
	ConversationID string
	Message        string
	// History is the recent conversation before Message, oldest first, already repaired
	// (no dangling tool calls).
	History         []Message
	CurrentUser     *chatv2.CurrentUser
	CurrentPageInfo *structpb.Struct
}

// Emit sends one event to the client (and to the stored reply). It fails when the event
// cannot be recorded; agents stop then.
type Emit func(*chatv2.SendMessageResponse) error

// Agent answers messages. Answer returns when the reply is complete; it emits text as
// chunk events, may emit render and visualization events, and must not emit done or error
// itself: the chat service does, from Answer's result.
type Agent interface {
	Answer(ctx context.Context, req *Request, emit Emit) error
}

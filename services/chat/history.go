package chat

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/shopmind/shopmind/services/chat/agent"
)

// toolUseJSON is content_json of a tool_use message.
type toolUseJSON struct {
	ToolCalls []toolCallJSON `json:"tool_calls"`
}

type toolCallJSON struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// toolResultJSON is content_json of a tool_result message.
type toolResultJSON struct {
	ToolCallID string `json:"tool_call_id"`
	Name       string `json:"name"`
}

// formatHistory turns stored messages (ascending) into the agents' history: text messages
// keep role and content, tool_use messages become assistant messages with their tool calls,
// tool_result messages become tool messages answering a call. Empty assistant replies (an
// interrupted reply that produced no text) carry nothing for the agents and are left out.
// The result is repaired (repairToolCalls).
func formatHistory(msgs []*messageRecord) []agent.Message {
	out := make([]agent.Message, 0, len(msgs))
	for _, m := range msgs {
		switch m.Kind {
		case kindToolUse:
			var j toolUseJSON
			_ = json.Unmarshal(m.ContentJSON, &j)
			am := agent.Message{Role: agent.RoleAssistant, Content: m.Content}
			for _, c := range j.ToolCalls {
				am.ToolCalls = append(am.ToolCalls, agent.ToolCall(c))
			}
			out = append(out, am)
		case kindToolResult:
			var j toolResultJSON
			_ = json.Unmarshal(m.ContentJSON, &j)
			out = append(out, agent.Message{Role: agent.RoleTool, Content: m.Content, ToolCallID: j.ToolCallID, Name: j.Name})
		default:
			if m.Role == agent.RoleAssistant && strings.TrimSpace(m.Content) == "" {
				continue
			}
			out = append(out, agent.Message{Role: m.Role, Content: m.Content})
		}
	}
	return repairToolCalls(out)
}

// repairToolCalls removes dangling tool calls, which chat-completion APIs reject: an
// assistant message whose tool_calls are not all answered by the tool messages that
// directly follow it has its tool_calls removed (and is dropped when that leaves it empty);
// tool messages that then answer no remaining call (including those whose call fell out of
// the history window) are dropped too. The input is not modified.
func repairToolCalls(msgs []agent.Message) []agent.Message {
	out := make([]agent.Message, 0, len(msgs))
	open := map[string]bool{} // call ids of the last kept assistant message with tool calls
	for i, m := range msgs {
		switch {
		case m.Role == agent.RoleAssistant && len(m.ToolCalls) > 0:
			answered := map[string]bool{}
			for j := i + 1; j < len(msgs) && msgs[j].Role == agent.RoleTool; j++ {
				answered[msgs[j].ToolCallID] = true
			}
			complete := true
			for _, c := range m.ToolCalls {
				if !answered[c.ID] {
					complete = false
					break
				}
			}
			open = map[string]bool{}
			if complete {
				for _, c := range m.ToolCalls {
					open[c.ID] = true
				}
				m.ToolCalls = append([]agent.ToolCall(nil), m.ToolCalls...)
				out = append(out, m)
				continue
			}
			m.ToolCalls = nil
			if strings.TrimSpace(m.Content) != "" {
				out = append(out, m)
			}
		case m.Role == agent.RoleTool:
			if open[m.ToolCallID] {
				delete(open, m.ToolCallID) // one answer per call
				out = append(out, m)
			}
		default:
			open = map[string]bool{}
			out = append(out, m)
		}
	}
	return out
}

// preview keeps the first n characters of s, appending "…" when it was cut.
func preview(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// titleFrom derives a session title from its first message: whitespace collapsed, at most
// 200 characters ("…" included when cut).
func titleFrom(message string) string {
	return preview(strings.Join(strings.Fields(message), " "), 199)
}

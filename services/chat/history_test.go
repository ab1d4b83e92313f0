package chat

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shopmind/shopmind/services/chat/agent"
)

func user(s string) agent.Message      { return agent.Message{Role: agent.RoleUser, Content: s} }
func assistant(s string) agent.Message { return agent.Message{Role: agent.RoleAssistant, Content: s} }
func calls(content string, ids ...string) agent.Message {
	m := agent.Message{Role: agent.RoleAssistant, Content: content}
	for _, id := range ids {
		m.ToolCalls = append(m.ToolCalls, agent.ToolCall{ID: id, Name: "execute_sql", Arguments: `{"sql":"SELECT 1"}`})
	}
	return m
}
func result(id string) agent.Message {
	return agent.Message{Role: agent.RoleTool, Content: `{"rows":[[1]]}`, ToolCallID: id, Name: "execute_sql"}
}

func TestRepairToolCalls(t *testing.T) {
	cases := []struct {
		name    string
		in, out []agent.Message
	}{
		{"nothing to repair",
			[]agent.Message{user("q"), calls("", "a"), result("a"), assistant("answer")},
			[]agent.Message{user("q"), calls("", "a"), result("a"), assistant("answer")}},
		{"dangling call at the end loses its tool_calls and, empty, the message",
			[]agent.Message{user("q"), calls("", "a")},
			[]agent.Message{user("q")}},
		{"dangling call with text keeps the text",
			[]agent.Message{user("q"), calls("let me check", "a"), user("again")},
			[]agent.Message{user("q"), assistant("let me check"), user("again")}},
		{"one of two calls unanswered: all tool_calls go, and the answered one's result too",
			[]agent.Message{user("q"), calls("", "a", "b"), result("a"), assistant("partial")},
			[]agent.Message{user("q"), assistant("partial")}},
		{"a result separated from its call by another message does not count",
			[]agent.Message{user("q"), calls("", "a"), user("interrupting"), result("a")},
			[]agent.Message{user("q"), user("interrupting")}},
		{"a result whose call fell out of the window is dropped",
			[]agent.Message{result("old"), assistant("answer"), user("next")},
			[]agent.Message{assistant("answer"), user("next")}},
		{"a duplicated result is kept once",
			[]agent.Message{calls("", "a"), result("a"), result("a"), assistant("ok")},
			[]agent.Message{calls("", "a"), result("a"), assistant("ok")}},
		{"two rounds of calls",
			[]agent.Message{calls("", "a"), result("a"), calls("", "b", "c"), result("c"), result("b"), assistant("done")},
			[]agent.Message{calls("", "a"), result("a"), calls("", "b", "c"), result("c"), result("b"), assistant("done")}},
		{"empty", nil, []agent.Message{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := append([]agent.Message(nil), c.in...)
			got := repairToolCalls(in)
			if !reflect.DeepEqual(got, c.out) {
				t.Fatalf("got  %+v\nwant %+v", got, c.out)
			}
			if !reflect.DeepEqual(in, c.in) && c.in != nil {
				t.Fatal("the input was modified")
			}
		})
	}
}

func TestFormatHistory(t *testing.T) {
	msgs := []*messageRecord{
		{Role: "user", Kind: kindText, Content: "GMV last week?"},
		{Role: "assistant", Kind: kindToolUse, ContentJSON: []byte(`{"tool_calls":[{"id":"c1","name":"execute_sql","arguments":"{\"sql\":\"SELECT 1\"}"}]}`)},
		{Role: "tool", Kind: kindToolResult, Content: "42", ContentJSON: []byte(`{"tool_call_id":"c1","name":"execute_sql"}`)},
		{Role: "assistant", Kind: kindText, Content: "GMV was 42."},
		{Role: "user", Kind: kindText, Content: "and the week before?"},
		{Role: "assistant", Kind: kindToolUse, ContentJSON: []byte(`{"tool_calls":[{"id":"c2","name":"execute_sql","arguments":"{}"}]}`)},
		{Role: "assistant", Kind: kindText, Content: "", Status: statusInterrupted}, // interrupted, nothing said
	}
	got := formatHistory(msgs)
	want := []agent.Message{
		user("GMV last week?"),
		{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "c1", Name: "execute_sql", Arguments: `{"sql":"SELECT 1"}`}}},
		{Role: agent.RoleTool, Content: "42", ToolCallID: "c1", Name: "execute_sql"},
		assistant("GMV was 42."),
		user("and the week before?"),
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

func TestPreviewAndTitle(t *testing.T) {
	if got := preview("short", 200); got != "short" {
		t.Fatal(got)
	}
	long := strings.Repeat("é", 250)
	if got := preview(long, 200); got != strings.Repeat("é", 200)+"…" {
		t.Fatalf("preview: %q", got)
	}
	title := titleFrom("  What was\n\nGMV  " + long)
	if n := len([]rune(title)); n != 200 || !strings.HasPrefix(title, "What was GMV é") || !strings.HasSuffix(title, "…") {
		t.Fatalf("title (%d): %q", n, title)
	}
}

// The idle cleanup releases exactly the states unused past the timeout and never one that
// a request holds.
func TestSessionsSweep(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ss := newSessions(30 * time.Minute)
	ss.now = func() time.Time { return now }
	a, b, c := ss.acquire("a"), ss.acquire("b"), ss.acquire("c")
	ss.release(a)
	ss.release(b)
	now = now.Add(20 * time.Minute)
	ss.release(ss.acquire("b")) // b used again
	now = now.Add(15 * time.Minute)
	if n := ss.sweep(); n != 1 || ss.size() != 2 {
		t.Fatalf("first sweep released %d, %d left", n, ss.size())
	}
	now = now.Add(time.Hour)
	if n := ss.sweep(); n != 1 || ss.size() != 1 {
		t.Fatalf("second sweep released %d, %d left", n, ss.size())
	}
	if ss.acquire("c") != c { // still held: the same state
		t.Fatal("a held state was released")
	}
	ss.drop("c")
	if ss.size() != 1 {
		t.Fatal("drop removed a held state")
	}
	ss.release(c)
	ss.release(c)
	ss.drop("c")
	if ss.size() != 0 {
		t.Fatal("drop kept an unused state")
	}
}

func TestHistoryCacheVersion(t *testing.T) {
	s := &sessionState{}
	v1 := time.Date(2026, 1, 1, 0, 0, 0, 1000, time.UTC)
	if _, ok := s.cachedHistory(time.Time{}); ok {
		t.Fatal("an empty state has no cache")
	}
	s.remember([]agent.Message{user("a"), assistant("b"), user("c")}, v1, 2)
	h, ok := s.cachedHistory(v1)
	if !ok || !reflect.DeepEqual(h, []agent.Message{assistant("b"), user("c")}) {
		t.Fatalf("cache: %v %+v", ok, h)
	}
	if _, ok := s.cachedHistory(v1.Add(time.Microsecond)); ok {
		t.Fatal("a stale version hit the cache")
	}
	// Trimming may cut a tool exchange: the cache is repaired like a stored history.
	s.remember([]agent.Message{user("a"), calls("", "x"), result("x"), assistant("b")}, v1, 2)
	if h, _ := s.cachedHistory(v1); !reflect.DeepEqual(h, []agent.Message{assistant("b")}) {
		t.Fatalf("trimmed cache not repaired: %+v", h)
	}
}

// Package llmtest is a scriptable fake of an OpenAI-compatible API (chat completions,
// streamed or not, with tool calls; embeddings) on httptest, for tests of the llm client and
// of the agents that use it.
package llmtest

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopmind/shopmind/services/chat/llm"
)

// Reply scripts the answer to one chat completions request.
type Reply struct {
	// Status, when not 0 or 200, answers with this HTTP status and an OpenAI error body.
	Status int
	// ErrorMessage is the error body's message (Status set) or the mid-stream error's.
	ErrorMessage string
	// RetryAfter is sent as the Retry-After header with an error status.
	RetryAfter string
	// Text is the answer, streamed as one chunk per element.
	Text []string
	// ToolCalls are streamed as deltas: the first carries id and name, the arguments follow
	// in pieces.
	ToolCalls []llm.ToolCall
	// FailAfter > 0: a streamed answer fails after this many text chunks.
	FailAfter int
	// Drop makes that failure a dropped connection; otherwise an error chunk is sent.
	Drop bool
	// NoIndex omits the index of tool call deltas (some providers do).
	NoIndex bool
	// Usage is reported with the last chunk.
	Usage *llm.Usage
	// Delay waits before answering.
	Delay time.Duration
	// Match, when set, reserves the reply for a request whose system message contains it
	// (concurrent agents with different instructions each get their own script); replies
	// are otherwise taken in order, the first unused one that matches.
	Match string
}

// Request is a recorded chat completions request.
type Request struct {
	Model      string          `json:"model"`
	Messages   []llm.Message   `json:"messages"`
	Tools      []llm.Tool      `json:"tools"`
	ToolChoice json.RawMessage `json:"tool_choice"`
	Stream     bool            `json:"stream"`
	Auth       string          `json:"-"`
}

// Server is the fake API. Its base URL (for llm.Config.BaseURL) is URL + "/v1".
type Server struct {
	*httptest.Server
	mu          sync.Mutex
	replies     []Reply
	used        []bool
	requests    []Request
	embeddings  [][]string
	embedStatus int
}

// FailEmbeddings makes embeddings requests answer with status (0: succeed again).
func (s *Server) FailEmbeddings(status int) {
	s.mu.Lock()
	s.embedStatus = status
	s.mu.Unlock()
}

// New starts a fake answering chat requests with replies in order; once they are spent,
// every request gets a 500.
func New(t testing.TB, replies ...Reply) *Server {
	s := &Server{replies: replies, used: make([]bool, len(replies))}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.chat)
	mux.HandleFunc("POST /v1/embeddings", s.embed)
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// Add appends scripted replies (for scripts that depend on what the test learns after the
// server started).
func (s *Server) Add(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replies = append(s.replies, replies...)
	s.used = append(s.used, make([]bool, len(replies))...)
}

// BaseURL is the API root to configure clients with.
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// Requests returns the chat requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// EmbeddingInputs returns the inputs of each embeddings request received so far.
func (s *Server) EmbeddingInputs() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]string(nil), s.embeddings...)
}

func writeError(w http.ResponseWriter, status int, msg, retryAfter string) {
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	typ := "server_error"
	if status == http.StatusTooManyRequests {
		typ = "rate_limit_exceeded"
	} else if status < 500 {
		typ = "invalid_request_error"
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": nil}})
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	var req Request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "bad json: "+err.Error(), "")
		return
	}
	req.Auth = r.Header.Get("Authorization")
	s.mu.Lock()
	s.requests = append(s.requests, req)
	var system string
	if len(req.Messages) > 0 && req.Messages[0].Role == llm.RoleSystem {
		system = req.Messages[0].Content
	}
	var rep Reply
	ok := false
	for i, r := range s.replies {
		if !s.used[i] && (r.Match == "" || strings.Contains(system, r.Match)) {
			rep, ok, s.used[i] = r, true, true
			break
		}
	}
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusInternalServerError, "no scripted reply left", "")
		return
	}
	if rep.Delay > 0 {
		select {
		case <-time.After(rep.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if rep.Status != 0 && rep.Status != http.StatusOK {
		writeError(w, rep.Status, rep.ErrorMessage, rep.RetryAfter)
		return
	}
	if !req.Stream {
		s.complete(w, req, rep)
		return
	}
	s.stream(w, req, rep)
}

func (s *Server) complete(w http.ResponseWriter, req Request, rep Reply) {
	msg := map[string]any{"role": "assistant", "content": strings.Join(rep.Text, "")}
	finish := "stop"
	if len(rep.ToolCalls) > 0 {
		msg["tool_calls"] = rep.ToolCalls
		finish = "tool_calls"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-fake", "object": "chat.completion", "created": 1767225600, "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   rep.Usage,
	})
}

func (s *Server) stream(w http.ResponseWriter, req Request, rep Reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl, _ := w.(http.Flusher)
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1767225600, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	fmt.Fprint(w, ": keep-alive\n\n")
	send(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for i, t := range rep.Text {
		if rep.FailAfter > 0 && i == rep.FailAfter {
			s.fail(w, rep)
			return
		}
		send(chunk(map[string]any{"content": t}, nil))
	}
	if rep.FailAfter > 0 && rep.FailAfter >= len(rep.Text) {
		s.fail(w, rep)
		return
	}
	for i, tc := range rep.ToolCalls {
		first := map[string]any{"id": tc.ID, "type": "function", "function": map[string]any{"name": tc.Function.Name, "arguments": ""}}
		if !rep.NoIndex {
			first["index"] = i
		}
		send(chunk(map[string]any{"tool_calls": []any{first}}, nil))
		args := []rune(tc.Function.Arguments)
		for len(args) > 0 {
			n := min(7, len(args))
			part := map[string]any{"function": map[string]any{"arguments": string(args[:n])}}
			if !rep.NoIndex {
				part["index"] = i
			}
			send(chunk(map[string]any{"tool_calls": []any{part}}, nil))
			args = args[n:]
		}
	}
	finish := "stop"
	if len(rep.ToolCalls) > 0 {
		finish = "tool_calls"
	}
	last := chunk(map[string]any{}, finish)
	if rep.Usage != nil {
		last["usage"] = rep.Usage
	}
	send(last)
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func (s *Server) fail(w http.ResponseWriter, rep Reply) {
	if rep.Drop {
		if hj, ok := w.(http.Hijacker); ok {
			if fl, ok := w.(http.Flusher); ok {
				fl.Flush()
			}
			conn, _, err := hj.Hijack()
			if err == nil {
				conn.Close()
			}
		}
		return
	}
	msg := rep.ErrorMessage
	if msg == "" {
		msg = "The server had an error while processing your request."
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "server_error", "code": nil}})
	fmt.Fprintf(w, "data: %s\n\n", b)
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
}

func (s *Server) embed(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "bad json", "")
		return
	}
	s.mu.Lock()
	s.embeddings = append(s.embeddings, req.Input)
	status := s.embedStatus
	s.mu.Unlock()
	if status != 0 {
		writeError(w, status, "embeddings unavailable", "")
		return
	}
	const dim = 8
	data := make([]any, len(req.Input))
	for i, in := range req.Input {
		v := make([]float32, dim)
		for _, f := range strings.Fields(strings.ToLower(in)) {
			h := fnv.New32a()
			h.Write([]byte(f))
			v[int(h.Sum32())%dim]++
		}
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": v}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": req.Model})
}

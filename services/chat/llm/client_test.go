package llm_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/services/chat/llm"
	"github.com/shopmind/shopmind/services/chat/llm/llmtest"
)

func newClient(t *testing.T, base string, mod func(*llm.Config)) *llm.Client {
	t.Helper()
	cfg := llm.Config{Endpoint: llm.Endpoint{BaseURL: base, APIKey: "sk-test", Model: "fake-model", RetryBackoff: time.Millisecond}}
	if mod != nil {
		mod(&cfg)
	}
	c, err := llm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func kindOf(err error) (apperr.Kind, bool) {
	var ae *apperr.Error
	if errors.As(err, &ae) {
		return ae.Kind, true
	}
	return 0, false
}

func TestStreamText(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Text: []string{"GMV ", "was ", "1,234.50"}, Usage: &llm.Usage{PromptTokens: 10, CompletionTokens: 3, TotalTokens: 13}})
	c := newClient(t, srv.BaseURL(), nil)
	var got []string
	res, err := c.Stream(context.Background(), llm.ChatRequest{Messages: []llm.Message{{Role: "user", Content: "hi"}}}, func(s string) error {
		got = append(got, s)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "|") != "GMV |was |1,234.50" {
		t.Fatalf("deltas %q", got)
	}
	if res.Message.Content != "GMV was 1,234.50" || res.FinishReason != "stop" || res.Message.Role != "assistant" {
		t.Fatalf("result %+v", res)
	}
	if res.Usage == nil || res.Usage.TotalTokens != 13 {
		t.Fatalf("usage %+v", res.Usage)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || !reqs[0].Stream || reqs[0].Model != "fake-model" || reqs[0].Auth != "Bearer sk-test" {
		t.Fatalf("request %+v", reqs)
	}
}

func TestStreamToolCalls(t *testing.T) {
	for _, noIndex := range []bool{false, true} {
		srv := llmtest.New(t, llmtest.Reply{NoIndex: noIndex, ToolCalls: []llm.ToolCall{
			{ID: "call_1", Function: llm.FunctionCall{Name: "search_indicators", Arguments: `{"query":"销售额","top_k":3}`}},
			{ID: "call_2", Function: llm.FunctionCall{Name: "query_metrics", Arguments: `{"metrics":["gmv"],"dimensions":["shop"]}`}},
		}})
		c := newClient(t, srv.BaseURL(), nil)
		res, err := c.Stream(context.Background(), llm.ChatRequest{
			Messages: []llm.Message{{Role: "user", Content: "q"}},
			Tools:    []llm.Tool{{Type: "function", Function: llm.FunctionDef{Name: "search_indicators", Parameters: []byte(`{"type":"object"}`)}}},
		}, func(string) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		tc := res.Message.ToolCalls
		if len(tc) != 2 || res.FinishReason != "tool_calls" {
			t.Fatalf("noIndex=%v: tool calls %+v finish %q", noIndex, tc, res.FinishReason)
		}
		if tc[0].ID != "call_1" || tc[0].Function.Name != "search_indicators" || tc[0].Function.Arguments != `{"query":"销售额","top_k":3}` {
			t.Fatalf("call 0 %+v", tc[0])
		}
		if tc[1].ID != "call_2" || tc[1].Function.Name != "query_metrics" || tc[1].Function.Arguments != `{"metrics":["gmv"],"dimensions":["shop"]}` {
			t.Fatalf("call 1 %+v", tc[1])
		}
		if len(srv.Requests()[0].Tools) != 1 {
			t.Fatal("tools not sent")
		}
	}
}

func TestStreamErrorMidStream(t *testing.T) {
	for _, drop := range []bool{false, true} {
		srv := llmtest.New(t, llmtest.Reply{Text: []string{"Part ", "one ", "two"}, FailAfter: 2, Drop: drop, ErrorMessage: "overloaded"})
		c := newClient(t, srv.BaseURL(), func(c *llm.Config) { c.MaxRetries = 3 })
		var got strings.Builder
		_, err := c.Stream(context.Background(), llm.ChatRequest{Messages: []llm.Message{{Role: "user", Content: "q"}}}, func(s string) error {
			got.WriteString(s)
			return nil
		})
		if err == nil {
			t.Fatalf("drop=%v: no error", drop)
		}
		if k, ok := kindOf(err); !ok || k != apperr.KindUpstream {
			t.Fatalf("drop=%v: error %v is not upstream", drop, err)
		}
		if got.String() != "Part one " {
			t.Fatalf("drop=%v: partial text %q", drop, got.String())
		}
		if len(srv.Requests()) != 1 {
			t.Fatalf("drop=%v: a stream that produced output was retried", drop)
		}
		if !drop && !strings.Contains(err.Error(), "overloaded") {
			t.Fatalf("message %q", err)
		}
	}
}

func TestStatusErrors(t *testing.T) {
	cases := []struct {
		status    int
		retryable bool
	}{{429, true}, {500, true}, {401, false}, {400, false}}
	for _, tc := range cases {
		srv := llmtest.New(t, llmtest.Reply{Status: tc.status, ErrorMessage: "provider says no", RetryAfter: "7"})
		c := newClient(t, srv.BaseURL(), nil)
		_, err := c.Stream(context.Background(), llm.ChatRequest{Messages: []llm.Message{{Role: "user", Content: "q"}}}, func(string) error { return nil })
		if k, ok := kindOf(err); !ok || k != apperr.KindUpstream {
			t.Fatalf("%d: %v is not upstream", tc.status, err)
		}
		var pe *llm.ProviderError
		if !errors.As(err, &pe) || pe.StatusCode != tc.status || pe.Message != "provider says no" || pe.Retryable != tc.retryable {
			t.Fatalf("%d: provider error %+v", tc.status, pe)
		}
		if tc.status == 429 && pe.RetryAfter != 7*time.Second {
			t.Fatalf("retry after %v", pe.RetryAfter)
		}
		if !strings.Contains(err.Error(), "HTTP") || !strings.Contains(err.Error(), "provider says no") {
			t.Fatalf("message %q", err)
		}
		_, err = c.Complete(context.Background(), llm.ChatRequest{Messages: []llm.Message{{Role: "user", Content: "q"}}})
		if k, ok := kindOf(err); !ok || k != apperr.KindUpstream {
			t.Fatalf("complete %d: %v", tc.status, err)
		}
	}
}

func TestRetriesThenSucceeds(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Status: 503, ErrorMessage: "busy"}, llmtest.Reply{Status: 429, ErrorMessage: "slow down"},
		llmtest.Reply{Text: []string{"ok"}})
	c := newClient(t, srv.BaseURL(), func(c *llm.Config) { c.MaxRetries = 2 })
	res, err := c.Stream(context.Background(), llm.ChatRequest{Messages: []llm.Message{{Role: "user", Content: "q"}}}, func(string) error { return nil })
	if err != nil || res.Message.Content != "ok" {
		t.Fatalf("%v %+v", err, res)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Fatalf("%d requests", n)
	}
}

func TestComplete(t *testing.T) {
	srv := llmtest.New(t,
		llmtest.Reply{Text: []string{"Hello ", "there"}},
		llmtest.Reply{ToolCalls: []llm.ToolCall{{ID: "c1", Function: llm.FunctionCall{Name: "get_database_info", Arguments: "{}"}}}})
	c := newClient(t, srv.BaseURL(), nil)
	res, err := c.Complete(context.Background(), llm.ChatRequest{Messages: []llm.Message{{Role: "user", Content: "q"}}})
	if err != nil || res.Message.Content != "Hello there" || res.FinishReason != "stop" {
		t.Fatalf("%v %+v", err, res)
	}
	res, err = c.Complete(context.Background(), llm.ChatRequest{Messages: []llm.Message{{Role: "user", Content: "q"}}})
	if err != nil || len(res.Message.ToolCalls) != 1 || res.Message.ToolCalls[0].Function.Name != "get_database_info" {
		t.Fatalf("%v %+v", err, res)
	}
	if srv.Requests()[0].Stream {
		t.Fatal("non-streaming request sent stream=true")
	}
}

func TestTimeouts(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Delay: 2 * time.Second, Text: []string{"late"}}, llmtest.Reply{Delay: 2 * time.Second, Text: []string{"late"}})
	c := newClient(t, srv.BaseURL(), func(c *llm.Config) { c.Timeout = 100 * time.Millisecond })
	start := time.Now()
	_, err := c.Stream(context.Background(), llm.ChatRequest{Messages: []llm.Message{{Role: "user", Content: "q"}}}, func(string) error { return nil })
	if k, ok := kindOf(err); !ok || k != apperr.KindTimeout {
		t.Fatalf("stream: %v", err)
	}
	_, err = c.Complete(context.Background(), llm.ChatRequest{Messages: []llm.Message{{Role: "user", Content: "q"}}})
	if k, ok := kindOf(err); !ok || k != apperr.KindTimeout {
		t.Fatalf("complete: %v", err)
	}
	if time.Since(start) > 1500*time.Millisecond {
		t.Fatal("timeouts not applied")
	}
}

func TestStreamIdleTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte(`data: {"choices":[{"index":0,"delta":{"content":"a"}}]}` + "\n\n"))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(3 * time.Second):
		}
	}))
	defer srv.Close()
	c := newClient(t, srv.URL, func(c *llm.Config) { c.StreamIdleTimeout = 100 * time.Millisecond })
	var got string
	_, err := c.Stream(context.Background(), llm.ChatRequest{Messages: []llm.Message{{Role: "user", Content: "q"}}}, func(s string) error { got += s; return nil })
	if k, ok := kindOf(err); !ok || k != apperr.KindTimeout || got != "a" {
		t.Fatalf("%v %q", err, got)
	}
}

func TestCallerCancellation(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Delay: 2 * time.Second})
	c := newClient(t, srv.BaseURL(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.Stream(ctx, llm.ChatRequest{Messages: []llm.Message{{Role: "user", Content: "q"}}}, func(string) error { return nil })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v", err)
	}
}

func TestUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL
	srv.Close()
	c := newClient(t, base, nil)
	_, err := c.Complete(context.Background(), llm.ChatRequest{Messages: []llm.Message{{Role: "user", Content: "q"}}})
	if k, ok := kindOf(err); !ok || k != apperr.KindUpstream || strings.Contains(err.Error(), base) {
		t.Fatalf("%v", err)
	}
}

func TestCallbackErrorStops(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Text: []string{"a", "b", "c"}})
	c := newClient(t, srv.BaseURL(), nil)
	stop := errors.New("client gone")
	_, err := c.Stream(context.Background(), llm.ChatRequest{Messages: []llm.Message{{Role: "user", Content: "q"}}}, func(string) error { return stop })
	if !errors.Is(err, stop) {
		t.Fatalf("%v", err)
	}
}

func TestMessageJSON(t *testing.T) {
	b, _ := llm.Message{Role: "assistant", ToolCalls: []llm.ToolCall{{ID: "x", Type: "function"}}}.MarshalJSON()
	if !strings.Contains(string(b), `"content":null`) {
		t.Fatal(string(b))
	}
	b, _ = llm.Message{Role: "user"}.MarshalJSON()
	if !strings.Contains(string(b), `"content":""`) {
		t.Fatal(string(b))
	}
}

func TestEmbeddings(t *testing.T) {
	srv := llmtest.New(t)
	e, err := llm.NewEmbeddings(llm.EmbeddingsConfig{Endpoint: llm.Endpoint{BaseURL: srv.BaseURL(), Model: "emb"}, Batch: 2})
	if err != nil {
		t.Fatal(err)
	}
	vecs, err := e.Embed(context.Background(), []string{"gmv sales", "orders", "buyers"})
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != 3 || len(vecs[0]) != 8 {
		t.Fatalf("%v", vecs)
	}
	if in := srv.EmbeddingInputs(); len(in) != 2 || len(in[0]) != 2 || len(in[1]) != 1 {
		t.Fatalf("batches %v", in)
	}
	if e.ID() != "openai:emb" {
		t.Fatal(e.ID())
	}
	srv.FailEmbeddings(500)
	_, err = e.Embed(context.Background(), []string{"x"})
	if k, ok := kindOf(err); !ok || k != apperr.KindUpstream {
		t.Fatalf("%v", err)
	}
}

package llm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Defaults of Config.
const (
	DefaultTimeout           = 120 * time.Second
	DefaultStreamIdleTimeout = 60 * time.Second
	DefaultRetryBackoff      = 500 * time.Millisecond
	maxRetryWait             = 10 * time.Second
	maxErrorBody             = 64 << 10
	maxStreamLine            = 8 << 20
)

// Endpoint is what both clients need of an OpenAI-compatible API.
type Endpoint struct {
	// BaseURL is the API root, for example https://api.openai.com/v1; requests go to
	// BaseURL + "/chat/completions" or "/embeddings". Required.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <key>" when not empty.
	APIKey string
	// Model is the default model of requests that name none (chat), or the embeddings
	// model. Required.
	Model string
	// Timeout bounds a non-streaming request, and the wait for a stream's response headers
	// (DefaultTimeout when 0).
	Timeout time.Duration
	// MaxRetries is how often a request failing with 429, 5xx or a transport error before any
	// output is tried again; 0: never.
	MaxRetries int
	// RetryBackoff is the first wait between tries (doubled each time) unless the provider
	// sends Retry-After (DefaultRetryBackoff when 0).
	RetryBackoff time.Duration
	// HTTPClient is the transport; nil: a client without its own timeout.
	HTTPClient *http.Client
}

// prepare checks the endpoint, fills its defaults and returns the API root (what names
// the client in errors).
func (e *Endpoint) prepare(what string) (string, error) {
	base, err := checkBaseURL(e.BaseURL)
	if err != nil {
		return "", err
	}
	if e.Model == "" {
		return "", fmt.Errorf("llm: %s model is required", what)
	}
	if e.Timeout <= 0 {
		e.Timeout = DefaultTimeout
	}
	if e.RetryBackoff <= 0 {
		e.RetryBackoff = DefaultRetryBackoff
	}
	if e.HTTPClient == nil {
		e.HTTPClient = &http.Client{}
	}
	return base, nil
}

// Config configures a Client.
type Config struct {
	Endpoint
	// Temperature is the default sampling temperature; nil: the provider's default.
	Temperature *float64
	// StreamIdleTimeout bounds the gap between two lines of a stream.
	StreamIdleTimeout time.Duration
	// Headers are added to every request (for example OpenAI-Organization).
	Headers map[string]string
}

// Client is an OpenAI-compatible chat completions client.
type Client struct {
	cfg Config
	url string
}

// New validates cfg and returns a client.
func New(cfg Config) (*Client, error) {
	base, err := cfg.prepare("chat")
	if err != nil {
		return nil, err
	}
	if cfg.StreamIdleTimeout <= 0 {
		cfg.StreamIdleTimeout = DefaultStreamIdleTimeout
	}
	return &Client{cfg: cfg, url: base + "/chat/completions"}, nil
}

func checkBaseURL(raw string) (string, error) {
	base := strings.TrimRight(strings.TrimSpace(raw), "/")
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("llm: base URL %q is not an http(s) URL", raw)
	}
	return base, nil
}

// Model is the client's default model.
func (c *Client) Model() string { return c.cfg.Model }

type wireRequest struct {
	ChatRequest
	Stream bool `json:"stream"`
}

func (c *Client) body(req ChatRequest, stream bool) ([]byte, error) {
	if req.Model == "" {
		req.Model = c.cfg.Model
	}
	if req.Temperature == nil {
		req.Temperature = c.cfg.Temperature
	}
	return json.Marshal(wireRequest{ChatRequest: req, Stream: stream})
}

// Complete runs a non-streaming chat completion.
func (c *Client) Complete(ctx context.Context, req ChatRequest) (*ChatResponse, error) {
	const op = "chat completion"
	body, err := c.body(req, false)
	if err != nil {
		return nil, err
	}
	var out *ChatResponse
	err = c.withRetries(ctx, func(attempt int) (bool, error) {
		cctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
		resp, err := c.post(cctx, c.url, body, false)
		if err != nil {
			return true, transportError(op, ctx, context.Cause(cctx), err)
		}
		defer resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
			return true, upstream(statusError(op, resp, b))
		}
		var cmp completion
		if err := json.NewDecoder(resp.Body).Decode(&cmp); err != nil {
			if ctx.Err() != nil || cctx.Err() != nil {
				return false, transportError(op, ctx, context.Cause(cctx), err)
			}
			return false, upstream(&ProviderError{Op: op, Message: "malformed answer: " + shorten(err.Error())})
		}
		if cmp.Error != nil {
			return false, upstream(&ProviderError{Op: op, Message: shorten(cmp.Error.Message), Type: cmp.Error.Type, Code: codeString(cmp.Error.Code)})
		}
		if len(cmp.Choices) == 0 {
			return false, upstream(&ProviderError{Op: op, Message: "the answer holds no choice"})
		}
		ch := cmp.Choices[0]
		msg := ch.Message
		if msg.Role == "" {
			msg.Role = RoleAssistant
		}
		for i := range msg.ToolCalls {
			if msg.ToolCalls[i].Type == "" {
				msg.ToolCalls[i].Type = "function"
			}
		}
		out = &ChatResponse{ID: cmp.ID, Model: cmp.Model, Message: msg, FinishReason: ch.FinishReason, Usage: cmp.Usage}
		return false, nil
	})
	return out, err
}

// Stream runs a streaming chat completion. onText receives each text increment as it
// arrives (an error from it stops the stream and is returned); the assembled message,
// including tool calls, is returned at the end. A provider failure in the middle of the
// stream is returned as an error after the text already passed to onText.
func (c *Client) Stream(ctx context.Context, req ChatRequest, onText func(string) error) (*ChatResponse, error) {
	const op = "chat stream"
	body, err := c.body(req, true)
	if err != nil {
		return nil, err
	}
	var out *ChatResponse
	err = c.withRetries(ctx, func(attempt int) (bool, error) {
		sctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		timer := time.AfterFunc(c.cfg.Timeout, func() { cancel(errFirstByteTimeout) })
		defer timer.Stop()
		resp, err := c.post(sctx, c.url, body, true)
		if err != nil {
			return true, transportError(op, ctx, context.Cause(sctx), err)
		}
		defer resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
			return true, upstream(statusError(op, resp, b))
		}
		if !timer.Stop() {
			// the first-byte timer fired while the headers arrived: treat as timed out
			return true, transportError(op, ctx, context.Cause(sctx), context.DeadlineExceeded)
		}
		idle := time.AfterFunc(c.cfg.StreamIdleTimeout, func() { cancel(errIdleTimeout) })
		defer idle.Stop()
		var started bool // output reached the caller: never retried
		res, err := readStream(resp.Body, func() { idle.Reset(c.cfg.StreamIdleTimeout) }, func(s string) error {
			started = true
			return onText(s)
		})
		if err != nil {
			var se *streamErr
			switch {
			case errors.As(err, &se):
				return !started && se.pe.Retryable, upstream(se.pe)
			case errors.Is(err, errCallback):
				return false, errors.Unwrap(err)
			default:
				return !started, transportError(op, ctx, context.Cause(sctx), err)
			}
		}
		out = res
		return false, nil
	})
	return out, err
}

// withRetries runs try until it succeeds, fails for good, or MaxRetries is spent. try
// reports whether its failure may be retried.
func (c *Client) withRetries(ctx context.Context, try func(attempt int) (bool, error)) error {
	return retry(ctx, c.cfg.MaxRetries, c.cfg.RetryBackoff, try)
}

// retry is withRetries with explicit bounds (embeddings use it too).
func retry(ctx context.Context, maxRetries int, backoff time.Duration, try func(attempt int) (bool, error)) error {
	for attempt := 0; ; attempt++ {
		again, err := try(attempt)
		if err == nil {
			return nil
		}
		if !again || attempt >= maxRetries || !Retryable(err) || ctx.Err() != nil {
			return err
		}
		wait := backoff << attempt
		var pe *ProviderError
		if errors.As(err, &pe) && pe.RetryAfter > 0 {
			wait = pe.RetryAfter
		}
		wait = min(wait, maxRetryWait)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

func (c *Client) post(ctx context.Context, target string, body []byte, stream bool) (*http.Response, error) {
	return post(ctx, c.cfg.HTTPClient, target, c.cfg.APIKey, c.cfg.Headers, body, stream)
}

func post(ctx context.Context, hc *http.Client, target, apiKey string, headers map[string]string, body []byte, stream bool) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if stream {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			return nil, ue.Err // without the URL: messages reach users
		}
		return nil, err
	}
	return resp, nil
}

type streamErr struct{ pe *ProviderError }

func (e *streamErr) Error() string { return e.pe.Error() }

var errCallback = errors.New("llm: stream callback")

type callbackErr struct{ err error }

func (e *callbackErr) Error() string        { return e.err.Error() }
func (e *callbackErr) Is(target error) bool { return target == errCallback }
func (e *callbackErr) Unwrap() error        { return e.err }

type toolAcc struct {
	id, typ, name string
	args          strings.Builder
}

// readStream parses the server-sent events of a streamed completion: `data: <json>` lines,
// ending with `data: [DONE]`. Comment lines and event names are skipped; an `error`
// object inside a chunk is a provider failure.
func readStream(r io.Reader, onLine func(), onText func(string) error) (*ChatResponse, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxStreamLine)
	res := &ChatResponse{Message: Message{Role: RoleAssistant}}
	var text strings.Builder
	var calls []*toolAcc
	byIndex := map[int]*toolAcc{}
	done, finished := false, false
	for sc.Scan() {
		onLine()
		line := sc.Text()
		if !strings.HasPrefix(line, "data:") {
			continue // blank separators, ": keep-alive" comments, "event:" and "id:" fields
		}
		payload := strings.TrimSpace(strings.TrimPrefix(line, "data:"))
		if payload == "" {
			continue
		}
		if payload == "[DONE]" {
			done = true
			break
		}
		var ch chunk
		if err := json.Unmarshal([]byte(payload), &ch); err != nil {
			return nil, &streamErr{&ProviderError{Op: "chat stream", Message: "malformed chunk: " + shorten(payload)}}
		}
		if ch.Error != nil {
			return nil, &streamErr{&ProviderError{Op: "chat stream", Message: shorten(ch.Error.Message), Type: ch.Error.Type,
				Code: codeString(ch.Error.Code), Retryable: isRetryableType(ch.Error.Type, codeString(ch.Error.Code))}}
		}
		if ch.ID != "" {
			res.ID = ch.ID
		}
		if ch.Model != "" {
			res.Model = ch.Model
		}
		if ch.Usage != nil {
			res.Usage = ch.Usage
		}
		for _, choice := range ch.Choices {
			if choice.Index != 0 {
				continue
			}
			d := choice.Delta
			if d.Content != "" {
				text.WriteString(d.Content)
				if err := onText(d.Content); err != nil {
					return nil, &callbackErr{err}
				}
			}
			for _, tc := range d.ToolCalls {
				var acc *toolAcc
				switch {
				case tc.Index != nil:
					acc = byIndex[*tc.Index]
					if acc == nil {
						acc = &toolAcc{}
						byIndex[*tc.Index] = acc
						calls = append(calls, acc)
					}
				case tc.ID != "" || len(calls) == 0: // providers without index: an id opens a call
					acc = &toolAcc{}
					calls = append(calls, acc)
				default:
					acc = calls[len(calls)-1]
				}
				if tc.ID != "" {
					acc.id = tc.ID
				}
				if tc.Type != "" {
					acc.typ = tc.Type
				}
				if n := tc.Function.Name; n != "" && n != acc.name {
					acc.name += n
				}
				acc.args.WriteString(tc.Function.Arguments)
			}
			if choice.FinishReason != nil && *choice.FinishReason != "" {
				res.FinishReason = *choice.FinishReason
				finished = true
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !done && !finished {
		return nil, &streamErr{&ProviderError{Op: "chat stream", Message: "the stream ended before the answer was complete", Retryable: true}}
	}
	res.Message.Content = text.String()
	for i, acc := range calls {
		id := acc.id
		if id == "" {
			id = fmt.Sprintf("call_%d", i)
		}
		args := acc.args.String()
		if strings.TrimSpace(args) == "" {
			args = "{}"
		}
		res.Message.ToolCalls = append(res.Message.ToolCalls, ToolCall{ID: id, Type: "function",
			Function: FunctionCall{Name: acc.name, Arguments: args}})
	}
	if res.FinishReason == "" {
		res.FinishReason = "stop"
		if len(calls) > 0 {
			res.FinishReason = "tool_calls"
		}
	}
	return res, nil
}

func isRetryableType(typ, code string) bool {
	s := strings.ToLower(typ + " " + code)
	for _, k := range []string{"rate", "overload", "server_error", "timeout", "unavailable", "429", "500", "502", "503", "504"} {
		if strings.Contains(s, k) {
			return true
		}
	}
	return false
}

package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/shopmind/shopmind/internal/apperr"
)

// ProviderError is a failure reported by (or on the way to) the model provider.
type ProviderError struct {
	// Op is the operation: "chat completion", "chat stream" or "embeddings".
	Op string
	// StatusCode is the provider's HTTP status; 0 for transport failures and for errors
	// reported inside a stream.
	StatusCode int
	// Type and Code are the provider's error type and code, when it sent them.
	Type string
	Code string
	// Message is the provider's message (shortened), or what went wrong on the way.
	Message string
	// Retryable is true for 429, 5xx, timeouts and dropped connections.
	Retryable bool
	// RetryAfter is the provider's Retry-After, when sent.
	RetryAfter time.Duration
	// Timeout is true when the provider did not answer in time.
	Timeout bool
}

func (e *ProviderError) Error() string {
	var b strings.Builder
	b.WriteString("model provider")
	if e.Op != "" {
		b.WriteString(" (" + e.Op + ")")
	}
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.StatusCode)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	return b.String()
}

// Retryable reports whether err is a provider failure that may succeed when tried again.
func Retryable(err error) bool {
	var pe *ProviderError
	return errors.As(err, &pe) && pe.Retryable
}

// upstream wraps a provider error into the platform's typed error: KindTimeout for
// timeouts, KindUpstream otherwise. The message is safe to show to users.
func upstream(pe *ProviderError) error {
	kind := apperr.KindUpstream
	if pe.Timeout {
		kind = apperr.KindTimeout
	}
	return &apperr.Error{Kind: kind, Message: pe.Error(), RetryAfter: pe.RetryAfter, Cause: pe}
}

const maxMessage = 300

func shorten(s string) string {
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > maxMessage {
		return string(r[:maxMessage]) + "…"
	}
	return s
}

func retryableStatus(code int) bool {
	return code == http.StatusTooManyRequests || code == http.StatusRequestTimeout || code >= 500
}

// statusError builds the error of a non-2xx answer from its body (OpenAI's
// {"error":{"message","type","code"}}, a bare {"message"} or text).
func statusError(op string, resp *http.Response, body []byte) *ProviderError {
	pe := &ProviderError{Op: op, StatusCode: resp.StatusCode, Retryable: retryableStatus(resp.StatusCode)}
	var env struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &env) == nil {
		var ae apiError
		var s string
		switch {
		case len(env.Error) > 0 && json.Unmarshal(env.Error, &ae) == nil && ae.Message != "":
			pe.Message, pe.Type, pe.Code = ae.Message, ae.Type, codeString(ae.Code)
		case len(env.Error) > 0 && json.Unmarshal(env.Error, &s) == nil:
			pe.Message = s
		default:
			pe.Message = env.Message
		}
	}
	if pe.Message == "" {
		pe.Message = string(body)
	}
	if pe.Message == "" {
		pe.Message = http.StatusText(resp.StatusCode)
	}
	pe.Message = shorten(pe.Message)
	if v := resp.Header.Get("Retry-After"); v != "" {
		if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
			pe.RetryAfter = time.Duration(secs) * time.Second
		} else if t, err := http.ParseTime(v); err == nil {
			pe.RetryAfter = max(time.Until(t), 0)
		}
	}
	return pe
}

func codeString(c any) string {
	switch v := c.(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		return fmt.Sprint(v)
	}
}

// transportError classifies a failure to reach the provider or to read its answer. A
// cancellation by the caller is returned as is (the context's error).
func transportError(op string, parent context.Context, cause error, err error) error {
	if parent.Err() != nil {
		return parent.Err()
	}
	switch {
	case errors.Is(cause, errFirstByteTimeout):
		return upstream(&ProviderError{Op: op, Message: "no answer within the timeout", Retryable: true, Timeout: true})
	case errors.Is(cause, errIdleTimeout):
		return upstream(&ProviderError{Op: op, Message: "the stream stalled (no data within the idle timeout)", Retryable: true, Timeout: true})
	case errors.Is(err, context.DeadlineExceeded):
		return upstream(&ProviderError{Op: op, Message: "no answer within the timeout", Retryable: true, Timeout: true})
	}
	return upstream(&ProviderError{Op: op, Message: "unreachable: " + shorten(err.Error()), Retryable: true})
}

var (
	errFirstByteTimeout = errors.New("llm: first byte timeout")
	errIdleTimeout      = errors.New("llm: stream idle timeout")
)

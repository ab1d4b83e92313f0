// Package logging sets up log/slog JSON logs and carries the request id through contexts.
package logging

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
)

// RequestIDHeader is the HTTP header and gRPC metadata key of the request id.
const RequestIDHeader = "x-request-id"

type ctxKey struct{}

// New returns a JSON logger at level writing to w.
func New(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}

// WithRequestID stores the request id in ctx.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// RequestID returns the request id in ctx, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(ctxKey{}).(string)
	return id
}

// validID reports whether a supplied id is 1 to 64 of [A-Za-z0-9._:-] (a byte loop: this runs
// on every request and every RPC).
func validID(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}

// AcceptOrNewID keeps a well-formed client-supplied id (so traces join up) or makes a new one.
func AcceptOrNewID(supplied string) string {
	if validID(supplied) {
		return supplied
	}
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

package warehouse

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/shopmind/shopmind/internal/apperr"
)

// A sandboxed query's ClickHouse exception is the author's error unless the server says it
// cannot take queries now (unavailable) or the time guard fired (timeout).
func TestClickHouseErrorKinds(t *testing.T) {
	s := &chStore{logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	sandboxed := QueryOptions{Timeout: time.Second, Untrusted: &Untrusted{}}
	for _, c := range []struct {
		name  string
		code  int32
		guard bool
		opts  QueryOptions
		want  apperr.Kind
	}{
		{"syntax error", 62, false, sandboxed, apperr.KindInvalid},
		{"too many simultaneous queries", 202, false, sandboxed, apperr.KindUnavailable},
		{"no free connection", 203, false, sandboxed, apperr.KindUnavailable},
		{"cancelled by the guard", 394, true, sandboxed, apperr.KindTimeout},
		{"server timeout", chTimeoutExceeded, false, sandboxed, apperr.KindTimeout},
		{"busy, trusted query", 202, false, QueryOptions{}, apperr.KindUnavailable},
	} {
		err := s.mapError(context.Background(), c.guard, c.opts, &clickhouse.Exception{Code: c.code, Message: c.name})
		var ae *apperr.Error
		if !errors.As(err, &ae) || ae.Kind != c.want {
			t.Errorf("%s: %v, want kind %v", c.name, err, c.want)
		}
	}
}

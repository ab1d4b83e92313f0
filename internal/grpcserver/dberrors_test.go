package grpcserver

import (
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shopmind/shopmind/internal/apperr"
)

func TestDatabaseErrorClasses(t *testing.T) {
	pg := func(code string) error { return fmt.Errorf("store: %w", &pgconn.PgError{Code: code, Message: "x"}) }
	cases := []struct {
		err  error
		kind apperr.Kind
		ok   bool
	}{
		{pg("57014"), apperr.KindTimeout, true},
		{pg("40001"), apperr.KindUnavailable, true},
		{pg("40P01"), apperr.KindUnavailable, true},
		{pg("22021"), apperr.KindInvalid, true},
		{pg("22P05"), apperr.KindInvalid, true},
		{pg("08006"), apperr.KindUnavailable, true},
		{pg("57P01"), apperr.KindUnavailable, true},
		{pg("53300"), apperr.KindUnavailable, true},
		{pg("23505"), 0, false},                                                     // a unique violation the handler did not expect is a bug
		{pg("42601"), 0, false},                                                     // a syntax error is a bug
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), apperr.KindUnavailable, true}, // a connection died mid-message
		{fmt.Errorf("query: %w", pgconn.ErrConnClosed), apperr.KindUnavailable, true},
		{fmt.Errorf("connect: %w", &pgconn.ConnectError{}), apperr.KindUnavailable, true},
		{fmt.Errorf("exec: %w", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}), apperr.KindUnavailable, true},
		{errors.New("something else"), 0, false},
	}
	for _, c := range cases {
		got := databaseError(c.err)
		if (got != nil) != c.ok || got != nil && got.Kind != c.kind {
			t.Errorf("%v: got %v, want kind %v (%v)", c.err, got, c.kind, c.ok)
		}
		if got != nil && got.Kind == apperr.KindUnavailable && got.RetryAfter == 0 {
			t.Errorf("%v: 503 without Retry-After", c.err)
		}
	}
}

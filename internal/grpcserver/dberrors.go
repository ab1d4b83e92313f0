package grpcserver

import (
	"errors"
	"io"
	"net"
	"reflect"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shopmind/shopmind/internal/apperr"
)

// databaseError classifies a PostgreSQL failure a handler returned untyped, so that what
// the client could not cause is not reported as a bug (500) and what it can retry says so:
//
//   - the server unreachable, restarting or out of connections, a connection lost
//     mid-query, the pool closed: 503, retry later;
//   - a serialization failure or deadlock: 503, the transaction was rolled back, retry;
//   - a statement cancelled by statement_timeout: 504;
//   - text PostgreSQL refuses (NUL, invalid encoding): 400. inputcheck refuses these before
//     any handler runs; this is the backstop for text a handler derives itself.
//
// It returns nil for every other error.
func databaseError(err error) *apperr.Error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "57014":
			return apperr.New(apperr.KindTimeout, "the database did not answer in time (statement timeout)")
		case pgErr.Code == "40001" || pgErr.Code == "40P01":
			return unavailable("the database rolled the change back because of a concurrent change; retry")
		case pgErr.Code == "22021" || pgErr.Code == "22P05":
			return apperr.New(apperr.KindInvalid, "invalid request: text must be valid UTF-8 without NUL characters")
		case strings.HasPrefix(pgErr.Code, "08"), pgErr.Code == "53300", pgErr.Code == "57P01",
			pgErr.Code == "57P02", pgErr.Code == "57P03":
			return unavailable("the database is unavailable; retry shortly")
		}
		return nil
	}
	var opErr *net.OpError
	if errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &opErr) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || connectionFailure(err) {
		return unavailable("the database is unavailable; retry shortly")
	}
	return nil
}

// An unexpected EOF, a reset or a network operation error is a connection that died under
// a query (pgx returns the socket's error as it is when a read fails);
// connectionFailure tells an error of pgx's connection layer (a failed connect or
// authentication, a connection lost under a query) or of its pool (closed): every error
// type of those packages other than PgError, which is the server's answer.
func connectionFailure(err error) bool {
	for _, e := range chain(err) {
		t := reflect.TypeOf(e)
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.PkgPath() {
		case "github.com/jackc/pgx/v5/pgconn", "github.com/jackc/pgx/v5/pgproto3", "github.com/jackc/puddle/v2":
			return true
		}
	}
	return false
}

// chain lists err and every error it wraps (depth first, bounded).
func chain(err error) []error {
	var out []error
	var walk func(error)
	walk = func(e error) {
		if e == nil || len(out) > 32 {
			return
		}
		out = append(out, e)
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		}
	}
	walk(err)
	return out
}

func unavailable(msg string) *apperr.Error {
	e := apperr.New(apperr.KindUnavailable, "%s", msg)
	e.RetryAfter = time.Second
	return e
}

// Package apperr holds ShopMind's typed domain errors and the one table that maps them to
// gRPC status codes, envelope codes and HTTP statuses. Services return *Error values (or
// plain errors, which become 500); gRPC converts them with GRPCStatus, and the gateway turns
// the status back into the envelope with EnvelopeCode.
package apperr

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Kind is the class of a failure; it decides the envelope code and HTTP status.
type Kind int

// The kinds of failure, one per class code of the spec.
const (
	KindInternal         Kind = iota // 500
	KindInvalid                      // 400 parameter error
	KindUnauthenticated              // 401
	KindForbidden                    // 403
	KindNotFound                     // 404
	KindMethodNotAllowed             // 405
	KindNotAcceptable                // 406
	KindRequestTimeout               // 408
	KindConflict                     // 409
	KindGone                         // 410 resource expired
	KindTooLarge                     // 413
	KindRule                         // 422 business rule restriction
	KindTooManyRequests              // 429
	KindNotImplemented               // 501
	KindUpstream                     // 502 third-party API error
	KindUnavailable                  // 503
	KindTimeout                      // 504
)

// Domain is the ErrorInfo domain of every ShopMind error.
const Domain = "shopmind"

type kindInfo struct {
	grpcCode codes.Code
	reason   string // ErrorInfo reason, carried over gRPC so the class survives the hop
	envelope int    // envelope code; also the HTTP status in mapped mode
}

// kinds is the one table of the platform's error classes.
var kinds = map[Kind]kindInfo{
	KindInternal:         {codes.Internal, "INTERNAL", 500},
	KindInvalid:          {codes.InvalidArgument, "INVALID_ARGUMENT", 400},
	KindUnauthenticated:  {codes.Unauthenticated, "UNAUTHENTICATED", 401},
	KindForbidden:        {codes.PermissionDenied, "PERMISSION_DENIED", 403},
	KindNotFound:         {codes.NotFound, "NOT_FOUND", 404},
	KindMethodNotAllowed: {codes.Unimplemented, "METHOD_NOT_ALLOWED", 405},
	KindNotAcceptable:    {codes.InvalidArgument, "NOT_ACCEPTABLE", 406},
	KindRequestTimeout:   {codes.Canceled, "REQUEST_TIMEOUT", 408},
	KindConflict:         {codes.AlreadyExists, "CONFLICT", 409},
	KindGone:             {codes.FailedPrecondition, "GONE", 410},
	KindTooLarge:         {codes.InvalidArgument, "PAYLOAD_TOO_LARGE", 413},
	KindRule:             {codes.FailedPrecondition, "BUSINESS_RULE", 422},
	KindTooManyRequests:  {codes.ResourceExhausted, "TOO_MANY_REQUESTS", 429},
	KindNotImplemented:   {codes.Unimplemented, "NOT_IMPLEMENTED", 501},
	KindUpstream:         {codes.Unavailable, "UPSTREAM_FAILED", 502},
	KindUnavailable:      {codes.Unavailable, "UNAVAILABLE", 503},
	KindTimeout:          {codes.DeadlineExceeded, "TIMEOUT", 504},
}

// byReason maps an ErrorInfo reason back to its envelope code.
var byReason = func() map[string]int {
	m := make(map[string]int, len(kinds))
	for _, info := range kinds {
		m[info.reason] = info.envelope
	}
	return m
}()

// byCode maps a bare gRPC code (no ErrorInfo from us) to an envelope code.
var byCode = map[codes.Code]int{
	codes.OK:                 0,
	codes.Canceled:           408,
	codes.Unknown:            500,
	codes.InvalidArgument:    400,
	codes.DeadlineExceeded:   504,
	codes.NotFound:           404,
	codes.AlreadyExists:      409,
	codes.PermissionDenied:   403,
	codes.ResourceExhausted:  429,
	codes.FailedPrecondition: 422,
	codes.Aborted:            409,
	codes.OutOfRange:         400,
	codes.Unimplemented:      501,
	codes.Internal:           500,
	codes.Unavailable:        503,
	codes.DataLoss:           500,
	codes.Unauthenticated:    401,
}

// FieldViolation names a request field and what is wrong with it.
type FieldViolation struct {
	Field   string // dotted path as the client wrote it (page_size, metric.config.source_field)
	Rule    string // rule id, when one applies (page_size, string.uuid)
	Message string
}

// Error is a typed domain error.
type Error struct {
	Kind       Kind
	Message    string
	Violations []FieldViolation
	RetryAfter time.Duration // for 429 and 503
	Cause      error         // logged, never shown to clients
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return e.Message + ": " + e.Cause.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Cause }

// GRPCStatus converts the error at the service edge (grpc-go calls it for returned errors).
func (e *Error) GRPCStatus() *status.Status {
	info := kinds[e.Kind]
	st := status.New(info.grpcCode, Clip(e.Message, MaxMessageLen))
	details := []protoadapt.MessageV1{&errdetails.ErrorInfo{Domain: Domain, Reason: info.reason}}
	if len(e.Violations) > 0 {
		br := &errdetails.BadRequest{}
		for _, v := range e.Violations {
			br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{
				Field: v.Field, Description: v.Message, Reason: v.Rule,
			})
		}
		details = append(details, br)
	}
	if e.RetryAfter > 0 {
		details = append(details, &errdetails.RetryInfo{RetryDelay: durationpb.New(e.RetryAfter)})
	}
	withDetails, err := st.WithDetails(details...)
	if err != nil {
		return st
	}
	return withDetails
}

// New builds an error of a kind with a formatted message.
func New(kind Kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// Invalid is a 400 naming the field and its problem.
func Invalid(field, rule, message string) *Error {
	return &Error{
		Kind:       KindInvalid,
		Message:    field + ": " + message,
		Violations: []FieldViolation{{Field: field, Rule: rule, Message: message}},
	}
}

// Bounds of what a 400 carries: a list of 50,000 bad items gets the first MaxViolations
// named and a count of the rest, and no text longer than MaxMessageLen, so an error never
// outgrows a gRPC trailer (about 8 KiB by default) or echoes a client's megabytes back.
const (
	MaxViolations = 20
	MaxMessageLen = 2048
)

// InvalidFields is a 400 for several field violations at once (the first MaxViolations).
func InvalidFields(violations []FieldViolation) *Error {
	more := 0
	if len(violations) > MaxViolations {
		more = len(violations) - MaxViolations
		violations = violations[:MaxViolations]
	}
	parts := make([]string, 0, len(violations)+1)
	for i := range violations {
		violations[i].Field = Clip(violations[i].Field, 200)
		violations[i].Message = Clip(violations[i].Message, 300)
		v := violations[i]
		part := v.Message
		if v.Field != "" { // message-level rules (time_range) name their fields in the message
			part = v.Field + ": " + v.Message
		}
		if v.Rule != "" {
			part += " (rule " + v.Rule + ")"
		}
		parts = append(parts, part)
	}
	if more > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", more))
	}
	return &Error{Kind: KindInvalid, Message: Clip("invalid request: "+strings.Join(parts, "; "), MaxMessageLen), Violations: violations}
}

// Clip shortens s to at most n bytes (on a rune boundary), marking the cut.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// NotFound is a 404 for a resource and its id.
func NotFound(resource string, id any) *Error {
	return New(KindNotFound, "%s %v not found", resource, id)
}

// Internal wraps an unexpected failure: the client sees a generic message, the log the cause.
func Internal(cause error) *Error {
	return &Error{Kind: KindInternal, Message: "internal server error", Cause: cause}
}

// NotImplemented is the honest answer of an RPC whose issue has not landed.
func NotImplemented(method string) *Error {
	return New(KindNotImplemented, "not implemented: %s", method)
}

// Envelope is the decoded class of a gRPC status.
type Envelope struct {
	Code       int // envelope code and HTTP status in mapped mode
	Message    string
	RetryAfter time.Duration
	Violations []FieldViolation
}

// FromStatus maps a gRPC status to the envelope code, HTTP status and message.
func FromStatus(st *status.Status) Envelope {
	env := Envelope{Code: 500, Message: st.Message()}
	if code, ok := byCode[st.Code()]; ok {
		env.Code = code
	}
	fromUs := false
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			if d.GetDomain() != Domain {
				continue
			}
			fromUs = true
			if code, ok := byReason[d.GetReason()]; ok {
				env.Code = code
			}
		case *errdetails.RetryInfo:
			env.RetryAfter = d.GetRetryDelay().AsDuration()
		case *errdetails.BadRequest:
			for _, v := range d.GetFieldViolations() {
				env.Violations = append(env.Violations, FieldViolation{Field: v.GetField(), Rule: v.GetReason(), Message: v.GetDescription()})
			}
		}
	}
	if !fromUs && st.Code() == codes.InvalidArgument {
		// The gateway's own decoding failed (body JSON or query parameters): say so, without
		// echoing a huge value back.
		env.Message = "malformed request: " + Clip(jsonFieldName.ReplaceAllStringFunc(env.Message, snakeField), 512)
	}
	env.Message = Clip(env.Message, MaxMessageLen)
	if env.Code == 500 && (st.Code() == codes.Unknown || st.Code() == codes.Internal) {
		env.Message = "internal server error"
	}
	if env.Message == "" {
		env.Message = strings.ToLower(st.Code().String())
	}
	return env
}

// jsonFieldName finds protojson's "field pageNum" (JSON names) so messages use the proto
// names clients send (page_num).
var jsonFieldName = regexp.MustCompile(`field [a-z][A-Za-z0-9]*`)

func snakeField(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsUpper(r) {
			b.WriteByte('_')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// FromError maps any error (a status error, an *Error, or a plain error) to the envelope.
func FromError(err error) Envelope {
	var appErr *Error
	if errors.As(err, &appErr) {
		return FromStatus(appErr.GRPCStatus())
	}
	st, _ := status.FromError(err)
	return FromStatus(st)
}

// Kinds lists every kind of the table, in the order of their declaration.
func Kinds() []Kind {
	out := make([]Kind, 0, len(kinds))
	for k := KindInternal; k <= KindTimeout; k++ {
		if _, ok := kinds[k]; ok {
			out = append(out, k)
		}
	}
	return out
}

// EnvelopeCode returns the envelope code of a kind (used by the gateway's own errors).
func EnvelopeCode(kind Kind) int { return kinds[kind].envelope }

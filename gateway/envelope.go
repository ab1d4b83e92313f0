package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/inputcheck"
	"github.com/shopmind/shopmind/internal/logging"
	"github.com/shopmind/shopmind/internal/pbjson"
)

// successMessage is the envelope message of every successful answer.
const successMessage = "success"

// envelopeMarshaler writes every forwarded response as {code: 0, message, data}, marshalling
// the response message once with protojson (proto field names, zero values emitted).
type envelopeMarshaler struct {
	runtime.JSONPb
}

func newEnvelopeMarshaler() *envelopeMarshaler {
	return &envelopeMarshaler{JSONPb: runtime.JSONPb{
		MarshalOptions:   pbjson.Options, // UseProtoNames, EmitUnpopulated
		UnmarshalOptions: protojson.UnmarshalOptions{DiscardUnknown: false},
	}}
}

// NewDecoder reads exactly one JSON value: trailing bytes other than white space (a second
// value, stray braces) are a 400, where encoding/json's stream decoder would stop after the
// first value and ignore the rest.
// A failure names the JSON path of the value at fault (see inputcheck.NamedDecodeError).
func (m *envelopeMarshaler) NewDecoder(r io.Reader) runtime.Decoder {
	var read bytes.Buffer // what the decoder consumed, to locate an error
	d := json.NewDecoder(io.TeeReader(r, &read))
	inner := runtime.DecoderWrapper{Decoder: d, UnmarshalOptions: m.UnmarshalOptions}
	return runtime.DecoderFunc(func(v any) error {
		if err := inner.Decode(v); err != nil {
			if errors.Is(err, io.EOF) {
				return err
			}
			return inputcheck.NamedDecodeError(err, read.Bytes())
		}
		if _, err := d.Token(); !errors.Is(err, io.EOF) {
			return errTrailingJSON
		}
		return nil
	})
}

var errTrailingJSON = errors.New("request body: unexpected data after the JSON value (send exactly one JSON object)")

var (
	envelopeHead = []byte(`{"code":0,"message":"` + successMessage + `","data":`)
	envelopeTail = []byte(`}`)
)

// Marshal wraps the marshalled message in the success envelope. A message is written by
// pbjson (protojson's output, several times faster) straight after the envelope's head, in
// one buffer; other values (grpc-gateway passes a few) go through JSONPb.
func (m *envelopeMarshaler) Marshal(v any) ([]byte, error) {
	if msg, ok := v.(proto.Message); ok {
		out := make([]byte, 0, 512)
		out, err := pbjson.MarshalAppend(append(out, envelopeHead...), msg)
		if err != nil {
			return nil, err
		}
		return append(out, envelopeTail...), nil
	}
	if st, ok := streamErrorChunk(v); ok {
		env := apperr.FromStatus(status.FromProto(st))
		return json.Marshal(errorBody{Code: env.Code, Message: env.Message})
	}
	data, err := m.JSONPb.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(envelopeHead)+len(data)+len(envelopeTail))
	out = append(out, envelopeHead...)
	out = append(out, data...)
	return append(out, envelopeTail...), nil
}

// streamErrorChunk recognises the {"error": status} chunk grpc-gateway writes when a server
// stream fails after its first message, so that it is written as an error envelope (its
// code and message) rather than as data under code 0.
func streamErrorChunk(v any) (*spb.Status, bool) {
	chunk, ok := v.(map[string]proto.Message)
	if !ok || len(chunk) != 1 {
		return nil, false
	}
	st, ok := chunk["error"].(*spb.Status)
	return st, ok
}

// errorBody is the envelope of a failure: data is always null.
type errorBody struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data"`
}

// envelopeWriter writes error envelopes with the configured status policy.
type envelopeWriter struct {
	always200 bool
}

// write sends an error envelope. In mapped mode the HTTP status is the envelope code
// (501 included); in always-200 mode it is 200 and only the code carries the meaning.
func (e envelopeWriter) write(w http.ResponseWriter, r *http.Request, env apperr.Envelope) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Del("Content-Length")
	if env.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(int((env.RetryAfter+time.Second-1)/time.Second)))
	}
	if env.Code == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="shopmind"`)
	}
	if id := logging.RequestID(r.Context()); id != "" {
		h.Set("X-Request-Id", id)
	}
	httpStatus := env.Code
	if e.always200 || httpStatus < 400 || httpStatus > 599 {
		httpStatus = http.StatusOK
	}
	var buf bytes.Buffer
	_ = json.NewEncoder(&buf).Encode(errorBody{Code: env.Code, Message: env.Message})
	if info := infoFrom(r.Context()); info != nil {
		info.code = env.Code
	}
	w.WriteHeader(httpStatus)
	_, _ = w.Write(buf.Bytes())
}

// WriteError answers with the error envelope of a kind, under the gateway's HTTP status
// policy. It is for the edge hooks (WAF, authentication) that reject a request themselves.
func WriteError(w http.ResponseWriter, r *http.Request, kind apperr.Kind, message string) {
	var e envelopeWriter
	if info := infoFrom(r.Context()); info != nil {
		e.always200 = info.always200
	}
	e.writeKind(w, r, kind, message)
}

// writeKind is a shortcut for the gateway's own errors.
func (e envelopeWriter) writeKind(w http.ResponseWriter, r *http.Request, kind apperr.Kind, message string) {
	e.write(w, r, apperr.Envelope{Code: apperr.EnvelopeCode(kind), Message: message})
}

// errorHandler is grpc-gateway's error hook: gRPC status (or the mux's own HTTP errors)
// to envelope, through the one table in apperr.
func (e envelopeWriter) errorHandler(_ context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
	var httpErr *runtime.HTTPStatusError
	if errors.As(err, &httpErr) {
		env := apperr.FromError(httpErr.Err)
		env.Code = httpErr.HTTPStatus
		e.write(w, r, env)
		return
	}
	var maxErr *http.MaxBytesError
	if errors.As(err, &maxErr) || bytes.Contains([]byte(err.Error()), []byte("http: request body too large")) {
		e.writeKind(w, r, apperr.KindTooLarge, "request body too large")
		return
	}
	e.write(w, r, apperr.FromError(err))
}

// routingErrorHandler answers unknown routes (404) and wrong methods (405).
func (e envelopeWriter) routingErrorHandler(_ context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, httpStatus int) {
	switch httpStatus {
	case http.StatusMethodNotAllowed:
		e.writeKind(w, r, apperr.KindMethodNotAllowed, "method "+r.Method+" not allowed on "+r.URL.Path)
	case http.StatusNotFound:
		e.writeKind(w, r, apperr.KindNotFound, "no route for "+r.Method+" "+r.URL.Path)
	default:
		e.write(w, r, apperr.Envelope{Code: httpStatus, Message: http.StatusText(httpStatus)})
	}
}

// WriteErr answers with the envelope of any error (a gRPC status from a backend call, a
// typed error), through the one mapping table.
func WriteErr(w http.ResponseWriter, r *http.Request, err error) {
	var e envelopeWriter
	if info := infoFrom(r.Context()); info != nil {
		e.always200 = info.always200
	}
	e.write(w, r, apperr.FromError(err))
}

package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/grpc-ecosystem/grpc-gateway/v2/utilities"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/restapi"
)

// The SSE bridge. grpc-gateway would answer a server-streaming RPC with newline-delimited
// {"result": ...} objects, which browsers' EventSource cannot read; the streams the backends
// describe (restapi.Stream, in their service.Def) are served by this handler instead,
// registered on each environment's mux after the REST routes (so the whole edge chain and
// the mux middleware apply as to any route). The bridge knows no service: what a request,
// an event and a collected reply are is the stream's.
//
//   - the JSON body is decoded like any route's (unknown fields and malformed JSON: 400) and
//     capped at the stream's MaxBody (413);
//   - the RPC is called over the environment's connection to the backend with the metadata
//     grpc-gateway would send (authorization, x-env, the identity metadata);
//   - nothing is written until the backend accepts the request: it validates (400), checks
//     what it needs to (404), then sends the stream's naming header (chat: the conversation
//     id); a failure before that is the ordinary error envelope;
//   - then `Content-Type: text/event-stream`, `Cache-Control: no-cache`,
//     `X-Accel-Buffering: no` and the naming header, and each event as one
//     `data: <json>\n\n`, flushed at once; `: keep-alive\n\n` comments while idle; a
//     backend failure mid-stream becomes the stream's error event; `data: [DONE]\n\n` ends it;
//   - the client leaving cancels the gRPC call;
//   - a request the stream's Collector takes (chat v2's "stream": false) answers one reply
//     envelope instead.

// DefaultSSEKeepAlive is the interval of keep-alive comments on an idle event stream.
const DefaultSSEKeepAlive = 15 * time.Second

var (
	keepAliveLine = []byte(": keep-alive\n\n")
	doneLine      = []byte("data: [DONE]\n\n")
)

// registerStreams serves the streams of an environment's backends on its mux, and records
// them as streaming routes (no upstream timeout) and their headers for CORS.
func (g *Gateway) registerStreams(e *environment) error {
	for _, b := range e.backends {
		if len(b.Streams) == 0 {
			continue
		}
		conn := g.withMetadata(e.name, b.Conn)
		for _, st := range b.Streams {
			rt := st.Route()
			if err := handleStream(g, e.mux, conn, st); err != nil {
				return fmt.Errorf("%s stream %s: %w", b.Target, rt.Path, err)
			}
			g.streaming[rt.HTTPMethod()+" "+templateVar.ReplaceAllString(rt.Path, "{$1=*}")] = true
			if !slices.Contains(g.streamHeaders, rt.Header) {
				g.streamHeaders = append(g.streamHeaders, rt.Header)
			}
		}
	}
	return nil
}

// handleStream registers the bridge of one stream on the mux.
func handleStream(g *Gateway, mux *runtime.ServeMux, conn grpc.ClientConnInterface, st restapi.Stream) error {
	rt := st.Route()
	return mux.HandlePath(rt.HTTPMethod(), rt.Path, func(w http.ResponseWriter, r *http.Request, params map[string]string) {
		serveStream(g, mux, conn, st, rt, w, r, params)
	})
}

func serveStream(g *Gateway, mux *runtime.ServeMux, conn grpc.ClientConnInterface, st restapi.Stream, rt restapi.StreamRoute,
	w http.ResponseWriter, r *http.Request, params map[string]string) {
	inbound, outbound := runtime.MarshalerForRequest(mux, r)
	fail := func(err error) { g.envelopes.errorHandler(r.Context(), mux, outbound, w, r, err) }
	req, err := streamRequest(st, rt, w, r, params, inbound)
	if err != nil {
		fail(err)
		return
	}
	if req == nil {
		g.envelopes.writeKind(w, r, apperr.KindTooLarge, rt.TooLarge)
		return
	}
	ctx, err := runtime.AnnotateContext(r.Context(), mux, r, rt.RPC, runtime.WithHTTPPathPattern(rt.Path))
	if err != nil {
		fail(err)
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := st.Open(ctx, conn, req)
	if err != nil {
		fail(err)
		return
	}
	if c := st.Collector(req); c != nil {
		collectReply(g, st, rt, c, stream, w, r, outbound, fail)
		return
	}

	// Wait for the backend to accept the request; until then every failure is an envelope.
	md, _ := stream.Header()
	id := firstValue(md, rt.Header)
	var first restapi.Event
	if id == "" { // no header: the status (or a first event) tells
		first, err = stream.Recv()
		if errors.Is(err, io.EOF) {
			err = status.Error(codes.Internal, "the stream ended without an answer")
		}
		if err != nil {
			fail(err)
			return
		}
		id = first.StreamID()
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	h.Set(rt.Header, id)
	w.WriteHeader(http.StatusOK)
	sw := newSSEWriter(w, cancel, g.sseKeepAlive(), st.ErrorEvent)
	defer sw.close()
	if sw.flush() != nil {
		return
	}
	if first != nil && sw.event(first) != nil {
		return
	}
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			_ = sw.write(doneLine)
			return
		}
		if err != nil {
			if ctx.Err() != nil {
				return // the client left
			}
			if sw.event(st.ErrorEvent(id, err)) == nil {
				_ = sw.write(doneLine)
			}
			return
		}
		if sw.event(ev) != nil {
			return
		}
	}
}

// streamRequest builds the request of a stream: a POST's from its JSON body (nil, nil when
// the body is above the stream's MaxBody), a GET's from the query parameters and the path
// variables, and the Resume field from Last-Event-ID. Malformed values are InvalidArgument.
func streamRequest(st restapi.Stream, rt restapi.StreamRoute, w http.ResponseWriter, r *http.Request, params map[string]string,
	inbound runtime.Marshaler) (proto.Message, error) {
	req := st.NewRequest()
	if rt.HTTPMethod() == http.MethodPost {
		if r.ContentLength > rt.MaxBody {
			return nil, nil
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, rt.MaxBody)
			if err := inbound.NewDecoder(r.Body).Decode(req); err != nil && !errors.Is(err, io.EOF) {
				return nil, status.Error(codes.InvalidArgument, err.Error())
			}
		}
	} else if err := runtime.PopulateQueryParameters(req, r.URL.Query(), utilities.NewDoubleArray(nil)); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	for name, v := range params {
		if err := runtime.PopulateFieldFromPath(req, name, v); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "path parameter %s: %v", name, err)
		}
	}
	if last := r.Header.Get("Last-Event-ID"); last != "" && rt.Resume != "" {
		if err := runtime.PopulateFieldFromPath(req, rt.Resume, last); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "Last-Event-ID %q: not an event id of this stream", last)
		}
	}
	return req, nil
}

func (g *Gateway) sseKeepAlive() time.Duration {
	if g.opts.SSEKeepAlive > 0 {
		return g.opts.SSEKeepAlive
	}
	return DefaultSSEKeepAlive
}

// firstValue returns the first value of a gRPC header (metadata.MD.Get lower-cases key).
func firstValue(md metadata.MD, key string) string {
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// collectReply answers a request the stream's Collector took: its events collected into one
// reply envelope.
func collectReply(g *Gateway, st restapi.Stream, rt restapi.StreamRoute, c restapi.Collector, stream restapi.EventReader,
	w http.ResponseWriter, r *http.Request, outbound runtime.Marshaler, fail func(error)) {
	id := ""
	for n := 0; ; n++ {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if n == 0 { // nothing accepted yet: the ordinary error envelope
				fail(err)
				return
			}
			c.Add(st.ErrorEvent(id, err))
			break
		}
		if id == "" {
			id = ev.StreamID()
		}
		c.Add(ev)
	}
	reply, id, failed := c.Reply()
	if failed != nil {
		g.envelopes.write(w, r, *failed)
		return
	}
	body, err := outbound.Marshal(reply)
	if err != nil {
		fail(err)
		return
	}
	w.Header().Set("Content-Type", outbound.ContentType(reply))
	w.Header().Set(rt.Header, id)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// sseWriter writes the event stream: events, keep-alive comments while idle (a timer, no
// goroutine per stream), each flushed at once. A failed write ends the stream's context.
type sseWriter struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	cancel context.CancelFunc
	every  time.Duration
	// errorEvent replaces an event that cannot be encoded.
	errorEvent func(id string, err error) restapi.Event

	mu     sync.Mutex
	timer  *time.Timer
	closed bool
	buf    []byte
}

func newSSEWriter(w http.ResponseWriter, cancel context.CancelFunc, every time.Duration,
	errorEvent func(id string, err error) restapi.Event) *sseWriter {
	s := &sseWriter{w: w, rc: http.NewResponseController(w), cancel: cancel, every: every, errorEvent: errorEvent}
	s.mu.Lock()
	s.timer = time.AfterFunc(every, s.keepAlive)
	s.mu.Unlock()
	return s
}

func (s *sseWriter) keepAlive() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if s.writeLocked(keepAliveLine) == nil {
		s.timer.Reset(s.every)
	}
}

var errStreamClosed = errors.New("event stream closed")

// write sends raw lines and restarts the idle timer.
func (s *sseWriter) write(b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errStreamClosed
	}
	if err := s.writeLocked(b); err != nil {
		return err
	}
	s.timer.Reset(s.every)
	return nil
}

func (s *sseWriter) flush() error { return s.write(nil) }

// event writes one event as a data line.
func (s *sseWriter) event(ev restapi.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errStreamClosed
	}
	var err error
	s.buf = s.buf[:0]
	if sq, ok := ev.(restapi.Sequenced); ok {
		s.buf = strconv.AppendInt(append(s.buf, "id: "...), sq.Offset(), 10)
		s.buf = append(s.buf, '\n')
	}
	start := len(s.buf)
	s.buf = append(s.buf, "data: "...)
	if s.buf, err = ev.AppendJSON(s.buf); err != nil {
		s.buf = append(s.buf[:start], "data: "...)
		s.buf, _ = s.errorEvent(ev.StreamID(), apperr.Internal(err)).AppendJSON(s.buf)
	}
	s.buf = append(s.buf, "\n\n"...)
	if err := s.writeLocked(s.buf); err != nil {
		return err
	}
	if cap(s.buf) > 64<<10 { // do not keep a large event's buffer for the stream's life
		s.buf = nil
	}
	s.timer.Reset(s.every)
	return nil
}

func (s *sseWriter) writeLocked(b []byte) error {
	if len(b) > 0 {
		if _, err := s.w.Write(b); err != nil {
			s.failLocked()
			return err
		}
	}
	if err := s.rc.Flush(); err != nil {
		s.failLocked()
		return err
	}
	return nil
}

// failLocked ends the stream after a failed write: the client is gone.
func (s *sseWriter) failLocked() {
	s.closed = true
	s.timer.Stop()
	s.cancel()
}

// close stops the keep-alives; nothing is written afterwards.
func (s *sseWriter) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.timer.Stop()
}

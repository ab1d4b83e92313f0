// Package realtime is the gateway's real-time channel: one WebSocket per client at Path, on which the client
// subscribes to topics ("<kind>:<id>") that the backends describe (restapi.Topic in their
// service.Def) and receives their events, each with its offset. The gateway knows no topic:
// a subscription is a call of the topic's server-streaming RPC with the caller's token and
// identity, from the offset the client gives, and the backend decides whether the caller
// may follow it. The upgrade request goes through the whole edge chain (WAF, rate limit,
// environment routing, authentication) like any route. services/chat/CHAT.md documents the
// frames; in short:
//
//	client: {"type":"subscribe","topic":"workflow:<id>","offset":12}
//	        {"type":"unsubscribe","topic":"workflow:<id>"}   {"type":"ping"}
//	server: {"type":"subscribed","topic":…,"offset":12}
//	        {"type":"event","topic":…,"offset":13,"data":{…}}
//	        {"type":"end","topic":…}        the topic has no more events
//	        {"type":"gone","topic":…,"message":…}   the offset is no longer available
//	        {"type":"error","topic":…,"code":404,"message":…,"retryable":false}
//	        {"type":"heartbeat","time":1767225600000}   {"type":"pong"}
package realtime

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"golang.org/x/time/rate"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/restapi"
)

// Path is the path of the WebSocket channel.
const Path = "/api/v1/realtime"

// Subprotocol is the WebSocket subprotocol the gateway speaks. A browser, which
// cannot set the Authorization header on a WebSocket, sends its access token as a second
// offered subprotocol "bearer.<token>" (never echoed back).
const Subprotocol = "shopmind.realtime.v1"

// DefaultHeartbeat is the interval of heartbeat frames and pings.
const DefaultHeartbeat = 25 * time.Second

// Limits of one connection.
const (
	maxSubscriptions = 100
	// subscribeRate is the subscribes per second a connection may send once it has used a
	// burst of maxSubscriptions (a reconnecting client resubscribes everything at once):
	// each subscribe opens a stream to a service, so a loop of them is refused with 429.
	subscribeRate = 10
	readLimit     = 64 << 10
	queueLength   = 64
	writeTimeout  = 10 * time.Second
)

// Route is a topic kind with the connection to the backend that serves it.
type Route struct {
	Topic restapi.Topic
	Conn  grpc.ClientConnInterface
}

// Options configure the channel of one environment.
type Options struct {
	// Routes are the topic kinds by name (restapi.Topic.Kind).
	Routes map[string]Route
	// Mux is the environment's mux: calls are annotated as its REST calls are (token,
	// identity metadata).
	Mux *runtime.ServeMux
	// Heartbeat is the interval of heartbeat frames and pings (0: DefaultHeartbeat).
	Heartbeat time.Duration
	// OriginAllowed says whether a cross-origin browser may connect (the CORS origins).
	OriginAllowed func(origin string) bool
	// WriteError answers a request that is not a valid upgrade with the envelope.
	WriteError func(w http.ResponseWriter, r *http.Request, kind apperr.Kind, message string)
}

// Handler serves the channel; base ends every connection when the gateway stops.
func Handler(base context.Context, o Options) http.HandlerFunc {
	if o.Heartbeat <= 0 {
		o.Heartbeat = DefaultHeartbeat
	}
	return func(w http.ResponseWriter, r *http.Request) { serve(base, &o, w, r) }
}

// serve upgrades the request and runs the connection until either side closes it or the
// gateway stops (base ends).
func serve(base context.Context, o *Options, w http.ResponseWriter, r *http.Request) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		o.WriteError(w, r, apperr.KindInvalid, "this is the WebSocket channel: send a WebSocket upgrade request")
		return
	}
	// Browsers send Origin: the gateway's own host, or an origin CORS allows.
	if origin := r.Header.Get("Origin"); origin != "" {
		if u, err := url.Parse(origin); err != nil || !strings.EqualFold(u.Host, r.Host) && !o.OriginAllowed(origin) {
			o.WriteError(w, r, apperr.KindForbidden, "origin not allowed on the WebSocket channel")
			return
		}
	}
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{Subprotocol}, InsecureSkipVerify: true})
	if err != nil {
		return // Accept answered the client
	}
	ws.SetReadLimit(readLimit)
	ctx, cancel := context.WithCancel(r.Context())
	// The gateway's stop closes with 1001 first (which also ends the read loop's Read):
	// cancelling the read's context instead would drop the TCP connection without a close frame.
	stopOnShutdown := context.AfterFunc(base, func() {
		_ = ws.Close(websocket.StatusGoingAway, "the gateway is stopping: reconnect and resume")
		cancel()
	})
	c := &conn{o: o, ws: ws, r: r, ctx: ctx, cancel: cancel,
		out: make(chan []byte, queueLength), subs: map[string]*subscription{},
		subscribes: rate.NewLimiter(subscribeRate, maxSubscriptions)}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); c.writeLoop() }()
	c.readLoop()
	cancel()
	stopOnShutdown()
	c.mu.Lock()
	for _, s := range c.subs {
		s.cancel()
	}
	c.mu.Unlock()
	c.subWG.Wait()
	wg.Wait()
	_ = ws.Close(websocket.StatusGoingAway, "closed") // a no-op when the stop closed it already
}

// conn is one client connection.
type conn struct {
	o      *Options
	ws     *websocket.Conn
	r      *http.Request // the upgrade request: its token and identity go with every call
	ctx    context.Context
	cancel context.CancelFunc
	out    chan []byte // frames to write; senders block while it is full (backpressure)

	mu    sync.Mutex
	subs  map[string]*subscription
	subWG sync.WaitGroup

	subscribes *rate.Limiter // subscribeRate, burst maxSubscriptions
}

// subscription is one subscription.
type subscription struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// clientFrame is what a client sends.
type clientFrame struct {
	Type   string `json:"type"`
	Topic  string `json:"topic"`
	Offset int64  `json:"offset"`
}

// frame is what the gateway sends (data is the event's own JSON).
type frame struct {
	Type      string `json:"type"`
	Topic     string `json:"topic,omitempty"`
	Offset    *int64 `json:"offset,omitempty"`
	Code      int    `json:"code,omitempty"`
	Message   string `json:"message,omitempty"`
	Retryable *bool  `json:"retryable,omitempty"`
	Time      int64  `json:"time,omitempty"`
}

// eventFrame is {"type":"event","topic":…,"offset":…,"data":<the event's JSON>}, built
// by appending: the event's JSON is written as the backend's stream encodes it, not parsed
// again (it is on the path of every event to every subscriber).
func eventFrame(topicJSON []byte, ev restapi.Event) ([]byte, error) {
	b := make([]byte, 0, 256)
	b = append(b, `{"type":"event","topic":`...)
	b = append(b, topicJSON...)
	if sq, ok := ev.(restapi.Sequenced); ok {
		b = strconv.AppendInt(append(b, `,"offset":`...), sq.Offset(), 10)
	}
	b, err := ev.AppendJSON(append(b, `,"data":`...))
	return append(b, '}'), err
}

// send queues a frame, waiting while the queue is full; false when the connection ended.
func (c *conn) send(f frame) bool {
	b, err := json.Marshal(f)
	if err != nil {
		b, _ = json.Marshal(frame{Type: "error", Topic: f.Topic, Code: 500, Message: "an event could not be encoded"})
	}
	return c.queue(c.ctx, b)
}

// queue queues an encoded frame, waiting while the queue is full; false when ctx (the
// connection's, or a subscription's: an unsubscribe must not wait behind a slow client)
// ended.
func (c *conn) queue(ctx context.Context, b []byte) bool {
	select {
	case c.out <- b:
		return true
	case <-ctx.Done():
		return false
	}
}

func (c *conn) writeLoop() {
	every := c.o.Heartbeat
	t := time.NewTicker(every)
	defer t.Stop()
	write := func(b []byte) bool {
		ctx, cancel := context.WithTimeout(c.ctx, writeTimeout)
		defer cancel()
		if err := c.ws.Write(ctx, websocket.MessageText, b); err != nil {
			c.cancel() // the client is gone or too slow: it reconnects and resumes
			return false
		}
		return true
	}
	for {
		select {
		case b := <-c.out:
			if !write(b) {
				return
			}
		case now := <-t.C:
			hb, _ := json.Marshal(frame{Type: "heartbeat", Time: now.UnixMilli()})
			if !write(hb) {
				return
			}
			// A ping answered by the client's WebSocket stack detects a dead peer that
			// still accepts writes into its buffers.
			go func() {
				ctx, cancel := context.WithTimeout(c.ctx, every)
				defer cancel()
				if err := c.ws.Ping(ctx); err != nil {
					c.cancel()
				}
			}()
		case <-c.ctx.Done():
			return
		}
	}
}

// readLoop handles the client's frames until the connection ends.
func (c *conn) readLoop() {
	for {
		typ, b, err := c.ws.Read(c.ctx)
		if err != nil {
			return
		}
		var f clientFrame
		if typ != websocket.MessageText || json.Unmarshal(b, &f) != nil {
			c.send(frame{Type: "error", Code: 400, Message: `frames are JSON text objects: {"type": "subscribe", "topic": "<kind>:<id>", "offset": <n>}`})
			continue
		}
		switch f.Type {
		case "subscribe":
			c.subscribe(f.Topic, f.Offset)
		case "unsubscribe":
			if c.unsubscribe(f.Topic) {
				c.send(frame{Type: "unsubscribed", Topic: f.Topic})
			}
		case "ping":
			c.send(frame{Type: "pong"})
		default:
			c.send(frame{Type: "error", Code: 400, Message: "unknown frame type " + strconv.Quote(f.Type) + ": subscribe, unsubscribe or ping"})
		}
	}
}

func (c *conn) unsubscribe(topic string) bool {
	c.mu.Lock()
	s := c.subs[topic]
	delete(c.subs, topic)
	c.mu.Unlock()
	if s == nil {
		return false
	}
	s.cancel()
	<-s.done
	return true
}

// subscribe starts following a topic (replacing a subscription to the same topic).
func (c *conn) subscribe(topic string, offset int64) {
	fail := func(code int, msg string) { c.send(frame{Type: "error", Topic: topic, Code: code, Message: msg}) }
	if !c.subscribes.Allow() {
		retry := true
		c.send(frame{Type: "error", Topic: topic, Code: 429, Retryable: &retry, Message: "more than " +
			strconv.Itoa(subscribeRate) + " subscribes per second on one connection (after the first " + strconv.Itoa(maxSubscriptions) + "): slow down"})
		return
	}
	kind, id, ok := strings.Cut(topic, ":")
	route, known := c.o.Routes[kind]
	switch {
	case !ok || id == "":
		fail(400, `topic must be "<kind>:<id>"`)
		return
	case !known:
		fail(400, "unknown topic kind "+strconv.Quote(kind))
		return
	case offset < 0:
		fail(400, "offset must be 0 or more")
		return
	}
	c.unsubscribe(topic)
	c.mu.Lock()
	if len(c.subs) >= maxSubscriptions {
		c.mu.Unlock()
		fail(429, "at most "+strconv.Itoa(maxSubscriptions)+" subscriptions per connection")
		return
	}
	ctx, cancel := context.WithCancel(c.ctx)
	s := &subscription{cancel: cancel, done: make(chan struct{})}
	c.subs[topic] = s
	c.subWG.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.subWG.Done()
		defer close(s.done)
		defer cancel()
		c.follow(ctx, topic, route, id, offset)
		c.mu.Lock()
		if c.subs[topic] == s {
			delete(c.subs, topic)
		}
		c.mu.Unlock()
	}()
}

// follow calls the topic's stream and forwards its events until it ends, fails, or the
// subscription is cancelled.
func (c *conn) follow(ctx context.Context, topic string, route Route, id string, offset int64) {
	st := route.Topic.Stream
	rt := st.Route()
	failed := func(err error) {
		if ctx.Err() != nil {
			return // unsubscribed or the connection ended
		}
		env := apperr.FromError(err)
		if env.Code == http.StatusGone {
			c.send(frame{Type: "gone", Topic: topic, Message: env.Message})
			return
		}
		retryable := env.Code == 429 || env.Code >= 502 && env.Code <= 504
		c.send(frame{Type: "error", Topic: topic, Code: env.Code, Message: env.Message, Retryable: &retryable})
	}
	req := st.NewRequest()
	if err := runtime.PopulateFieldFromPath(req, route.Topic.IDField, id); err != nil {
		failed(status.Errorf(codes.InvalidArgument, "topic id %q: %v", id, err))
		return
	}
	if offset > 0 && rt.Resume != "" {
		if err := runtime.PopulateFieldFromPath(req, rt.Resume, strconv.FormatInt(offset, 10)); err != nil {
			failed(status.Errorf(codes.InvalidArgument, "offset: %v", err))
			return
		}
	}
	callCtx, err := runtime.AnnotateContext(ctx, c.o.Mux, c.r, rt.RPC, runtime.WithHTTPPathPattern(Path))
	if err != nil {
		failed(err)
		return
	}
	stream, err := st.Open(callCtx, route.Conn, req)
	if err != nil {
		failed(err)
		return
	}
	// Accepted once the backend sends its header (or a first event); a refusal is the
	// call's status.
	md, _ := stream.Header()
	var first restapi.Event
	if len(md.Get(rt.Header)) == 0 {
		if first, err = stream.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				c.send(frame{Type: "subscribed", Topic: topic, Offset: &offset})
				c.send(frame{Type: "end", Topic: topic})
				return
			}
			failed(err)
			return
		}
	}
	if !c.send(frame{Type: "subscribed", Topic: topic, Offset: &offset}) {
		return
	}
	topicJSON, _ := json.Marshal(topic)
	for {
		ev := first
		if first != nil {
			first = nil
		} else if ev, err = stream.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				c.send(frame{Type: "end", Topic: topic})
				return
			}
			failed(err)
			return
		}
		b, err := eventFrame(topicJSON, ev)
		if err != nil {
			failed(apperr.Internal(err))
			return
		}
		if !c.queue(ctx, b) {
			return
		}
	}
}

// Bearer returns the token of a WebSocket upgrade request's "bearer.<token>"
// subprotocol, "" when there is none. The gateway's authentication reads it, since a browser
// cannot set the Authorization header on a WebSocket.
func Bearer(r *http.Request) string {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return ""
	}
	for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(v, ",") {
			if t, ok := strings.CutPrefix(strings.TrimSpace(p), "bearer."); ok && t != "" {
				return t
			}
		}
	}
	return ""
}

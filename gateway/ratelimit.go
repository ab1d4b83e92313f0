package gateway

import (
	"context"
	"hash/maphash"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/shopmind/shopmind/internal/apperr"
)

// clientAddr is the address a request is attributed to: the TCP peer, unless the peer is a
// trusted proxy, in which case X-Forwarded-For is walked from the right (the hop nearest to
// us) past every trusted proxy, and the first untrusted address is the client. Addresses a
// client wrote itself (the left part of the header) are never believed.
func clientAddr(r *http.Request, trusted []netip.Prefix) netip.Addr {
	peer := parseHostAddr(r.RemoteAddr)
	if !peer.IsValid() || !isTrusted(peer, trusted) {
		return peer
	}
	client := peer
	values := r.Header.Values("X-Forwarded-For")
	for i := len(values) - 1; i >= 0; i-- {
		hops := strings.Split(values[i], ",")
		for j := len(hops) - 1; j >= 0; j-- {
			a, err := netip.ParseAddr(strings.TrimSpace(hops[j]))
			if err != nil {
				return client // garbage: stop at the last address we could verify
			}
			client = a.Unmap()
			if !isTrusted(client, trusted) {
				return client
			}
		}
	}
	return client
}

func parseHostAddr(hostport string) netip.Addr {
	if ap, err := netip.ParseAddrPort(hostport); err == nil {
		return ap.Addr().Unmap()
	}
	if a, err := netip.ParseAddr(hostport); err == nil {
		return a.Unmap()
	}
	return netip.Addr{}
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// limiterKey is the rate-limit key of an address: IPv4 addresses one by one, IPv6 by /64
// (one subscriber's network: a single host can use all 2^64 addresses of its prefix).
func limiterKey(a netip.Addr) [16]byte {
	if a.Is6() && !a.Is4In6() {
		p, _ := a.Prefix(64)
		return p.Addr().As16()
	}
	return a.As16()
}

// limiterShards spreads keys over independently locked shards.
const limiterShards = 64

// rateLimiter is a token bucket (golang.org/x/time/rate) per client key, held in sharded
// LRU lists. Memory is bounded twice: an entry idle for the time its bucket takes to refill
// (burst/rate) is indistinguishable from a new one and is dropped (lazily on each call and by
// a periodic sweep), and each shard holds at most maxKeys/limiterShards entries, evicting its
// least recently used one beyond that. An evicted client starts again with a full bucket, so
// eviction can only make the limiter more lenient, never reject someone wrongly.
type rateLimiter struct {
	limit    rate.Limit
	burst    int
	idle     time.Duration
	perShard int
	seed     maphash.Seed
	shards   [limiterShards]limiterShard
}

type limiterShard struct {
	mu         sync.Mutex
	entries    map[[16]byte]*limiterEntry
	head, tail *limiterEntry // head: most recently used
	peak       int           // largest size since the map was last rebuilt
}

type limiterEntry struct {
	key        [16]byte
	lim        rate.Limiter
	seen       int64 // unix nanoseconds of the last request
	prev, next *limiterEntry
}

// limitDecision is the outcome of one request against its bucket.
type limitDecision struct {
	allowed    bool
	remaining  int           // whole tokens left after this request
	reset      time.Duration // until the bucket is full again
	retryAfter time.Duration // until the next token, when rejected
}

func newRateLimiter(rps float64, burst, maxKeys int) *rateLimiter {
	idle := time.Duration(float64(burst) / rps * float64(time.Second))
	if idle < time.Second {
		idle = time.Second
	}
	per := max(maxKeys/limiterShards, 1)
	l := &rateLimiter{limit: rate.Limit(rps), burst: burst, idle: idle, perShard: per, seed: maphash.MakeSeed()}
	for i := range l.shards {
		l.shards[i].entries = map[[16]byte]*limiterEntry{}
	}
	return l
}

func (l *rateLimiter) shard(key [16]byte) *limiterShard {
	return &l.shards[maphash.Comparable(l.seed, key)%limiterShards]
}

// allow takes one token from key's bucket at time now.
func (l *rateLimiter) allow(key [16]byte, now time.Time) limitDecision {
	s := l.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	nowNS := now.UnixNano()
	s.dropIdle(nowNS-int64(l.idle), 2)
	e := s.entries[key]
	if e == nil {
		if len(s.entries) >= l.perShard { // full: recycle the least recently used entry
			e = s.tail
			s.unlink(e)
			delete(s.entries, e.key)
		} else {
			e = &limiterEntry{}
			e.lim.SetBurstAt(time.Time{}, l.burst)
		}
		e.key = key
		// A last update at the zero time makes the next use see a full bucket.
		e.lim.SetLimitAt(time.Time{}, l.limit)
		s.entries[key] = e
		s.peak = max(s.peak, len(s.entries))
	} else {
		s.unlink(e)
	}
	s.pushFront(e)
	e.seen = nowNS

	var d limitDecision
	tokens := e.lim.TokensAt(now)
	if tokens >= 1 && e.lim.AllowN(now, 1) {
		d.allowed = true
		tokens--
	} else {
		d.retryAfter = l.durationFor(1 - tokens)
	}
	if tokens > 0 {
		d.remaining = int(math.Floor(tokens))
	}
	d.reset = l.durationFor(float64(l.burst) - tokens)
	return d
}

func (l *rateLimiter) durationFor(tokens float64) time.Duration {
	if tokens <= 0 {
		return 0
	}
	return time.Duration(tokens / float64(l.limit) * float64(time.Second))
}

// sweep drops every idle entry and gives memory back after a flood.
func (l *rateLimiter) sweep(now time.Time) {
	cutoff := now.UnixNano() - int64(l.idle)
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		s.dropIdle(cutoff, -1)
		if s.peak > 64 && len(s.entries) < s.peak/4 { // maps never shrink: rebuild
			m := make(map[[16]byte]*limiterEntry, len(s.entries))
			for k, v := range s.entries {
				m[k] = v
			}
			s.entries, s.peak = m, len(m)
		}
		s.mu.Unlock()
	}
}

// size is the number of tracked keys.
func (l *rateLimiter) size() int {
	n := 0
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		n += len(s.entries)
		s.mu.Unlock()
	}
	return n
}

// run sweeps periodically until ctx ends.
func (l *rateLimiter) run(ctx context.Context) {
	every := min(max(l.idle, time.Second), time.Minute)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			l.sweep(now)
		}
	}
}

// dropIdle removes up to n (all when n < 0) entries last seen before cutoff, oldest first.
func (s *limiterShard) dropIdle(cutoff int64, n int) {
	for e := s.tail; e != nil && e.seen < cutoff && n != 0; e = s.tail {
		s.unlink(e)
		delete(s.entries, e.key)
		n--
	}
}

func (s *limiterShard) unlink(e *limiterEntry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		s.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		s.tail = e.prev
	}
	e.prev, e.next = nil, nil
}

func (s *limiterShard) pushFront(e *limiterEntry) {
	e.next = s.head
	if s.head != nil {
		s.head.prev = e
	}
	s.head = e
	if s.tail == nil {
		s.tail = e
	}
}

// rateLimit rejects a client beyond its rate with the 429 envelope, Retry-After and the
// RateLimit-* headers (draft-ietf-httpapi-ratelimit-headers), which allowed answers carry
// too: RateLimit-Limit is the burst, RateLimit-Remaining the whole tokens left, and
// RateLimit-Reset the seconds until the bucket is full again.
func (g *Gateway) rateLimit(next http.Handler) http.Handler {
	if g.limiter == nil {
		return next
	}
	limit := strconv.Itoa(g.limiter.burst)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d := g.limiter.allow(limiterKey(ClientAddr(r.Context())), time.Now())
		h := w.Header()
		h.Set("RateLimit-Limit", limit)
		h.Set("RateLimit-Remaining", strconv.Itoa(d.remaining))
		h.Set("RateLimit-Reset", strconv.Itoa(ceilSeconds(d.reset)))
		if !d.allowed {
			g.envelopes.write(w, r, apperr.Envelope{Code: apperr.EnvelopeCode(apperr.KindTooManyRequests),
				Message: "too many requests: retry later", RetryAfter: max(d.retryAfter, time.Second)})
			return
		}
		next.ServeHTTP(w, r)
	})
}

func ceilSeconds(d time.Duration) int {
	return int((d + time.Second - 1) / time.Second)
}

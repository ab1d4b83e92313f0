package chat

import (
	"context"
	"log/slog"
	"sync"
	"time"

	chatv1 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v1"
	"github.com/shopmind/shopmind/internal/service"
	"github.com/shopmind/shopmind/services/chat/agent"
)

// sessionEventsKept is how many recent events of a session its followers can resume from.
const sessionEventsKept = 256

// publish adds an event to the session's feed.
func (s *sessionState) publish(ev *chatv1.StreamSessionEventsResponse) {
	ev.ConversationId = s.id
	s.events.addWith(func(off int64) *chatv1.StreamSessionEventsResponse { ev.Offset = off; return ev })
}

// sessionState is the in-memory state of one conversation in this process: a queue that
// lets one message of the conversation run at a time (so replies and history never
// interleave), and the cached history the agents receive. It is rebuilt from storage
// whenever it is missing or stale, so releasing it loses nothing.
type sessionState struct {
	id   string
	turn chan struct{} // holds a token while a message of the conversation runs

	// Guarded by sessions.mu.
	refs     int // requests queued or running
	lastUsed time.Time

	// events are the session's recent events for its followers (StreamSessionEvents).
	events *feed[*chatv1.StreamSessionEventsResponse]

	// Guarded by turn.
	history []agent.Message // most recent messages, repaired; valid when version matches
	version time.Time       // sessions.updated_at the history corresponds to; zero: none cached
}

// acquireTurn waits until no other message of the conversation runs, or ctx ends.
func (s *sessionState) acquireTurn(ctx context.Context) error {
	select {
	case s.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *sessionState) releaseTurn() { <-s.turn }

// cachedHistory returns the cached history when it matches the stored session's version.
func (s *sessionState) cachedHistory(version time.Time) ([]agent.Message, bool) {
	if s.version.IsZero() || !s.version.Equal(version) {
		return nil, false
	}
	return s.history, true
}

// remember caches the history as of the stored session's version, keeping the most recent
// limit messages, repaired.
func (s *sessionState) remember(history []agent.Message, version time.Time, limit int) {
	if len(history) > limit {
		history = repairToolCalls(history[len(history)-limit:])
	}
	s.history, s.version = history, version
}

// forget drops the cached history (the next message reads storage).
func (s *sessionState) forget() { s.history, s.version = nil, time.Time{} }

// sessions holds the per-conversation states of this process and releases idle ones.
type sessions struct {
	idle time.Duration
	now  func() time.Time

	mu sync.Mutex
	m  map[string]*sessionState
}

func newSessions(idle time.Duration) *sessions {
	return &sessions{idle: idle, now: time.Now, m: map[string]*sessionState{}}
}

// acquire returns the conversation's state, created when missing, and holds it until
// release: a held state is never cleaned up.
func (ss *sessions) acquire(id string) *sessionState {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s := ss.m[id]
	if s == nil {
		// Offsets start at the clock's microseconds: a state rebuilt later (after a release
		// or a restart) numbers above every offset the previous one gave out, so an old
		// position is recognised as gone.
		s = &sessionState{id: id, turn: make(chan struct{}, 1),
			events: newFeed[*chatv1.StreamSessionEventsResponse](ss.now().UnixMicro(), sessionEventsKept)}
		ss.m[id] = s
	}
	s.refs++
	s.lastUsed = ss.now()
	return s
}

// release ends a hold taken by acquire.
func (ss *sessions) release(s *sessionState) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s.refs--
	s.lastUsed = ss.now()
}

// drop removes a conversation's state unless it is in use (the session was deleted).
func (ss *sessions) drop(id string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if s := ss.m[id]; s != nil && s.refs == 0 {
		delete(ss.m, id)
	}
}

// sweep releases the states unused for longer than the idle timeout and returns how many.
func (ss *sessions) sweep() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	cutoff := ss.now().Add(-ss.idle)
	n := 0
	for id, s := range ss.m {
		if s.refs == 0 && s.lastUsed.Before(cutoff) {
			delete(ss.m, id)
			n++
		}
	}
	return n
}

// size is the number of conversations held in memory.
func (ss *sessions) size() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return len(ss.m)
}

// run sweeps every interval until ctx ends.
func (ss *sessions) run(ctx context.Context, interval time.Duration, log *slog.Logger) {
	service.Every(ctx, interval, func() {
		if n := ss.sweep(); n > 0 {
			log.Debug("chat: idle sessions released", "released", n, "held", ss.size())
		}
	})
}

package chat

import "sync"

// feed is an append-only log of events with offsets that many followers read at their own
// pace: a follower asks for what came after the last offset it saw and, when nothing did,
// waits on a channel closed by the next append (one close wakes every follower, however
// many). A workflow's feed holds its events numbered by the database (1, 2, 3...); a
// session's keeps its most recent events (max) with offsets it numbers itself.
type feed[T any] struct {
	max int // entries kept; 0: all

	mu      sync.Mutex
	items   []T
	first   int64 // offset of items[0]
	next    int64 // offset of the next entry
	changed chan struct{}
	closed  bool
}

func newFeed[T any](first int64, max int) *feed[T] {
	return &feed[T]{max: max, first: first, next: first, changed: make(chan struct{})}
}

// add appends v with the next offset and returns that offset.
func (f *feed[T]) add(v T) int64 {
	return f.addWith(func(int64) T { return v })
}

// addWith appends build(offset) with the next offset and returns that offset.
func (f *feed[T]) addWith(build func(offset int64) T) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	off := f.next
	f.items = append(f.items, build(off))
	f.next++
	if f.max > 0 && len(f.items) > f.max {
		drop := len(f.items) - f.max
		clear(f.items[:drop])
		f.items = append(f.items[:0], f.items[drop:]...)
		f.first += int64(drop)
	}
	close(f.changed)
	f.changed = make(chan struct{})
	return off
}

// close tells the followers that nothing more comes.
func (f *feed[T]) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.closed {
		f.closed = true
		close(f.changed)
	}
}

// read is what a follower gets.
type read[T any] struct {
	items []T
	last  int64           // offset of the last entry returned (after, when none)
	wait  <-chan struct{} // closed by the next add or close
	done  bool            // closed: nothing more comes
	gone  bool            // after is no longer (or not yet) in the feed
}

// since returns the entries after offset after, the last offset the follower saw (first-1:
// from the oldest kept); gone when after is older than the oldest kept or beyond the head.
func (f *feed[T]) since(after int64) read[T] {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := read[T]{last: after, wait: f.changed, done: f.closed}
	if after < f.first-1 || after > f.next-1 {
		r.gone = true
		return r
	}
	if n := int(after - (f.first - 1)); n < len(f.items) {
		r.items = append([]T(nil), f.items[n:]...)
		r.last = f.next - 1
	}
	return r
}

// head is the offset of the last entry (first-1 when empty).
func (f *feed[T]) head() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.next - 1
}

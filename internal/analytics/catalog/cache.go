package catalog

import (
	"context"
	"sync"
	"time"
)

// Cache returns load behind a cache of ttl: the store's catalog (its diy_* tables come from
// the store's schema) is read at most once per ttl, so a path that checks SQL on every
// request (the built-in NL2SQL provider's questions) does not query the schema each time. A
// new diy_* table appears within ttl. A failed load is not kept.
func Cache(load func(ctx context.Context) (*Catalog, error), ttl time.Duration) func(ctx context.Context) (*Catalog, error) {
	var (
		mu    sync.Mutex
		cat   *Catalog
		until time.Time
	)
	return func(ctx context.Context) (*Catalog, error) {
		mu.Lock()
		defer mu.Unlock()
		if cat != nil && time.Now().Before(until) {
			return cat, nil
		}
		c, err := load(ctx)
		if err != nil {
			return nil, err
		}
		cat, until = c, time.Now().Add(ttl)
		return cat, nil
	}
}

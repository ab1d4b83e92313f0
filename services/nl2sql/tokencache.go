package nl2sql

import (
	"sync"
	"time"
)

// tokenCache keeps provider tokens for reuse: a request for the same tenant, role, shops
// and lifetime gets the cached token while it has more than the margin left
// (SHOPMIND_NL2SQL_CACHE_MARGIN), instead of a new provider call. At most size entries;
// expired entries go first when it is full, then arbitrary ones.
type tokenCache struct {
	mu      sync.Mutex
	size    int
	entries map[string]cachedToken
}

type cachedToken struct {
	token     string
	expiresAt time.Time
}

func newTokenCache(size int) *tokenCache {
	return &tokenCache{size: size, entries: map[string]cachedToken{}}
}

// get returns the token cached under key when it lives longer than margin from now.
func (c *tokenCache) get(key string, now time.Time, margin time.Duration) (cachedToken, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || !now.Add(margin).Before(e.expiresAt) {
		return cachedToken{}, false
	}
	return e, true
}

func (c *tokenCache) put(key string, e cachedToken, now time.Time) {
	if c.size <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; !ok && len(c.entries) >= c.size {
		for k, v := range c.entries {
			if !now.Before(v.expiresAt) {
				delete(c.entries, k)
			}
		}
		for k := range c.entries {
			if len(c.entries) < c.size {
				break
			}
			delete(c.entries, k)
		}
	}
	c.entries[key] = e
}

func (c *tokenCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

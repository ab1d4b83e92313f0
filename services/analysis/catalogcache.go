package analysis

import (
	"context"
	"sync"
	"time"

	"github.com/shopmind/shopmind/internal/analytics/catalog"
)

// catalogTTL bounds how long a new diy_* table takes to appear in queries and metrics.
const catalogTTL = 30 * time.Second

// catalogCache keeps the store's catalog for catalogTTL, so previews and metric checks do
// not query the store's schema each time.
type catalogCache struct {
	load func(ctx context.Context) (*catalog.Catalog, error)

	mu    sync.Mutex
	cat   *catalog.Catalog
	until time.Time
}

func (c *catalogCache) get(ctx context.Context) (*catalog.Catalog, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cat != nil && time.Now().Before(c.until) {
		return c.cat, nil
	}
	cat, err := c.load(ctx)
	if err != nil {
		return nil, err
	}
	c.cat, c.until = cat, time.Now().Add(catalogTTL)
	return cat, nil
}

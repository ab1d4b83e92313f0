package agent

import "sync"

// PerTenant holds one T per tenant, made on first use (the zero T), so that slow work for one
// tenant (rebuilding its index or graph, under a mutex inside T) never waits for another's.
type PerTenant[T any] struct {
	mu sync.Mutex
	m  map[int64]*T
}

// Of is tenantID's T.
func (p *PerTenant[T]) Of(tenantID int64) *T {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[int64]*T{}
	}
	v := p.m[tenantID]
	if v == nil {
		v = new(T)
		p.m[tenantID] = v
	}
	return v
}

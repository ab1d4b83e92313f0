package service

import (
	"context"
	"time"
)

// Every calls fn every interval until ctx ends: the loop of a service's background
// sweeps. The first call comes an interval after the start; call fn before for one at once.
func Every(ctx context.Context, interval time.Duration, fn func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

package team

import (
	"context"
	"testing"
	"time"

	"github.com/shopmind/shopmind/services/chat/agent/agenttest"
)

// BenchmarkFanout measures the wall time of a fan-out to the four experts whose work takes
// 10, 20, 30 and 40 ms (sleeping runners: the fan-out's own cost shows beside the slowest
// expert, 40 ms, against the sum, 100 ms).
func BenchmarkFanout(b *testing.B) {
	delays := map[string]time.Duration{ExpertSales: 10 * time.Millisecond, ExpertGoods: 20 * time.Millisecond,
		ExpertShops: 30 * time.Millisecond, ExpertPromotion: 40 * time.Millisecond}
	tm := New(DefaultExperts(), scriptRunner(func(ctx context.Context, x Expert) (*Finding, error) {
		time.Sleep(delays[x.Name])
		return &Finding{Text: x.Name}, nil
	}), Options{})
	for b.Loop() {
		if _, err := tm.Analyse(context.Background(), nil, env(), Task{Description: "x"}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOfflineTeam measures the offline team's whole answer to "analyse last month's
// sales, goods and shops" over the in-process fake semantic layer with 2 ms per call, the
// experts in parallel (concurrency 4) and one at a time (concurrency 1).
func BenchmarkOfflineTeam(b *testing.B) {
	for _, c := range []struct {
		name        string
		concurrency int
	}{{"parallel", 4}, {"sequential", 1}} {
		b.Run(c.name, func(b *testing.B) {
			f := agenttest.NewFakeAnalytics()
			f.Delay = 2 * time.Millisecond
			p, _ := offlineTeam(f, Options{Concurrency: c.concurrency})
			for b.Loop() {
				agenttest.Ask(b, p, "analyse last month's sales, goods and shops")
			}
		})
	}
}

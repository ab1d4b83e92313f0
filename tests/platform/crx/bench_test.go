//go:build platform

package crx

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopmind/shopmind/internal/analytics/warehouse/warehousetest"
	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/testutil/stack"
)

// BenchmarkSyncThroughGateway measures whole uploads: POST /api/v1/data/crx/sync with 500
// new values a batch through the gateway (edge, WAF, JSON transcoding, validation, the shop
// check by gRPC to basic, the batch-id record, the upload notification), from 4 concurrent
// clients; items/s reported. The load generator shares the machine's two cores. waf=off
// shows what the edge's WAF inspection of the 60 KiB bodies costs.
func BenchmarkSyncThroughGateway(b *testing.B) {
	for _, run := range []struct {
		name string
		ch   bool
		waf  bool
	}{{"postgres", false, true}, {"postgres/waf=off", false, false}, {"clickhouse", true, true}} {
		b.Run(run.name, func(b *testing.B) {
			opts := []stack.Option{func(c *app.Config) { c.WAF.Enabled = run.waf }}
			if run.ch {
				db := warehousetest.ClickHouse(b)
				opts = append(opts, func(c *app.Config) { c.Analytics.URL = db.URL })
			}
			s := stack.Start(b, opts...)
			d := &tenant{s.DemoAdmin(b)}
			shops := make([]int64, 20)
			for i := range shops {
				shops[i] = d.addShop(b, fmt.Sprintf("tb-%d", i))
			}
			const size = 500
			at := time.Now().UTC().Add(-time.Hour)
			var next atomic.Int64
			body := func() string {
				n := next.Add(1)
				items := make([]string, size)
				for i := range items {
					stat := at.Add(-time.Duration(n*size+int64(i)) * time.Second)
					items[i] = fmt.Sprintf(`{"metric_key":"gmv","shop_id":%d,"value":%d,"collected_at":%q,"stat_time":%q,"dims":{"channel":"search"}}`,
						shops[i%len(shops)], i, at.Format(time.RFC3339), stat.Format(time.RFC3339))
				}
				return fmt.Sprintf(`{"client_batch_id":"%08x-0000-4000-8000-%012x","items":[%s]}`, n, n, strings.Join(items, ","))
			}
			auth := stack.Bearer(d.Token)
			b.SetParallelism(2) // 4 clients on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if r := s.Do(b, "POST", "/api/v1/data/crx/sync", body(), auth...); r.Status != 200 || !strings.Contains(string(r.Body), `"accepted":500`) {
						b.Errorf("sync: %d %s", r.Status, clip(string(r.Body)))
						return
					}
				}
			})
			b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "items/s")
		})
	}
}

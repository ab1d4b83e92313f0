package sqlsandbox_test

import (
	"slices"
	"testing"
	"time"

	"github.com/shopmind/shopmind/internal/analytics/catalog"
	"github.com/shopmind/shopmind/internal/sqlsandbox"
)

// BenchmarkRewrite measures parse + check + rewrite + print of the legitimate corpus, per
// query, and reports the p50 and p99 of the per-query times (tenant and a shop filter).
func BenchmarkRewrite(b *testing.B) {
	for _, dialect := range []string{sqlsandbox.Postgres, sqlsandbox.ClickHouse} {
		b.Run(dialect, func(b *testing.B) {
			qs := loadLegit(b, dialect)
			cat := catalog.Base()
			scope := sqlsandbox.Scope{TenantID: 7, RowFilters: []sqlsandbox.RowFilter{sqlsandbox.ShopFilter([]int64{1, 2, 3})}}
			times := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				q := qs[i%len(qs)]
				start := time.Now()
				if _, err := sqlsandbox.Rewrite(dialect, cat, scope, q, 1000); err != nil {
					b.Fatal(err)
				}
				times = append(times, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(times[len(times)*99/100].Microseconds()), "p99-µs")
		})
	}
}

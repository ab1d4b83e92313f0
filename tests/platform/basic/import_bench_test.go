//go:build platform

package basic

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	basicv1 "github.com/shopmind/shopmind/gen/go/shopmind/basic/v1"
	"github.com/shopmind/shopmind/internal/analytics/warehouse"
	"github.com/shopmind/shopmind/internal/testutil/stack"
	"github.com/shopmind/shopmind/services/basic"
)

// genOrders is a generated ShopMind CSV export of orders with two lines each, produced as
// it is read.
type genOrders struct {
	orders, next int
	buf          []byte
	head         bool
}

func (g *genOrders) Read(p []byte) (int, error) {
	for len(g.buf) < len(p) {
		if !g.head {
			g.buf, g.head = append(g.buf, "order_no,status,ordered_at,paid_at,buyer,paid_amount,sku,goods_name,quantity,unit_price,shop\n"...), true
			continue
		}
		if g.next >= g.orders {
			break
		}
		g.next++
		for line := 0; line < 2; line++ {
			sku := (g.next + line) % 500
			g.buf = fmt.Appendf(g.buf, "B-%d,completed,2026-10-%02dT08:00:00Z,2026-10-%02dT08:05:00Z,buyer%d@example.com,59.80,SKU-%d,Goods %d,2,14.95,Bench shop\n",
				g.next, 1+g.next%28, 1+g.next%28, g.next%5000, sku, sku)
		}
	}
	if len(g.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(p, g.buf)
	g.buf = g.buf[:copy(g.buf, g.buf[n:])]
	return n, nil
}

// cpuSeconds is the CPU time of this process plus every PostgreSQL process on the machine
// (/proc; other users of the server count too, so the figure errs low): on a loaded shared
// machine the lines per CPU second say what an import costs.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	total := float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || !strings.Contains(s[:i], "(postgres") {
			continue
		}
		fields := strings.Fields(s[i+2:])
		if len(fields) > 12 {
			u, _ := strconv.ParseFloat(fields[11], 64)
			k, _ := strconv.ParseFloat(fields[12], 64)
			total += (u + k) / 100 // clock ticks
		}
	}
	return total
}

// BenchmarkImportStore: order lines stored per second end to end into PostgreSQL: parsed,
// matched to shop and goods, upserted into basic.orders and basic.order_items, and pushed
// through the outbox into the analytical store (PostgreSQL); 20,000 orders (40,000 lines)
// per iteration into a fresh tenant. The peak heap in use is sampled every 10 ms.
func BenchmarkImportStore(b *testing.B) {
	s := stack.Start(b)
	ctx := context.Background()
	wh, err := warehouse.Open(ctx, "", s.DB.Pool, nil)
	if err != nil {
		b.Fatal(err)
	}
	cfg, _ := basic.LoadConfig(func(string) string { return "" })
	im := basic.NewImporter(ctx, s.DB.Pool, wh, slog.New(slog.DiscardHandler), cfg)
	const orders = 20_000
	var lines int64
	var elapsed time.Duration
	var cpu float64
	var peak atomic.Uint64
	for i := 0; i < b.N; i++ {
		tenantID := stack.AddTenant(b, s.DB, fmt.Sprintf("bench%d", i))
		stop := make(chan struct{})
		go func() {
			var ms runtime.MemStats
			for {
				select {
				case <-stop:
					return
				case <-time.After(10 * time.Millisecond):
				}
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > peak.Load() {
					peak.Store(ms.HeapInuse)
				}
			}
		}()
		start, cpu0 := time.Now(), cpuSeconds()
		job, err := im.Run(ctx, basic.ImportParams{TenantID: tenantID, Options: &basicv1.ImportOptions{Kind: "orders"}}, &genOrders{orders: orders})
		if err != nil {
			b.Fatal(err)
		}
		if err := im.Flush(tenantID); err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(start)
		cpu += cpuSeconds() - cpu0
		close(stop)
		lines += job.GetRowsStored()
		var stored int64
		if err := s.DB.Pool.QueryRow(ctx, "SELECT count(*) FROM analytics.basic_order_items WHERE i_tenant_id = $1", tenantID).Scan(&stored); err != nil {
			b.Fatal(err)
		}
		if job.GetOrdersCreated() != orders || stored != 2*orders || !strings.EqualFold(job.GetStatus(), "succeeded") {
			b.Fatalf("job %v, %d lines in the analytical store", job, stored)
		}
	}
	b.ReportMetric(float64(lines)/elapsed.Seconds(), "lines/s")
	b.ReportMetric(float64(lines)/cpu, "lines/cpu-s")
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
}

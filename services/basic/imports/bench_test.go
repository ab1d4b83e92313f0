package imports_test

import (
	"errors"
	"io"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shopmind/shopmind/services/basic/imports"
)

// GenReader is a generated ShopMind CSV export of size bytes or more: orders of two lines,
// produced as it is read (nothing held).
type GenReader struct {
	Size  int64
	n     int64
	order int
	buf   []byte
	head  bool
}

const genHeader = "order_no,status,ordered_at,paid_at,shipped_at,completed_at,buyer,total_amount,discount_amount,paid_amount,refund_amount,sku,goods_name,quantity,unit_price,shop\n"

func (g *GenReader) Read(p []byte) (int, error) {
	for len(g.buf) < len(p) {
		if !g.head {
			g.buf, g.head = append(g.buf, genHeader...), true
			continue
		}
		if g.n >= g.Size {
			break
		}
		g.order++
		no := strconv.Itoa(g.order)
		day := strconv.Itoa(1 + g.order%28)
		if len(day) == 1 {
			day = "0" + day
		}
		for line := 0; line < 2; line++ {
			start := len(g.buf)
			g.buf = append(g.buf, "GEN-"...)
			g.buf = append(g.buf, no...)
			g.buf = append(g.buf, ",completed,2026-10-"...)
			g.buf = append(g.buf, day...)
			g.buf = append(g.buf, "T08:00:00Z,2026-10-"...)
			g.buf = append(g.buf, day...)
			g.buf = append(g.buf, "T08:05:00Z,,,buyer"...)
			g.buf = append(g.buf, strconv.Itoa(g.order%5000)...)
			g.buf = append(g.buf, "@example.com,59.80,0,59.80,0,SKU-"...)
			g.buf = append(g.buf, strconv.Itoa((g.order+line)%300)...)
			g.buf = append(g.buf, ",Generated goods "...)
			g.buf = append(g.buf, strconv.Itoa((g.order+line)%300)...)
			g.buf = append(g.buf, ",2,14.95,Generated shop\n"...)
			g.n += int64(len(g.buf) - start)
		}
	}
	if len(g.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(p, g.buf)
	g.buf = g.buf[:copy(g.buf, g.buf[n:])]
	return n, nil
}

func parseAll(b *testing.B, r io.Reader) (lines int64) {
	rd, err := imports.NewReader(r, imports.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for {
		o, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return lines
		}
		if err != nil {
			b.Fatal(err)
		}
		lines += int64(len(o.Lines))
	}
}

// cpuTime is the process's user and system CPU time: on a shared, loaded machine the
// lines per CPU second say what the code costs, the lines per wall second what the machine
// gave it.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkParse: order lines parsed per second (ShopMind CSV, 64 MiB per iteration).
func BenchmarkParse(b *testing.B) {
	var lines int64
	start, cpu := time.Now(), cpuTime()
	for i := 0; i < b.N; i++ {
		lines += parseAll(b, &GenReader{Size: 64 << 20})
	}
	b.ReportMetric(float64(lines)/time.Since(start).Seconds(), "lines/s")
	b.ReportMetric(float64(lines)/(cpuTime()-cpu).Seconds(), "lines/cpu-s")
}

// BenchmarkParse1GB: a 1 GiB file through the reader; the peak heap in use, sampled every
// 10 ms, shows memory flat in the file's size (run with -benchtime=1x).
func BenchmarkParse1GB(b *testing.B) {
	for i := 0; i < b.N; i++ {
		var peak atomic.Uint64
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
		start, cpu := time.Now(), cpuTime()
		lines := parseAll(b, &GenReader{Size: 1 << 30})
		close(stop)
		b.ReportMetric(float64(lines)/time.Since(start).Seconds(), "lines/s")
		b.ReportMetric(float64(lines)/(cpuTime()-cpu).Seconds(), "lines/cpu-s")
		b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
	}
}

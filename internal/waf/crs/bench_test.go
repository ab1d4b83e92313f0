package crs

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopmind/shopmind/internal/waf"
)

var wafBenchSeq atomic.Uint64

const wafBenchJWT = "Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxIiwidGlkIjoiMSIsInVzZXJuYW1lIjoiYWRtaW4iLCJyb2xlcyI6WzFdLCJleHAiOjE3OTk5OTk5OTl9.c2lnbmF0dXJlLW9mLXRoZS10b2tlbi1oZXJl"

func wafBenchGet() *http.Request {
	r := httptest.NewRequest("GET", "/basic/api/v1/basic/goods?page_num=1&page_size=20&sort=created_at,desc", nil)
	r.Header.Set("User-Agent", "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36")
	r.Header.Set("Accept", "application/json, text/plain, */*")
	r.Header.Set("Accept-Language", "zh-CN,zh;q=0.9,en;q=0.8")
	r.Header.Set("Accept-Encoding", "gzip, deflate, br")
	r.Header.Set("Authorization", wafBenchJWT)
	r.Header.Set("X-Request-Id", "01J9Z3W4K5M6N7P8Q9R0S1T2U3")
	return r
}

// wafBenchPost is a login; the captcha id and code differ on every call (as they do between real
// logins), so the WAF's result cache cannot answer for them.
func wafBenchPost() *http.Request {
	n := wafBenchSeq.Add(1)
	body := fmt.Sprintf(`{"tenant_code":"demo","username":"admin","password":"admin123","captcha_id":"c-%08x","captcha_code":"%04x"}`, n*2654435761, n%65536)
	r := httptest.NewRequest("POST", "/tenant/api/v1/tenant/auth/login", strings.NewReader(body))
	r.Header.Set("User-Agent", "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36")
	r.Header.Set("Accept", "application/json, text/plain, */*")
	r.Header.Set("Accept-Language", "zh-CN,zh;q=0.9,en;q=0.8")
	r.Header.Set("Accept-Encoding", "gzip, deflate, br")
	r.Header.Set("Content-Type", "application/json")
	return r
}

// wafNopWriter is a response writer that keeps only the status.
type wafNopWriter struct {
	h      http.Header
	status int
}

func (n *wafNopWriter) Header() http.Header         { return n.h }
func (n *wafNopWriter) Write(b []byte) (int, error) { return len(b), nil }
func (n *wafNopWriter) WriteHeader(code int)        { n.status = code }

// BenchmarkWAF measures the WAF alone in front of a handler that only drains the body:
// ShopMind's configuration, the same without the operators' result cache (nocache_: every
// value is matched as if never seen), then the stock configuration (Coraza's recommended settings with
// the whole CRS, blocking, paranoia level 1) for comparison. Each sub-benchmark reports ns/op
// and the median cost of one request (median-ns/req, less sensitive to GC pauses and to the
// machine's other load than the mean). shopmind_traffic cycles through the legitimate
// requests of waf_test.go (every endpoint family of the spec; the stock rules block a few of
// them, PUT and DELETE among them, which only makes the stock figure lower).
func BenchmarkWAF(b *testing.B) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(200)
	})
	traffic := make([]func() *http.Request, len(wafLegitimate))
	for i, c := range wafLegitimate {
		traffic[i] = c.build
	}
	for _, p := range []struct {
		prefix  string
		profile wafProfile
		memo    bool
	}{{"", profileShopMind, true}, {"nocache_", profileShopMind, false}, {"stock_", profileRecommended, false}} {
		cfg := waf.Config{Enabled: true, ParanoiaLevel: 1, AnomalyThreshold: 5, BodyLimit: waf.DefaultBodyLimit}
		m, err := newWAF(cfg, p.profile, slog.New(slog.DiscardHandler))
		if err != nil {
			b.Fatal(err)
		}
		h := wafHandler(m, ok, nil)
		for _, c := range []struct {
			name string
			reqs []func() *http.Request
		}{{"get_small", []func() *http.Request{wafBenchGet}}, {"post_json_small", []func() *http.Request{wafBenchPost}}, {"shopmind_traffic", traffic}} {
			b.Run(p.prefix+c.name, func(b *testing.B) {
				m.switches.cachesOff.Store(!p.memo)
				w := &wafNopWriter{h: http.Header{}}
				for i := range 20 { // warm pools and caches
					h.ServeHTTP(w, c.reqs[i%len(c.reqs)]())
				}
				samples := make([]time.Duration, 0, b.N)
				// Requests are built in batches with the timer stopped: stopping it per
				// request reads the memory statistics, which stops the world each time
				// and would be measured as the WAF's cost.
				const batch = 256
				batchReqs := make([]*http.Request, 0, batch)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if i%batch == 0 {
						b.StopTimer()
						batchReqs = batchReqs[:0]
						for j := i; j < min(i+batch, b.N); j++ {
							batchReqs = append(batchReqs, c.reqs[j%len(c.reqs)]())
						}
						b.StartTimer()
					}
					r := batchReqs[i%batch]
					w.status = 0
					start := time.Now()
					h.ServeHTTP(w, r)
					samples = append(samples, time.Since(start))
					if w.status != 200 && p.profile == profileShopMind {
						b.Fatalf("request %d blocked", i%len(c.reqs))
					}
				}
				b.StopTimer()
				slices.Sort(samples)
				b.ReportMetric(float64(samples[len(samples)/2].Nanoseconds()), "median-ns/req")
			})
		}
	}
}

// BenchmarkWAFCompare runs ShopMind's WAF (with and without the result cache) and the stock
// configuration on the same requests, alternating in blocks of 50, so that the three medians
// see the same machine load: the ratio to stock is the steadier figure on a busy machine.
// Metrics: median ns per request of each, and the ratios to stock.
func BenchmarkWAFCompare(b *testing.B) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(200)
	})
	cfg := waf.Config{Enabled: true, ParanoiaLevel: 1, AnomalyThreshold: 5, BodyLimit: waf.DefaultBodyLimit}
	ours, err := newWAF(cfg, profileShopMind, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	stock, err := newWAF(cfg, profileRecommended, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	oursH, stockH := wafHandler(ours, ok, nil), wafHandler(stock, ok, nil)
	traffic := make([]func() *http.Request, len(wafLegitimate))
	for i, c := range wafLegitimate {
		traffic[i] = c.build
	}
	for _, c := range []struct {
		name string
		reqs []func() *http.Request
	}{{"get_small", []func() *http.Request{wafBenchGet}}, {"post_json_small", []func() *http.Request{wafBenchPost}}, {"shopmind_traffic", traffic}} {
		b.Run(c.name, func(b *testing.B) {
			w := &wafNopWriter{h: http.Header{}}
			var cached, uncached, base []time.Duration
			measure := func(h http.Handler, r *http.Request, into *[]time.Duration) {
				start := time.Now()
				h.ServeHTTP(w, r)
				*into = append(*into, time.Since(start))
			}
			for i := range 20 {
				oursH.ServeHTTP(w, c.reqs[i%len(c.reqs)]())
			}
			// Blocks of 50 requests per configuration, alternating: each configuration runs
			// with its own rules in the CPU caches, and all three see the same load.
			const block = 50
			for done := 0; done < b.N; done += block {
				n := min(block, b.N-done)
				for _, run := range []struct {
					h    http.Handler
					off  bool
					into *[]time.Duration
				}{{oursH, false, &cached}, {oursH, true, &uncached}, {stockH, false, &base}} {
					ours.switches.cachesOff.Store(run.off)
					for i := done; i < done+n; i++ {
						measure(run.h, c.reqs[i%len(c.reqs)](), run.into)
					}
				}
			}
			ours.switches.cachesOff.Store(false)
			med := func(d []time.Duration) float64 {
				slices.Sort(d)
				return float64(d[len(d)/2].Nanoseconds())
			}
			mc, mu, ms := med(cached), med(uncached), med(base)
			b.ReportMetric(mc, "shopmind-ns/req")
			b.ReportMetric(mu, "nocache-ns/req")
			b.ReportMetric(ms, "stock-ns/req")
			b.ReportMetric(mc/ms, "shopmind/stock")
			b.ReportMetric(mu/ms, "nocache/stock")
		})
	}
}

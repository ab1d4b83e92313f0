package gateway

import (
	"net/http"
	"net/netip"
	"runtime"
	"testing"
	"time"
)

// addrKey is the i-th distinct IPv4 address's key.
func addrKey(i int) [16]byte {
	return limiterKey(netip.AddrFrom4([4]byte{byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i)}))
}

func TestLimiterBucket(t *testing.T) {
	l := newRateLimiter(10, 3, 100)
	now := time.Unix(1_700_000_000, 0)
	k := addrKey(1)
	for i, want := range []int{2, 1, 0} {
		d := l.allow(k, now)
		if !d.allowed || d.remaining != want {
			t.Fatalf("request %d: %+v", i, d)
		}
	}
	d := l.allow(k, now)
	if d.allowed || d.retryAfter != 100*time.Millisecond || d.reset != 300*time.Millisecond {
		t.Fatalf("4th request: %+v", d)
	}
	if d := l.allow(k, now.Add(100*time.Millisecond)); !d.allowed { // 1/rate later
		t.Fatalf("after 1/rate: %+v", d)
	}
	if d := l.allow(addrKey(2), now); !d.allowed || d.remaining != 2 {
		t.Fatalf("another address shares the bucket: %+v", d)
	}
}

func TestLimiterEvictsIdleAndBoundsKeys(t *testing.T) {
	// burst 5 at 10/s refills in 0.5s; the idle horizon is at least 1s.
	l := newRateLimiter(10, 5, 64*20)
	now := time.Unix(1_700_000_000, 0)
	for i := 0; i < 500; i++ {
		l.allow(addrKey(i), now)
	}
	if n := l.size(); n != 500 {
		t.Fatalf("size %d, want 500", n)
	}
	l.sweep(now.Add(500 * time.Millisecond))
	if n := l.size(); n != 500 {
		t.Fatalf("entries dropped before they were idle: %d", n)
	}
	l.sweep(now.Add(1100 * time.Millisecond))
	if n := l.size(); n != 0 {
		t.Fatalf("idle entries kept: %d", n)
	}
	// A flood of distinct addresses never holds more than the bound.
	for i := 0; i < 100_000; i++ {
		l.allow(addrKey(i), now)
	}
	if n := l.size(); n > 64*20 {
		t.Fatalf("size %d above the bound %d", n, 64*20)
	}
	// An evicted address comes back with a full bucket: eviction never rejects wrongly.
	if d := l.allow(addrKey(0), now); !d.allowed || d.remaining != 4 {
		t.Fatalf("evicted address: %+v", d)
	}
	// Lazy eviction without a sweep: later calls drop idle entries of their shard.
	later := now.Add(2 * time.Second)
	for i := 0; i < 64*40; i++ {
		l.allow(addrKey(1_000_000+i), later)
	}
	l.sweep(later)
	if n := l.size(); n > 64*20 {
		t.Fatalf("size %d above the bound", n)
	}
}

// heapAfterGC is the live heap after a full collection.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// floodHeap feeds n distinct addresses into a limiter with the default settings and returns
// the heap it holds afterwards.
func floodHeap(n int) (heap uint64, keys int) {
	before := heapAfterGC()
	l := newRateLimiter(DefaultRateLimitRPS, DefaultRateLimitBurst, DefaultRateLimitMaxKeys)
	now := time.Now()
	for i := 0; i < n; i++ {
		l.allow(addrKey(i), now.Add(time.Duration(i)*time.Microsecond)) // all within one second
	}
	after := heapAfterGC()
	keys = l.size()
	runtime.KeepAlive(l)
	if after < before {
		return 0, keys
	}
	return after - before, keys
}

func TestLimiterMemoryMillionAddresses(t *testing.T) {
	n := 1_000_000
	if testing.Short() {
		n = 100_000
	}
	heap, keys := floodHeap(n)
	t.Logf("%d distinct addresses: %d keys held, %.1f MiB", n, keys, float64(heap)/(1<<20))
	if heap > 64<<20 {
		t.Fatalf("limiter holds %.1f MiB for %d addresses, want < 64 MiB", float64(heap)/(1<<20), n)
	}
	if keys > DefaultRateLimitMaxKeys {
		t.Fatalf("%d keys above the bound", keys)
	}
}

// BenchmarkLimiterMillionAddresses reports the heap a limiter holds after 1,000,000 distinct
// addresses (the default bound of 100,000 keys applies), and the cost per request.
func BenchmarkLimiterMillionAddresses(b *testing.B) {
	heap, keys := floodHeap(1_000_000)
	l := newRateLimiter(DefaultRateLimitRPS, DefaultRateLimitBurst, DefaultRateLimitMaxKeys)
	now := time.Now()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			l.allow(addrKey(i), now)
			i++
		}
	})
	b.ReportMetric(float64(heap)/(1<<20), "MiB/1M-addrs")
	b.ReportMetric(float64(keys), "keys-held")
}

func TestClientAddr(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	for _, c := range []struct {
		remote, xff, want string
	}{
		{"203.0.113.5:4000", "", "203.0.113.5"},
		{"203.0.113.5:4000", "198.51.100.1", "203.0.113.5"}, // untrusted peer: header ignored
		{"10.0.0.2:4000", "198.51.100.1", "198.51.100.1"},
		{"10.0.0.2:4000", "1.1.1.1, 198.51.100.1, 10.0.0.9", "198.51.100.1"},
		{"10.0.0.2:4000", "", "10.0.0.2"},
		{"10.0.0.2:4000", "bogus", "10.0.0.2"},
		{"[::1]:4000", "2001:db8::7", "2001:db8::7"},
		{"[::ffff:10.0.0.2]:4000", "::ffff:198.51.100.3", "198.51.100.3"},
		{"10.0.0.2:4000", "10.0.0.3, 10.0.0.4", "10.0.0.3"}, // only proxies: the farthest one
		{"garbage", "198.51.100.1", "invalid IP"},
	} {
		r, _ := http.NewRequest("GET", "/", nil)
		r.RemoteAddr = c.remote
		if c.xff != "" {
			r.Header.Set("X-Forwarded-For", c.xff)
		}
		if got := clientAddr(r, trusted).String(); got != c.want {
			t.Errorf("%s / %q: %s, want %s", c.remote, c.xff, got, c.want)
		}
	}
	a := limiterKey(netip.MustParseAddr("2001:db8:1:2:3:4:5:6"))
	b := limiterKey(netip.MustParseAddr("2001:db8:1:2:ffff::"))
	c := limiterKey(netip.MustParseAddr("2001:db8:1:3::"))
	if a != b || a == c {
		t.Error("IPv6 keys are not per /64")
	}
}

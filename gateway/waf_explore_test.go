package gateway

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"syscall"
	"unsafe"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/corazawaf/coraza/v3"
	coreruleset "github.com/corazawaf/coraza-coreruleset/v4"

	"github.com/shopmind/shopmind/internal/config"
)

func threadCPU() time.Duration {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

func exploreCost(t *testing.T, directives string, n int) (time.Duration, time.Duration) {
	waf, err := coraza.NewWAF(coraza.NewWAFConfig().WithRootFS(coreruleset.FS).WithDirectives(directives))
	if err != nil {
		t.Fatal(err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	m := &wafMiddleware{waf: waf, logger: slog.New(slog.DiscardHandler), block: testBlock, limit: 4 << 20}
	blocked := 0
	h := m.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	w := &nopWriter{h: http.Header{}}
	res := []time.Duration{}
	for _, mk := range []func() *http.Request{benchGet, benchPost} {
		for i := 0; i < 50; i++ {
			h.ServeHTTP(w, mk())
		}
		ds := make([]time.Duration, n)
		for i := 0; i < n; i++ {
			r := mk()
			start := threadCPU()
			h.ServeHTTP(w, r)
			ds[i] = threadCPU() - start
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		res = append(res, ds[n/2])
	}
	_ = blocked
	return res[0], res[1]
}

func TestExploreGroups(t *testing.T) {
	if os.Getenv("EXPLORE") == "" {
		t.Skip()
	}
	cfg := config.WAFConfig{Enabled: true, ParanoiaLevel: 1, AnomalyThreshold: 5, BodyLimit: 4 << 20}
	base, _ := wafDirectives(cfg, profileShopMind)
	g, p := exploreCost(t, base, 500)
	t.Logf("all: get %v post %v", g, p)
	g, p = exploreCost(t, "SecRxPreFilter On\n"+base, 500)
	t.Logf("prefilter: get %v post %v", g, p)
	for _, grp := range wafGroups {
		d := strings.Replace(base, "Include @owasp_crs/"+grp+".conf\n", "", 1)
		g, p := exploreCost(t, d, 500)
		t.Logf("without %s: get %v post %v", grp, g, p)
	}
	_ = fmt.Sprint
}

func TestExploreRules(t *testing.T) {
	if os.Getenv("EXPLORE_RULES") == "" {
		t.Skip()
	}
	cfg := config.WAFConfig{Enabled: true, ParanoiaLevel: 1, AnomalyThreshold: 5, BodyLimit: 4 << 20}
	base, _ := wafDirectives(cfg, profileShopMind)
	ids := strings.Fields(os.Getenv("EXPLORE_RULES"))
	g0, p0 := exploreCost(t, base+"SecRuleRemoveById 911000-948999\n", 400)
	t.Logf("base: get %v post %v", g0, p0)
	for _, id := range ids {
		var n int
		fmt.Sscan(id, &n)
		d := base + fmt.Sprintf("SecRuleRemoveById 911000-%d %d-948999\n", n-1, n+1)
		g, p := exploreCost(t, d, 400)
		t.Logf("rule %s: get %6.1f post %6.1f", id, float64(g-g0)/1000, float64(p-p0)/1000)
	}
}

func BenchmarkExplore(b *testing.B) {
	cfg := config.WAFConfig{Enabled: true, ParanoiaLevel: 1, AnomalyThreshold: 5, BodyLimit: 4 << 20}
	d0, _ := wafDirectives(cfg, profileShopMind)
	d := d0 + os.Getenv("EXPLORE_EXTRA")
	waf, err := coraza.NewWAF(coraza.NewWAFConfig().WithRootFS(coreruleset.FS).WithDirectives(d))
	if err != nil {
		b.Fatal(err)
	}
	m := &wafMiddleware{waf: waf, logger: slog.New(slog.DiscardHandler), block: testBlock, limit: 4 << 20}
	h := m.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	w := &nopWriter{h: http.Header{}}
	for _, c := range []struct {
		name string
		mk   func() *http.Request
	}{{"get", benchGet}, {"post", benchPost}} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				h.ServeHTTP(w, c.mk())
			}
		})
	}
}

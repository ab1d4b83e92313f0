package crs

import (
	"bufio"
	"bytes"
	"net/http"
	"slices"
	"testing"

	"github.com/shopmind/shopmind/internal/waf"
)

// The stock engine (SHOPMIND_WAF_ENGINE=stock: the CRS as shipped, run by Coraza as it is)
// gives every request the verdict of ShopMind's engine (blocked or not, too large or not, the
// rule named): a sample of the regression corpus (every third case of every rule, and JSON
// bodies built from their payloads), ShopMind's own requests and the attacks shaped like
// them, at paranoia levels 1 and 2.
func TestStockEngineGivesTheSameVerdicts(t *testing.T) {
	if testing.Short() {
		t.Skip("CRS corpus: long")
	}
	var raws [][]byte
	for i, c := range loadCRSCasesOf(t, true) {
		if i%3 == 0 {
			raws = append(raws, c.raw)
		}
	}
	raws = append(raws, jsonVariants(raws)...)
	for _, c := range append(slices.Clone(wafLegitimate), wafAttacks...) {
		var buf bytes.Buffer
		if err := c.build().Write(&buf); err != nil {
			t.Fatal(err)
		}
		raws = append(raws, buf.Bytes())
	}
	for _, level := range []int{1, 2} {
		cfg := waf.Config{Enabled: true, ParanoiaLevel: level, AnomalyThreshold: waf.DefaultAnomalyThreshold, BodyLimit: waf.DefaultBodyLimit}
		ours, err := New(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Engine = waf.EngineStock
		stock, err := New(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		compared, blocked, differ := 0, 0, 0
		for _, raw := range raws {
			a, okA := inspectRaw(ours, raw)
			b, okB := inspectRaw(stock, raw)
			if !okA || !okB {
				continue // net/http would refuse it before any handler
			}
			compared++
			if a.Blocked {
				blocked++
			}
			if a != b {
				differ++
				if differ <= 20 {
					t.Errorf("PL%d %.80q: ShopMind's engine %+v, stock %+v", level, raw, a, b)
				}
			}
		}
		t.Logf("PL%d: %d requests, %d blocked, %d verdicts differ", level, compared, blocked, differ)
		if compared < 1000 || blocked < compared/4 {
			t.Errorf("PL%d: the sample is too small: %d requests, %d blocked", level, compared, blocked)
		}
	}
}

// inspectRaw parses a raw request as net/http's server does and inspects it; false when the
// server would refuse it.
func inspectRaw(m *WAF, raw []byte) (waf.Verdict, bool) {
	r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
	if err != nil || (r.ProtoAtLeast(1, 1) && r.Host == "" && len(r.Header["Host"]) == 0) {
		return waf.Verdict{}, false
	}
	r.RemoteAddr = "127.0.0.1:40000"
	return m.Inspect(r), true
}

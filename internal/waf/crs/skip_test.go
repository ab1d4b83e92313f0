package crs

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/shopmind/shopmind/internal/waf"
)

func TestRuleTargetsParsed(t *testing.T) {
	k := &ruleSkips{}
	for _, c := range []struct {
		vars  string
		phase int
		ok    bool
		needs contentMask
	}{
		{"REQUEST_COOKIES|!REQUEST_COOKIES:/__utm/|REQUEST_COOKIES_NAMES|ARGS_NAMES|ARGS|XML:/*", 2, true, contentCookies | contentQuery | contentPath | contentBody},
		{"ARGS|ARGS_NAMES", 1, true, contentQuery | contentPath},
		{"ARGS_POST|XML:/*", 1, true, 0}, // filled after phase 1: such a phase-1 rule never has a value
		{"ARGS_GET_NAMES|ARGS_GET", 2, true, contentQuery},
		{"REQUEST_HEADERS:User-Agent|REQUEST_HEADERS:Referer", 2, true, contentHeaders | contentHeaders<<1},
		{"REQUEST_HEADERS:Referer", 2, true, contentHeaders << 1},
		{"REQUEST_FILENAME", 2, false, 0},
		{"&REQUEST_HEADERS:Host", 1, false, 0},
		{"REQUEST_HEADERS", 1, false, 0},
		{"REQUEST_HEADERS:/^x-/", 1, false, 0},
		{"ARGS|REQUEST_URI", 2, false, 0},
		{"TX:BLOCKING_INBOUND_ANOMALY_SCORE", 2, false, 0},
	} {
		needs, ok := k.needsOf(c.vars, c.phase)
		if ok != c.ok || ok && needs != c.needs {
			t.Errorf("%s (phase %d): needs %b %v, want %b %v", c.vars, c.phase, needs, ok, c.needs, c.ok)
		}
	}
}

func TestRuleSkipRanges(t *testing.T) {
	k := &ruleSkips{loaded: []int{10, 20, 30, 40, 50, 60}, skippable: []skippableRule{
		{id: 20, needs: contentQuery}, {id: 30, needs: contentBody}, {id: 50, needs: contentQuery | contentCookies}, {id: 60, needs: contentQuery},
	}, added: map[int]bool{}}
	k.finish()
	got := k.rangesFor(0)
	if len(got) != 2 || got[0] != [2]int{20, 30} || got[1] != [2]int{50, 60} {
		t.Fatalf("nothing present: %v", got)
	}
	if got := k.rangesFor(contentQuery); len(got) != 1 || got[0] != [2]int{30, 30} {
		t.Fatalf("a query: %v", got)
	}
	if got := k.rangesFor(contentQuery | contentBody); len(got) != 0 {
		t.Fatalf("query and body: %v", got)
	}
	// A rule a target update extends is never skipped.
	k = &ruleSkips{loaded: []int{20}, skippable: []skippableRule{{id: 20, needs: contentQuery}}, added: map[int]bool{20: true}}
	k.finish()
	if got := k.rangesFor(0); len(got) != 0 {
		t.Fatalf("extended rule skipped: %v", got)
	}
}

// The loaded rule set: a bare GET skips the argument rules and keeps the rest; the headers the
// request carries are seen as Coraza sees them.
func TestRuleSkipsOfTheLoadedRules(t *testing.T) {
	cfg := waf.Config{Enabled: true, ParanoiaLevel: 1, AnomalyThreshold: 5, BodyLimit: waf.DefaultBodyLimit}
	m, err := newWAF(cfg, profileShopMind, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	k := m.skips
	if len(k.loaded) < 100 || len(k.skippable) < 30 {
		t.Fatalf("loaded %d, skippable %d", len(k.loaded), len(k.skippable))
	}
	removed := func(p contentMask) map[int]bool {
		out := map[int]bool{}
		for _, rg := range k.rangesFor(p) {
			for _, id := range k.loaded {
				if id >= rg[0] && id <= rg[1] {
					out[id] = true
				}
			}
		}
		return out
	}
	get := httptest.NewRequest("GET", "/tenant/api/v1/tenant/auth/info", nil)
	bare := removed(k.present(get, false, false))
	// Argument rules (942100 and 941100 also read User-Agent, absent here): nothing to look at.
	for _, id := range []int{942100, 941100, 932230} {
		if !bare[id] {
			t.Errorf("rule %d runs on a bare GET", id)
		}
	}
	// Request line, method, all headers, filename, score, header-injection: always run.
	for _, id := range []int{920100, 911100, 930100, 930130, 949110, 921140} {
		if bare[id] {
			t.Errorf("rule %d skipped on a bare GET", id)
		}
	}
	get.Header.Set("User-Agent", "curl/8")
	withUA := removed(k.present(get, false, false))
	for _, id := range []int{942100, 941100, 920330} {
		if withUA[id] {
			t.Errorf("rule %d skipped on a GET with a User-Agent", id)
		}
	}
	if q := removed(k.present(get, true, false)); q[932230] || q[942100] {
		t.Error("argument rules skipped on a GET with a query")
	}
	if p := removed(k.present(get, false, true)); p[932230] {
		t.Error("argument rules skipped on a GET with path arguments")
	}
	post := httptest.NewRequest("POST", "/x", strings.NewReader(`{"a":"b"}`))
	post.Header.Set("Content-Type", "application/json")
	post.Header.Set("Cookie", "a=b")
	withBody := removed(k.present(post, false, false))
	for _, id := range []int{942100, 941100, 932230, 920470} {
		if withBody[id] {
			t.Errorf("rule %d skipped on a POST with a body and cookies", id)
		}
	}
	chunked := httptest.NewRequest("POST", "/x", strings.NewReader("x"))
	chunked.ContentLength = -1 // unknown length: the body counts as present
	if k.present(chunked, false, false)&contentBody == 0 {
		t.Error("a body of unknown length counts as absent")
	}
	if k.present(httptest.NewRequest("GET", "/x", http.NoBody), false, false)&contentBody != 0 {
		t.Error("no body counts as present")
	}
}

// rangesFor (tests) returns the id ranges to remove for a request carrying present: runs of
// consecutive loaded rules that all lack their content (a range never spans a rule that must
// run).
func (k *ruleSkips) rangesFor(present contentMask) [][2]int {
	return k.runs(k.skipBits(present))
}

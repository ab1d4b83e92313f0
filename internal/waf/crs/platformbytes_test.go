package crs

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shopmind/shopmind/internal/waf"
)

// Bytes the platform refuses itself (a NUL, a lone surrogate, nesting past the WAF's depth)
// are answered with the platform's 400 naming the field, not the WAF's generic 403; an
// attack in the same request shape is still blocked.
func TestWAFLeavesHostileBytesToThePlatform(t *testing.T) {
	m, err := New(waf.Config{Enabled: true, ParanoiaLevel: 1, AnomalyThreshold: 5, BodyLimit: waf.DefaultBodyLimit}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	deep := `{"data":{"page":` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `}}`
	for _, c := range []struct{ target, body, field string }{
		{"/tenant/api/v1/tenant/auth/login", `{"tenant_code":"demo","username":"ad\u0000min","password":"x"}`, "username"},
		{"/api/v1/basic/goods/list", "{\"name\":\"x\x00\"}", "name"},
		{"/api/v1/basic/goods/list", `{"name":"a\ud800b"}`, "name"},
		{"/api/v1/data/crx/adhoc", deep, "data.page"},
		{"/basic/api/v1/basic/shops?name=a%00b&page_num=1", "", "name"},
	} {
		r := httptest.NewRequest("POST", c.target, strings.NewReader(c.body))
		r.Header.Set("Content-Type", "application/json")
		v := m.Inspect(r)
		if !v.Invalid || !v.Blocked || !strings.HasPrefix(v.Message, c.field) || !strings.Contains(v.Message, ": ") {
			t.Errorf("%s %.40q: %+v, want a 400 naming %s", c.target, c.body, v, c.field)
		}
	}
	r := httptest.NewRequest("POST", "/api/v1/basic/goods/list", strings.NewReader(`{"name":"<script>alert(1)</script>"}`))
	r.Header.Set("Content-Type", "application/json")
	if v := m.Inspect(r); !v.Blocked || v.Invalid {
		t.Errorf("an attack: %+v, want blocked", v)
	}
}

// A body streamed (chunked) past the gateway's body limit (http.MaxBytesReader in front of
// the WAF) is too large: 413, not the 403 of a request that could not be inspected.
func TestWAFStreamedBodyOverTheGatewayLimit(t *testing.T) {
	m, err := New(waf.Config{Enabled: true, ParanoiaLevel: 1, AnomalyThreshold: 5, BodyLimit: waf.DefaultBodyLimit}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("POST", "/api/v1/log/error", strings.NewReader(`{"note":"`+strings.Repeat("a", 2000)+`"}`))
	r.Header.Set("Content-Type", "application/json")
	r.ContentLength = -1
	r.Body = http.MaxBytesReader(httptest.NewRecorder(), r.Body, 1000)
	if v := m.Inspect(r); !v.TooLarge {
		t.Fatalf("%+v, want too large", v)
	}
}

// An inspection that runs past its time budget stops and answers 413 (send fewer values per
// request) instead of holding a core for seconds; within the budget the same body passes.
func TestWAFInspectionBudget(t *testing.T) {
	body := `{"items":[` + strings.TrimSuffix(strings.Repeat(`{"metric_key":"gmv","platform_shop_id":"s1"},`, 2000), ",") + `]}`
	for _, c := range []struct {
		budget   time.Duration
		tooLarge bool
	}{{time.Nanosecond, true}, {time.Hour, false}} {
		m, err := New(waf.Config{Enabled: true, ParanoiaLevel: 1, AnomalyThreshold: 5, BodyLimit: waf.DefaultBodyLimit, InspectBudget: c.budget}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest("POST", "/api/v1/data/crx/sync", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		v := m.Inspect(r)
		if v.TooLarge != c.tooLarge || v.Blocked != c.tooLarge {
			t.Errorf("budget %v: %+v", c.budget, v)
		}
	}
}

// BenchmarkWAFPathologicalBody: a 900 KiB JSON body of 50,000 small objects (each value
// distinct by its path). It took 8 to 26 s per inspection before the body's values were
// indexed; WAF.md has the figure.
func BenchmarkWAFPathologicalBody(b *testing.B) {
	m, err := New(waf.Config{Enabled: true, ParanoiaLevel: 1, AnomalyThreshold: 5, BodyLimit: waf.DefaultBodyLimit}, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	body := `{"items":[` + strings.TrimSuffix(strings.Repeat(`{"metric_key":"x"},`, 50000), ",") + `]}`
	for b.Loop() {
		r := httptest.NewRequest("POST", "/api/v1/data/crx/sync", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		m.Inspect(r)
	}
}

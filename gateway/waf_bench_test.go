package gateway

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/config"
)

func testBlock(w http.ResponseWriter, r *http.Request, ruleID int, message string) {
	envelopeWriter{}.writeKind(w, r, apperr.KindForbidden, message)
}

const benchJWT = "Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxIiwidGlkIjoiMSIsInVzZXJuYW1lIjoiYWRtaW4iLCJyb2xlcyI6WzFdLCJleHAiOjE3OTk5OTk5OTl9.c2lnbmF0dXJlLW9mLXRoZS10b2tlbi1oZXJl"

func benchGet() *http.Request {
	r := httptest.NewRequest("GET", "/basic/api/v1/basic/goods?page_num=1&page_size=20&sort=created_at,desc", nil)
	r.Header.Set("User-Agent", "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36")
	r.Header.Set("Accept", "application/json, text/plain, */*")
	r.Header.Set("Accept-Language", "zh-CN,zh;q=0.9,en;q=0.8")
	r.Header.Set("Accept-Encoding", "gzip, deflate, br")
	r.Header.Set("Authorization", benchJWT)
	r.Header.Set("X-Request-Id", "01J9Z3W4K5M6N7P8Q9R0S1T2U3")
	return r
}

const benchLoginBody = `{"tenant_code":"demo","username":"admin","password":"admin123","captcha_id":"c-8f14e45f","captcha_code":"a7k2"}`

func benchPost() *http.Request {
	r := httptest.NewRequest("POST", "/tenant/api/v1/tenant/auth/login", strings.NewReader(benchLoginBody))
	r.Header.Set("User-Agent", "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36")
	r.Header.Set("Accept", "application/json, text/plain, */*")
	r.Header.Set("Accept-Language", "zh-CN,zh;q=0.9,en;q=0.8")
	r.Header.Set("Accept-Encoding", "gzip, deflate, br")
	r.Header.Set("Content-Type", "application/json")
	return r
}

type nopWriter struct{ h http.Header }

func (n *nopWriter) Header() http.Header         { return n.h }
func (n *nopWriter) Write(b []byte) (int, error) { return len(b), nil }
func (n *nopWriter) WriteHeader(int)             {}

func BenchmarkWAF(b *testing.B) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(200)
	})
	for _, p := range []struct {
		name    string
		profile wafProfile
	}{{"", profileShopMind}, {"stock_", profileStock}} {
		cfg := config.WAFConfig{Enabled: true, ParanoiaLevel: 1, AnomalyThreshold: 5, BodyLimit: 4 << 20}
		waf, err := newCorazaWAF(cfg, p.profile)
		if err != nil {
			b.Fatal(err)
		}
		m := &wafMiddleware{waf: waf, logger: slog.New(slog.DiscardHandler), block: testBlock, limit: cfg.BodyLimit}
		h := m.wrap(ok)
		for _, c := range []struct {
			name string
			req  func() *http.Request
		}{{"get_small", benchGet}, {"post_json_small", benchPost}} {
			b.Run(p.name+c.name, func(b *testing.B) {
				w := &nopWriter{h: http.Header{}}
				for i := 0; i < b.N; i++ {
					r := c.req()
					h.ServeHTTP(w, r)
				}
			})
		}
	}
}

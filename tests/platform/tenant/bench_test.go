//go:build platform

package tenant

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/testutil"
	"github.com/shopmind/shopmind/internal/testutil/stack"
)

// BenchmarkLogin measures logins through the gateway at the production bcrypt cost (10):
// the password hash dominates, by design.
func BenchmarkLogin(b *testing.B) {
	s := stack.Start(b, func(c *app.Config) { c.Auth.BcryptCost = 10 })
	body := login("demo", "admin", stack.AdminPassword)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Post(s.BaseURL+"/tenant/api/v1/tenant/auth/login", "application/json", strings.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Errorf("login: %d", resp.StatusCode)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "logins/s")
}

// BenchmarkInfo measures an authenticated GET through the gateway (token verified at the
// backend, revocation checked, user loaded from PostgreSQL).
func BenchmarkInfo(b *testing.B) {
	s := stack.Start(b)
	token := s.Admin(b).Access
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest("GET", s.BaseURL+"/tenant/api/v1/tenant/auth/info", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			if !testutil.DrainOK(b, client, req) {
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}

//go:build platform

package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/testutil/stack"
)

// Through the whole platform: the environment chosen at the edge reaches the tenant service
// as x-env, which is the token audience, so a token works only in the environment that
// issued it.
func TestStackEnvironmentsIsolateTokens(t *testing.T) {
	s := stack.Start(t)
	login := func(prefix string) string {
		body := `{"tenant_code":"demo","username":"admin","password":"` + stack.AdminPassword + `"}`
		r := s.Do(t, "POST", prefix+"/tenant/api/v1/tenant/auth/login", body)
		var env struct {
			Code int `json:"code"`
			Data struct {
				AccessToken string `json:"access_token"`
			} `json:"data"`
		}
		if err := json.Unmarshal(r.Body, &env); err != nil || env.Code != 0 || env.Data.AccessToken == "" {
			t.Fatalf("login in %q: %d %s", prefix, r.Status, r.Body)
		}
		return env.Data.AccessToken
	}
	dev, local := login(""), login("/local")
	cases := []struct {
		name, path, token string
		header            []string
		status            int
	}{
		{"dev token in dev", "/tenant/api/v1/tenant/auth/info", dev, nil, 200},
		{"dev token in local", "/local/tenant/api/v1/tenant/auth/info", dev, nil, 401},
		{"dev token in test by header", "/tenant/api/v1/tenant/auth/info", dev, []string{"X-Env", "test"}, 401},
		{"local token in local", "/local/tenant/api/v1/tenant/auth/info", local, nil, 200},
		{"local token by header", "/tenant/api/v1/tenant/auth/info", local, []string{"X-Env", "local"}, 200},
		{"local token in dev", "/tenant/api/v1/tenant/auth/info", local, nil, 401},
		{"local token in dev by header", "/tenant/api/v1/tenant/auth/info", local, []string{"X-Env", "dev"}, 401},
		{"forged metadata header", "/tenant/api/v1/tenant/auth/info", local, []string{"Grpc-Metadata-X-Env", "local"}, 401},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := append([]string{"Authorization", "Bearer " + c.token}, c.header...)
			r := s.Do(t, "GET", c.path, "", h...)
			if r.Status != c.status || !strings.Contains(string(r.Body), `"code":`) {
				t.Fatalf("got %d %s", r.Status, r.Body)
			}
		})
	}
	r := s.Do(t, "GET", "/tenant/api/v1/tenant/auth/info", "", "X-Env", "production")
	if r.Status != 400 || !strings.Contains(string(r.Body), "X-Env") {
		t.Fatalf("unknown environment: %d %s", r.Status, r.Body)
	}
}

func TestStackRateLimitHeaders(t *testing.T) {
	s := stack.Start(t, func(c *app.Config) { c.Edge.RateLimitRPS, c.Edge.RateLimitBurst = 1, 2 })
	statuses := []int{}
	for i := 0; i < 3; i++ {
		r := s.Do(t, "GET", "/tenant/api/v1/tenant/auth/captcha", "")
		statuses = append(statuses, r.Status)
		if r.Header.Get("RateLimit-Limit") != "2" {
			t.Errorf("RateLimit-Limit = %q", r.Header.Get("RateLimit-Limit"))
		}
		if r.Status == 429 && (r.Header.Get("Retry-After") != "1" || !strings.Contains(string(r.Body), `"code":429`)) {
			t.Errorf("429: %v %s", r.Header, r.Body)
		}
	}
	if statuses[0] != 200 || statuses[1] != 200 || statuses[2] != 429 {
		t.Fatalf("statuses %v, want [200 200 429]", statuses)
	}
	if r := s.Do(t, "GET", "/readyz", ""); r.Status != 200 {
		t.Fatalf("readyz limited or not ready: %d %s", r.Status, r.Body)
	}
}

//go:build platform

// Package reliability drives the whole platform under concurrency and under real faults: a
// PostgreSQL restarted under load, the analytical store cut off and back, and a store too
// slow for its query timeout. Every test bounds itself in time, so a hung platform fails
// the test instead of hanging it; figures (latencies, gaps, catch-up times) go to t.Logf.
package reliability

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/testutil"
	"github.com/shopmind/shopmind/internal/testutil/stack"
)

// maxLatency is the bound on one request under concurrency.
const maxLatency = 2 * time.Second

// requestTimeout is the client's deadline: past it the platform is hung, not slow.
const requestTimeout = 10 * time.Second

// smallPool is the smallest pool the platform allows.
func smallPool(c *app.Config) { c.DatabaseMaxConns = 4 }

// deadline fails the test if it runs past d: a hung platform must not hang the package.
// The panic ends the test binary, so what must not outlive it (a private PostgreSQL) is
// stopped first.
func deadline(t *testing.T, d time.Duration) {
	t.Helper()
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	name := t.Name()
	go func() {
		select {
		case <-done:
		case <-time.After(d):
			emergency.Lock()
			for _, f := range emergency.stops {
				f()
			}
			panic(fmt.Sprintf("%s still running after %s: the platform hangs", name, d))
		}
	}()
}

// emergency holds what deadline stops before it ends the binary.
var emergency struct {
	sync.Mutex
	stops []func()
}

func onEmergency(f func()) {
	emergency.Lock()
	defer emergency.Unlock()
	emergency.stops = append(emergency.stops, f)
}

// answer is one HTTP exchange with the gateway.
type answer struct {
	Status  int
	Code    int
	Message string
	Data    json.RawMessage
	Header  http.Header
	Body    []byte
	Start   time.Time
	Took    time.Duration
	Err     error // transport error (timeout, connection refused...)
}

// ok is a success envelope (or a successful stream).
func (a answer) ok() bool { return a.Err == nil && a.Status == 200 && a.Code == 0 }

func (a answer) String() string {
	if a.Err != nil {
		return fmt.Sprintf("transport error after %s: %v", a.Took.Round(time.Millisecond), a.Err)
	}
	body := string(a.Body)
	if len(body) > 400 {
		body = body[:400] + "..."
	}
	return fmt.Sprintf("HTTP %d code %d in %s: %s", a.Status, a.Code, a.Took.Round(time.Millisecond), body)
}

// get reads a field of the data with a gjson path (int64 ids come as strings).
func (a answer) get(path string) gjson.Result { return gjson.GetBytes(a.Data, path) }

// client talks to one gateway, never waiting past requestTimeout.
type client struct {
	base string
	http *http.Client
}

func newClient(base string) *client {
	tr := &http.Transport{MaxIdleConnsPerHost: 64, DialContext: (&net.Dialer{Timeout: 3 * time.Second}).DialContext}
	return &client{base: base, http: &http.Client{Timeout: requestTimeout, Transport: tr}}
}

// do sends one request; body "" sends none, token "" no Authorization.
func (c *client) do(method, path, body, token string) answer {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, c.base+path, r)
	if err != nil {
		return answer{Err: err}
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	a := answer{Start: time.Now()}
	resp, err := c.http.Do(req)
	if err != nil {
		a.Took, a.Err = time.Since(a.Start), err
		return a
	}
	defer resp.Body.Close()
	a.Status, a.Header = resp.StatusCode, resp.Header
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		a.Body, a.Err = io.ReadAll(resp.Body)
		a.Took = time.Since(a.Start)
		if a.Err == nil {
			a.Code, a.Message, a.Data = streamOutcome(a.Body)
		}
		return a
	}
	a.Body, a.Err = io.ReadAll(resp.Body)
	a.Took = time.Since(a.Start)
	if a.Err != nil {
		return a
	}
	var env struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(a.Body, &env); err != nil {
		a.Code, a.Message = -1, "not an envelope"
		return a
	}
	a.Code, a.Message, a.Data = env.Code, env.Message, env.Data
	return a
}

// streamOutcome reads a chat event stream: code 0 and the end event's data when it ended
// with [DONE] and no error event, else the error event's code.
func streamOutcome(body []byte) (int, string, json.RawMessage) {
	var last json.RawMessage
	events, done, _ := testutil.SSEData(bytes.NewReader(body))
	for _, data := range events {
		if gjson.Get(data, "type").String() == "error" {
			return int(gjson.Get(data, "code").Int()), gjson.Get(data, "message").String(), json.RawMessage(data)
		}
		if t := gjson.Get(data, "type").String(); t == "done" || t == "pipeline_end" {
			last = json.RawMessage(data)
		}
	}
	if !done || last == nil {
		return -1, "stream ended without its end event and [DONE]", nil
	}
	return 0, "", last
}

// recorder keeps every answer per operation for the figures and the coverage check.
type recorder struct {
	mu  sync.Mutex
	ops map[string][]answer
}

func newRecorder() *recorder { return &recorder{ops: map[string][]answer{}} }

func (r *recorder) add(op string, a answer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops[op] = append(r.ops[op], a)
}

// all returns every answer recorded.
func (r *recorder) all() []answer {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []answer
	for _, as := range r.ops {
		out = append(out, as...)
	}
	return out
}

// figures logs requests, p50, p99 and max latency overall and per operation.
func (r *recorder) figures(t *testing.T, title string) {
	t.Helper()
	r.mu.Lock()
	names := make([]string, 0, len(r.ops))
	for n := range r.ops {
		names = append(names, n)
	}
	r.mu.Unlock()
	sort.Strings(names)
	all := r.all()
	t.Logf("%s: %d requests, p50 %s, p99 %s, max %s", title, len(all), pct(all, 50), pct(all, 99), pct(all, 100))
	for _, n := range names {
		r.mu.Lock()
		as := append([]answer(nil), r.ops[n]...)
		r.mu.Unlock()
		t.Logf("  %-45s %5d requests  p50 %7s  p99 %7s  max %7s", n, len(as), pct(as, 50), pct(as, 99), pct(as, 100))
	}
}

// pct is the p-th percentile of the answers' latencies (100: the maximum).
func pct(as []answer, p int) time.Duration {
	if len(as) == 0 {
		return 0
	}
	ds := make([]time.Duration, len(as))
	for i, a := range as {
		ds[i] = a.Took
	}
	slices.Sort(ds)
	i := (len(ds)*p+99)/100 - 1
	return ds[max(0, min(i, len(ds)-1))].Round(time.Millisecond)
}

// burst sends n requests at once (released together) and returns their answers in order.
func burst(n int, send func(i int) answer) []answer { return testutil.Burst(n, send) }

// codes counts the answers per envelope code (-2: transport error).
func codes(as []answer) map[int]int {
	m := map[int]int{}
	for _, a := range as {
		switch {
		case a.Err != nil:
			m[-2]++
		default:
			m[a.Code]++
		}
	}
	return m
}

// eventually polls cond every 50 ms until it holds or within passes; it returns how long it
// took and whether it held.
func eventually(within time.Duration, cond func() bool) (time.Duration, bool) {
	start := time.Now()
	for {
		if cond() {
			return time.Since(start), true
		}
		if time.Since(start) > within {
			return time.Since(start), false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// login signs in through the gateway; it returns the access and refresh tokens.
func login(t *testing.T, c *client, user, password string) (access, refresh string) {
	t.Helper()
	a := c.do("POST", "/tenant/api/v1/tenant/auth/login", fmt.Sprintf(`{"tenant_code":"demo","username":%q,"password":%q}`, user, password), "")
	if !a.ok() {
		t.Fatalf("login %s: %s", user, a)
	}
	return a.get("access_token").String(), a.get("refresh_token").String()
}

// opsPassword is the password of the operator tenant's administrator.
const opsPassword = "Ops-Operator-2040"

// loginAs signs a user of any tenant in through the gateway; it returns the access token.
func loginAs(t *testing.T, c *client, tenant, user, password string) string {
	t.Helper()
	a := c.do("POST", "/tenant/api/v1/tenant/auth/login", fmt.Sprintf(`{"tenant_code":%q,"username":%q,"password":%q}`, tenant, user, password), "")
	if !a.ok() {
		t.Fatalf("login %s/%s: %s", tenant, user, a)
	}
	return a.get("access_token").String()
}

// jti is a JWT's token id (the revocation list's key).
func jti(token string) string {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return ""
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	return gjson.GetBytes(b, "jti").String()
}

// addShop inserts a shop (shops come from platform authorization, which has no endpoint).
func addShop(t *testing.T, st *stack.Stack, tenant int64, name, platformShopID string) int64 {
	t.Helper()
	return stack.AddShop(t, st.DB, tenant, name, "tmall", platformShopID)
}

// addAdmins creates administrators of tenant demo with the demo admin's password.
func addAdmins(t *testing.T, st *stack.Stack, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := st.DB.Pool.Exec(context.Background(), `INSERT INTO tenant.users (tenant_id, username, password_hash, is_admin)
			SELECT tenant_id, $1, password_hash, true FROM tenant.users
			WHERE username = 'admin' AND tenant_id = (SELECT id FROM tenant.tenants WHERE code = 'demo')`, n); err != nil {
			t.Fatal(err)
		}
	}
}

func count(t *testing.T, st *stack.Stack, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := st.DB.Pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

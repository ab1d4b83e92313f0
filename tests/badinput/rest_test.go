//go:build platform

package badinput

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopmind/shopmind/internal/testutil/stack"
)

const (
	workers       = 8
	callTimeout   = 40 * time.Second // above the gateway's 30 s upstream timeout, to see its 504
	streamTimeout = 20 * time.Second // an event stream must end within this
	maxAnswer     = 64 << 20
	slowAnswer    = 10 * time.Second // noted (not a failure)
)

// session keeps a valid admin token; a request that revoked it (it should not) gets a new one.
type session struct {
	base   string
	client *http.Client
	mu     sync.Mutex
	token  string
	gen    int
}

func (s *session) login() (string, error) {
	body, _ := json.Marshal(map[string]string{"tenant_code": "demo", "username": "admin", "password": stack.AdminPassword})
	resp, err := s.client.Post(s.base+"/tenant/api/v1/tenant/auth/login", "application/json", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var env struct {
		Code int `json:"code"`
		Data struct {
			AccessToken string `json:"access_token"`
		} `json:"data"`
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &env); err != nil || env.Code != 0 || env.Data.AccessToken == "" {
		return "", fmt.Errorf("login: HTTP %d %s", resp.StatusCode, clip(string(b), 300))
	}
	return env.Data.AccessToken, nil
}

func (s *session) get() (string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.token, s.gen
}

// renew logs in again unless another worker already did since gen.
func (s *session) renew(gen int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen != gen {
		return nil
	}
	tok, err := s.login()
	if err != nil {
		return err
	}
	s.token, s.gen = tok, s.gen+1
	return nil
}

// answer is what the gateway sent back.
type answer struct {
	status int
	ctype  string
	body   []byte
	err    error
	took   time.Duration
}

func (s *session) send(c *restCase, token string) answer {
	start := time.Now()
	timeout := callTimeout
	if c.op.Streaming {
		timeout = streamTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var body io.Reader
	if c.hasBody {
		body = bytes.NewReader(c.body)
		if c.chunked {
			body = io.MultiReader(body) // hides the length: Transfer-Encoding: chunked
		}
	}
	req, err := http.NewRequestWithContext(ctx, c.op.Method, s.base, body)
	if err != nil {
		return answer{err: err}
	}
	u, _ := url.Parse(s.base)
	req.URL = &url.URL{Scheme: u.Scheme, Host: u.Host, Opaque: c.path, RawQuery: c.query}
	if c.hasBody {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := s.client.Do(req)
	if err != nil {
		return answer{err: err, took: time.Since(start)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	return answer{status: resp.StatusCode, ctype: resp.Header.Get("Content-Type"), body: b, err: err, took: time.Since(start)}
}

// restStats summarises a mode's run.
type restStats struct {
	requests, retried atomic.Int64
	bytesSent         atomic.Int64
	mu                sync.Mutex
	statuses          map[int]int
	baselines, baseOK int
	slowest           time.Duration
	slowestCase       string
}

func (st *restStats) record(c *restCase, a answer, code int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.statuses == nil {
		st.statuses = map[int]int{}
	}
	st.statuses[a.status]++
	if c.kind == "baseline" {
		st.baselines++
		if code == 0 && a.status == 200 {
			st.baseOK++
		}
	}
	if a.took > st.slowest {
		st.slowest, st.slowestCase = a.took, c.op.name()+" "+c.kind
	}
}

// sweepREST sends every case through the gateway and checks each answer.
func sweepREST(t *testing.T, st *stack.Stack, cases []restCase) {
	t.Helper()
	s := &session{base: st.BaseURL, client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers * 2}}}
	tok, err := s.login()
	if err != nil {
		t.Fatal(err)
	}
	s.token = tok
	var f, notes findings
	var stats restStats
	var byKind tally
	var baseMu sync.Mutex
	baseMsg := map[string]string{} // operation -> its baseline's error message
	var baseLines []string
	run := func(c *restCase, fresh bool) {
		token, gen := s.get()
		if fresh { // a logout revokes the caller's session: give it a token of its own
			var err error
			if token, err = s.login(); err != nil {
				t.Errorf("login: %v", err)
				return
			}
		}
		a := s.send(c, token)
		if a.status == http.StatusUnauthorized && !fresh {
			// The shared token may have been revoked by another request: renew and retry once.
			if err := s.renew(gen); err == nil {
				token, _ = s.get()
				a = s.send(c, token)
				stats.retried.Add(1)
			}
		}
		stats.requests.Add(1)
		stats.bytesSent.Add(int64(len(c.body)))
		baseMu.Lock()
		prior := baseMsg[c.op.name()]
		baseMu.Unlock()
		code, msg := checkREST(&f, &notes, c, a, prior)
		if c.kind == "baseline" {
			baseMu.Lock()
			if code > 0 {
				baseMsg[c.op.name()] = msg
			}
			baseLines = append(baseLines, fmt.Sprintf("%-55s HTTP %d %s", c.op.name(), a.status, clip(msg, 160)))
			baseMu.Unlock()
		}
		stats.record(c, a, code)
		byKind.add(c.kind, fmt.Sprintf("%d/%d", a.status, code), a.took)
	}
	start := time.Now()
	runCases(cases, workers, func(c *restCase) bool { return c.kind == "baseline" },
		func(c *restCase) bool { return c.revokes }, run)
	elapsed := time.Since(start)
	codes := make([]int, 0, len(stats.statuses))
	for c := range stats.statuses {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	var hist []string
	for _, c := range codes {
		hist = append(hist, fmt.Sprintf("%d:%d", c, stats.statuses[c]))
	}
	t.Logf("%d requests (%d MiB of bodies) in %v; statuses %s; baselines answered code 0: %d/%d; re-sent after 401: %d; slowest %v (%s)",
		stats.requests.Load(), stats.bytesSent.Load()>>20, elapsed.Round(time.Millisecond), strings.Join(hist, " "),
		stats.baseOK, stats.baselines, stats.retried.Load(), stats.slowest.Round(time.Millisecond), stats.slowestCase)
	if testing.Verbose() {
		sort.Strings(baseLines)
		t.Log("baselines (how far a plausible request gets):\n    " + strings.Join(baseLines, "\n    "))
	}
	byKind.log(t)
	notes.log(t, "notes (not failures): large inputs accepted, event streams read, slow answers")
	f.report(t)
}

// checkREST records the problems of one answer and returns its envelope code (-1: none) and
// message. baseMsg is the error of the operation's baseline: a 400 repeating it was about
// another field, not the one attacked.
func checkREST(f, notes *findings, c *restCase, a answer, baseMsg string) (int, string) {
	req := fmt.Sprintf("%s %s", c.op.Method, clip(c.path, 120))
	if c.query != "" {
		req += "?" + clip(c.query, 80)
	}
	if c.hasBody {
		req += " body " + clip(string(c.body), 160)
	}
	fail := func(problem string, ans string) {
		f.add(problem, c.kind, c.op.name(), example{field: c.field, request: req, answer: ans})
	}
	if a.err != nil {
		problem := "no answer (transport error)"
		if errors.Is(a.err, context.DeadlineExceeded) {
			problem = "no answer within the timeout"
		}
		fail(problem, fmt.Sprintf("after %v: %v (HTTP %d, %s)", a.took.Round(time.Millisecond), a.err, a.status, clip(string(a.body), 200)))
		return -1, ""
	}
	ans := fmt.Sprintf("HTTP %d %s", a.status, clip(string(a.body), 300))
	if a.took > slowAnswer {
		notes.add(fmt.Sprintf("slower than %v", slowAnswer), c.kind, c.op.name(), example{field: c.field})
	}
	switch a.status {
	case 500, 502, 504:
		fail(fmt.Sprintf("HTTP %d", a.status), ans)
	}
	if a.status == 200 && strings.HasPrefix(a.ctype, "text/event-stream") {
		notes.add("event stream read", c.kind, c.op.name(), example{field: c.field})
		checkSSE(c, a, fail)
		if c.mustFail {
			fail("hostile input accepted (event stream)", ans)
		}
		return 0, ""
	}
	body := a.body
	if c.op.Streaming { // grpc-gateway's newline-delimited stream: the first object
		if i := bytes.IndexByte(body, '\n'); i > 0 {
			body = body[:i]
		}
	}
	var env map[string]json.RawMessage
	var code, msg = 0, ""
	if err := json.Unmarshal(body, &env); err != nil || env["code"] == nil || env["message"] == nil || env["data"] == nil ||
		json.Unmarshal(env["code"], &code) != nil || json.Unmarshal(env["message"], &msg) != nil {
		fail("not a {code, message, data} envelope", ans)
		return -1, ""
	}
	if a.status == 200 && code != 0 || a.status != 200 && code != a.status { // mapped status mode
		fail("envelope code does not match the HTTP status", ans)
	}
	if code == 0 {
		if c.mustFail {
			fail("hostile input accepted (code 0)", ans)
		}
		if strings.Contains(c.kind, "huge") || strings.Contains(c.kind, "big") || strings.Contains(c.kind, "long") {
			notes.add("accepted", c.kind, c.op.name(), example{field: c.field})
		}
		return 0, msg
	}
	if code >= 500 && code != 501 && code != 503 && a.status != code {
		fail(fmt.Sprintf("envelope code %d", code), ans)
	}
	if strings.TrimSpace(msg) == "" {
		fail("empty error message", ans)
	}
	if l := leaked(msg); l != "" {
		fail("internals leaked in the message ("+l+")", ans)
	}
	if len(msg) > maxMessage {
		fail("error message longer than 4 KiB (echoes the input)", ans)
	}
	if code == 400 && c.mustFail && msg != baseMsg && !names(msg, c.field, c.words) {
		fail("400 does not name the field or the problem", ans)
	}
	return code, msg
}

// checkSSE looks at the events of a stream: an error event must not be a 500 nor leak.
func checkSSE(c *restCase, a answer, fail func(problem, ans string)) {
	sc := bufio.NewScanner(bytes.NewReader(a.body))
	sc.Buffer(make([]byte, 64<<10), maxAnswer)
	done := false
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			done = true
			continue
		}
		var ev struct {
			Type  string `json:"type"`
			Error *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal([]byte(line), &ev) != nil {
			fail("event stream: an event is not JSON", clip(line, 300))
			continue
		}
		if ev.Error != nil {
			if ev.Error.Code >= 500 && ev.Error.Code != 501 && ev.Error.Code != 503 {
				fail(fmt.Sprintf("event stream: error event %d", ev.Error.Code), clip(line, 300))
			}
			if l := leaked(ev.Error.Message); l != "" {
				fail("event stream: internals leaked ("+l+")", clip(line, 300))
			}
		}
	}
	if !done {
		fail("event stream did not end with [DONE]", clip(string(a.body), 300))
	}
}

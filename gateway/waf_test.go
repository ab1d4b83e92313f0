package gateway_test

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shopmind/shopmind/gateway"
	"github.com/shopmind/shopmind/internal/waf"
	"github.com/shopmind/shopmind/internal/waf/crs"
)

// The adapter answers a block with the 403 envelope, a body over the inspection limit
// with the 413 envelope, bytes the platform refuses with its 400 naming the field, each with the WAF's message; anything else reaches the handler.
func TestWAFAnswers(t *testing.T) {
	for _, c := range []struct {
		verdict waf.Verdict
		status  int
		body    string
	}{
		{waf.Verdict{Blocked: true, RuleID: 942100, Message: "request blocked by the web application firewall (rule 942100)"}, 403,
			`{"code":403,"message":"request blocked by the web application firewall (rule 942100)","data":null}`},
		{waf.Verdict{Blocked: true, TooLarge: true, Message: "request body too large"}, 413,
			`{"code":413,"message":"request body too large","data":null}`},
		{waf.Verdict{Blocked: true, Invalid: true, Message: "name: must not contain NUL characters (U+0000)"}, 400,
			`{"code":400,"message":"name: must not contain NUL characters (U+0000)","data":null}`},
		{waf.Verdict{}, 204, ""},
	} {
		h := gateway.WAF(func(*http.Request) waf.Verdict { return c.verdict })(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/sessions", nil))
		if rec.Code != c.status || strings.TrimSpace(rec.Body.String()) != c.body {
			t.Errorf("%+v: %d %s, want %d %s", c.verdict, rec.Code, rec.Body, c.status, c.body)
		}
	}
}

// Without a WAF (SHOPMIND_WAF=off) the chain is unchanged: attacks pass through.
func TestWAFOffIsIdentity(t *testing.T) {
	mw := gateway.WAF(nil)
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	if fmt.Sprintf("%p", mw(next)) != fmt.Sprintf("%p", next) {
		t.Fatal("off: the handler is wrapped")
	}
	rec := httptest.NewRecorder()
	mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })).
		ServeHTTP(rec, httptest.NewRequest("GET", "/basic/api/v1/basic/goods?page_num=1&keyword=1%27%20OR%20%271%27%3D%271", nil))
	if rec.Code != 204 {
		t.Fatalf("off: attack not passed through: %d", rec.Code)
	}
}

// TestWAFStreamsFlush: a streamed (SSE) answer behind the WAF reaches the client chunk by
// chunk while the handler is still running.
func TestWAFStreamsFlush(t *testing.T) {
	release := make(chan struct{})
	rules, err := crs.New(waf.Config{Enabled: true, ParanoiaLevel: 1, AnomalyThreshold: 5, BodyLimit: waf.DefaultBodyLimit}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gateway.WAF(rules.Inspect)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		f, ok := w.(http.Flusher)
		if !ok {
			t.Error("no http.Flusher through the WAF")
			return
		}
		_, _ = io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"GMV\"}}]}\n\n")
		f.Flush()
		<-release // the handler has not returned yet
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	})))
	defer srv.Close()
	defer close(release)
	req, _ := http.NewRequest("POST", srv.URL+"/api/v2/chat/message", strings.NewReader(`{"message":"What was GMV by shop last 7 days?"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(resp.Body).ReadString('\n')
		got <- line
	}()
	select {
	case line := <-got:
		if !strings.HasPrefix(line, "data: {\"choices\"") {
			t.Fatalf("first chunk %q", line)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the first event did not arrive before the handler returned")
	}
}

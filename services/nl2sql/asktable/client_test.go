package asktable

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopmind/shopmind/internal/apperr"
)

// fake is a scripted provider: each call gets the next step of script (the last one
// repeats), and the fake records what it saw.
type fake struct {
	calls  atomic.Int32
	auth   atomic.Value // last Authorization header
	script []func(w http.ResponseWriter, r *http.Request)
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := int(f.calls.Add(1)) - 1
	f.auth.Store(r.Header.Get("Authorization"))
	f.script[min(n, len(f.script)-1)](w, r)
}

// stallUntilGone answers nothing until the client goes away (the body is read first: the
// server notices a closed connection only then).
func stallUntilGone(r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	<-r.Context().Done()
}

func status(code int, body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
	}
}

func start(t *testing.T, steps ...func(http.ResponseWriter, *http.Request)) (*fake, *Client) {
	t.Helper()
	f := &fake{script: steps}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, &Client{BaseURL: srv.URL + "/v1", Key: "sk-real", Timeout: 2 * time.Second, Retries: 2, Backoff: time.Millisecond}
}

func kindOf(err error) apperr.Kind {
	var e *apperr.Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return -1
}

func TestRetriesThenSucceeds(t *testing.T) {
	f, c := start(t, status(503, `{"detail":"busy"}`), status(500, `oops`), status(200, `{"token":"tk_1"}`))
	tok, err := c.CreateToken(context.Background(), CreateToken{AKRole: "asker", TokenTTL: 60})
	if err != nil || tok != "tk_1" || f.calls.Load() != 3 {
		t.Fatalf("got %q %v after %d calls", tok, err, f.calls.Load())
	}
	if f.auth.Load() != "Bearer sk-real" {
		t.Fatalf("Authorization %v", f.auth.Load())
	}
}

func TestFailures(t *testing.T) {
	stall := func(w http.ResponseWriter, r *http.Request) { stallUntilGone(r) }
	for _, tc := range []struct {
		name     string
		steps    []func(http.ResponseWriter, *http.Request)
		kind     apperr.Kind
		calls    int32
		contains string
	}{
		{"5xx every time: 502 after the retries", []func(http.ResponseWriter, *http.Request){status(502, `{"message":"bad gateway"}`)}, apperr.KindUpstream, 3, "after 3 attempts"},
		{"stalls: each attempt times out, then 502", []func(http.ResponseWriter, *http.Request){stall}, apperr.KindUpstream, 3, "timed out"},
		{"malformed answer: 502, not retried", []func(http.ResponseWriter, *http.Request){status(200, `{"id": [}`)}, apperr.KindUpstream, 1, "malformed"},
		{"answer of the wrong shape: 502", []func(http.ResponseWriter, *http.Request){status(200, `["a list"]`)}, apperr.KindUpstream, 1, "malformed"},
		{"rejected key: 502 naming the variable", []func(http.ResponseWriter, *http.Request){status(401, `{"detail":"invalid api key"}`)}, apperr.KindUpstream, 1, "SHOPMIND_NL2SQL_API_KEY"},
		{"forbidden key: 502", []func(http.ResponseWriter, *http.Request){status(403, `{}`)}, apperr.KindUpstream, 1, "rejected the API key"},
		{"unknown object: 404", []func(http.ResponseWriter, *http.Request){status(404, `{"detail":"chat not found"}`)}, apperr.KindNotFound, 1, "chat not found"},
		{"refused request: 502 with the provider's message", []func(http.ResponseWriter, *http.Request){status(422, `{"detail":"bot_id is required"}`)}, apperr.KindUpstream, 1, "bot_id is required"},
		{"429 then fine", []func(http.ResponseWriter, *http.Request){status(429, `{}`), status(200, `{"id":"chat_1","created_at":"2026-01-01T00:00:00Z"}`)}, -1, 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, c := start(t, tc.steps...)
			if strings.HasPrefix(tc.name, "stalls") {
				c.Timeout = 50 * time.Millisecond
			}
			_, err := c.CreateChat(context.Background(), CreateChat{BotID: "bot_1"})
			if tc.kind == -1 {
				if err != nil {
					t.Fatal(err)
				}
			} else if kindOf(err) != tc.kind || !strings.Contains(err.Error(), tc.contains) {
				t.Fatalf("want kind %d containing %q, got %v", tc.kind, tc.contains, err)
			}
			if f.calls.Load() != tc.calls {
				t.Fatalf("want %d calls, got %d", tc.calls, f.calls.Load())
			}
		})
	}
}

func TestKeyRejectedIsRecognisable(t *testing.T) {
	_, c := start(t, status(401, `{}`))
	if _, err := c.Me(context.Background()); !errors.Is(err, ErrKeyRejected) {
		t.Fatalf("want ErrKeyRejected, got %v", err)
	}
}

func TestMissingSettings(t *testing.T) {
	c := &Client{BaseURL: "http://127.0.0.1:1"}
	if _, err := c.Me(context.Background()); kindOf(err) != apperr.KindUnavailable || !strings.Contains(err.Error(), "SHOPMIND_NL2SQL_API_KEY") {
		t.Fatalf("no key: %v", err)
	}
	c = &Client{Key: "k"}
	if _, err := c.Me(context.Background()); kindOf(err) != apperr.KindUnavailable || !strings.Contains(err.Error(), "SHOPMIND_NL2SQL_API_URL") {
		t.Fatalf("no URL: %v", err)
	}
}

func TestProviderDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	c := &Client{BaseURL: "http://user:secret@" + addr, Key: "k", Retries: 1, Backoff: time.Millisecond}
	_, err = c.Me(context.Background())
	if kindOf(err) != apperr.KindUpstream || !strings.Contains(err.Error(), "after 2 attempts") || strings.Contains(err.Error(), "secret") {
		t.Fatalf("provider down: %v", err)
	}
}

func TestCallerDeadline(t *testing.T) {
	_, c := start(t, func(w http.ResponseWriter, r *http.Request) { stallUntilGone(r) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := c.Me(ctx); kindOf(err) != apperr.KindTimeout {
		t.Fatalf("want 504, got %v", err)
	}
}

// The setup polls meta_status until success, and reports a failed build with its reason.
func TestSetupPollsMetaAndIsRerunnable(t *testing.T) {
	var metaPolls atomic.Int32
	objects := map[string][]json.RawMessage{}
	failMeta := atomic.Bool{}
	mux := http.NewServeMux()
	add := func(kind string, v map[string]any) map[string]any {
		v["id"] = kind + "_" + string(rune('a'+len(objects[kind])))
		raw, _ := json.Marshal(v)
		objects[kind] = append(objects[kind], raw)
		return v
	}
	list := func(kind string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			_ = json.NewEncoder(w).Encode(map[string]any{"items": objects[kind], "total": len(objects[kind])})
		}
	}
	create := func(kind string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			var v map[string]any
			_ = json.NewDecoder(r.Body).Decode(&v)
			if kind == "datasource" {
				v["meta_status"] = "unprocessed"
			}
			_ = json.NewEncoder(w).Encode(add(kind, v))
		}
	}
	for _, k := range []string{"datasource", "policie", "role", "bot"} {
		mux.HandleFunc("GET /v1/"+k+"s", list(k))
		mux.HandleFunc("POST /v1/"+k+"s", create(k))
	}
	mux.HandleFunc("POST /v1/datasources/{id}/meta", func(w http.ResponseWriter, r *http.Request) { metaPolls.Store(0); _, _ = w.Write([]byte(`{}`)) })
	mux.HandleFunc("GET /v1/datasources/{id}", func(w http.ResponseWriter, r *http.Request) {
		st := "processing"
		switch {
		case metaPolls.Add(1) < 3:
		case failMeta.Load():
			st = "failed"
		default:
			st = "success"
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"id": r.PathValue("id"), "name": DatasourceName, "meta_status": st, "meta_error": "connection refused"})
	})
	mux.HandleFunc("GET /v1/datasources/{id}/meta", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"datasource_id":"x","schemas":{"analytics":{"name":"analytics","tables":{"basic_orders":{},"diy_x":{},"other":{}}}}}`))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := &Client{BaseURL: srv.URL, Key: "k", Backoff: time.Millisecond}
	p := SetupParams{Engine: "postgresql", Schema: "analytics", Access: AccessConfig{Host: "h", Port: 5432}, PollInterval: time.Millisecond}

	failMeta.Store(true)
	_, err := Setup(context.Background(), c, p)
	if kindOf(err) != apperr.KindUpstream || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "run the setup again") {
		t.Fatalf("failed metadata: %v", err)
	}
	failMeta.Store(false)
	first, err := Setup(context.Background(), c, p)
	if err != nil || first.DatasourceID == "" || first.BotID == "" || first.RoleID == "" || first.PolicyID == "" || first.Tables != 2 || !first.MetaRebuilt {
		t.Fatalf("setup: %+v %v", first, err)
	}
	if metaPolls.Load() < 3 {
		t.Fatalf("meta_status polled %d times, want at least 3", metaPolls.Load())
	}
	if len(objects["datasource"]) != 1 {
		t.Fatalf("the re-run created another datasource: %d", len(objects["datasource"]))
	}
	second, err := Setup(context.Background(), c, p)
	if err != nil || second.DatasourceID != first.DatasourceID || second.BotID != first.BotID || second.RoleID != first.RoleID || second.PolicyID != first.PolicyID {
		t.Fatalf("re-run: %+v %v, first %+v", second, err, first)
	}
	if len(objects["bot"]) != 1 || len(objects["role"]) != 1 || len(objects["policie"]) != 1 {
		t.Fatalf("the re-run created objects again: %v", objects)
	}
	var pol CreatePolicy
	_ = json.Unmarshal(objects["policie"][0], &pol)
	if got := pol.DatasetConfig.RowsFilters[first.DatasourceID]; len(got) != 2 || got[0] != "analytics.*.shop_id IN {{ shop_ids }}" || pol.DatasetConfig.RegexPatterns.TablesRegexPattern != TablesPattern {
		t.Fatalf("policy: %+v", pol)
	}
}

package crs

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A request seen passing passes again from the memo; any change of an input the rules read
// (client address, method, target, a header's value or name, the body) runs the rules again,
// and a blocked request is never remembered.
func TestVerdictMemo(t *testing.T) {
	m, h := memoWAF(t)
	base := func() *http.Request {
		r := httptest.NewRequest("POST", "/basic/api/v1/basic/goods?sort=created_at,desc", strings.NewReader(`{"name":"tea"}`))
		r.RemoteAddr = "192.0.2.7:40000"
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64)")
		r.Header.Set("Authorization", wafBenchJWT)
		return r
	}
	if c := serve(h, base()); c != 200 {
		t.Fatalf("legitimate request: %d", c)
	}
	hits := m.verdicts.hits.Load()
	if c := serve(h, base()); c != 200 || m.verdicts.hits.Load() != hits+1 {
		t.Fatalf("the same request again: status %d, memo hits %d -> %d (want one more)", c, hits, m.verdicts.hits.Load())
	}
	another := base()
	another.RemoteAddr = "192.0.2.7:40001" // another connection of the same client
	if c := serve(h, another); c != 200 || m.verdicts.hits.Load() != hits+2 {
		t.Fatalf("the same request on another port: status %d, hits %d (the port is not an input)", c, m.verdicts.hits.Load())
	}
	changes := map[string]struct {
		change func(r *http.Request)
		status int
	}{
		"client address":      {func(r *http.Request) { r.RemoteAddr = "192.0.2.8:40000" }, 200},
		"header value":        {func(r *http.Request) { r.Header.Set("User-Agent", "curl/8.0") }, 200},
		"header added":        {func(r *http.Request) { r.Header.Set("Accept-Language", "en") }, 200},
		"header value attack": {func(r *http.Request) { r.Header.Set("User-Agent", "() { :; }; /bin/cat /etc/passwd") }, 403},
		"method":              {func(r *http.Request) { r.Method = "PUT" }, 200},
		"method attack":       {func(r *http.Request) { r.Method = "TRACK" }, 403},
		"query attack": {func(r *http.Request) {
			r.URL.RawQuery = "sort=created_at,desc&q=1%27%20or%201%3D1--"
			r.RequestURI = r.URL.RequestURI()
		}, 403},
		"body attack": {func(r *http.Request) {
			body := `{"name":"tea' UNION SELECT password FROM tenant.users --"}`
			r.Body, r.ContentLength = httptest.NewRequest("POST", "/", strings.NewReader(body)).Body, int64(len(body))
		}, 403},
	}
	for name, c := range changes {
		for i := range 2 {
			r := base()
			c.change(r)
			before := m.verdicts.hits.Load()
			got := serve(h, r)
			if got != c.status {
				t.Errorf("%s (pass %d): status %d, want %d", name, i+1, got, c.status)
			}
			if c.status != 200 && m.verdicts.hits.Load() != before {
				t.Errorf("%s (pass %d): a blocked request was answered from the memo", name, i+1)
			}
			if c.status == 200 && i == 0 && m.verdicts.hits.Load() != before {
				t.Errorf("%s: a changed request was answered from the memo", name)
			}
		}
	}
}

// The whole corpus twice through Inspect: the second pass, answered from the memo where a
// case passed, gives every case the status of the first.
func TestVerdictMemoKeepsCorpusVerdicts(t *testing.T) {
	if testing.Short() {
		t.Skip("CRS corpus: long")
	}
	cases := loadCRSCases(t)
	m, h := memoWAF(t)
	run := func() map[string]int {
		out := map[string]int{}
		for _, c := range cases {
			if c.level == 1 {
				out[c.name] = int(runCRSCase(h, c.raw).outcome)
			}
		}
		return out
	}
	first := run()
	second := run()
	for name, a := range first {
		if b := second[name]; a != b {
			t.Errorf("%s: first %d, second %d", name, a, b)
		}
	}
	if m.verdicts.hits.Load() == 0 {
		t.Fatal("no case was answered from the memo: the test measured nothing")
	}
}

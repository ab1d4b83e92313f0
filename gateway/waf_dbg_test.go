package gateway

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/shopmind/shopmind/internal/config"
)

func TestWAFDebugCase(t *testing.T) {
	raw := os.Getenv("DBG_URI")
	if raw == "" {
		t.Skip()
	}
	for _, pl := range []int{1, 2} {
		for _, p := range []wafProfile{profileShopMind, profileStock} {
			cfg := config.WAFConfig{Enabled: true, ParanoiaLevel: pl, AnomalyThreshold: 5, BodyLimit: 1 << 20}
			m, err := newWAFMiddleware(cfg, p, slog.New(slog.DiscardHandler), testBlock)
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			m.observe = func(w http.ResponseWriter, r *http.Request, ids []int) { got = ids }
			r := httptest.NewRequest(os.Getenv("DBG_METHOD"), raw, strings.NewReader(os.Getenv("DBG_BODY")))
			for _, h := range strings.Split(os.Getenv("DBG_HEADERS"), "\n") {
				if k, v, ok := strings.Cut(h, ": "); ok {
					r.Header.Add(k, v)
				}
			}
			rec := httptest.NewRecorder()
			m.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})).ServeHTTP(rec, r)
			var rel []int
			for _, id := range got {
				if id%1000 >= 100 && id < 949000 && id > 910000 {
					rel = append(rel, id)
				}
			}
			t.Logf("PL%d profile %d: status %d matched %v", pl, p, rec.Code, rel)
		}
	}
}

func slicesContains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

package gateway

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"

	_ "github.com/shopmind/shopmind/gen/go/shopmind/chat/v1" // streaming RPCs with REST bindings
	_ "github.com/shopmind/shopmind/gen/go/shopmind/chat/v2"
)

// Server-streaming routes are found from the descriptors in the form the mux reports them,
// and only they escape the upstream timeout.
func TestStreamingRoutesEscapeTheUpstreamTimeout(t *testing.T) {
	g := &Gateway{streaming: streamingRoutes(), upstreamTimeout: time.Minute}
	for _, want := range []string{
		"POST /api/v2/chat/message",
		"POST /api/v1/chat/messages",
		"GET /api/v1/chat/workflows/{workflow_id=*}/events",
	} {
		if !g.streaming[want] {
			t.Errorf("streaming route %q not found in %v", want, g.streaming)
		}
	}
	if g.streaming["GET /api/v1/chat/workflows/{workflow_id=*}"] {
		t.Error("a unary route counted as streaming")
	}
	mux := runtime.NewServeMux(runtime.WithMiddlewares(g.muxMiddleware))
	deadlines := map[string]bool{}
	for _, p := range []string{"/api/v1/chat/workflows/{workflow_id}/events", "/api/v1/chat/workflows/{workflow_id}"} {
		if err := mux.HandlePath("GET", p, func(w http.ResponseWriter, r *http.Request, _ map[string]string) {
			_, has := r.Context().Deadline()
			pat, _ := runtime.HTTPPattern(r.Context())
			deadlines[pat.String()] = has
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, path := range []string{"/api/v1/chat/workflows/w1/events", "/api/v1/chat/workflows/w1"} {
		mux.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", path, nil))
	}
	if deadlines["/api/v1/chat/workflows/{workflow_id=*}/events"] || !deadlines["/api/v1/chat/workflows/{workflow_id=*}"] {
		t.Fatalf("deadlines by route: %v", deadlines)
	}
}

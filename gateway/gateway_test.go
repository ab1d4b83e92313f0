package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/shopmind/shopmind/gateway"
	notifyv1 "github.com/shopmind/shopmind/gen/go/shopmind/notify/v1"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/grpcserver"
	"github.com/shopmind/shopmind/internal/restapi"
	"github.com/shopmind/shopmind/internal/testutil"
)

// fakeNotify is a stand-in backend: it lets the gateway's envelope, error and header
// handling be tested on a success path before the notify service itself is built.
type fakeNotify struct {
	notifyv1.UnimplementedNotifyServiceServer
	lastMD metadata.MD
}

func (f *fakeNotify) ListCollected(ctx context.Context, req *notifyv1.ListCollectedRequest) (*notifyv1.ListCollectedResponse, error) {
	f.lastMD, _ = metadata.FromIncomingContext(ctx)
	switch req.GetKeyword() {
	case "panic":
		panic("boom")
	case "conflict":
		return nil, apperr.New(apperr.KindConflict, "notification %d already exists", 7)
	case "busy":
		return nil, &apperr.Error{Kind: apperr.KindTooManyRequests, Message: "slow down", RetryAfter: 3 * time.Second}
	case "plain":
		return nil, errors.New("plain failure: disk quota exceeded") // an untyped error: must become a generic 500
	case "slow":
		time.Sleep(300 * time.Millisecond)
	}
	return &notifyv1.ListCollectedResponse{
		Items: []*notifyv1.Notification{{Id: 9007199254740993, Title: "low stock", CreatedAt: timestamppb.New(time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC))}},
		Total: 1, PageNum: 1, PageSize: 10,
	}, nil
}

type envelope = testutil.Envelope

func startGateway(t *testing.T, always200 bool) (*httptest.Server, *fakeNotify) {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	srv, err := grpcserver.New(grpcserver.Options{Logger: log, Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	fake := &fakeNotify{}
	notifyv1.RegisterNotifyServiceServer(srv, fake)
	conn := testutil.ServeGRPC(t, srv.Serve, srv.Server.Stop)
	srv.MarkServing()
	gw, err := gateway.New(context.Background(), gateway.Options{
		Logger: log, Registry: prometheus.NewRegistry(), AlwaysHTTP200: always200, MaxBodyBytes: 1024,
		Backends: []gateway.Backend{{Target: "notify", Conn: conn, Register: restapi.Routes(restapi.Route(notifyv1.RegisterNotifyServiceHandlerClient, notifyv1.NewNotifyServiceClient))}},
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(gw)
	t.Cleanup(hs.Close)
	return hs, fake
}

func call(t *testing.T, hs *httptest.Server, method, path, body string, header ...string) (int, http.Header, envelope, string) {
	t.Helper()
	req, _ := http.NewRequest(method, hs.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	env := testutil.DecodeEnvelope(t, method+" "+path, resp.StatusCode, raw)
	return resp.StatusCode, resp.Header, env, string(raw)
}

func TestSuccessEnvelope(t *testing.T) {
	hs, _ := startGateway(t, false)
	status, _, env, raw := call(t, hs, "POST", "/notify/api/v1/notify/collect/list", `{"page_num":1}`)
	if status != 200 || env.Code != 0 || env.Message != "success" {
		t.Fatalf("got %d %s", status, raw)
	}
	var data map[string]any
	if err := json.Unmarshal(env.Data, &data); err != nil {
		t.Fatal(err)
	}
	item := data["items"].([]any)[0].(map[string]any)
	// proto field names, int64 as strings (exact beyond 2^53), zero values emitted
	if item["id"] != "9007199254740993" || item["created_at"] != "2026-11-01T08:00:00Z" {
		t.Errorf("item = %v", item)
	}
	if _, ok := item["read"]; !ok {
		t.Errorf("zero-valued field read missing: %v", item)
	}
	if data["page_size"] != float64(10) || data["total"] != "1" {
		t.Errorf("data = %v", data)
	}
}

func TestErrorEnvelopes(t *testing.T) {
	hs, _ := startGateway(t, false)
	cases := []struct {
		name, method, path, body string
		status                   int
		message                  string
	}{
		{"validation names the field", "POST", "/api/v1/notify/collect/list", `{"page_size":101}`, 400, "page_size: must be between 1 and 100"},
		{"message rule", "POST", "/api/v1/notify/collect/list", `{"start_time":"2026-02-01T00:00:00Z","end_time":"2026-01-01T00:00:00Z"}`, 400, "start_time must be earlier than end_time"},
		{"malformed JSON", "POST", "/api/v1/notify/collect/list", `{"page_num":`, 400, "malformed request"},
		{"wrong type", "POST", "/api/v1/notify/collect/list", `{"page_num":"x"}`, 400, "page_num"},
		{"unknown field", "POST", "/api/v1/notify/collect/list", `{"pagenum":1}`, 400, "pagenum"},
		{"unknown route", "GET", "/api/v1/notify/nothing", ``, 404, "no route"},
		{"unknown service prefix", "POST", "/other/api/v1/notify/collect/list", `{}`, 404, "no route"},
		{"wrong method", "GET", "/api/v1/notify/collect/list", ``, 405, "not allowed"},
		{"typed conflict", "POST", "/api/v1/notify/collect/list", `{"keyword":"conflict"}`, 409, "notification 7 already exists"},
		{"panic is a 500", "POST", "/api/v1/notify/collect/list", `{"keyword":"panic"}`, 500, "internal server error"},
		{"plain error is a 500 without detail", "POST", "/api/v1/notify/collect/list", `{"keyword":"plain"}`, 500, "internal server error"},
		{"body too large", "POST", "/api/v1/notify/collect/list", `{"keyword":"` + strings.Repeat("a", 2000) + `"}`, 413, "too large"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, _, env, raw := call(t, hs, c.method, c.path, c.body)
			if status != c.status || env.Code != c.status || !strings.Contains(env.Message, c.message) || string(env.Data) != "null" {
				t.Fatalf("want %d %q, got HTTP %d %s", c.status, c.message, status, raw)
			}
			if c.status == 500 && (strings.Contains(raw, "boom") || strings.Contains(raw, "quota")) {
				t.Fatalf("internal detail leaked: %s", raw)
			}
		})
	}
}

func TestRetryAfterAndAlways200(t *testing.T) {
	hs, _ := startGateway(t, false)
	status, h, env, _ := call(t, hs, "POST", "/api/v1/notify/collect/list", `{"keyword":"busy"}`)
	if status != 429 || env.Code != 429 || h.Get("Retry-After") != "3" {
		t.Fatalf("got %d code %d retry-after %q", status, env.Code, h.Get("Retry-After"))
	}
	hs200, _ := startGateway(t, true)
	status, _, env, _ = call(t, hs200, "POST", "/api/v1/notify/collect/list", `{"page_size":0}`)
	if status != 200 || env.Code != 400 {
		t.Fatalf("always-200 mode: got HTTP %d code %d", status, env.Code)
	}
	status, _, env, _ = call(t, hs200, "DELETE", "/api/v1/notify/collect/list", ``)
	if status != 200 || env.Code != 405 {
		t.Fatalf("always-200 mode: got HTTP %d code %d", status, env.Code)
	}
}

func TestIdentityHeadersAreNotForwarded(t *testing.T) {
	hs, fake := startGateway(t, false)
	call(t, hs, "POST", "/api/v1/notify/collect/list", `{}`,
		"X-User-Id", "1", "X-Tenant-Id", "2", "Grpc-Metadata-X-Is-Admin", "true", "X-Role-Ids", "1",
		"Authorization", "Bearer abc", "X-Request-Id", "req-42")
	for _, k := range []string{"x-user-id", "x-tenant-id", "x-is-admin", "x-role-ids", "x-username"} {
		if v := fake.lastMD.Get(k); len(v) > 0 {
			t.Errorf("client header %s reached the backend: %v", k, v)
		}
	}
	if got := fake.lastMD.Get("authorization"); len(got) != 1 || got[0] != "Bearer abc" {
		t.Errorf("authorization = %v", got)
	}
	if got := fake.lastMD.Get("x-request-id"); len(got) != 1 || got[0] != "req-42" {
		t.Errorf("x-request-id = %v", got)
	}
}

func TestHealthReadyMetricsAndRequestID(t *testing.T) {
	hs, _ := startGateway(t, false)
	for _, p := range []string{"/healthz", "/readyz"} {
		status, _, env, raw := call(t, hs, "GET", p, "")
		if status != 200 || env.Code != 0 {
			t.Fatalf("%s: %d %s", p, status, raw)
		}
	}
	_, h, _, _ := call(t, hs, "POST", "/api/v1/notify/collect/list", `{}`, "X-Request-Id", "abc-123")
	if h.Get("X-Request-Id") != "abc-123" {
		t.Errorf("request id not echoed: %q", h.Get("X-Request-Id"))
	}
	_, h, _, _ = call(t, hs, "POST", "/api/v1/notify/collect/list", `{}`, "X-Request-Id", "bad id with spaces")
	if id := h.Get("X-Request-Id"); id == "" || strings.Contains(id, " ") {
		t.Errorf("malformed request id kept: %q", id)
	}
	resp, err := hs.Client().Get(hs.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `shopmind_http_requests_total{code="0",method="POST",route="/api/v1/notify/collect/list",status="200"}`) {
		t.Errorf("metrics lack the request counter:\n%s", body)
	}
}

func TestReadyzFailsWhenBackendDown(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	conn, err := grpc.NewClient("127.0.0.1:1", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	gw, err := gateway.New(context.Background(), gateway.Options{Logger: log, MaxBodyBytes: 1024,
		Backends: []gateway.Backend{{Target: "notify", Conn: conn, Register: restapi.Routes(restapi.Route(notifyv1.RegisterNotifyServiceHandlerClient, notifyv1.NewNotifyServiceClient))}}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(gw)
	defer hs.Close()
	status, _, env, _ := call(t, hs, "GET", "/readyz", "")
	if status != 503 || env.Code != 503 || !strings.Contains(env.Message, "notify") {
		t.Fatalf("got %d %+v", status, env)
	}
	status, _, env, _ = call(t, hs, "POST", "/api/v1/notify/collect/list", "{}")
	if status != 503 || env.Code != 503 {
		t.Fatalf("unreachable backend: got %d %+v", status, env)
	}
}

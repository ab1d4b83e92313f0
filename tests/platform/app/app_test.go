//go:build platform

// Package app_test runs the whole platform as the composition root (internal/app) wires it:
// the shared rules over REST and gRPC, routing, health, the loopback calls, the WAF in the
// edge chain, and microservices mode over etcd (discovery_test.go).
package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	basicv1 "github.com/shopmind/shopmind/gen/go/shopmind/basic/v1"
	nl2sqlv1 "github.com/shopmind/shopmind/gen/go/shopmind/nl2sql/v1"
	tenantv1 "github.com/shopmind/shopmind/gen/go/shopmind/tenant/v1"
	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/testutil/stack"
)

type envelope struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

func decode(t *testing.T, r stack.Response) envelope {
	t.Helper()
	var env envelope
	if err := json.Unmarshal(r.Body, &env); err != nil {
		t.Fatalf("not an envelope: %q", r.Body)
	}
	return env
}

func idList(n int) string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprint(i + 1)
	}
	return "[" + strings.Join(ids, ",") + "]"
}

// The spec's shared request rules, broken one at a time over REST through the gateway:
// each gets a 400 envelope whose message names the field.
func TestSharedRulesOverREST(t *testing.T) {
	s := stack.Start(t)
	auth := stack.Bearer(s.Admin(t).Access)
	cases := []struct {
		name, method, path, body string
		field                    *regexp.Regexp
	}{
		{"id 0", "POST", "/api/v1/basic/goods/get", `{"id":0}`, regexp.MustCompile(`\bid: must be greater than 0`)},
		{"id 0 in path", "PUT", "/tenant/api/v1/tenant/roles/0", `{}`, regexp.MustCompile(`\bid: must be greater than 0`)},
		{"101 ids", "POST", "/api/v1/basic/goods/delete", `{"ids":` + idList(101) + `}`, regexp.MustCompile(`\bids: must hold 1 to 100 ids`)},
		{"no ids", "POST", "/api/v1/basic/goods/delete", `{"ids":[]}`, regexp.MustCompile(`\bids: must hold 1 to 100 ids`)},
		{"start after end", "GET", "/basic/api/v1/basic/orders?start_time=2026-02-01T00:00:00Z&end_time=2026-01-01T00:00:00Z", ``, regexp.MustCompile(`start_time must be earlier than end_time`)},
		{"start equals end", "POST", "/notify/api/v1/notify/collect/list", `{"start_time":"2026-01-01T00:00:00Z","end_time":"2026-01-01T00:00:00Z"}`, regexp.MustCompile(`start_time must be earlier than end_time`)},
		{"page_size 101", "GET", "/tenant/api/v1/tenant/users?page_size=101", ``, regexp.MustCompile(`\bpage_size: must be between 1 and 100`)},
		{"page_num 0", "GET", "/basic/api/v1/basic/goods?page_num=0", ``, regexp.MustCompile(`\bpage_num: must be at least 1`)},
		{"limit 0", "GET", "/tenant/api/v1/tenant/users?limit=0", ``, regexp.MustCompile(`\blimit: `)},
		{"sort up", "POST", "/api/v1/basic/goods/list", `{"sort_order":"up"}`, regexp.MustCompile(`\bsort_order: must be asc or desc`)},
		{"listing sort up", "GET", "/basic/api/v1/basic/orders?sort=created_at,up", ``, regexp.MustCompile(`\bsort: must be <field>,<asc\|desc>`)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := s.Do(t, c.method, c.path, c.body, auth...)
			env := decode(t, r)
			if r.Status != 400 || env.Code != 400 || !c.field.MatchString(env.Message) {
				t.Fatalf("want 400 matching %s, got HTTP %d %s", c.field, r.Status, r.Body)
			}
		})
	}
}

// The same rules over gRPC: InvalidArgument with a BadRequest naming the field.
func TestSharedRulesOverGRPC(t *testing.T) {
	s := stack.Start(t)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+s.Admin(t).Access)
	goods := basicv1.NewGoodsServiceClient(s.Conn)
	basic := basicv1.NewBasicDataServiceClient(s.Conn)
	users := tenantv1.NewTenantServiceClient(s.Conn)
	ids := make([]int64, 101)
	for i := range ids {
		ids[i] = int64(i + 1)
	}
	size := int32(101)
	cases := []struct {
		name  string
		call  func() error
		field string
	}{
		{"id 0", func() error { _, err := goods.GetGoods(ctx, &basicv1.GetGoodsRequest{Id: 0}); return err }, "id"},
		{"101 ids", func() error { _, err := goods.DeleteGoods(ctx, &basicv1.DeleteGoodsRequest{Ids: ids}); return err }, "ids"},
		{"start after end", func() error {
			_, err := basic.ListOrders(ctx, &basicv1.ListOrdersRequest{
				StartTime: timestamppb.New(mustTime("2026-02-01T00:00:00Z")), EndTime: timestamppb.New(mustTime("2026-01-01T00:00:00Z"))})
			return err
		}, ""},
		{"page_size 101", func() error { _, err := users.ListUsers(ctx, &tenantv1.ListUsersRequest{PageSize: &size}); return err }, "page_size"},
		{"sort up", func() error { _, err := goods.QueryGoods(ctx, &basicv1.QueryGoodsRequest{SortOrder: "up"}); return err }, "sort_order"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := status.Convert(c.call())
			if st.Code() != codes.InvalidArgument {
				t.Fatalf("want InvalidArgument, got %v", st)
			}
			var fields []string
			for _, d := range st.Details() {
				if br, ok := d.(*errdetails.BadRequest); ok {
					for _, v := range br.GetFieldViolations() {
						fields = append(fields, v.GetField())
					}
				}
			}
			if c.field != "" && !contains(fields, c.field) {
				t.Fatalf("violations %v do not name %s (%s)", fields, c.field, st.Message())
			}
			if c.field == "" && !strings.Contains(st.Message(), "start_time must be earlier than end_time") {
				t.Fatalf("message %q", st.Message())
			}
		})
	}
}

// Routing errors and the service prefixes behave as documented; a method the contract does
// not define answers gRPC Unimplemented.
func TestRoutingAndPrefixes(t *testing.T) {
	s := stack.Start(t)
	auth := stack.Bearer(s.Admin(t).Access)
	cases := []struct {
		method, path, body string
		code               int
		message            string
	}{
		{"GET", "/tenant/api/v1/tenant/nothing", "", 404, "no route"},
		{"GET", "/shop/api/v1/basic/goods", "", 404, "no route"},
		{"DELETE", "/tenant/api/v1/tenant/auth/login", "", 405, "not allowed"},
		{"POST", "/tenant/api/v1/tenant/auth/login", `{"username":`, 400, "malformed request"},
		{"POST", "/tenant/api/v1/tenant/auth/login", `{"username":5}`, 400, "username"},
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			r := s.Do(t, c.method, c.path, c.body, auth...)
			env := decode(t, r)
			if r.Status != c.code || env.Code != c.code || !strings.Contains(env.Message, c.message) {
				t.Fatalf("want %d %q, got HTTP %d %s", c.code, c.message, r.Status, r.Body)
			}
		})
	}
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", auth[1])
	err := s.Conn.Invoke(ctx, "/shopmind.nl2sql.v1.Nl2SqlService/NoSuchMethod", &nl2sqlv1.CreateTokenRequest{}, &nl2sqlv1.CreateTokenResponse{})
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("gRPC: want Unimplemented, got %v", err)
	}
}

// Every gRPC server carries grpc.health.v1; the gateway's probes answer.
func TestHealth(t *testing.T) {
	s := stack.Start(t)
	resp, err := healthpb.NewHealthClient(s.Conn).Check(context.Background(), &healthpb.HealthCheckRequest{Service: "shopmind.basic.v1.GoodsService"})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health: %v %v", resp, err)
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if r := s.Do(t, "GET", p, ""); r.Status != 200 || decode(t, r).Code != 0 {
			t.Fatalf("%s: %d %s", p, r.Status, r.Body)
		}
	}
}

// With in-process calls off, REST still reaches every service (over loopback gRPC) through
// the same chain: authentication, validation and answers are the same.
func TestLoopbackCalls(t *testing.T) {
	s := stack.Start(t, func(c *app.Config) { c.InProcessCalls = false })
	admin := stack.Bearer(s.Admin(t).Access)
	if r := s.Do(t, "GET", "/tenant/api/v1/tenant/auth/info", "", admin...); r.Status != 200 || decode(t, r).Code != 0 {
		t.Fatalf("info: %d %s", r.Status, r.Body)
	}
	if r := s.Do(t, "GET", "/tenant/api/v1/tenant/auth/info", ""); r.Status != 401 {
		t.Fatalf("anonymous info: %d %s", r.Status, r.Body)
	}
	if r := s.Do(t, "GET", "/tenant/api/v1/tenant/users?page_size=101", "", admin...); r.Status != 400 {
		t.Fatalf("page_size 101: %d %s", r.Status, r.Body)
	}
}

// The always-200 switch keeps the envelope code and answers HTTP 200.
func TestAlways200Switch(t *testing.T) {
	s := stack.Start(t, func(c *app.Config) { c.AlwaysHTTP200 = true })
	r := s.Do(t, "GET", "/tenant/api/v1/tenant/users?page_size=101", "", stack.Bearer(s.Admin(t).Access)...)
	if env := decode(t, r); r.Status != 200 || env.Code != 400 {
		t.Fatalf("got HTTP %d %s", r.Status, r.Body)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func mustTime(s string) (t time.Time) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// The WAF runs in the platform's edge chain: attacks get the 403 envelope, the platform's
// own traffic passes (every acceptance test of every service runs through it).
func TestWAFInTheEdgeChain(t *testing.T) {
	s := stack.Start(t)
	auth := stack.Bearer(s.Admin(t).Access)
	for _, path := range []string{
		"/tenant/api/v1/tenant/users?username=' OR 1=1 --",
		"/tenant/api/v1/tenant/users?username=<script>alert(1)</script>",
		"/tenant/api/v1/tenant/users?username=../../etc/passwd",
	} {
		r := s.Do(t, "GET", strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(path, " ", "%20"), "<", "%3C"), ">", "%3E"), "", auth...)
		if env := decode(t, r); r.Status != 403 || env.Code != 403 || !strings.Contains(env.Message, "web application firewall") {
			t.Fatalf("%s: got %d %s", path, r.Status, r.Body)
		}
	}
	r := s.Do(t, "POST", "/tenant/api/v1/tenant/roles", `{"code":"x9","name":"'; DROP TABLE users; --"}`, auth...)
	if r.Status != 403 {
		t.Fatalf("SQL injection in a JSON body: %d %s", r.Status, r.Body)
	}
	if r := s.Do(t, "GET", "/tenant/api/v1/tenant/users?username=ann&page_size=20", "", auth...); r.Status != 200 {
		t.Fatalf("legitimate request blocked: %d %s", r.Status, r.Body)
	}
}

//go:build platform

// Package nl2sql tests the NL2SQL integration service through the gateway: against the
// built-in provider (the nl2sql-provider target, in process) and against a scripted fake
// external provider that fails, stalls, answers malformed data and rejects keys.
package nl2sql

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/testutil/stack"
	"github.com/shopmind/shopmind/services/nl2sql"
)

// tenant is a signed-in tenant with one shop.
type tenant struct {
	*stack.User
	shop int64
}

func demo(t *testing.T, s *stack.Stack) *tenant {
	t.Helper()
	tn := &tenant{User: s.DemoAdmin(t)}
	tn.shop = tn.addShop(t, "demo-nl2sql-shop")
	return tn
}

func addTenant(t *testing.T, s *stack.Stack, code string) *tenant {
	t.Helper()
	tn := &tenant{User: s.NewTenant(t, code)}
	tn.shop = tn.addShop(t, code+"-shop")
	return tn
}

func (tn *tenant) addShop(t *testing.T, name string) int64 {
	t.Helper()
	return stack.AddShop(t, tn.DB, tn.Tenant, name, "tmall", name)
}

// want is Expect's data.
func (tn *tenant) want(t *testing.T, method, path, body string, code int, contains string) json.RawMessage {
	t.Helper()
	return tn.Expect(t, method, path, body, code, contains).Data
}

func decode[T any](t *testing.T, data json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%v in %s", err, data)
	}
	return v
}

type tokenData struct {
	Token     string `json:"token"`
	ExpiresAt string `json:"expires_at"`
}

type chatData struct {
	ChatID string   `json:"chat_id"`
	BotID  string   `json:"bot_id"`
	Shops  []string `json:"shop_ids"`
}

// Every endpoint through the gateway against the built-in provider, as on a fresh
// `make run`, with the spec's bad inputs.
func TestBuiltinProviderThroughGateway(t *testing.T) {
	s := stack.Start(t)
	me, other := demo(t, s), addTenant(t, s, "rival")

	health := decode[map[string]any](t, (&tenant{User: &stack.User{Stack: s}}).want(t, "GET", "/api/v1/nl2sql/health", "", 0, ""))
	if health["status"] != "healthy" || health["provider"] != "builtin" || health["api_key_valid"] != true {
		t.Fatalf("health: %v", health)
	}

	// shop_ids missing, malformed, out of range, duplicated, of another tenant.
	me.want(t, "POST", "/api/v1/nl2sql/token", `{}`, 400, "shop_ids")
	me.want(t, "POST", "/api/v1/nl2sql/token", `{"shop_ids": []}`, 400, "shop_ids")
	me.want(t, "POST", "/api/v1/nl2sql/token", `{"shop_ids": "1,2"}`, 400, "shop_ids")
	me.want(t, "POST", "/api/v1/nl2sql/token", `{"shop_ids": ["abc"]}`, 400, "shop_ids")
	me.want(t, "POST", "/api/v1/nl2sql/token", `{"shop_ids": [0]}`, 400, "shop_ids")
	me.want(t, "POST", "/api/v1/nl2sql/token", fmt.Sprintf(`{"shop_ids": [%d, %d]}`, me.shop, me.shop), 400, "shop_ids")
	me.want(t, "POST", "/api/v1/nl2sql/token", fmt.Sprintf(`{"shop_ids": [%d], "ttl_seconds": 5}`, me.shop), 400, "ttl_seconds")
	me.want(t, "POST", "/api/v1/nl2sql/token", fmt.Sprintf(`{"shop_ids": [%d, %d]}`, me.shop, other.shop), 403, fmt.Sprint(other.shop))
	(&tenant{User: &stack.User{Stack: s}}).want(t, "POST", "/api/v1/nl2sql/token", fmt.Sprintf(`{"shop_ids": [%d]}`, me.shop), 401, "")

	tok := decode[tokenData](t, me.want(t, "POST", "/api/v1/nl2sql/token", fmt.Sprintf(`{"shop_ids": ["%d"]}`, me.shop), 0, ""))
	if tok.Token == "" || tok.ExpiresAt == "" {
		t.Fatalf("token: %+v", tok)
	}
	ch := decode[chatData](t, me.want(t, "POST", "/api/v1/nl2sql/chat", fmt.Sprintf(`{"token": %q}`, tok.Token), 0, ""))
	if ch.ChatID == "" || ch.BotID == "" {
		t.Fatalf("chat: %+v", ch)
	}
	me.want(t, "POST", "/api/v1/nl2sql/chat", `{}`, 400, "token")
	me.want(t, "POST", "/api/v1/nl2sql/chat", fmt.Sprintf(`{"token": %q, "bot_id": "bad id!"}`, tok.Token), 400, "bot_id")
	other.want(t, "POST", "/api/v1/nl2sql/chat", fmt.Sprintf(`{"token": %q}`, tok.Token), 400, "token")

	got := decode[chatData](t, me.want(t, "GET", "/api/v1/nl2sql/chat/"+ch.ChatID, "", 0, ""))
	if got.ChatID != ch.ChatID || len(got.Shops) != 1 || got.Shops[0] != fmt.Sprint(me.shop) {
		t.Fatalf("chat details: %+v", got)
	}
	other.want(t, "GET", "/api/v1/nl2sql/chat/"+ch.ChatID, "", 404, "not found")
	me.want(t, "GET", "/api/v1/nl2sql/chat/no_such_chat", "", 404, "not found")

	emb := decode[map[string]string](t, me.want(t, "POST", "/api/v1/nl2sql/embed-url", fmt.Sprintf(`{"shop_ids": [%d]}`, me.shop), 0, ""))
	u, err := url.Parse(emb["embed_url"])
	if err != nil || u.Query().Get("chatId") != emb["chat_id"] || u.Query().Get("apiKey") != emb["token"] {
		t.Fatalf("embed url: %v", emb)
	}
	resp, err := http.Get(emb["embed_url"]) // the built-in provider serves the page
	if err != nil || resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("embed page: %v %v", resp, err)
	}
	_ = resp.Body.Close()
	me.want(t, "POST", "/api/v1/nl2sql/embed-url", fmt.Sprintf(`{"shop_ids": [%d]}`, other.shop), 403, "does not belong")

	me.want(t, "POST", "/api/v1/nl2sql/setup-datasource", `{}`, 403, "platform operators only")
	ops := addTenant(t, s, "ops")
	if _, err := s.DB.Pool.Exec(context.Background(), "UPDATE tenant.tenants SET is_operator = true WHERE id = $1", ops.Tenant); err != nil {
		t.Fatal(err)
	}
	setup := decode[map[string]any](t, ops.want(t, "POST", "/api/v1/nl2sql/setup-datasource", `{}`, 0, ""))
	ds, _ := setup["datasource_id"].(string)
	if ds == "" || setup["bot_id"] != ch.BotID {
		t.Fatalf("setup: %v (chat bot %s)", setup, ch.BotID)
	}
	ops.want(t, "POST", "/api/v1/nl2sql/setup-datasource", `{"port": 70000}`, 400, "port")
	ops.want(t, "POST", "/api/v1/nl2sql/setup-datasource", `{"dialect": "mysql"}`, 400, "dialect")

	me.want(t, "POST", "/api/v1/nl2sql/policy", fmt.Sprintf(`{"datasource_id": "ds_wrong", "shop_ids": [%d]}`, me.shop), 400, "datasource_id")
	me.want(t, "POST", "/api/v1/nl2sql/policy", fmt.Sprintf(`{"datasource_id": %q}`, ds), 400, "row_filter")
	me.want(t, "POST", "/api/v1/nl2sql/policy", fmt.Sprintf(`{"datasource_id": %q, "shop_ids": [%d], "table_pattern": "^orders"}`, ds, me.shop), 400, "table_pattern")
	me.want(t, "POST", "/api/v1/nl2sql/policy", fmt.Sprintf(`{"datasource_id": %q, "shop_ids": [%d]}`, ds, other.shop), 403, "does not belong")
	pol := decode[map[string]any](t, me.want(t, "POST", "/api/v1/nl2sql/policy", fmt.Sprintf(`{"datasource_id": %q, "shop_ids": [%d], "name": "orders of one shop", "table_pattern": "^basic_orders$"}`, ds, me.shop), 0, ""))
	if pol["row_filter_sql"] != fmt.Sprintf("shop_id IN (%d)", me.shop) || pol["role_id"] == "" {
		t.Fatalf("policy: %v", pol)
	}
}

// fakeProvider is a scripted external provider. mode: ok, bad_key, stall, malformed, 5xx.
type fakeProvider struct {
	mode        atomic.Value
	tokenCalls  atomic.Int32
	mu          sync.Mutex
	lastVars    map[string]string
	lastRoleID  string
	chatCreated map[string]bool
}

func (f *fakeProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if r.Header.Get("Authorization") != "Bearer sk-test-real-key" {
		w.WriteHeader(401)
		_, _ = w.Write([]byte(`{"detail":"invalid key"}`))
		return
	}
	switch f.mode.Load() {
	case "bad_key":
		w.WriteHeader(403)
		_, _ = w.Write([]byte(`{"detail":"key revoked"}`))
		return
	case "stall": // the body is read first: the server notices a closed connection only then
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
		return
	case "malformed":
		_, _ = w.Write([]byte(`{"token": 42, "id": [`))
		return
	case "5xx":
		w.WriteHeader(503)
		_, _ = w.Write([]byte(`{"detail":"maintenance"}`))
		return
	}
	switch {
	case r.Method == "GET" && r.URL.Path == "/v1/auth/me":
		_, _ = w.Write([]byte(`{"project_id":"p1","ak_role":"admin"}`))
	case r.Method == "POST" && r.URL.Path == "/v1/auth/tokens":
		var in struct {
			AKRole   string `json:"ak_role"`
			ChatRole struct {
				RoleID        string            `json:"role_id"`
				RoleVariables map[string]string `json:"role_variables"`
			} `json:"chat_role"`
			TokenTTL int `json:"token_ttl"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		f.mu.Lock()
		f.lastVars, f.lastRoleID = in.ChatRole.RoleVariables, in.ChatRole.RoleID
		f.mu.Unlock()
		n := f.tokenCalls.Add(1)
		if in.AKRole != "asker" || in.TokenTTL < 60 {
			w.WriteHeader(422)
			_, _ = w.Write([]byte(`{"detail":"bad token request"}`))
			return
		}
		fmt.Fprintf(w, `{"token":"ext_token_%d"}`, n)
	case r.Method == "POST" && r.URL.Path == "/v1/chats":
		_, _ = w.Write([]byte(`{"id":"chat_ext_1","bot_id":"bot_ext","created_at":"2026-11-24T10:00:00Z","status":"active"}`))
	case r.Method == "GET" && r.URL.Path == "/v1/chats/chat_ext_1":
		_, _ = w.Write([]byte(`{"id":"chat_ext_1","bot_id":"bot_ext","name":"GMV last week","message_count":3,"created_at":"2026-11-24T10:00:00Z"}`))
	default:
		w.WriteHeader(404)
		_, _ = w.Write([]byte(`{"detail":"not found"}`))
	}
}

// external points the bridge at url with key and the ids of a provider set up beforehand.
func external(url, key string) stack.Option {
	return func(c *app.Config) {
		n := app.ServiceConfig[nl2sql.Config](c, "nl2sql")
		n.APIURL, n.APIKey, n.DatasourceID, n.BotID, n.RoleID = url, key, "ds_ext", "bot_ext", "role_ext"
		n.Timeout, n.Retries, n.Backoff = 300*time.Millisecond, 2, time.Millisecond
	}
}

// The bridge against a fake external provider: the protocol as sent, the token cache, and
// every failure answered with a clear envelope: bad key 502, missing key 503, provider
// down 502, stalls 502 after the retries, malformed answers 502, 5xx 502.
func TestExternalProviderFailures(t *testing.T) {
	f := &fakeProvider{}
	f.mode.Store("ok")
	srv := httptest.NewServer(f)
	defer srv.Close()
	s := stack.Start(t, external(srv.URL, "sk-test-real-key"))
	me := demo(t, s)

	tok := decode[tokenData](t, me.want(t, "POST", "/api/v1/nl2sql/token", fmt.Sprintf(`{"shop_ids": [%d]}`, me.shop), 0, ""))
	f.mu.Lock()
	vars, role := f.lastVars, f.lastRoleID
	f.mu.Unlock()
	if tok.Token != "ext_token_1" || role != "role_ext" || vars["shop_ids"] != fmt.Sprintf("(%d)", me.shop) || vars["tenant_id"] != fmt.Sprint(me.Tenant) {
		t.Fatalf("token %+v; provider saw role %q variables %v", tok, role, vars)
	}
	again := decode[tokenData](t, me.want(t, "POST", "/api/v1/nl2sql/token", fmt.Sprintf(`{"shop_ids": [%d]}`, me.shop), 0, ""))
	if again.Token != tok.Token || f.tokenCalls.Load() != 1 {
		t.Fatalf("the cached token was not reused: %+v after %d provider calls", again, f.tokenCalls.Load())
	}
	ch := decode[chatData](t, me.want(t, "POST", "/api/v1/nl2sql/chat", fmt.Sprintf(`{"token": %q}`, tok.Token), 0, ""))
	detail := decode[map[string]any](t, me.want(t, "GET", "/api/v1/nl2sql/chat/"+ch.ChatID, "", 0, ""))
	if detail["title"] != "GMV last week" || detail["message_count"] != float64(3) {
		t.Fatalf("chat details: %v", detail)
	}
	emb := decode[map[string]string](t, me.want(t, "POST", "/api/v1/nl2sql/embed-url", fmt.Sprintf(`{"shop_ids": [%d]}`, me.shop), 0, ""))
	if !strings.HasPrefix(emb["embed_url"], srv.URL+"/embed?") {
		t.Fatalf("embed url %v", emb)
	}
	me.want(t, "POST", "/api/v1/nl2sql/policy", fmt.Sprintf(`{"datasource_id": "ds_other", "shop_ids": [%d]}`, me.shop), 400, "datasource_id")

	body := fmt.Sprintf(`{"shop_ids": [%d], "ttl_seconds": 120}`, me.shop) // not cached
	for _, tc := range []struct{ mode, contains string }{
		{"bad_key", "SHOPMIND_NL2SQL_API_KEY"},
		{"stall", "after 3 attempts"},
		{"malformed", "malformed"},
		{"5xx", "maintenance"},
	} {
		f.mode.Store(tc.mode)
		me.want(t, "POST", "/api/v1/nl2sql/token", body, 502, tc.contains)
	}
	f.mode.Store("bad_key")
	h := decode[map[string]any](t, me.want(t, "GET", "/api/v1/nl2sql/health", "", 0, ""))
	if h["status"] != "unhealthy" || h["api_key_valid"] != false || h["provider_reachable"] != true || !strings.Contains(fmt.Sprint(h["message"]), "SHOPMIND_NL2SQL_API_KEY") {
		t.Fatalf("health with a rejected key: %v", h)
	}
	f.mode.Store("ok")

	srv.Close() // provider down
	me.want(t, "POST", "/api/v1/nl2sql/token", body, 502, "after 3 attempts")
	h = decode[map[string]any](t, me.want(t, "GET", "/api/v1/nl2sql/health", "", 0, ""))
	if h["status"] != "unhealthy" || h["provider_reachable"] != false {
		t.Fatalf("health with the provider down: %v", h)
	}
}

// Missing or placeholder credentials: 503 naming the variable to set, and health says so.
func TestMissingKey(t *testing.T) {
	s := stack.Start(t, external("https://nl2sql.invalid", ""))
	me := demo(t, s)
	me.want(t, "POST", "/api/v1/nl2sql/token", fmt.Sprintf(`{"shop_ids": [%d]}`, me.shop), 503, "SHOPMIND_NL2SQL_API_KEY")
	me.want(t, "POST", "/api/v1/nl2sql/policy", fmt.Sprintf(`{"datasource_id": "ds_ext", "shop_ids": [%d]}`, me.shop), 503, "SHOPMIND_NL2SQL_API_KEY")
	h := decode[map[string]any](t, me.want(t, "GET", "/api/v1/nl2sql/health", "", 0, ""))
	if h["status"] != "unhealthy" || h["api_key_configured"] != false || !strings.Contains(fmt.Sprint(h["message"]), "SHOPMIND_NL2SQL_API_KEY") {
		t.Fatalf("health without a key: %v", h)
	}
}

// providerCall calls the built-in provider's API directly, as the embedded page does.
func providerCall(t *testing.T, method, url, key, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// A question asked in an embedded chat runs through the SQL sandbox as the chat's tenant
// and shops: the rows of the tenant's other shops and of other tenants never come back,
// whatever the token's holder asks the provider for.
func TestBuiltinProviderAnswersWithinScope(t *testing.T) {
	s := stack.Start(t)
	me, other := demo(t, s), addTenant(t, s, "rival")
	hidden := me.addShop(t, "demo-hidden-shop")
	ctx := context.Background()
	orders := []struct {
		tenant, shop int64
		n            int
	}{{me.Tenant, me.shop, 2}, {me.Tenant, hidden, 5}, {other.Tenant, other.shop, 7}}
	oid := int64(900000)
	for _, o := range orders {
		for i := 0; i < o.n; i++ {
			oid++
			if _, err := s.DB.Pool.Exec(ctx, `INSERT INTO analytics.basic_orders (i_tenant_id, order_id, order_no, shop_id, platform, status,
				buyer_id, total_amount, discount_amount, paid_amount, item_count, ordered_at)
				VALUES ($1, $2, $3, $4, 'tmall', 'paid', 1, 10, 0, 10, 1, now())`, o.tenant, oid, fmt.Sprint("NO", oid), o.shop); err != nil {
				t.Fatal(err)
			}
		}
	}
	emb := decode[map[string]string](t, me.want(t, "POST", "/api/v1/nl2sql/embed-url", fmt.Sprintf(`{"shop_ids": [%d]}`, me.shop), 0, ""))
	u, _ := url.Parse(emb["embed_url"])
	base := u.Scheme + "://" + u.Host + "/v1/chats/"
	code, ans := providerCall(t, "POST", base+emb["chat_id"]+"/messages", emb["token"], `{"question": "how many orders by shop"}`)
	content, _ := ans["content"].(map[string]any)
	rows, _ := content["rows"].([]any)
	if code != 200 || len(rows) != 1 || fmt.Sprint(rows[0]) != fmt.Sprintf("[%d 2]", me.shop) {
		t.Fatalf("answer: HTTP %d %v", code, ans)
	}
	if sql, _ := content["sql"].(string); !strings.Contains(sql, "i_tenant_id") {
		t.Fatalf("the SQL run carries no tenant filter: %s", sql)
	}
	detail := decode[map[string]any](t, me.want(t, "GET", "/api/v1/nl2sql/chat/"+emb["chat_id"], "", 0, ""))
	if detail["message_count"] != float64(1) || detail["title"] != "how many orders by shop" {
		t.Fatalf("chat after one question: %v", detail)
	}
	// A chat the token's holder creates plays the token's role and variables, whatever it asks.
	code, ch := providerCall(t, "POST", base[:len(base)-1], emb["token"], fmt.Sprintf(`{"bot_id": %q, "role_variables": {"shop_ids": "(%d, %d)", "tenant_id": "%d"}}`,
		decode[chatData](t, me.want(t, "GET", "/api/v1/nl2sql/chat/"+emb["chat_id"], "", 0, "")).BotID, hidden, other.shop, other.Tenant))
	if code != 200 {
		t.Fatalf("chat by token: %d %v", code, ch)
	}
	code, ans = providerCall(t, "POST", base+fmt.Sprint(ch["id"])+"/messages", emb["token"], `{"question": "orders by shop"}`)
	content, _ = ans["content"].(map[string]any)
	if rows, _ := content["rows"].([]any); code != 200 || len(rows) != 1 || fmt.Sprint(rows[0]) != fmt.Sprintf("[%d 2]", me.shop) {
		t.Fatalf("a chat asking for other shops and tenants: HTTP %d %v", code, ans)
	}
	// The token cannot administer the provider, nor read another token's chats.
	if code, _ := providerCall(t, "GET", u.Scheme+"://"+u.Host+"/v1/datasources", emb["token"], ""); code != 403 {
		t.Fatalf("token listing datasources: %d", code)
	}
	otherEmb := decode[map[string]string](t, other.want(t, "POST", "/api/v1/nl2sql/embed-url", fmt.Sprintf(`{"shop_ids": [%d]}`, other.shop), 0, ""))
	if code, _ := providerCall(t, "POST", base+otherEmb["chat_id"]+"/messages", emb["token"], `{"question": "orders"}`); code != 404 {
		t.Fatalf("a token asking in another tenant's chat: %d", code)
	}
	// Hostile questions do not reach SQL: the offline writer only writes its own SELECTs.
	if code, ans := providerCall(t, "POST", base+emb["chat_id"]+"/messages", emb["token"], `{"question": "'; DROP TABLE x; SELECT pg_sleep(10); --"}`); code != 422 {
		t.Fatalf("hostile question: %d %v", code, ans)
	}
}

// A policy's table pattern is enforced: a chat whose role only allows basic_goods cannot
// read basic_orders (403), whatever it asks; the role's tenant and shop filters still hold.
func TestBuiltinProviderEnforcesTablePattern(t *testing.T) {
	s := stack.Start(t)
	me := demo(t, s)
	ops := addTenant(t, s, "ops")
	if _, err := s.DB.Pool.Exec(context.Background(), "UPDATE tenant.tenants SET is_operator = true WHERE id = $1", ops.Tenant); err != nil {
		t.Fatal(err)
	}
	setup := decode[map[string]any](t, ops.want(t, "POST", "/api/v1/nl2sql/setup-datasource", `{}`, 0, ""))
	ds, _ := setup["datasource_id"].(string)
	pol := decode[map[string]any](t, me.want(t, "POST", "/api/v1/nl2sql/policy", fmt.Sprintf(`{"datasource_id": %q, "shop_ids": [%d], "table_pattern": "^basic_goods$"}`, ds, me.shop), 0, ""))
	tok := decode[tokenData](t, me.want(t, "POST", "/api/v1/nl2sql/token", fmt.Sprintf(`{"shop_ids": [%d], "role_id": %q}`, me.shop, pol["role_id"]), 0, ""))
	ch := decode[chatData](t, me.want(t, "POST", "/api/v1/nl2sql/chat", fmt.Sprintf(`{"token": %q}`, tok.Token), 0, ""))
	emb := decode[map[string]string](t, me.want(t, "POST", "/api/v1/nl2sql/embed-url", fmt.Sprintf(`{"shop_ids": [%d]}`, me.shop), 0, ""))
	u, _ := url.Parse(emb["embed_url"])
	code, ans := providerCall(t, "POST", u.Scheme+"://"+u.Host+"/v1/chats/"+ch.ChatID+"/messages", tok.Token, `{"question": "how many orders by shop"}`)
	if code != 403 {
		t.Fatalf("a role allowing basic_goods only, asking about orders: HTTP %d %v (want 403)", code, ans)
	}
}

// builtinChat is a chat of the built-in provider playing the role of a policy made through
// the gateway (body, its %q the datasource): the chat's messages endpoint at the provider,
// the token, the policy's role and the datasource.
func builtinChat(t *testing.T, s *stack.Stack, me *tenant, body string) (messages, token, role, ds string) {
	t.Helper()
	ops := addTenant(t, s, "ops")
	if _, err := s.DB.Pool.Exec(context.Background(), "UPDATE tenant.tenants SET is_operator = true WHERE id = $1", ops.Tenant); err != nil {
		t.Fatal(err)
	}
	setup := decode[map[string]any](t, ops.want(t, "POST", "/api/v1/nl2sql/setup-datasource", `{}`, 0, ""))
	ds, _ = setup["datasource_id"].(string)
	pol := decode[map[string]any](t, me.want(t, "POST", "/api/v1/nl2sql/policy", fmt.Sprintf(body, ds), 0, ""))
	tok := decode[tokenData](t, me.want(t, "POST", "/api/v1/nl2sql/token", fmt.Sprintf(`{"shop_ids": [%d], "role_id": %q}`, me.shop, pol["role_id"]), 0, ""))
	ch := decode[chatData](t, me.want(t, "POST", "/api/v1/nl2sql/chat", fmt.Sprintf(`{"token": %q}`, tok.Token), 0, ""))
	emb := decode[map[string]string](t, me.want(t, "POST", "/api/v1/nl2sql/embed-url", fmt.Sprintf(`{"shop_ids": [%d]}`, me.shop), 0, ""))
	u, _ := url.Parse(emb["embed_url"])
	return u.Scheme + "://" + u.Host + "/v1/chats/" + ch.ChatID + "/messages", tok.Token, fmt.Sprint(pol["role_id"]), ds
}

// The tenant-defined diy_ tables of the analytical store (here diy_crx_metrics, the values
// the extension collects) are in the built-in provider's metadata and sandbox: a policy
// `^diy_` lets a chat read them, within its tenant and shops.
func TestBuiltinProviderReadsDiyTables(t *testing.T) {
	s := stack.Start(t)
	me, other := demo(t, s), addTenant(t, s, "rival")
	hidden := me.addShop(t, "demo-hidden-shop")
	ctx := context.Background()
	for _, v := range []struct {
		tenant, shop int64
		key          string
		value        float64
	}{{me.Tenant, me.shop, "visitors", 10}, {me.Tenant, me.shop, "visitors", 5}, {me.Tenant, hidden, "visitors", 1000}, {other.Tenant, other.shop, "visitors", 7000}} {
		if _, err := s.DB.Pool.Exec(ctx, `INSERT INTO analytics.diy_crx_metrics (i_tenant_id, stat_time, shop_id, platform, metric_key, value, dims, dims_key, collected_at, page_url, user_id, batch_id, received_at)
			VALUES ($1, now() - random() * interval '1 hour', $2, 'tmall', $3, $4, '{}', md5(random()::text), now(), 'http://127.0.0.1:8081/backoffice', 1, 'b', now())`, v.tenant, v.shop, v.key, v.value); err != nil {
			t.Fatal(err)
		}
	}
	msgs, token, _, _ := builtinChat(t, s, me, fmt.Sprintf(`{"datasource_id": %%q, "shop_ids": [%d], "table_pattern": "^diy_"}`, me.shop))
	code, ans := providerCall(t, "POST", msgs, token, `{"question": "collected values by metric"}`)
	content, _ := ans["content"].(map[string]any)
	rows, _ := content["rows"].([]any)
	if code != 200 || len(rows) != 1 || fmt.Sprint(rows[0]) != "[visitors 15]" {
		t.Fatalf("a role allowing ^diy_, asking about collected values: HTTP %d %v (want one row, visitors 15)", code, ans)
	}
	// The same role reads no basic_ table.
	if code, ans := providerCall(t, "POST", msgs, token, `{"question": "how many orders by shop"}`); code != 403 {
		t.Fatalf("a role allowing ^diy_ only, asking about orders: HTTP %d %v (want 403)", code, ans)
	}
}

// Several policies on one role, through the gateway (NL2SQL.md, "Policies mean what they
// say"): any allow policy grants its tables, several allow policies on one table grant the
// union of their rows, a deny policy wins over every allow, and one policy's filters hold
// together (its tenant filter AND its shop filter).
func TestBuiltinProviderCombinesPolicies(t *testing.T) {
	s := stack.Start(t)
	me, other := demo(t, s), addTenant(t, s, "rival")
	second, hidden := me.addShop(t, "demo-second-shop"), me.addShop(t, "demo-hidden-shop")
	ctx := context.Background()
	oid := int64(800000)
	order := func(tenant, shop int64, n int) {
		for i := 0; i < n; i++ {
			oid++
			if _, err := s.DB.Pool.Exec(ctx, `INSERT INTO analytics.basic_orders (i_tenant_id, order_id, order_no, shop_id, platform, status,
				buyer_id, total_amount, discount_amount, paid_amount, item_count, ordered_at)
				VALUES ($1, $2, $3, $4, 'tmall', 'paid', 1, 10, 0, 10, 1, now())`, tenant, oid, fmt.Sprint("NO", oid), shop); err != nil {
				t.Fatal(err)
			}
		}
	}
	order(me.Tenant, me.shop, 2)
	order(me.Tenant, second, 3)
	order(me.Tenant, hidden, 5)
	// Rows of another tenant carrying my shop's id: only the tenant filter, ANDed with the
	// shop filter of the same policy, keeps them out.
	order(other.Tenant, me.shop, 7)

	// Policy 1: orders of my first shop (a new role).
	msgs, token, roleID, ds := builtinChat(t, s, me, fmt.Sprintf(`{"datasource_id": %%q, "shop_ids": [%d], "table_pattern": "^basic_orders$"}`, me.shop))
	ask := func(question string) (int, []string) {
		t.Helper()
		code, ans := providerCall(t, "POST", msgs, token, fmt.Sprintf(`{"question": %q}`, question))
		content, _ := ans["content"].(map[string]any)
		rows, _ := content["rows"].([]any)
		var out []string
		for _, r := range rows {
			out = append(out, fmt.Sprint(r))
		}
		if code != 200 {
			out = append(out, fmt.Sprint(ans["message"]))
		}
		return code, out
	}
	wantRows := func(what, question string, want ...string) {
		t.Helper()
		code, rows := ask(question)
		if code != 200 || strings.Join(rows, ",") != strings.Join(want, ",") {
			t.Fatalf("%s: HTTP %d %v, want %v", what, code, rows, want)
		}
	}
	byShop := "how many orders by shop"
	wantRows("one policy: its shop, its tenant (tenant AND shop)", byShop, fmt.Sprintf("[%d 2]", me.shop))

	// Policy 2 on the same role: orders of the second shop. Any allow grants: the union.
	me.want(t, "POST", "/api/v1/nl2sql/policy", fmt.Sprintf(`{"datasource_id": %q, "shop_ids": [%d], "table_pattern": "^basic_orders$", "role_id": %q}`,
		ds, second, roleID), 0, "")
	wantRows("two allow policies on one table: the union of their rows", byShop, fmt.Sprintf("[%d 3]", second), fmt.Sprintf("[%d 2]", me.shop))

	// Goods are no policy's table yet: refused; policy 3 grants them.
	if code, rows := ask("how many goods"); code != 403 {
		t.Fatalf("goods before a policy grants them: HTTP %d %v", code, rows)
	}
	me.want(t, "POST", "/api/v1/nl2sql/policy", fmt.Sprintf(`{"datasource_id": %q, "shop_ids": [%d], "table_pattern": "^basic_goods$", "role_id": %q}`,
		ds, me.shop, roleID), 0, "")
	if code, rows := ask("how many goods"); code != 200 {
		t.Fatalf("goods once an allow policy grants them: HTTP %d %v", code, rows)
	}

	// A deny policy on orders (made at the provider: the gateway makes allow policies only)
	// wins over both allow policies; goods stay readable.
	base := strings.Split(msgs, "/v1/")[0]
	key := nl2sql.Config{JWTSecret: stack.TestSecret}.ProviderKey()
	code, deny := providerCall(t, "POST", base+"/v1/policies", key, fmt.Sprintf(`{"name": "no orders", "permission": "deny",
		"dataset_config": {"datasource_ids": [%q], "regex_patterns": {"tables_regex_pattern": "^basic_orders$"}}}`, ds))
	if code != 200 {
		t.Fatalf("deny policy: %d %v", code, deny)
	}
	code, role := providerCall(t, "GET", base+"/v1/roles/"+roleID, key, "")
	ids, _ := role["policy_ids"].([]any)
	if code != 200 || len(ids) != 3 {
		t.Fatalf("role: %d %v", code, role)
	}
	idsJSON, _ := json.Marshal(append(ids, deny["id"]))
	if code, ans := providerCall(t, "PATCH", base+"/v1/roles/"+roleID, key, fmt.Sprintf(`{"policy_ids": %s}`, idsJSON)); code != 200 {
		t.Fatalf("adding the deny policy: %d %v", code, ans)
	}
	if code, rows := ask(byShop); code != 403 || !strings.Contains(strings.Join(rows, ""), "basic_orders") {
		t.Fatalf("orders under a deny policy: HTTP %d %v (want 403 naming basic_orders)", code, rows)
	}
	if code, rows := ask("how many goods"); code != 200 {
		t.Fatalf("goods beside the deny policy: HTTP %d %v", code, rows)
	}
}

//go:build platform

package tenant

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	systemv1 "github.com/shopmind/shopmind/gen/go/shopmind/system/v1"
	tenantv1 "github.com/shopmind/shopmind/gen/go/shopmind/tenant/v1"
	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/testutil"
	"github.com/shopmind/shopmind/internal/testutil/stack"
)

type envelope = testutil.Envelope

func call(t *testing.T, s *stack.Stack, method, path, body, token string) (int, envelope) {
	t.Helper()
	return (&stack.User{Stack: s, Token: token}).Call(t, method, path, body)
}

func expect(t *testing.T, s *stack.Stack, method, path, body, token string, code int, contains string) envelope {
	t.Helper()
	return (&stack.User{Stack: s, Token: token}).Expect(t, method, path, body, code, contains)
}

func login(tenant, user, password string) string {
	b, _ := json.Marshal(map[string]string{"tenant_code": tenant, "username": user, "password": password})
	return string(b)
}

// addTenant creates a second tenant with an administrator and a role, straight in the database.
func addTenant(t *testing.T, s *stack.Stack, code string) (adminPassword string, roleID int64) {
	t.Helper()
	ctx := context.Background()
	hash, _ := bcrypt.GenerateFromPassword([]byte("pw-"+code), 4)
	var tid, uid int64
	if err := s.DB.Pool.QueryRow(ctx, "INSERT INTO tenant.tenants (code, name) VALUES ($1, $1) RETURNING id", code).Scan(&tid); err != nil {
		t.Fatal(err)
	}
	if err := s.DB.Pool.QueryRow(ctx, "INSERT INTO tenant.users (tenant_id, username, password_hash, is_admin) VALUES ($1, 'admin', $2, true) RETURNING id", tid, string(hash)).Scan(&uid); err != nil {
		t.Fatal(err)
	}
	if err := s.DB.Pool.QueryRow(ctx, "INSERT INTO tenant.roles (tenant_id, code, name) VALUES ($1, 'own', 'Own role') RETURNING id", tid).Scan(&roleID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB.Pool.Exec(ctx, "INSERT INTO tenant.orgs (tenant_id, code, name) VALUES ($1, 'secret-org', 'Secret org')", tid); err != nil {
		t.Fatal(err)
	}
	return "pw-" + code, roleID
}

func tokens(t *testing.T, env envelope) (access, refresh string) {
	t.Helper()
	var d struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
		TokenType    string `json:"token_type"`
		ExpiresIn    int    `json:"expires_in"`
	}
	if err := json.Unmarshal(env.Data, &d); err != nil || d.AccessToken == "" || d.RefreshToken == "" || d.TokenType != "Bearer" || d.ExpiresIn <= 0 {
		t.Fatalf("no token pair in %s", env.Data)
	}
	return d.AccessToken, d.RefreshToken
}

// The session a single-page app goes through: login, info, menus, init, favorites.
func TestLoginInfoMenusInitFavorites(t *testing.T) {
	s := stack.Start(t)
	env := expect(t, s, "POST", "/tenant/api/v1/tenant/auth/login", login("demo", "admin", stack.AdminPassword), "", 0, `"refresh_expires_in"`)
	access, _ := tokens(t, env)
	expect(t, s, "GET", "/tenant/api/v1/tenant/auth/info", "", access, 0, `"username":"admin"`)
	expect(t, s, "GET", "/api/v1/auth/userinfo", "", access, 0, `"is_admin":true`)
	menus := expect(t, s, "GET", "/tenant/api/v1/tenant/auth/menus", "", access, 0, `"name":"roles"`)
	if !strings.Contains(string(menus.Data), `"children"`) {
		t.Fatalf("menus are not a tree: %s", menus.Data)
	}
	initEnv := expect(t, s, "GET", "/tenant/api/v1/tenant/auth/init", "", access, 0, `"tenant:role:create"`)
	for _, k := range []string{`"user"`, `"menus"`, `"permissions"`, `"favorites"`} {
		if !strings.Contains(string(initEnv.Data), k) {
			t.Fatalf("init lacks %s: %s", k, initEnv.Data)
		}
	}
	favs := `{"favorites":[{"type":"menu","target_key":"metrics","title":"Metrics","path":"/analysis/metrics","sort_order":1},{"type":"metric","target_key":"gmv","title":"GMV","sort_order":0}]}`
	expect(t, s, "POST", "/tenant/api/v1/tenant/auth/favorite", favs, access, 0, `"target_key":"gmv"`)
	got := expect(t, s, "GET", "/tenant/api/v1/tenant/auth/favorite", "", access, 0, `"target_key":"metrics"`)
	if strings.Index(string(got.Data), "gmv") > strings.Index(string(got.Data), "metrics") {
		t.Fatalf("favorites not in sort order: %s", got.Data)
	}
	// Replaces, not appends; bad lists are refused whole.
	expect(t, s, "POST", "/tenant/api/v1/tenant/auth/favorite", `{"favorites":[{"type":"goods","target_key":"g1","title":"G1"}]}`, access, 0, `g1`)
	got = expect(t, s, "GET", "/tenant/api/v1/tenant/auth/favorite", "", access, 0, `g1`)
	if strings.Contains(string(got.Data), "gmv") {
		t.Fatalf("favorites not replaced: %s", got.Data)
	}
	many := make([]string, 51)
	for i := range many {
		many[i] = fmt.Sprintf(`{"type":"menu","target_key":"k%d","title":"t"}`, i)
	}
	expect(t, s, "POST", "/tenant/api/v1/tenant/auth/favorite", `{"favorites":[`+strings.Join(many, ",")+`]}`, access, 400, "favorites")
	expect(t, s, "POST", "/tenant/api/v1/tenant/auth/favorite", `{"favorites":[{"type":"car","target_key":"x","title":"x"}]}`, access, 400, "favorites[0].type")
	expect(t, s, "GET", "/tenant/api/v1/tenant/auth/favorite", "", access, 0, `g1`)

	// The non-administrator sees a smaller menu tree and fewer permissions.
	env = expect(t, s, "POST", "/api/v1/auth/login", login("demo", "analyst", "analyst123"), "", 0, "access_token")
	analyst, _ := tokens(t, env)
	am := expect(t, s, "GET", "/api/v1/auth/menus", "", analyst, 0, `"metrics"`)
	if strings.Contains(string(am.Data), `"role-create"`) {
		t.Fatalf("analyst sees administration buttons: %s", am.Data)
	}
	info := expect(t, s, "GET", "/tenant/api/v1/tenant/auth/info", "", analyst, 0, `"is_admin":false`)
	if strings.Contains(string(info.Data), "tenant:role:create") {
		t.Fatalf("analyst holds role creation: %s", info.Data)
	}
	expect(t, s, "POST", "/tenant/api/v1/tenant/roles", `{"code":"x1","name":"X"}`, analyst, 403, "missing permission tenant:role:create")
}

// Refresh rotates; the first refresh token then fails; reusing it revokes the second pair.
func TestRefreshRotationAndReuse(t *testing.T) {
	s := stack.Start(t)
	a1, r1 := tokens(t, expect(t, s, "POST", "/tenant/api/v1/tenant/auth/login", login("demo", "admin", stack.AdminPassword), "", 0, ""))
	a2, r2 := tokens(t, expect(t, s, "POST", "/tenant/api/v1/tenant/auth/refresh", `{"refresh_token":"`+r1+`"}`, "", 0, ""))
	a3, r3 := tokens(t, expect(t, s, "POST", "/api/v1/auth/refresh", `{"refresh_token":"`+r2+`"}`, "", 0, ""))
	if a2 == a1 || r2 == r1 || a3 == a2 || r3 == r2 {
		t.Fatal("refresh did not rotate")
	}
	expect(t, s, "GET", "/tenant/api/v1/tenant/auth/info", "", a3, 0, "admin")
	// r1 was already used: reuse detection revokes the whole family.
	expect(t, s, "POST", "/tenant/api/v1/tenant/auth/refresh", `{"refresh_token":"`+r1+`"}`, "", 401, "reuse detected")
	expect(t, s, "POST", "/tenant/api/v1/tenant/auth/refresh", `{"refresh_token":"`+r3+`"}`, "", 401, "revoked")
	expect(t, s, "GET", "/tenant/api/v1/tenant/auth/info", "", a3, 401, "revoked")
	// An access token is not a refresh token.
	_, r4 := tokens(t, expect(t, s, "POST", "/tenant/api/v1/tenant/auth/login", login("demo", "admin", stack.AdminPassword), "", 0, ""))
	a4, _ := tokens(t, expect(t, s, "POST", "/tenant/api/v1/tenant/auth/login", login("demo", "admin", stack.AdminPassword), "", 0, ""))
	expect(t, s, "POST", "/tenant/api/v1/tenant/auth/refresh", `{"refresh_token":"`+a4+`"}`, "", 401, "invalid or expired refresh token")
	expect(t, s, "POST", "/tenant/api/v1/tenant/auth/refresh", `{"refresh_token":""}`, "", 400, "refresh_token")
	expect(t, s, "POST", "/tenant/api/v1/tenant/auth/refresh", `{"refresh_token":"`+r4+`"}`, "", 0, "access_token")
}

// Logout revokes the token everywhere, and a restarted process still knows it.
func TestLogoutSurvivesRestart(t *testing.T) {
	s := stack.Start(t)
	access, refresh := tokens(t, expect(t, s, "POST", "/tenant/api/v1/tenant/auth/login", login("demo", "admin", stack.AdminPassword), "", 0, ""))
	other, _ := tokens(t, expect(t, s, "POST", "/tenant/api/v1/tenant/auth/login", login("demo", "admin", stack.AdminPassword), "", 0, ""))
	expect(t, s, "POST", "/tenant/api/v1/tenant/auth/logout", `{}`, access, 0, "")
	expect(t, s, "GET", "/tenant/api/v1/tenant/auth/info", "", access, 401, "revoked")
	expect(t, s, "GET", "/tenant/api/v1/tenant/users", "", access, 401, "revoked")
	expect(t, s, "POST", "/tenant/api/v1/tenant/auth/refresh", `{"refresh_token":"`+refresh+`"}`, "", 401, "revoked")
	// Another login of the same user is not affected.
	expect(t, s, "GET", "/tenant/api/v1/tenant/auth/info", "", other, 0, "admin")
	// Over gRPC directly too.
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+access)
	if _, err := tenantv1.NewTenantAuthServiceClient(s.Conn).GetInfo(ctx, &tenantv1.GetInfoRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("gRPC after logout: %v", err)
	}
	s.Stop()
	s2 := stack.StartOn(t, s.DB)
	expect(t, s2, "GET", "/tenant/api/v1/tenant/auth/info", "", access, 401, "revoked")
	expect(t, s2, "GET", "/tenant/api/v1/tenant/auth/info", "", other, 0, "admin")
}

// A second process (replica) learns of a logout through NOTIFY without a restart.
func TestLogoutReachesOtherReplicas(t *testing.T) {
	a := stack.Start(t)
	b := stack.StartOn(t, a.DB)
	access, _ := tokens(t, expect(t, a, "POST", "/tenant/api/v1/tenant/auth/login", login("demo", "admin", stack.AdminPassword), "", 0, ""))
	expect(t, b, "GET", "/tenant/api/v1/tenant/auth/info", "", access, 0, "admin")
	expect(t, a, "POST", "/tenant/api/v1/tenant/auth/logout", `{}`, access, 0, "")
	deadline := time.Now().Add(5 * time.Second)
	for {
		status, env := call(t, b, "GET", "/tenant/api/v1/tenant/auth/info", "", access)
		if status == 401 && env.Code == 401 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica still accepts a logged-out token: %d %+v", status, env)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestLoginFailures(t *testing.T) {
	s := stack.Start(t)
	ctx := context.Background()
	// One message for wrong tenant, user or password.
	for _, body := range []string{login("nope", "admin", "x"), login("demo", "nobody", "x"), login("demo", "admin", "wrong")} {
		expect(t, s, "POST", "/tenant/api/v1/tenant/auth/login", body, "", 401, "invalid tenant, username or password")
	}
	expect(t, s, "POST", "/tenant/api/v1/tenant/auth/login", `{"tenant_code":"demo","username":"","password":"x"}`, "", 400, "username")
	expect(t, s, "POST", "/api/v1/auth/login", `{"username":"admin","password":"x"}`, "", 400, "tenant_code is required")
	// Disabled user and tenant: 403.
	if _, err := s.DB.Pool.Exec(ctx, "UPDATE tenant.users SET status = 'disabled' WHERE username = 'analyst'"); err != nil {
		t.Fatal(err)
	}
	expect(t, s, "POST", "/tenant/api/v1/tenant/auth/login", login("demo", "analyst", "analyst123"), "", 403, "disabled")
	pw, _ := addTenant(t, s, "acme")
	if _, err := s.DB.Pool.Exec(ctx, "UPDATE tenant.tenants SET status = 'disabled' WHERE code = 'acme'"); err != nil {
		t.Fatal(err)
	}
	expect(t, s, "POST", "/tenant/api/v1/tenant/auth/login", login("acme", "admin", pw), "", 403, "disabled")
}

// After 10 failures in 15 minutes the user is locked (429 with the time left).
func TestBruteForceLock(t *testing.T) {
	s := stack.Start(t)
	for i := 0; i < 9; i++ {
		expect(t, s, "POST", "/tenant/api/v1/tenant/auth/login", login("demo", "admin", "wrong"), "", 401, "")
	}
	expect(t, s, "POST", "/tenant/api/v1/tenant/auth/login", login("demo", "admin", "wrong"), "", 429, "try again in")
	r := s.Do(t, "POST", "/tenant/api/v1/tenant/auth/login", login("demo", "admin", stack.AdminPassword))
	if r.Status != 429 || r.Header.Get("Retry-After") == "" {
		t.Fatalf("locked user logged in: %d %s", r.Status, r.Body)
	}
	// Other users are not affected.
	expect(t, s, "POST", "/tenant/api/v1/tenant/auth/login", login("demo", "analyst", "analyst123"), "", 0, "access_token")
}

// putCaptcha stores a captcha with a known answer, as GetCaptcha would.
func putCaptcha(t *testing.T, s *stack.Stack, id, answer string, ttl time.Duration) {
	t.Helper()
	sum := sha256.Sum256([]byte(id + ":" + answer))
	if _, err := s.DB.Pool.Exec(context.Background(), "INSERT INTO tenant.captchas (id, answer_hash, expires_at) VALUES ($1, $2, $3)",
		id, sum[:], time.Now().Add(ttl)); err != nil {
		t.Fatal(err)
	}
}

func withCaptcha(tenant, user, password, id, code string) string {
	b, _ := json.Marshal(map[string]string{"tenant_code": tenant, "username": user, "password": password, "captcha_id": id, "captcha_code": code})
	return string(b)
}

func TestCaptchaOnFailure(t *testing.T) {
	s := stack.Start(t, func(c *app.Config) { c.CaptchaMode = "on-failure" })
	// The captcha endpoint is public and gives a PNG data URI; answers are stored server-side.
	env := expect(t, s, "GET", "/tenant/api/v1/tenant/auth/captcha", "", "", 0, `"image":"data:image/png;base64,`)
	var c struct {
		CaptchaID string `json:"captcha_id"`
		ExpiresIn int    `json:"expires_in"`
	}
	_ = json.Unmarshal(env.Data, &c)
	if c.CaptchaID == "" || c.ExpiresIn != 300 {
		t.Fatalf("captcha %s", env.Data)
	}
	// No captcha needed at first.
	expect(t, s, "POST", "/tenant/api/v1/tenant/auth/login", login("demo", "admin", stack.AdminPassword), "", 0, "access_token")
	for i := 0; i < 3; i++ {
		expect(t, s, "POST", "/tenant/api/v1/tenant/auth/login", login("demo", "admin", "wrong"), "", 401, "")
	}
	expect(t, s, "POST", "/tenant/api/v1/tenant/auth/login", login("demo", "admin", stack.AdminPassword), "", 400, "captcha required")
	putCaptcha(t, s, "cap-1", "12345", time.Minute)
	expect(t, s, "POST", "/tenant/api/v1/tenant/auth/login", withCaptcha("demo", "admin", stack.AdminPassword, "cap-1", "99999"), "", 400, "wrong captcha")
	// Used once, right or wrong.
	expect(t, s, "POST", "/tenant/api/v1/tenant/auth/login", withCaptcha("demo", "admin", stack.AdminPassword, "cap-1", "12345"), "", 410, "captcha expired or already used")
	putCaptcha(t, s, "cap-old", "12345", -time.Second)
	expect(t, s, "POST", "/tenant/api/v1/tenant/auth/login", withCaptcha("demo", "admin", stack.AdminPassword, "cap-old", "12345"), "", 410, "expired")
	putCaptcha(t, s, "cap-2", "54321", time.Minute)
	expect(t, s, "POST", "/tenant/api/v1/tenant/auth/login", withCaptcha("demo", "admin", stack.AdminPassword, "cap-2", "54321"), "", 0, "access_token")
	// Success cleared the failures: no captcha needed again.
	expect(t, s, "POST", "/api/v1/auth/login", login("demo", "admin", stack.AdminPassword), "", 0, "access_token")
	expect(t, s, "POST", "/tenant/api/v1/tenant/auth/login", `{"tenant_code":"demo","username":"admin","password":"x","captcha_id":"only-id"}`, "", 400, "captcha_id and captcha_code must be given together")
}

func TestCaptchaAlways(t *testing.T) {
	s := stack.Start(t, func(c *app.Config) { c.CaptchaMode = "always" })
	expect(t, s, "POST", "/tenant/api/v1/tenant/auth/login", login("demo", "admin", stack.AdminPassword), "", 400, "captcha required")
	putCaptcha(t, s, "cap-a", "11111", time.Minute)
	expect(t, s, "POST", "/tenant/api/v1/tenant/auth/login", withCaptcha("demo", "admin", stack.AdminPassword, "cap-a", "11111"), "", 0, "access_token")
	// The alternate path needs one only on failure.
	expect(t, s, "POST", "/api/v1/auth/login", login("demo", "admin", stack.AdminPassword), "", 0, "access_token")
}

func TestRoles(t *testing.T) {
	s := stack.Start(t)
	admin := s.Admin(t).Access
	env := expect(t, s, "POST", "/tenant/api/v1/tenant/roles", `{"code":"ops","name":"Operations","permission_codes":["basic:goods:list","tenant:user:list"]}`, admin, 0, `"code":"ops"`)
	var created struct {
		Role struct {
			ID string `json:"id"`
		} `json:"role"`
	}
	_ = json.Unmarshal(env.Data, &created)
	id := created.Role.ID
	expect(t, s, "POST", "/tenant/api/v1/tenant/roles", `{"code":"ops","name":"Again"}`, admin, 409, "already exists")
	expect(t, s, "POST", "/tenant/api/v1/tenant/roles", `{"code":"x2","name":"X","permission_codes":["no:such:perm"]}`, admin, 400, `unknown permission code "no:such:perm"`)
	expect(t, s, "POST", "/tenant/api/v1/tenant/roles", `{"code":"x3","name":"X","menu_ids":[999999]}`, admin, 400, "menu_ids")
	expect(t, s, "POST", "/tenant/api/v1/tenant/roles", `{"code":"Bad Code","name":"X"}`, admin, 400, "code")
	// Only masked fields change.
	upd := expect(t, s, "PUT", "/tenant/api/v1/tenant/roles/"+id, `{"name":"Ops team","description":"ignored","update_mask":"name"}`, admin, 0, `"name":"Ops team"`)
	if strings.Contains(string(upd.Data), "ignored") || !strings.Contains(string(upd.Data), "basic:goods:list") {
		t.Fatalf("update touched unmasked fields: %s", upd.Data)
	}
	expect(t, s, "PUT", "/tenant/api/v1/tenant/roles/"+id, `{"permission_codes":["basic:goods:list"],"updateMask":"permissionCodes"}`, admin, 0, `"permission_codes":["basic:goods:list"]`)
	expect(t, s, "PUT", "/tenant/api/v1/tenant/roles/999999", `{"name":"x","update_mask":"name"}`, admin, 404, "not found")
	expect(t, s, "PUT", "/tenant/api/v1/tenant/roles/"+id, `{"name":"n","update_mask":"code"}`, admin, 400, "update_mask")
	expect(t, s, "PUT", "/tenant/api/v1/tenant/roles/"+id, `{"code":"new","update_mask":"name"}`, admin, 400, `unknown field "code"`)
	// A role still assigned: 422 unless forced.
	if _, err := s.DB.Pool.Exec(context.Background(), "INSERT INTO tenant.user_roles (user_id, role_id) SELECT id, $1 FROM tenant.users WHERE username = 'analyst'", id); err != nil {
		t.Fatal(err)
	}
	expect(t, s, "DELETE", "/tenant/api/v1/tenant/roles/"+id, "", admin, 422, "assigned to 1 user")
	expect(t, s, "DELETE", "/tenant/api/v1/tenant/roles/"+id+"?force=true", "", admin, 0, `"deleted":true`)
	expect(t, s, "DELETE", "/tenant/api/v1/tenant/roles/"+id, "", admin, 404, "not found")
}

func TestUsersAndOrgs(t *testing.T) {
	s := stack.Start(t)
	admin := s.Admin(t).Access
	env := expect(t, s, "GET", "/tenant/api/v1/tenant/users?page=1&limit=1", "", admin, 0, `"total":"2"`)
	if !strings.Contains(string(env.Data), `"page_size":1`) || strings.Count(string(env.Data), `"username"`) != 1 {
		t.Fatalf("page/limit ignored: %s", env.Data)
	}
	expect(t, s, "GET", "/tenant/api/v1/tenant/users?page_num=2&page_size=1", "", admin, 0, `"page_num":2`)
	expect(t, s, "GET", "/tenant/api/v1/tenant/users?username=ANAL", "", admin, 0, `"username":"analyst"`)
	expect(t, s, "GET", "/tenant/api/v1/tenant/users?username=%25", "", admin, 0, `"total":"0"`)
	expect(t, s, "GET", "/tenant/api/v1/tenant/users?status=disabled", "", admin, 0, `"total":"0"`)
	expect(t, s, "GET", "/tenant/api/v1/tenant/users?page_size=101", "", admin, 400, "page_size")
	expect(t, s, "GET", "/tenant/api/v1/tenant/users?page_num=0", "", admin, 400, "page_num")
	expect(t, s, "GET", "/tenant/api/v1/tenant/users?limit=0", "", admin, 400, "limit")
	expect(t, s, "GET", "/tenant/api/v1/tenant/users?status=gone", "", admin, 400, "status")
	orgs := expect(t, s, "GET", "/tenant/api/v1/tenant/orgs", "", admin, 0, `"name":"Headquarters"`)
	if !strings.Contains(string(orgs.Data), `"children":[{`) {
		t.Fatalf("orgs are not a tree: %s", orgs.Data)
	}
	filtered := expect(t, s, "GET", "/tenant/api/v1/tenant/orgs?name=analytics", "", admin, 0, `"name":"Analytics"`)
	if strings.Contains(string(filtered.Data), "Operations") || !strings.Contains(string(filtered.Data), "Headquarters") {
		t.Fatalf("name filter should keep the match and its ancestors: %s", filtered.Data)
	}
}

// A second tenant can neither see nor change the first tenant's users, orgs or roles.
func TestTenantIsolation(t *testing.T) {
	s := stack.Start(t)
	pw, acmeRole := addTenant(t, s, "acme")
	acme, _ := tokens(t, expect(t, s, "POST", "/tenant/api/v1/tenant/auth/login", login("acme", "admin", pw), "", 0, ""))
	demo := s.Admin(t).Access
	users := expect(t, s, "GET", "/tenant/api/v1/tenant/users", "", acme, 0, `"total":"1"`)
	if strings.Contains(string(users.Data), "analyst") {
		t.Fatalf("acme sees demo users: %s", users.Data)
	}
	orgs := expect(t, s, "GET", "/tenant/api/v1/tenant/orgs", "", acme, 0, "Secret org")
	if strings.Contains(string(orgs.Data), "Headquarters") {
		t.Fatalf("acme sees demo orgs: %s", orgs.Data)
	}
	if o := expect(t, s, "GET", "/tenant/api/v1/tenant/orgs", "", demo, 0, "Headquarters"); strings.Contains(string(o.Data), "Secret") {
		t.Fatalf("demo sees acme orgs: %s", o.Data)
	}
	rid := fmt.Sprint(acmeRole)
	expect(t, s, "PUT", "/tenant/api/v1/tenant/roles/"+rid, `{"name":"hijack","update_mask":"name"}`, demo, 404, "not found")
	expect(t, s, "DELETE", "/tenant/api/v1/tenant/roles/"+rid+"?force=true", "", demo, 404, "not found")
	// The same role code may exist in both tenants.
	expect(t, s, "POST", "/tenant/api/v1/tenant/roles", `{"code":"own","name":"Demo own"}`, demo, 0, `"code":"own"`)
	// Internal AuthService: no answers about another tenant's users.
	var demoUserID int64
	_ = s.DB.Pool.QueryRow(context.Background(), "SELECT u.id FROM tenant.users u JOIN tenant.tenants t ON t.id = u.tenant_id WHERE t.code = 'demo' AND username = 'analyst'").Scan(&demoUserID)
	var demoTenantID int64
	_ = s.DB.Pool.QueryRow(context.Background(), "SELECT id FROM tenant.tenants WHERE code = 'demo'").Scan(&demoTenantID)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+acme)
	_, err := tenantv1.NewAuthServiceClient(s.Conn).GetUserPermissions(ctx, &tenantv1.GetUserPermissionsRequest{UserId: demoUserID, TenantId: demoTenantID})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("cross-tenant permissions: %v", err)
	}
}

// Token attacks through the gateway, and forged identity metadata over gRPC.
func TestTokenAttacksThroughGateway(t *testing.T) {
	s := stack.Start(t)
	good := s.Admin(t).Access
	parts := strings.Split(good, ".")
	for name, tok := range map[string]string{
		"alg none":       "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0." + parts[1] + ".",
		"tampered":       parts[0] + "." + parts[1] + "x." + parts[2],
		"10,000 dots":    strings.Repeat(".", 10000),
		"another secret": mintWithSecret(t, "some-other-secret-0123456789abcdef0123"),
	} {
		expect(t, s, "GET", "/tenant/api/v1/tenant/auth/info", "", tok, 401, "")
		_ = name
	}
	expect(t, s, "GET", "/tenant/api/v1/tenant/auth/info", "", "", 401, "missing bearer token")
	// Forged identity metadata without a token: 401 on a direct gRPC call.
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-user-id", "1", "x-tenant-id", "1", "x-is-admin", "true", "x-username", "admin")
	if _, err := tenantv1.NewTenantServiceClient(s.Conn).ListUsers(ctx, &tenantv1.ListUsersRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("forged identity: %v", err)
	}
	// A dev token in another environment.
	ctx = metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+good, "x-env", "local")
	if _, err := tenantv1.NewTenantAuthServiceClient(s.Conn).GetInfo(ctx, &tenantv1.GetInfoRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("dev token in local: %v", err)
	}
}

func mintWithSecret(t *testing.T, secret string) string {
	t.Helper()
	s := stack.Start(t, func(c *app.Config) { c.JWTSecret = secret })
	return s.Admin(t).Access
}

// The internal AuthService and the system service's administrator-path check.
func TestInternalAuthServiceAndSystem(t *testing.T) {
	s := stack.Start(t)
	admin := s.Admin(t).Access
	analyst := s.Login(t, "demo", "analyst", "analyst123").Access
	auth := tenantv1.NewAuthServiceClient(s.Conn)
	as := func(tok string) context.Context {
		return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+tok)
	}
	v, err := auth.VerifyToken(context.Background(), &tenantv1.VerifyTokenRequest{Token: analyst})
	if err != nil || v.GetClaims().GetUsername() != "analyst" || v.GetClaims().GetAudience() != "dev" {
		t.Fatalf("verify: %v %v", v, err)
	}
	if _, err := auth.VerifyToken(context.Background(), &tenantv1.VerifyTokenRequest{Token: analyst, Audience: "test"}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("verify other audience: %v", err)
	}
	claims := v.GetClaims()
	p, err := auth.GetUserPermissions(as(analyst), &tenantv1.GetUserPermissionsRequest{UserId: claims.GetUserId(), TenantId: claims.GetTenantId()})
	if err != nil || p.GetIsAdmin() || len(p.GetPermissionCodes()) == 0 {
		t.Fatalf("permissions: %v %v", p, err)
	}
	adminClaims, _ := auth.VerifyToken(context.Background(), &tenantv1.VerifyTokenRequest{Token: admin})
	if _, err := auth.GetUserPermissions(as(analyst), &tenantv1.GetUserPermissionsRequest{UserId: adminClaims.GetClaims().GetUserId(), TenantId: claims.GetTenantId()}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("analyst inspecting admin: %v", err)
	}
	chk, err := auth.CheckPermission(as(admin), &tenantv1.CheckPermissionRequest{UserId: claims.GetUserId(), TenantId: claims.GetTenantId(), Method: "POST", Path: "/api/v1/tenant/roles"})
	if err != nil || chk.GetAllowed() {
		t.Fatalf("analyst may create roles? %v %v", chk, err)
	}
	chk, err = auth.CheckPermission(as(analyst), &tenantv1.CheckPermissionRequest{UserId: claims.GetUserId(), TenantId: claims.GetTenantId(), Method: "GET", Path: "/api/v1/tenant/users"})
	if err != nil || !chk.GetAllowed() {
		t.Fatalf("analyst may list users: %v %v", chk, err)
	}
	chk, _ = auth.CheckPermission(as(analyst), &tenantv1.CheckPermissionRequest{UserId: claims.GetUserId(), TenantId: claims.GetTenantId(), Method: "PUT", Path: "/api/v1/tenant/roles/5"})
	if chk.GetAllowed() {
		t.Fatal("analyst may update roles")
	}
	sys := systemv1.NewSystemServiceClient(s.Conn)
	r, err := sys.CheckAdminPermission(as(analyst), &systemv1.CheckAdminPermissionRequest{UserId: claims.GetUserId(), TenantId: claims.GetTenantId(), Method: "GET", Path: "/api/v1/tenant/users-m"})
	if err != nil || r.GetAllowed() {
		t.Fatalf("analyst on an admin path: %v %v", r, err)
	}
	r, err = sys.CheckAdminPermission(as(admin), &systemv1.CheckAdminPermissionRequest{UserId: adminClaims.GetClaims().GetUserId(), TenantId: claims.GetTenantId(), Method: "GET", Path: "/api/v1/tenant/users-m"})
	if err != nil || !r.GetAllowed() {
		t.Fatalf("admin on an admin path: %v %v", r, err)
	}
	// RefreshToken and InvalidateToken.
	pair := s.Login(t, "demo", "analyst", "analyst123")
	rt, err := auth.RefreshToken(context.Background(), &tenantv1.RefreshTokenRequest{RefreshToken: pair.Refresh})
	if err != nil || rt.GetAccessToken() == "" {
		t.Fatalf("refresh: %v", err)
	}
	inv, err := auth.InvalidateToken(as(analyst), &tenantv1.InvalidateTokenRequest{Token: rt.GetAccessToken()})
	if err != nil || !inv.GetInvalidated() {
		t.Fatalf("invalidate: %v %v", inv, err)
	}
	if _, err := auth.VerifyToken(context.Background(), &tenantv1.VerifyTokenRequest{Token: rt.GetAccessToken()}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("invalidated token verifies: %v", err)
	}
	inv, _ = auth.InvalidateToken(as(analyst), &tenantv1.InvalidateTokenRequest{Token: rt.GetAccessToken()})
	if inv.GetInvalidated() {
		t.Fatal("second invalidation reported true")
	}
}

// The edge rejects what the backends would: no token, another environment's token, and
// administrator paths for non-administrators.
func TestEdgeAuthentication(t *testing.T) {
	s := stack.Start(t)
	admin := s.Admin(t).Access
	analyst := s.Login(t, "demo", "analyst", "analyst123").Access
	expect(t, s, "GET", "/tenant/api/v1/tenant/users", "", "", 401, "missing bearer token")
	expect(t, s, "GET", "/local/tenant/api/v1/tenant/users", "", admin, 401, "invalid or expired token")
	expect(t, s, "GET", "/test/tenant/api/v1/tenant/auth/info", "", admin, 401, "")
	r := s.Do(t, "GET", "/tenant/api/v1/tenant/auth/info", "", "Authorization", "Bearer "+admin, "X-Env", "local")
	if r.Status != 401 {
		t.Fatalf("dev token with X-Env local: %d %s", r.Status, r.Body)
	}
	// A token issued in local works in local only.
	localEnv := expect(t, s, "POST", "/local/tenant/api/v1/tenant/auth/login", login("demo", "admin", stack.AdminPassword), "", 0, "access_token")
	local, _ := tokens(t, localEnv)
	expect(t, s, "GET", "/local/tenant/api/v1/tenant/auth/info", "", local, 0, "admin")
	expect(t, s, "GET", "/tenant/api/v1/tenant/auth/info", "", local, 401, "")
	// Administrator paths: the system service decides.
	expect(t, s, "GET", "/tenant/api/v1/tenant/users-m", "", analyst, 403, "administrators only")
	expect(t, s, "GET", "/tenant/api/v1/tenant/users-m", "", admin, 404, "no route")
}

//go:build platform

package tenant

import (
	"context"
	"errors"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/config"
	"github.com/shopmind/shopmind/internal/testutil/stack"
	"github.com/shopmind/shopmind/services/tenant"
)

// production replaces the stack's development configuration with a production one read
// from vars (plus the stack's database and loopback ports).
func production(t *testing.T, vars map[string]string) stack.Option {
	return func(c *app.Config) {
		m := map[string]string{"SHOPMIND_MODE": "production", "SHOPMIND_JWT_SECRET": stack.TestSecret,
			"SHOPMIND_DATABASE_URL": c.DatabaseURL, "SHOPMIND_HTTP_ADDR": "127.0.0.1:0", "SHOPMIND_GRPC_ADDR": "127.0.0.1:0",
			"SHOPMIND_CAPTCHA_MODE": "off", "SHOPMIND_BCRYPT_COST": "4", "SHOPMIND_RATE_LIMIT_RPS": "0",
			"SHOPMIND_SHUTDOWN_TIMEOUT": "5s", "SHOPMIND_LOG_LEVEL": "warn"}
		for k, v := range vars {
			m[k] = v
		}
		p, err := config.FromMap(m)
		if err != nil {
			t.Fatal(err)
		}
		c.Config = *p
	}
}

// defaultPasswordUsers counts users whose password is a development default.
func defaultPasswordUsers(t *testing.T, s *stack.Stack) int {
	t.Helper()
	rows, err := s.DB.Pool.Query(context.Background(), "SELECT password_hash FROM tenant.users")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var hash string
		if err := rows.Scan(&hash); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{config.DevAdminPassword, config.DevAnalystPassword} {
			if bcrypt.CompareHashAndPassword([]byte(hash), []byte(p)) == nil {
				n++
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestProductionCreatesNoDemoTenant(t *testing.T) {
	// Demo data asked for and a default admin password set, but no SHOPMIND_DEMO_TENANT.
	s := stack.Start(t, production(t, map[string]string{"SHOPMIND_DEMO_DATA": "true", "SHOPMIND_ADMIN_PASSWORD": "admin123"}))
	var tenants, users int
	if err := s.DB.Pool.QueryRow(context.Background(), "SELECT (SELECT count(*) FROM tenant.tenants), (SELECT count(*) FROM tenant.users)").Scan(&tenants, &users); err != nil {
		t.Fatal(err)
	}
	if tenants != 0 || users != 0 {
		t.Fatalf("production without SHOPMIND_DEMO_TENANT: %d tenants, %d users", tenants, users)
	}
	expect(t, s, "POST", "/tenant/api/v1/tenant/auth/login", login("demo", "admin", "admin123"), "", 401, "invalid")

	// The operator's way in: a tenant created with its administrator.
	const pw = "Acme-Admin-2040"
	created, err := tenant.CreateTenant(context.Background(), s.DB.Pool,
		tenant.NewTenant{Code: "acme", Name: "Acme Ltd", AdminUsername: "admin", AdminPassword: pw}, 4)
	if err != nil {
		t.Fatal(err)
	}
	access := s.Login(t, "acme", "admin", pw).Access
	expect(t, s, "GET", "/tenant/api/v1/tenant/auth/info", "", access, 0, `"is_admin":true`)
	expect(t, s, "GET", "/tenant/api/v1/tenant/auth/menus", "", access, 0, `"name":"roles"`)
	expect(t, s, "GET", "/tenant/api/v1/tenant/auth/init", "", access, 0, `"tenant:role:create"`)
	if created.Code != "acme" || created.ID == 0 || created.AdminID == 0 {
		t.Fatalf("%+v", created)
	}
	if n := defaultPasswordUsers(t, s); n != 0 {
		t.Fatalf("%d users with a default password", n)
	}
}

func TestProductionDemoTenantWithExplicitPasswords(t *testing.T) {
	const admin, analyst = "Demo-Admin-Strong-1", "Demo-Analyst-Strong-2"
	s := stack.Start(t, production(t, map[string]string{"SHOPMIND_DEMO_TENANT": "true",
		"SHOPMIND_ADMIN_PASSWORD": admin, "SHOPMIND_DEMO_ANALYST_PASSWORD": analyst}))
	s.Login(t, "demo", "admin", admin)
	s.Login(t, "demo", "analyst", analyst)
	if n := defaultPasswordUsers(t, s); n != 0 {
		t.Fatalf("%d users with a default password", n)
	}
}

func TestCreateTenantRefusals(t *testing.T) {
	s := stack.Start(t)
	ctx := context.Background()
	in := tenant.NewTenant{Code: "acme", Name: "Acme Ltd", AdminUsername: "owner", AdminPassword: "Acme-Owner-2040"}
	if _, err := tenant.CreateTenant(ctx, s.DB.Pool, in, 4); err != nil {
		t.Fatal(err)
	}
	kind := func(err error) apperr.Kind {
		var ae *apperr.Error
		if !errors.As(err, &ae) {
			t.Fatalf("not an apperr: %v", err)
		}
		return ae.Kind
	}
	_, err := tenant.CreateTenant(ctx, s.DB.Pool, in, 4)
	if err == nil || kind(err) != apperr.KindConflict || !strings.Contains(err.Error(), `"acme" is already taken`) {
		t.Fatalf("duplicate code: %v", err)
	}
	_, err = tenant.CreateTenant(ctx, s.DB.Pool, tenant.NewTenant{Code: "demo", Name: "again", AdminUsername: "x", AdminPassword: "Another-Pass-1"}, 4)
	if err == nil || kind(err) != apperr.KindConflict {
		t.Fatalf("the demo tenant's code: %v", err)
	}
	for _, bad := range []tenant.NewTenant{
		{Code: "beta", Name: "Beta", AdminUsername: "admin", AdminPassword: "admin123"},
		{Code: "beta", Name: "Beta", AdminUsername: "admin", AdminPassword: "short1A"},
		{Code: "beta", Name: "Beta", AdminUsername: "admin", AdminPassword: "Beta"},
		{Code: "beta space", Name: "Beta", AdminUsername: "admin", AdminPassword: "Beta-Admin-2040"},
		{Code: "beta", Name: " ", AdminUsername: "admin", AdminPassword: "Beta-Admin-2040"},
		{Code: "beta", Name: "Beta", AdminUsername: "", AdminPassword: "Beta-Admin-2040"},
	} {
		if _, err := tenant.CreateTenant(ctx, s.DB.Pool, bad, 4); err == nil || kind(err) != apperr.KindInvalid {
			t.Errorf("%+v: want invalid, got %v", bad, err)
		}
	}
	var n int
	if err := s.DB.Pool.QueryRow(ctx, "SELECT count(*) FROM tenant.tenants WHERE code = 'beta'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("refused tenants were stored: %d %v", n, err)
	}
	// The new tenant's administrator sees only its own tenant.
	access := s.Login(t, "acme", "owner", "Acme-Owner-2040").Access
	expect(t, s, "GET", "/tenant/api/v1/tenant/users", "", access, 0, `"owner"`)
	_, env := call(t, s, "GET", "/tenant/api/v1/tenant/users", "", access)
	if strings.Contains(string(env.Data), `"analyst"`) {
		t.Fatalf("acme sees demo's users: %s", env.Data)
	}
}

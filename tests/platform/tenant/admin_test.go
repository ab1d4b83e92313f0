//go:build platform

package tenant

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/shopmind/shopmind/internal/config"
	"github.com/shopmind/shopmind/internal/testutil/stack"
	"github.com/shopmind/shopmind/services/tenant"
)

// Administration through the gateway: the -m administrator paths (tenant-m for a tenant's
// administrators, system-m for platform operators) and a user's own password, with their
// bad inputs, the sessions they end, and what another tenant can see.

const (
	opsPassword  = "Ops-Operator-2040"
	bossPassword = "Acme-Boss-2040"
	userPassword = "Li-Wei-Pass-2040"
)

// operator creates an operator tenant (as `shopmind tenant create --operator` does) and
// signs its administrator in.
func operator(t *testing.T, s *stack.Stack) string {
	t.Helper()
	if _, err := tenant.CreateTenant(context.Background(), s.DB.Pool, tenant.NewTenant{Code: "ops", Name: "Platform operations",
		AdminUsername: "root", AdminPassword: opsPassword, Operator: true}, 4); err != nil {
		t.Fatal(err)
	}
	return s.Login(t, "ops", "root", opsPassword).Access
}

// dataID reads data.<object>.id of an envelope.
func dataID(t *testing.T, env envelope, object string) int64 {
	t.Helper()
	var data map[string]json.RawMessage
	var obj struct {
		ID int64 `json:"id,string"` // int64 is a JSON string (protobuf JSON)
	}
	if err := json.Unmarshal(env.Data, &data); err != nil {
		t.Fatalf("data %s: %v", env.Data, err)
	}
	if err := json.Unmarshal(data[object], &obj); err != nil || obj.ID == 0 {
		t.Fatalf("data.%s.id in %s: %v", object, env.Data, err)
	}
	return obj.ID
}

func countRows(t *testing.T, s *stack.Stack, query string, args ...any) int {
	t.Helper()
	var n int
	if err := s.DB.Pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestPlatformOperatorsManageTenants(t *testing.T) {
	s := stack.Start(t)
	demoAdmin := s.Admin(t).Access
	analyst := s.Login(t, "demo", "analyst", config.DevAnalystPassword).Access
	const tenants = "/tenant/api/v1/system-m/tenants"
	acmeBody := `{"code":"acme","name":"Acme Ltd","admin_username":"boss","admin_password":"` + bossPassword + `"}`

	// Secure by default: with no operator tenant, nobody manages tenants, not even the demo
	// tenant's administrator; the edge refuses before the service is reached.
	expect(t, s, "GET", tenants, "", demoAdmin, 403, "platform operators only")
	expect(t, s, "POST", tenants, acmeBody, demoAdmin, 403, "")
	expect(t, s, "GET", tenants, "", analyst, 403, "administrators only")
	expect(t, s, "GET", tenants, "", "", 401, "")

	op := operator(t, s)
	created := expect(t, s, "POST", tenants, acmeBody, op, 0, `"code":"acme"`)
	acmeID := dataID(t, created, "tenant")
	expect(t, s, "POST", tenants, acmeBody, op, 409, "already taken")
	for _, c := range []struct{ body, field string }{
		{`{"name":"Beta","admin_username":"boss","admin_password":"` + bossPassword + `"}`, "code"},
		{`{"code":"beta","admin_username":"boss","admin_password":"` + bossPassword + `"}`, "name"},
		{`{"code":"beta","name":"Beta","admin_username":"boss","admin_password":"admin123"}`, "admin_password"},
		{`{"code":"beta","name":"Beta","admin_username":"boss","admin_password":"Beta"}`, "admin_password"},
		{`{"code":7,"name":"Beta","admin_username":"boss","admin_password":"` + bossPassword + `"}`, "code"},
		{`{"code":"beta","name":"Beta","admin_username":"boss","admin_password":"` + bossPassword + `","is_operator":true}`, "is_operator"},
	} {
		expect(t, s, "POST", tenants, c.body, op, 400, c.field)
	}
	if n := countRows(t, s, "SELECT count(*) FROM tenant.tenants WHERE code = 'beta'"); n != 0 {
		t.Fatal("a refused creation stored a tenant")
	}
	expect(t, s, "GET", tenants+"?query=acm&page_size=5", "", op, 0, `"total":"1"`)
	expect(t, s, "GET", tenants+"?page_size=101", "", op, 400, "page_size")
	expect(t, s, "GET", tenants+"?page_num=x", "", op, 400, "page_num")
	expect(t, s, "POST", tenants+"/abc/disable", "{}", op, 400, "id")
	expect(t, s, "POST", tenants+"/0/disable", "{}", op, 400, "id")
	expect(t, s, "POST", tenants+"/987654/disable", "{}", op, 404, "")

	// The new tenant's administrator is a tenant administrator, not an operator.
	boss := s.Login(t, "acme", "boss", bossPassword).Access
	expect(t, s, "GET", tenants, "", boss, 403, "platform operators only")
	expect(t, s, "GET", "/tenant/api/v1/tenant/auth/info", "", boss, 0, `"is_admin":true`)

	// Disable: every token of the tenant is refused at once, nobody logs in; enable again.
	expect(t, s, "POST", fmt.Sprintf("%s/%d/disable", tenants, acmeID), "{}", op, 0, `"status":"disabled"`)
	expect(t, s, "GET", "/tenant/api/v1/tenant/auth/info", "", boss, 401, "revoked")
	expect(t, s, "POST", "/tenant/api/v1/tenant/auth/login", login("acme", "boss", bossPassword), "", 403, "disabled")
	expect(t, s, "GET", "/tenant/api/v1/tenant/auth/info", "", demoAdmin, 0, "") // other tenants untouched
	expect(t, s, "POST", fmt.Sprintf("%s/%d/enable", tenants, acmeID), "{}", op, 0, `"status":"enabled"`)
	s.Login(t, "acme", "boss", bossPassword)

	// The operators' own tenant cannot be disabled through the API.
	var opsID int64
	if err := s.DB.Pool.QueryRow(context.Background(), "SELECT id FROM tenant.tenants WHERE code = 'ops'").Scan(&opsID); err != nil {
		t.Fatal(err)
	}
	expect(t, s, "POST", fmt.Sprintf("%s/%d/disable", tenants, opsID), "{}", op, 422, "operator tenant")
}

func TestTenantAdministratorsManageUsersAndOrgs(t *testing.T) {
	s := stack.Start(t)
	op := operator(t, s)
	expect(t, s, "POST", "/tenant/api/v1/system-m/tenants",
		`{"code":"acme","name":"Acme Ltd","admin_username":"boss","admin_password":"`+bossPassword+`"}`, op, 0, "")
	boss := s.Login(t, "acme", "boss", bossPassword).Access
	demoAdmin := s.Admin(t).Access
	analyst := s.Login(t, "demo", "analyst", config.DevAnalystPassword).Access
	const users, orgs = "/tenant/api/v1/tenant-m/users", "/tenant/api/v1/tenant-m/orgs"

	// Organisations of acme: a tree, a refused cycle, a refused delete.
	sales := dataID(t, expect(t, s, "POST", orgs, `{"name":"Sales","code":"sales"}`, boss, 0, `"code":"sales"`), "org")
	east := dataID(t, expect(t, s, "POST", orgs, fmt.Sprintf(`{"name":"Sales East","parent_id":%d}`, sales), boss, 0, ""), "org")
	expect(t, s, "PUT", fmt.Sprintf("%s/%d", orgs, sales), fmt.Sprintf(`{"parent_id":%d,"update_mask":"parentId"}`, east), boss, 422, "sub-organizations")
	expect(t, s, "PUT", fmt.Sprintf("%s/%d", orgs, sales), `{"parent_id":"up","update_mask":"parentId"}`, boss, 400, "parent_id")
	expect(t, s, "PUT", fmt.Sprintf("%s/%d", orgs, sales), `{"name":"Sales"}`, boss, 400, "update_mask")
	expect(t, s, "DELETE", fmt.Sprintf("%s/%d", orgs, sales), "", boss, 422, "1 sub-organization(s)")
	expect(t, s, "POST", orgs, `{"name":"Dup","code":"sales"}`, boss, 409, "already exists")

	// Acme's administrator creates a user in Sales East with the analyst role.
	var analystRole int64
	if err := s.DB.Pool.QueryRow(context.Background(), `SELECT r.id FROM tenant.roles r JOIN tenant.tenants t ON t.id = r.tenant_id
		WHERE t.code = 'acme' AND r.code = 'analyst'`).Scan(&analystRole); err != nil {
		t.Fatal(err)
	}
	var demoOrg int64
	if err := s.DB.Pool.QueryRow(context.Background(), `SELECT o.id FROM tenant.orgs o JOIN tenant.tenants t ON t.id = o.tenant_id
		WHERE t.code = 'demo' AND o.code = 'ops'`).Scan(&demoOrg); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		body  string
		code  int
		field string
	}{
		{`{"password":"` + userPassword + `"}`, 400, "username"},
		{`{"username":"li.wei"}`, 400, "password"},
		{`{"username":"li.wei","password":"password123"}`, 400, "password"},
		{`{"username":"li.wei","password":"` + userPassword + `","role_ids":"analyst"}`, 400, "role_ids"},
		{`{"username":"li.wei","password":"` + userPassword + `","org_id":true}`, 400, "org_id"},
		{fmt.Sprintf(`{"username":"li.wei","password":"%s","org_id":%d}`, userPassword, demoOrg), 400, "org_id"},
		{`{"username":"li wei","password":"` + userPassword + `"}`, 400, "username"},
		{`{"username":"li.wei","password":"` + userPassword + `","unknown":1}`, 400, "unknown"},
	} {
		expect(t, s, "POST", users, c.body, boss, c.code, c.field)
	}
	if n := countRows(t, s, "SELECT count(*) FROM tenant.users WHERE username = 'li.wei'"); n != 0 {
		t.Fatal("a refused creation stored a user")
	}
	body := fmt.Sprintf(`{"username":"li.wei","password":"%s","nickname":"Li Wei","org_id":%d,"role_ids":[%d]}`, userPassword, east, analystRole)
	expect(t, s, "POST", users, body, analyst, 403, "")   // not an administrator
	expect(t, s, "POST", users, body, demoAdmin, 400, "") // demo's administrator: acme's org is not theirs
	li := dataID(t, expect(t, s, "POST", users, body, boss, 0, `"username":"li.wei"`), "user")
	expect(t, s, "POST", users, body, boss, 409, "already exists")
	expect(t, s, "DELETE", fmt.Sprintf("%s/%d", orgs, east), "", boss, 422, "1 user(s)")

	// The user logs in, sees the analyst's menus, and changes their password.
	session := s.Login(t, "acme", "li.wei", userPassword)
	expect(t, s, "GET", "/tenant/api/v1/tenant/auth/info", "", session.Access, 0, `"name":"Sales East"`)
	const password = "/tenant/api/v1/tenant/auth/password"
	expect(t, s, "POST", password, `{"current_password":"wrong-one","new_password":"Li-Wei-New-2041"}`, session.Access, 400, "current_password")
	expect(t, s, "POST", password, `{"current_password":"`+userPassword+`","new_password":"li.wei"}`, session.Access, 400, "new_password")
	expect(t, s, "POST", password, `{"current_password":"`+userPassword+`"}`, session.Access, 400, "new_password")
	expect(t, s, "POST", password, `{"current_password":"`+userPassword+`","new_password":12}`, session.Access, 400, "new_password")
	changed := expect(t, s, "POST", password, `{"current_password":"`+userPassword+`","new_password":"Li-Wei-New-2041"}`, session.Access, 0, "access_token")
	newAccess, _ := tokens(t, changed)
	expect(t, s, "GET", "/tenant/api/v1/tenant/auth/info", "", session.Access, 401, "")
	expect(t, s, "POST", "/tenant/api/v1/tenant/auth/refresh", `{"refresh_token":"`+session.Refresh+`"}`, "", 401, "")
	expect(t, s, "GET", "/tenant/api/v1/tenant/auth/info", "", newAccess, 0, `"username":"li.wei"`)
	expect(t, s, "POST", "/tenant/api/v1/tenant/auth/login", login("acme", "li.wei", userPassword), "", 401, "")
	s.Login(t, "acme", "li.wei", "Li-Wei-New-2041")

	// None of it is visible to tenant demo: not in its listings, unknown by id.
	for _, path := range []string{"/tenant/api/v1/tenant/users?username=li", "/tenant/api/v1/tenant/orgs?name=sales"} {
		env := expect(t, s, "GET", path, "", demoAdmin, 0, "")
		if strings.Contains(string(env.Data), "li.wei") || strings.Contains(string(env.Data), "Sales") {
			t.Fatalf("demo sees acme's records at %s: %s", path, env.Data)
		}
	}
	expect(t, s, "PUT", fmt.Sprintf("%s/%d", users, li), `{"status":"disabled","update_mask":"status"}`, demoAdmin, 404, "")
	expect(t, s, "POST", fmt.Sprintf("%s/%d/password", users, li), `{"password":"Taken-Over-2040"}`, demoAdmin, 404, "")
	expect(t, s, "POST", users+"/delete", fmt.Sprintf(`{"ids":[%d]}`, li), demoAdmin, 404, "")
	expect(t, s, "PUT", fmt.Sprintf("%s/%d", orgs, sales), `{"name":"Mine","update_mask":"name"}`, demoAdmin, 404, "")
	expect(t, s, "DELETE", fmt.Sprintf("%s/%d", orgs, sales), "", demoAdmin, 404, "")
	s.Login(t, "acme", "li.wei", "Li-Wei-New-2041") // still there, password unchanged

	// Acme's administrator disables the user (sessions end), resets the password, deletes.
	liAccess := s.Login(t, "acme", "li.wei", "Li-Wei-New-2041").Access
	expect(t, s, "PUT", fmt.Sprintf("%s/%d", users, li), `{"status":"disabled","update_mask":"status"}`, boss, 0, `"status":"disabled"`)
	expect(t, s, "GET", "/tenant/api/v1/tenant/auth/info", "", liAccess, 401, "")
	expect(t, s, "PUT", fmt.Sprintf("%s/%d", users, li), `{"status":"enabled","update_mask":"status"}`, boss, 0, "")
	expect(t, s, "POST", fmt.Sprintf("%s/%d/password", users, li), `{"password":"short"}`, boss, 400, "password")
	expect(t, s, "POST", fmt.Sprintf("%s/%d/password", users, li), `{"password":"Li-Wei-Reset-2042"}`, boss, 0, "sessions_ended")
	s.Login(t, "acme", "li.wei", "Li-Wei-Reset-2042")
	ids := make([]string, 101)
	for i := range ids {
		ids[i] = fmt.Sprint(i + 1)
	}
	expect(t, s, "POST", users+"/delete", `{"ids":[`+strings.Join(ids, ",")+`]}`, boss, 400, "ids")
	expect(t, s, "POST", users+"/delete", `{"ids":["x"]}`, boss, 400, "ids")
	expect(t, s, "POST", users+"/delete", fmt.Sprintf(`{"ids":[%d,987654]}`, li), boss, 404, "nothing was deleted")
	expect(t, s, "POST", users+"/delete", fmt.Sprintf(`{"ids":[%d]}`, li), boss, 0, `"deleted":1`)
	expect(t, s, "DELETE", fmt.Sprintf("%s/%d", orgs, east), "", boss, 0, `"deleted":true`)
	expect(t, s, "POST", "/tenant/api/v1/tenant/auth/login", login("acme", "li.wei", "Li-Wei-Reset-2042"), "", 401, "")
}

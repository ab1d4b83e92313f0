package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/shopmind/shopmind/internal/testutil/pgtest"
	"github.com/shopmind/shopmind/internal/testutil/proc"
	"github.com/shopmind/shopmind/internal/testutil/stack"
)

// tenantDB is a migrated test database, as `serve` leaves it.
func tenantDB(t *testing.T) *pgtest.Database {
	t.Helper()
	requirePostgres(t)
	return stack.NewDatabase(t)
}

// tenantCmd runs `shopmind tenant create args` against db with env and stdin.
func tenantCmd(t *testing.T, db *pgtest.Database, env map[string]string, stdin string, args ...string) (string, error) {
	t.Helper()
	return tenantRun(t, db, env, stdin, append([]string{"create"}, args...)...)
}

// tenantRun runs `shopmind tenant args` against db with env and stdin.
func tenantRun(t *testing.T, db *pgtest.Database, env map[string]string, stdin string, args ...string) (string, error) {
	t.Helper()
	vars := map[string]string{"SHOPMIND_DATABASE_URL": db.URL, "SHOPMIND_BCRYPT_COST": "4", "SHOPMIND_LOG_LEVEL": "warn"}
	for k, v := range env {
		vars[k] = v
	}
	var out bytes.Buffer
	err := runTenant(context.Background(), args, cmdIO{
		getenv: func(k string) string { return vars[k] }, stdin: strings.NewReader(stdin), stdout: &out, stderr: io.Discard})
	return out.String(), err
}

func TestTenantCreate(t *testing.T) {
	db := tenantDB(t)
	// From standard input, one line.
	out, err := tenantCmd(t, db, nil, "Acme-Admin-2040\n", "--code", "acme", "--name", "Acme Ltd", "--admin", "admin")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "tenant acme created: id ") {
		t.Fatalf("output %q", out)
	}
	// From the environment (stdin ignored), under a variable of the operator's choosing.
	if _, err := tenantCmd(t, db, map[string]string{"BETA_PW": "Beta-Owner-2040"}, "ignored\n",
		"--code=beta", "--name=Beta", "--admin=owner", "--admin-password-env=BETA_PW"); err != nil {
		t.Fatal(err)
	}
	// And from the default variable.
	if _, err := tenantCmd(t, db, map[string]string{"SHOPMIND_TENANT_ADMIN_PASSWORD": "Gamma-Admin-2040"}, "",
		"--code=gamma", "--name=Gamma"); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		env   map[string]string
		stdin string
		args  []string
		want  string
	}{
		{nil, "Acme-Admin-2041\n", []string{"--code=acme", "--name=Again"}, `tenant code "acme" is already taken`},
		{nil, "admin123\n", []string{"--code=delta", "--name=Delta"}, "default or well-known weak password (read from standard input)"},
		{map[string]string{"SHOPMIND_TENANT_ADMIN_PASSWORD": "short"}, "", []string{"--code=delta", "--name=Delta"},
			"shorter than 10 characters (read from $SHOPMIND_TENANT_ADMIN_PASSWORD)"},
		{nil, "", []string{"--code=delta", "--name=Delta"}, "no password"},
		{nil, "Delta-Admin-2040\n", []string{"--code=delta", "--name=Delta", "--admin-password=Delta-Admin-2040"}, "never taken on the command line"},
		{nil, "Delta-Admin-2040\n", []string{"--code=delta", "--name=Delta", "--password", "x"}, "never taken on the command line"},
		{nil, "Delta-Admin-2040\n", []string{"--name=Delta"}, "--code is required"},
		{nil, "Delta-Admin-2040\n", []string{"--code=del ta", "--name=Delta"}, "--code: "},
	} {
		out, err := tenantCmd(t, db, c.env, c.stdin, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) || out != "" {
			t.Errorf("%v: want an error containing %q, got %v (output %q)", c.args, c.want, err, out)
		}
		if err != nil && strings.Contains(err.Error(), "Delta-Admin-2040") {
			t.Errorf("%v: the error shows the password: %v", c.args, err)
		}
	}

	s := stack.StartOn(t, db)
	s.Login(t, "acme", "admin", "Acme-Admin-2040")
	s.Login(t, "beta", "owner", "Beta-Owner-2040")
	access := s.Login(t, "gamma", "admin", "Gamma-Admin-2040").Access
	r := s.Do(t, "GET", "/tenant/api/v1/tenant/auth/menus", "", stack.Bearer(access)...)
	if r.Status != 200 || !strings.Contains(string(r.Body), `"name":"roles"`) {
		t.Fatalf("menus of a new tenant's administrator: HTTP %d %s", r.Status, r.Body)
	}
}

// TestTenantCreateExitCode checks the binary: a duplicate code exits 1 with the message.
func TestTenantCreateExitCode(t *testing.T) {
	db := tenantDB(t)
	if _, err := tenantCmd(t, db, nil, "Acme-Admin-2040\n", "--code=acme", "--name=Acme"); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(proc.Binary(t), "tenant", "create", "--code=acme", "--name=Acme")
	cmd.Env = proc.Env("SHOPMIND_DATABASE_URL="+db.URL, "SHOPMIND_BCRYPT_COST=4", "SHOPMIND_LOG_LEVEL=warn")
	cmd.Stdin = strings.NewReader("Acme-Admin-2041\n")
	out, err := cmd.CombinedOutput()
	exit, ok := err.(*exec.ExitError)
	if !ok || exit.ExitCode() != 1 || !strings.Contains(string(out), `tenant code "acme" is already taken`) {
		t.Fatalf("duplicate: want exit 1 naming the code, got %v:\n%s", err, out)
	}
}

// TestTenantAdministrationStory is the acceptance story of administration, tried as a new
// operator would: a tenant created by the command, its administrator logging in and
// creating a user, who logs in and changes their password; none of it visible to tenant
// demo; then the command lists, disables (the running platform refuses the tenant's tokens)
// and enables the tenant.
func TestTenantAdministrationStory(t *testing.T) {
	db := tenantDB(t)
	if _, err := tenantCmd(t, db, map[string]string{"SHOPMIND_TENANT_ADMIN_PASSWORD": "Acme-Boss-2040"}, "",
		"--code=acme", "--name=Acme Ltd", "--admin=boss"); err != nil {
		t.Fatal(err)
	}
	s := stack.StartOn(t, db)
	do := func(method, path, body, token string, want int) string {
		t.Helper()
		var hdr []string
		if token != "" {
			hdr = stack.Bearer(token)
		}
		r := s.Do(t, method, path, body, hdr...)
		var env struct {
			Code int `json:"code"`
		}
		if err := json.Unmarshal(r.Body, &env); err != nil || env.Code != want {
			t.Fatalf("%s %s: want code %d, got HTTP %d %s", method, path, want, r.Status, r.Body)
		}
		return string(r.Body)
	}

	boss := s.Login(t, "acme", "boss", "Acme-Boss-2040").Access
	created := do("POST", "/tenant/api/v1/tenant-m/users", `{"username":"li.wei","password":"Li-Wei-Pass-2040","nickname":"Li Wei"}`, boss, 0)
	if !strings.Contains(created, `"username":"li.wei"`) {
		t.Fatalf("created: %s", created)
	}
	li := s.Login(t, "acme", "li.wei", "Li-Wei-Pass-2040")
	changed := do("POST", "/tenant/api/v1/tenant/auth/password", `{"current_password":"Li-Wei-Pass-2040","new_password":"Li-Wei-Mine-2041"}`, li.Access, 0)
	do("GET", "/tenant/api/v1/tenant/auth/info", "", li.Access, 401) // the old session ended
	var pair struct {
		Data struct {
			AccessToken string `json:"access_token"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(changed), &pair); err != nil || pair.Data.AccessToken == "" {
		t.Fatalf("password change: %s", changed)
	}
	do("GET", "/tenant/api/v1/tenant/auth/info", "", pair.Data.AccessToken, 0)
	s.Login(t, "acme", "li.wei", "Li-Wei-Mine-2041")

	// Tenant demo sees none of it.
	demo := s.Admin(t).Access
	for _, path := range []string{"/tenant/api/v1/tenant/users?page_size=100", "/tenant/api/v1/tenant/orgs"} {
		if body := do("GET", path, "", demo, 0); strings.Contains(body, "li.wei") || strings.Contains(body, "boss") {
			t.Fatalf("demo sees acme's users at %s: %s", path, body)
		}
	}
	var liID int64
	if err := db.Pool.QueryRow(context.Background(), "SELECT id FROM tenant.users WHERE username = 'li.wei'").Scan(&liID); err != nil {
		t.Fatal(err)
	}
	do("PUT", fmt.Sprintf("/tenant/api/v1/tenant-m/users/%d", liID), `{"nickname":"x","update_mask":"nickname"}`, demo, 404)
	do("GET", "/tenant/api/v1/system-m/tenants", "", demo, 403)

	// The command lists the tenants and disables acme: the running platform refuses its
	// tokens once the database's notification reaches it, and its users cannot log in.
	out, err := tenantRun(t, db, nil, "", "list")
	if err != nil || !strings.Contains(out, "acme") || !strings.Contains(out, "demo") {
		t.Fatalf("tenant list: %v\n%s", err, out)
	}
	// Three sessions: boss's, li.wei's from the password change and from the last login.
	if out, err := tenantRun(t, db, nil, "", "disable", "--code=acme"); err != nil || !strings.Contains(out, "tenant acme disabled; 3 session(s) ended") {
		t.Fatalf("tenant disable: %v %q", err, out)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r := s.Do(t, "GET", "/tenant/api/v1/tenant/auth/info", "", stack.Bearer(boss)...)
		if r.Status == 401 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a disabled tenant's token still works: HTTP %d %s", r.Status, r.Body)
		}
	}
	do("POST", "/tenant/api/v1/tenant/auth/login", `{"tenant_code":"acme","username":"boss","password":"Acme-Boss-2040"}`, "", 403)
	if out, err := tenantRun(t, db, nil, "", "list", "--status=disabled"); err != nil || !strings.Contains(out, "acme") || strings.Contains(out, "demo") {
		t.Fatalf("tenant list --status=disabled: %v\n%s", err, out)
	}
	if _, err := tenantRun(t, db, nil, "", "enable", "--code=acme"); err != nil {
		t.Fatal(err)
	}
	s.Login(t, "acme", "boss", "Acme-Boss-2040")
	for _, args := range [][]string{{"disable"}, {"disable", "--code=nope"}, {"list", "--status=gone"}, {"rename"}} {
		if _, err := tenantRun(t, db, nil, "", args...); err == nil {
			t.Errorf("tenant %v: want an error", args)
		}
	}
}

package main

import (
	"bytes"
	"context"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/postgres"
	"github.com/shopmind/shopmind/internal/testutil/pgtest"
	"github.com/shopmind/shopmind/internal/testutil/stack"
	"github.com/shopmind/shopmind/services"
)

// tenantDB is a migrated test database, as `serve` leaves it.
func tenantDB(t *testing.T) *pgtest.Database {
	t.Helper()
	requirePostgres(t)
	sets := []postgres.Migrations{authn.Migrations()}
	for _, d := range services.All() {
		if d.Migrations != nil {
			sets = append(sets, *d.Migrations)
		}
	}
	return pgtest.New(t, sets...)
}

// tenantCmd runs `shopmind tenant create args` against db with env and stdin.
func tenantCmd(t *testing.T, db *pgtest.Database, env map[string]string, stdin string, args ...string) (string, error) {
	t.Helper()
	vars := map[string]string{"SHOPMIND_DATABASE_URL": db.URL, "SHOPMIND_BCRYPT_COST": "4", "SHOPMIND_LOG_LEVEL": "warn"}
	for k, v := range env {
		vars[k] = v
	}
	var out bytes.Buffer
	err := runTenant(context.Background(), append([]string{"create"}, args...), cmdIO{
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
	cmd := exec.Command(shopmindBinary(t), "tenant", "create", "--code=acme", "--name=Acme")
	cmd.Env = serveEnv("SHOPMIND_DATABASE_URL="+db.URL, "SHOPMIND_BCRYPT_COST=4", "SHOPMIND_LOG_LEVEL=warn")
	cmd.Stdin = strings.NewReader("Acme-Admin-2041\n")
	out, err := cmd.CombinedOutput()
	exit, ok := err.(*exec.ExitError)
	if !ok || exit.ExitCode() != 1 || !strings.Contains(string(out), `tenant code "acme" is already taken`) {
		t.Fatalf("duplicate: want exit 1 naming the code, got %v:\n%s", err, out)
	}
}

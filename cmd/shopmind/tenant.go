package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/shopmind/shopmind/internal/analytics/warehouse"
	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/logging"
	"github.com/shopmind/shopmind/internal/postgres"
	"github.com/shopmind/shopmind/services"
	"github.com/shopmind/shopmind/services/analysis"
	"github.com/shopmind/shopmind/services/tenant"
)

// DefaultAdminPasswordEnv is where `shopmind tenant create` looks for the password first.
const DefaultAdminPasswordEnv = "SHOPMIND_TENANT_ADMIN_PASSWORD"

// tenantUsage is the usage line of tenant.
var tenantUsage = strings.TrimSpace(`
  shopmind tenant create --code=CODE --name=NAME [--admin=USERNAME] [--admin-password-env=VAR] [--operator]
                                      create a tenant and its first administrator (default admin);
                                      password from $` + DefaultAdminPasswordEnv + ` (or $VAR), else
                                      one line of standard input; never on the command line;
                                      --operator: its administrators are platform operators
  shopmind tenant list [--status=enabled|disabled]
                                      list the tenants
  shopmind tenant disable --code=CODE end every session of the tenant's users; they cannot log in
  shopmind tenant enable --code=CODE  let the tenant's users log in again`)

// cmdIO is what a command reads and writes; tests replace the process's.
type cmdIO struct {
	getenv func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

func osIO() cmdIO {
	return cmdIO{getenv: os.Getenv, stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}
}

// runTenant is `shopmind tenant create|list|disable|enable`: it migrates the platform
// database like `serve` does and runs the same code as PlatformService (tenant.Platform).
func runTenant(ctx context.Context, args []string, cio cmdIO) error {
	if len(args) == 0 {
		return fmt.Errorf("tenant: want a subcommand\n%s", tenantUsage)
	}
	switch args[0] {
	case "create":
		return runTenantCreate(ctx, args[1:], cio)
	case "list":
		return runTenantList(ctx, args[1:], cio)
	case "disable", "enable":
		return runTenantStatus(ctx, args[0], args[1:], cio)
	}
	return fmt.Errorf("tenant: unknown subcommand %q\n%s", args[0], tenantUsage)
}

// platformDB opens and migrates the platform database and returns the tenant management
// over it, and the function that closes it.
func platformDB(ctx context.Context, cfg *app.Config, cio cmdIO, what string) (*tenant.Platform, func(), error) {
	if err := postgres.EnsureDatabase(ctx, cfg.DatabaseURL); err != nil {
		return nil, nil, fmt.Errorf("%s: database: %w", what, err)
	}
	pool, err := postgres.Open(ctx, cfg.DatabaseURL, cfg.DatabaseMaxConns)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: database: %w", what, err)
	}
	log := logging.New(cio.stderr, cfg.LogLevel)
	sets := []postgres.Migrations{authn.Migrations()}
	for _, d := range services.All() {
		if d.Migrations != nil {
			sets = append(sets, *d.Migrations)
		}
	}
	if err := postgres.Migrate(ctx, pool, log, sets...); err != nil {
		pool.Close()
		return nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	// The revocation list is not started: revocations go to the database, whose
	// notification reaches every running process.
	return &tenant.Platform{DB: pool, Revocations: authn.NewRevocations(pool, log), AccessTTL: cfg.Auth.AccessTTL,
		BcryptCost: cfg.Auth.BcryptCost}, pool.Close, nil
}

func runTenantCreate(ctx context.Context, args []string, cio cmdIO) error {
	// A password on the command line ends up in ps output and shell history.
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && strings.Contains(strings.ToLower(name), "password") && name != "admin-password-env" {
			return fmt.Errorf("tenant create: passwords are never taken on the command line; set %s (or the variable named by --admin-password-env) or write the password on standard input", DefaultAdminPasswordEnv)
		}
	}
	fs := flag.NewFlagSet("tenant create", flag.ContinueOnError)
	fs.SetOutput(cio.stderr)
	code := fs.String("code", "", "tenant code users type at login (letters, digits, '_', '-')")
	name := fs.String("name", "", "tenant display name")
	admin := fs.String("admin", "admin", "username of the first administrator")
	passwordEnv := fs.String("admin-password-env", DefaultAdminPasswordEnv, "environment variable holding the administrator's password")
	operator := fs.Bool("operator", false, "make it an operator tenant: its administrators are platform operators")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("tenant create: unexpected argument %q\n%s", fs.Arg(0), tenantUsage)
	case *code == "":
		return fmt.Errorf("tenant create: --code is required\n%s", tenantUsage)
	case *name == "":
		return fmt.Errorf("tenant create: --name is required\n%s", tenantUsage)
	case *passwordEnv == "":
		return errors.New("tenant create: --admin-password-env names no variable")
	}
	cfg, err := app.LoadConfig(cio.getenv, services.All())
	if err != nil {
		return err
	}
	password, from, err := readAdminPassword(cio, *passwordEnv, *admin, *code)
	if err != nil {
		return fmt.Errorf("tenant create: %w", err)
	}
	in := tenant.NewTenant{Code: *code, Name: *name, AdminUsername: *admin, AdminPassword: password, Operator: *operator}
	// Check the input before touching the database.
	if err := in.Validate(); err != nil {
		return tenantCreateError(err, from)
	}
	p, closeDB, err := platformDB(ctx, cfg, cio, "tenant create")
	if err != nil {
		return err
	}
	defer closeDB()
	created, _, err := p.Create(ctx, in)
	if err != nil {
		return tenantCreateError(err, from)
	}
	kind := "tenant"
	if created.IsOperator {
		kind = "operator tenant"
	}
	fmt.Fprintf(cio.stdout, "%s %s created: id %d, administrator %s\n", kind, created.Code, created.ID, *admin)
	// The standard e-commerce metric catalog, so the tenant's imported orders can be
	// analysed at once (services/analysis.InstallStandardCatalog).
	wh, err := warehouse.Open(ctx, cfg.Analytics.URL, p.DB, logging.New(cio.stderr, cfg.LogLevel))
	if err == nil {
		defer wh.Close()
		err = wh.EnsureSchema(ctx)
	}
	n := 0
	if err == nil {
		n, err = analysis.InstallStandardCatalog(ctx, p.DB, wh, created.ID)
	}
	if err != nil {
		return fmt.Errorf("tenant create: tenant %s created, but its standard metric catalog was not: %w", created.Code, err)
	}
	fmt.Fprintf(cio.stdout, "standard metric catalog: %d metrics (gmv, order_count, ...)\n", n)
	return nil
}

func runTenantList(ctx context.Context, args []string, cio cmdIO) error {
	fs := flag.NewFlagSet("tenant list", flag.ContinueOnError)
	fs.SetOutput(cio.stderr)
	status := fs.String("status", "", "only tenants with this status: enabled or disabled")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 || *status != "" && *status != "enabled" && *status != "disabled" {
		return fmt.Errorf("tenant list: want [--status=enabled|disabled]\n%s", tenantUsage)
	}
	cfg, err := app.LoadConfig(cio.getenv, services.All())
	if err != nil {
		return err
	}
	p, closeDB, err := platformDB(ctx, cfg, cio, "tenant list")
	if err != nil {
		return err
	}
	defer closeDB()
	fmt.Fprintf(cio.stdout, "%-6s %-24s %-9s %-8s %6s  %s\n", "ID", "CODE", "STATUS", "OPERATOR", "USERS", "NAME")
	for offset := 0; ; offset += 100 {
		page, total, err := p.List(ctx, tenant.TenantFilter{Status: *status}, 100, offset)
		if err != nil {
			return fmt.Errorf("tenant list: %w", err)
		}
		for _, t := range page {
			fmt.Fprintf(cio.stdout, "%-6d %-24s %-9s %-8t %6d  %s\n", t.ID, t.Code, t.Status, t.IsOperator, t.UserCount, t.Name)
		}
		if int64(offset+len(page)) >= total || len(page) == 0 {
			return nil
		}
	}
}

func runTenantStatus(ctx context.Context, verb string, args []string, cio cmdIO) error {
	what := "tenant " + verb
	fs := flag.NewFlagSet(what, flag.ContinueOnError)
	fs.SetOutput(cio.stderr)
	code := fs.String("code", "", "code of the tenant")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 || *code == "" {
		return fmt.Errorf("%s: want --code=CODE\n%s", what, tenantUsage)
	}
	cfg, err := app.LoadConfig(cio.getenv, services.All())
	if err != nil {
		return err
	}
	p, closeDB, err := platformDB(ctx, cfg, cio, what)
	if err != nil {
		return err
	}
	defer closeDB()
	id, err := p.IDByCode(ctx, *code)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	// The command may disable an operator tenant (the API may not).
	t, ended, err := p.SetStatus(ctx, id, verb+"d", true)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	fmt.Fprintf(cio.stdout, "tenant %s %s; %d session(s) ended\n", t.Code, t.Status, ended)
	return nil
}

// tenantCreateError words CreateTenant's errors for the command line: flags, not fields.
func tenantCreateError(err error, passwordFrom string) error {
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Kind == apperr.KindInternal {
		return fmt.Errorf("tenant create: %w", err)
	}
	if len(ae.Violations) == 0 {
		return fmt.Errorf("tenant create: %s", ae.Message)
	}
	flags := map[string]string{"code": "--code", "name": "--name", "admin_username": "--admin"}
	parts := make([]string, 0, len(ae.Violations))
	for _, v := range ae.Violations {
		switch f := flags[v.Field]; {
		case v.Field == "admin_password":
			parts = append(parts, v.Message+" (read from "+passwordFrom+")")
		case f != "":
			parts = append(parts, f+": "+v.Message)
		default:
			parts = append(parts, v.Field+": "+v.Message)
		}
	}
	return fmt.Errorf("tenant create: %s", strings.Join(parts, "; "))
}

// readAdminPassword takes the password from the environment, else from standard input:
// a prompt without echo (asked twice) on a terminal, one line otherwise. from says which.
func readAdminPassword(cio cmdIO, envName, username, code string) (password, from string, err error) {
	if v := cio.getenv(envName); v != "" {
		return v, "$" + envName, nil
	}
	const stdin = "standard input"
	if f, ok := cio.stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		ask := func(prompt string) (string, error) {
			fmt.Fprint(cio.stderr, prompt)
			b, err := term.ReadPassword(int(f.Fd()))
			fmt.Fprintln(cio.stderr)
			return string(b), err
		}
		first, err := ask(fmt.Sprintf("Password of %s in tenant %s: ", username, code))
		if err != nil {
			return "", "", err
		}
		again, err := ask("Again: ")
		if err != nil {
			return "", "", err
		}
		if first != again {
			return "", "", errors.New("the passwords differ")
		}
		return first, stdin, nil
	}
	line, err := bufio.NewReader(cio.stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", "", fmt.Errorf("read the password from standard input: %w", err)
	}
	line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	if line == "" {
		return "", "", fmt.Errorf("no password: set %s or write the password on standard input", envName)
	}
	return line, stdin, nil
}

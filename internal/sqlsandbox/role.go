package sqlsandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/shopmind/shopmind/internal/analytics/warehouse"
)

// EnsureRole creates the PostgreSQL role sandboxed queries run as, when missing, and grants
// it exactly USAGE on the analytics schema and SELECT on its tables (present and future
// ones created by the platform's user), and lets the platform's user SET ROLE to it. It is
// idempotent and safe when several processes (or test databases of one cluster: roles are
// cluster-wide) run it together: concurrent catalog updates are retried.
func EnsureRole(ctx context.Context, pool *pgxpool.Pool, role string) error {
	return EnsureRoleWithPassword(ctx, pool, role, "")
}

// EnsureRoleWithPassword is EnsureRole that also sets the role's password (when not empty),
// for servers that ask the role for one.
func EnsureRoleWithPassword(ctx context.Context, pool *pgxpool.Pool, role, password string) error {
	if !identOK(role) {
		return fmt.Errorf("sqlsandbox: role %q is not a plain identifier", role)
	}
	r := pgx.Identifier{role}.Sanitize()
	s := pgx.Identifier{warehouse.PostgresSchema}.Sanitize()
	// Cluster-wide changes (the role, its attributes, the membership) only when needed, so
	// that starts and test databases of one cluster do not queue on the shared catalogs;
	// the grants are the database's own.
	attrs := "LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOBYPASSRLS NOREPLICATION"
	stmts := []string{
		fmt.Sprintf(`DO $$ BEGIN
			IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = %[1]s) THEN
				CREATE ROLE %[2]s %[3]s;
			ELSIF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = %[1]s AND (NOT rolcanlogin OR rolsuper OR rolcreatedb
					OR rolcreaterole OR rolinherit OR rolbypassrls OR rolreplication)) THEN
				ALTER ROLE %[2]s %[3]s;
			END IF;
		EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
		END $$`, quoteLiteral(role), r, attrs),
		fmt.Sprintf("CREATE SCHEMA IF NOT EXISTS %[1]s; GRANT USAGE ON SCHEMA %[1]s TO %[2]s; GRANT SELECT ON ALL TABLES IN SCHEMA %[1]s TO %[2]s; "+
			"ALTER DEFAULT PRIVILEGES IN SCHEMA %[1]s GRANT SELECT ON TABLES TO %[2]s", s, r),
		fmt.Sprintf(`DO $$ BEGIN
			IF NOT pg_has_role(current_user, %[1]s, 'MEMBER') THEN
				EXECUTE format('GRANT %%I TO %%I', %[1]s, current_user);
			END IF;
		END $$`, quoteLiteral(role)),
	}
	if password != "" {
		stmts = append(stmts, fmt.Sprintf("ALTER ROLE %s PASSWORD %s", r, pgLiteral(password)))
	}
	for _, stmt := range stmts {
		var err error
		for attempt := 0; attempt < 10; attempt++ {
			if _, err = pool.Exec(ctx, stmt); err == nil || !concurrentUpdate(err) {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(attempt+1) * 20 * time.Millisecond):
			}
		}
		if err != nil {
			return fmt.Errorf("sqlsandbox: ensure role %s: %w", role, err)
		}
	}
	return nil
}

// concurrentUpdate: another session changed the same catalog row (GRANT racing GRANT).
func concurrentUpdate(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "XX000" || pgErr.Code == "23505" || pgErr.Code == "40001" || pgErr.Code == "40P01")
}

func quoteLiteral(s string) string { return "'" + s + "'" } // s is identOK: no quotes inside

// pgLiteral quotes any string as a PostgreSQL literal (standard_conforming_strings on).
func pgLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// OpenPool opens the pool sandboxed PostgreSQL queries use: the platform pool's server and
// database, logged in as cfg.Role (with cfg.Password when set), at most cfg.MaxConns
// connections. Statements therefore run with the role as their session user: nothing in a
// statement can SET ROLE back to the platform's user.
func OpenPool(ctx context.Context, platform *pgxpool.Pool, cfg Config) (*pgxpool.Pool, error) {
	cfg = cfg.withDefaults()
	pc := platform.Config().Copy()
	pc.ConnConfig.User = cfg.Role
	pc.ConnConfig.Password = cfg.Password
	pc.MaxConns = int32(cfg.MaxConns)
	pc.MinConns = 0
	pc.AfterConnect, pc.BeforeAcquire, pc.AfterRelease = nil, nil, nil
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("sqlsandbox: pool as %s: %w", cfg.Role, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("sqlsandbox: log in as %s (set %s if the server asks for a password): %w", cfg.Role, EnvPassword, err)
	}
	return pool, nil
}

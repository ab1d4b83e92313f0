package tenant

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"golang.org/x/crypto/bcrypt"

	"github.com/shopmind/shopmind/internal/config"
)

// DemoTenant is the tenant created on first start when SHOPMIND_DEMO_TENANT is true.
const DemoTenant = config.DemoTenantCode

// bootstrap creates the demo tenant on first start when the configuration asks for it
// (SHOPMIND_DEMO_TENANT): the tenant skeleton every tenant gets, organisations ops and
// bi, user admin (administrator, SHOPMIND_ADMIN_PASSWORD) and user analyst (read-only role,
// SHOPMIND_DEMO_ANALYST_PASSWORD). It does nothing when the tenant exists, so passwords
// changed later are kept; concurrent replicas are serialised by the unique tenant code.
func bootstrap(ctx context.Context, st *store, cfg *config.Config, log *slog.Logger) error {
	if cfg.Mode == config.ModeProduction {
		warnDefaultPasswords(ctx, st, log)
	}
	if !cfg.DemoTenant {
		log.Info("demo tenant not requested (SHOPMIND_DEMO_TENANT=false): none created; create tenants with `shopmind tenant create`")
		return nil
	}
	adminHash, err := bcrypt.GenerateFromPassword([]byte(cfg.AdminPassword), cfg.Auth.BcryptCost)
	if err != nil {
		return err
	}
	analystHash, err := bcrypt.GenerateFromPassword([]byte(cfg.DemoAnalystPassword), cfg.Auth.BcryptCost)
	if err != nil {
		return err
	}
	created := false
	err = pgx.BeginFunc(ctx, st.pool, func(tx pgx.Tx) error {
		sk, err := createSkeleton(ctx, tx, DemoTenant, "Demo shop group")
		if err != nil || sk == nil { // nil: already there
			return err
		}
		created = true
		var ops int64
		if err := tx.QueryRow(ctx, `INSERT INTO tenant.orgs (tenant_id, parent_id, code, name, sort_order) VALUES ($1, $2, 'ops', 'Operations', 1) RETURNING id`, sk.tenantID, sk.hq).Scan(&ops); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO tenant.orgs (tenant_id, parent_id, code, name, sort_order) VALUES ($1, $2, 'bi', 'Analytics', 2)`, sk.tenantID, sk.hq); err != nil {
			return err
		}
		if _, err := addUser(ctx, tx, sk.tenantID, sk.hq, sk.adminRole, "admin", "Administrator", "admin@demo.shopmind.local", adminHash, true); err != nil {
			return err
		}
		_, err = addUser(ctx, tx, sk.tenantID, ops, sk.analystRole, "analyst", "Demo analyst", "analyst@demo.shopmind.local", analystHash, false)
		return err
	})
	if err == nil && created {
		log.Info("demo tenant created", "tenant", DemoTenant, "users", "admin (administrator), analyst (read-only)")
	}
	return err
}

// warnDefaultPasswords warns about users of a demo tenant left by an earlier start that
// still have the development passwords. It only reports: the operator changes or disables
// them.
func warnDefaultPasswords(ctx context.Context, st *store, log *slog.Logger) {
	rows, err := st.pool.Query(ctx, `SELECT u.username, u.password_hash FROM tenant.users u
		JOIN tenant.tenants t ON t.id = u.tenant_id
		WHERE t.code = $1 AND u.username IN ('admin', 'analyst') AND u.status = 'enabled'`, DemoTenant)
	if err != nil {
		log.Warn("demo tenant: default password check failed", "error", err)
		return
	}
	defaults := map[string]string{"admin": config.DevAdminPassword, "analyst": config.DevAnalystPassword}
	type user struct{ name, hash string }
	var users []user
	for rows.Next() {
		var u user
		if err := rows.Scan(&u.name, &u.hash); err != nil {
			log.Warn("demo tenant: default password check failed", "error", err)
			rows.Close()
			return
		}
		users = append(users, u)
	}
	rows.Close()
	for _, u := range users {
		if bcrypt.CompareHashAndPassword([]byte(u.hash), []byte(defaults[u.name])) == nil {
			log.Warn("production: a user of tenant demo still has the development default password; change it or disable the user",
				"tenant", DemoTenant, "user", u.name)
		}
	}
}

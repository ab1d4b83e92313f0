package stack

import (
	"context"
	"testing"

	"github.com/shopmind/shopmind/internal/testutil/pgtest"
)

// DemoTenant is the id of tenant demo (the one the migrations seed, whose admin signs in
// with AdminPassword).
func DemoTenant(t testing.TB, db *pgtest.Database) int64 {
	t.Helper()
	var id int64
	if err := db.Pool.QueryRow(context.Background(), "SELECT id FROM tenant.tenants WHERE code = 'demo'").Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// AddTenant inserts tenant code (named code) with an administrator "admin" who has the demo
// admin's password (AdminPassword), and returns its id: set-up for tests of other things
// than tenant creation, which the administration endpoints' own tests cover.
func AddTenant(t testing.TB, db *pgtest.Database, code string) int64 {
	t.Helper()
	ctx := context.Background()
	var id int64
	if err := db.Pool.QueryRow(ctx, "INSERT INTO tenant.tenants (code, name) VALUES ($1, $1) RETURNING id", code).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO tenant.users (tenant_id, username, password_hash, is_admin)
		SELECT $1, 'admin', password_hash, true FROM tenant.users WHERE username = 'admin' AND tenant_id = (SELECT id FROM tenant.tenants WHERE code = 'demo')`, id); err != nil {
		t.Fatal(err)
	}
	return id
}

// AddShop inserts an active shop of tenant and returns its id (shops come from platform
// authorization, which has no endpoint).
func AddShop(t testing.TB, db *pgtest.Database, tenant int64, name, platform, platformShopID string) int64 {
	t.Helper()
	var id int64
	if err := db.Pool.QueryRow(context.Background(), `INSERT INTO basic.shops (tenant_id, name, platform, platform_shop_id, status)
		VALUES ($1, $2, $3, $4, 'active') RETURNING id`, tenant, name, platform, platformShopID).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

package tenant

import (
	"context"
	"log/slog"
	"slices"
	"sort"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	tenantv1 "github.com/shopmind/shopmind/gen/go/shopmind/tenant/v1"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/config"
	"github.com/shopmind/shopmind/internal/testutil/pgtest"
)

// queryCounter counts the statements a pool sends.
type queryCounter struct{ n atomic.Int64 }

func (c *queryCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *queryCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// Round trips per request: GetInfo and GetUserPermissions each ask PostgreSQL once (the
// operator flag comes with the permissions, not in a second query), and an administrator's
// permissions are the whole catalog.
func TestOneQueryPerRequest(t *testing.T) {
	db := pgtest.New(t, authn.Migrations(), *migrations())
	ctx := context.Background()
	dev, err := config.FromMap(map[string]string{"SHOPMIND_BCRYPT_COST": "4"})
	if err != nil {
		t.Fatal(err)
	}
	if err := bootstrap(ctx, &store{pool: db.Pool}, dev, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	counter := &queryCounter{}
	cfg.ConnConfig.Tracer = counter
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	st := &store{pool: pool}
	dir := &directory{store: st}
	var tenantID, adminID, analystID int64
	if err := pool.QueryRow(ctx, `SELECT t.id, a.id, b.id FROM tenant.tenants t JOIN tenant.users a ON a.tenant_id = t.id AND a.username = 'admin'
		JOIN tenant.users b ON b.tenant_id = t.id AND b.username = 'analyst' WHERE t.code = 'demo'`).Scan(&tenantID, &adminID, &analystID); err != nil {
		t.Fatal(err)
	}
	catalog := make([]string, 0)
	for c := range authn.Permissions() {
		catalog = append(catalog, c)
	}
	sort.Strings(catalog)
	for _, u := range []struct {
		id    int64
		admin bool
	}{{adminID, true}, {analystID, false}} {
		caller := authn.WithIdentity(ctx, &authn.Identity{TenantID: tenantID, UserID: u.id, IsAdmin: u.admin})
		counter.n.Store(0)
		info, err := (&authServer{dir: dir}).GetInfo(caller, &tenantv1.GetInfoRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if n := counter.n.Load(); n != 1 {
			t.Errorf("GetInfo (admin %v): %d queries, want 1", u.admin, n)
		}
		if u.admin && !slices.Equal(info.GetUser().GetPermissions(), catalog) {
			t.Errorf("admin permissions %v, want the catalog %v", info.GetUser().GetPermissions(), catalog)
		}
		counter.n.Store(0)
		perms, err := (&internalServer{dir: dir}).GetUserPermissions(caller, &tenantv1.GetUserPermissionsRequest{TenantId: tenantID, UserId: u.id})
		if err != nil {
			t.Fatal(err)
		}
		if n := counter.n.Load(); n != 1 {
			t.Errorf("GetUserPermissions (admin %v): %d queries, want 1", u.admin, n)
		}
		if perms.GetIsPlatformOperator() {
			t.Errorf("demo user %d is not a platform operator", u.id)
		}
	}
	if _, err := pool.Exec(ctx, `UPDATE tenant.tenants SET is_operator = true WHERE id = $1`, tenantID); err != nil {
		t.Fatal(err)
	}
	caller := authn.WithIdentity(ctx, &authn.Identity{TenantID: tenantID, UserID: adminID, IsAdmin: true})
	perms, err := (&internalServer{dir: dir}).GetUserPermissions(caller, &tenantv1.GetUserPermissionsRequest{TenantId: tenantID, UserId: adminID})
	if err != nil || !perms.GetIsPlatformOperator() {
		t.Errorf("administrator of an operator tenant: %v %v", perms, err)
	}
}

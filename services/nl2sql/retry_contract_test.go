package nl2sql_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	nl2sqlv1 "github.com/shopmind/shopmind/gen/go/shopmind/nl2sql/v1"
	"github.com/shopmind/shopmind/internal/testutil"
	"github.com/shopmind/shopmind/internal/testutil/stack"
)

// CreatePolicy commits at the provider before it records the policy locally. A local
// failure after that must not answer a failure for a change that was made: the answer is
// the policy, recorded as soon as the database takes it. A retry with the same name answers
// the same policy (nothing twice at the provider); the same name for other content is 409.
func TestContractCreatePolicyRetrySafe(t *testing.T) {
	s := stack.StartServices(t, "basic", "nl2sql", "nl2sql-provider")
	c := nl2sqlv1.NewNl2SqlServiceClient(s.Conn)
	shop := addShop(t, s, stack.DemoTenant(t, s.DB), "demo-shop-retry")
	setup, err := c.SetupDatasource(addOperator(t, s), &nl2sqlv1.SetupDatasourceRequest{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Every local insert of a policy fails while public.fail_policies holds a row.
	for _, q := range []string{
		`CREATE TABLE public.fail_policies (x int)`,
		`INSERT INTO public.fail_policies VALUES (1)`,
		`CREATE FUNCTION public.fail_policy() RETURNS trigger LANGUAGE plpgsql AS $$
		 BEGIN IF EXISTS (SELECT 1 FROM public.fail_policies) THEN RAISE EXCEPTION 'injected failure'; END IF; RETURN NEW; END $$`,
		`CREATE TRIGGER fail_policy BEFORE INSERT ON nl2sql.policies FOR EACH ROW EXECUTE FUNCTION public.fail_policy()`,
	} {
		if _, err := s.DB.Pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	req := &nl2sqlv1.CreatePolicyRequest{DatasourceId: setup.GetDatasourceId(), ShopIds: []int64{shop}, Name: "retry-safe"}
	first, err := c.CreatePolicy(s.Admin, req)
	if err != nil {
		t.Fatalf("CreatePolicy with the local store failing after the provider committed: %v (want the policy)", err)
	}
	if _, err := s.DB.Pool.Exec(ctx, `DELETE FROM public.fail_policies`); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 20*time.Second, "the policy recorded locally", func() bool {
		var n int
		_ = s.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM nl2sql.policies WHERE policy_id = $1 AND role_id = $2`, first.GetPolicyId(), first.GetRoleId()).Scan(&n)
		return n == 1
	})
	again, err := c.CreatePolicy(s.Admin, req)
	if err != nil || again.GetPolicyId() != first.GetPolicyId() || again.GetRoleId() != first.GetRoleId() {
		t.Fatalf("retry: %v %v, want policy %s on role %s", again, err, first.GetPolicyId(), first.GetRoleId())
	}
	var atProvider int
	if err := s.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM nl2sql_provider.objects WHERE kind = 'policy' AND body->>'name' = 'retry-safe'`).Scan(&atProvider); err != nil {
		t.Fatal(err)
	}
	if atProvider != 1 {
		t.Errorf("%d policies named retry-safe at the provider, want 1", atProvider)
	}
	other := &nl2sqlv1.CreatePolicyRequest{DatasourceId: setup.GetDatasourceId(), ShopIds: []int64{shop}, Name: "retry-safe", TablePattern: "^basic_orders$"}
	_, err = c.CreatePolicy(s.Admin, other)
	wantCode(t, "the same name for another policy", err, codes.AlreadyExists, "retry-safe")
}

package nl2sql_test

import (
	"context"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nl2sqlv1 "github.com/shopmind/shopmind/gen/go/shopmind/nl2sql/v1"
	"github.com/shopmind/shopmind/internal/testutil"
	"github.com/shopmind/shopmind/internal/testutil/stack"
)

// addTenant creates a second tenant with an administrator (the demo admin's password) and
// one shop, and signs in; it returns the access context and the shop.
func addTenant(t *testing.T, s *stack.Services, code string) (context.Context, int64) {
	t.Helper()
	id := stack.AddTenant(t, s.DB, code)
	return stack.WithToken(context.Background(), s.Login(t, code, "admin", stack.AdminPassword)), addShop(t, s, id, code+"-shop")
}

// addOperator creates an operator tenant (as `shopmind tenant create --operator` does) and
// signs its administrator in.
func addOperator(t *testing.T, s *stack.Services) context.Context {
	t.Helper()
	ctx := context.Background()
	id := stack.AddTenant(t, s.DB, "ops")
	if _, err := s.DB.Pool.Exec(ctx, "UPDATE tenant.tenants SET is_operator = true WHERE id = $1", id); err != nil {
		t.Fatal(err)
	}
	return stack.WithToken(ctx, s.Login(t, "ops", "admin", stack.AdminPassword))
}

func addShop(t *testing.T, s *stack.Services, tenant int64, name string) int64 {
	t.Helper()
	return stack.AddShop(t, s.DB, tenant, name, "tmall", name)
}

func wantCode(t *testing.T, what string, err error, code codes.Code, contains string) {
	t.Helper()
	if status.Code(err) != code || !strings.Contains(status.Convert(err).Message(), contains) {
		t.Fatalf("%s: want %s containing %q, got %v", what, code, contains, err)
	}
}

// Contract test over gRPC against the built-in provider (target nl2sql-provider, in
// process): every RPC, its tenancy rules and its bad inputs.
func TestContractBuiltinProvider(t *testing.T) {
	s := stack.StartServices(t, "basic", "nl2sql", "nl2sql-provider")
	c := nl2sqlv1.NewNl2SqlServiceClient(s.Conn)
	ctx := s.Admin
	mine := addShop(t, s, stack.DemoTenant(t, s.DB), "demo-shop-a")
	mine2 := addShop(t, s, stack.DemoTenant(t, s.DB), "demo-shop-b")
	other, theirs := addTenant(t, s, "other")

	h, err := c.Health(context.Background(), &nl2sqlv1.HealthRequest{})
	if err != nil || h.GetStatus() != "healthy" || h.GetProvider() != "builtin" || !h.GetApiKeyValid() || !h.GetProviderReachable() || h.GetConfigSource() != "env" {
		t.Fatalf("Health: %v %v", h, err)
	}

	// Setup: platform operators only; re-runnable, the same ids each time; rebuild_metadata
	// rebuilds.
	_, err = c.SetupDatasource(ctx, &nl2sqlv1.SetupDatasourceRequest{})
	wantCode(t, "SetupDatasource by a tenant administrator", err, codes.PermissionDenied, "platform operators only")
	ops := addOperator(t, s)
	setup, err := c.SetupDatasource(ops, &nl2sqlv1.SetupDatasourceRequest{})
	if err != nil || setup.GetDatasourceId() == "" || setup.GetBotId() == "" || setup.GetRoleId() == "" || setup.GetPolicyId() == "" || setup.GetTables() < 5 || !setup.GetMetadataRebuilt() {
		t.Fatalf("SetupDatasource: %v %v", setup, err)
	}
	again, err := c.SetupDatasource(ops, &nl2sqlv1.SetupDatasourceRequest{})
	if err != nil || again.GetDatasourceId() != setup.GetDatasourceId() || again.GetBotId() != setup.GetBotId() || again.GetRoleId() != setup.GetRoleId() || again.GetMetadataRebuilt() {
		t.Fatalf("SetupDatasource again: %v %v (first %v)", again, err, setup)
	}
	rebuilt, err := c.SetupDatasource(ops, &nl2sqlv1.SetupDatasourceRequest{RebuildMetadata: true})
	if err != nil || rebuilt.GetDatasourceId() != setup.GetDatasourceId() || !rebuilt.GetMetadataRebuilt() {
		t.Fatalf("SetupDatasource rebuild: %v %v", rebuilt, err)
	}
	// An unreachable database fails the setup with the reason; the next run repairs it.
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	port := closed.Addr().(*net.TCPAddr).Port
	_ = closed.Close()
	_, err = c.SetupDatasource(ops, &nl2sqlv1.SetupDatasourceRequest{Host: "127.0.0.1", Port: int32(port)})
	wantCode(t, "setup with an unreachable database", err, codes.Unavailable, "could not build the metadata")
	if !strings.Contains(status.Convert(err).Message(), "previous connection was restored") {
		t.Fatalf("the failed connection was not rolled back: %v", err)
	}
	// The datasource still works for everyone: a token and a chat right after.
	if _, err := c.CreateEmbedUrl(ctx, &nl2sqlv1.CreateEmbedUrlRequest{ShopIds: []int64{mine}}); err != nil {
		t.Fatalf("after a failed setup: %v", err)
	}
	if again, err = c.SetupDatasource(ops, &nl2sqlv1.SetupDatasourceRequest{}); err != nil || again.GetDatasourceId() != setup.GetDatasourceId() {
		t.Fatalf("setup re-run after the failure: %v %v", again, err)
	}

	// Tokens: the caller's shops only; cached while they live.
	tok, err := c.CreateToken(ctx, &nl2sqlv1.CreateTokenRequest{ShopIds: []int64{mine, mine2}})
	if err != nil || tok.GetToken() == "" || tok.GetExpiresAt() == nil || len(tok.GetShopIds()) != 2 {
		t.Fatalf("CreateToken: %v %v", tok, err)
	}
	if again, err := c.CreateToken(ctx, &nl2sqlv1.CreateTokenRequest{ShopIds: []int64{mine2, mine}}); err != nil || again.GetToken() != tok.GetToken() {
		t.Fatalf("CreateToken for the same shops: want the cached token, got %v %v", again, err)
	}
	_, err = c.CreateToken(ctx, &nl2sqlv1.CreateTokenRequest{ShopIds: []int64{mine, theirs}})
	wantCode(t, "CreateToken with another tenant's shop", err, codes.PermissionDenied, "does not belong to your tenant")
	_, err = c.CreateToken(ctx, &nl2sqlv1.CreateTokenRequest{ShopIds: []int64{999999}})
	wantCode(t, "CreateToken with an unknown shop", err, codes.PermissionDenied, "999999")
	_, err = c.CreateToken(ctx, &nl2sqlv1.CreateTokenRequest{})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(strings.Join(stack.Violations(err), ","), "shop_ids") {
		t.Fatalf("CreateToken without shops: %v", err)
	}
	_, err = c.CreateToken(ctx, &nl2sqlv1.CreateTokenRequest{ShopIds: []int64{mine, -1}})
	wantCode(t, "CreateToken with a negative shop id", err, codes.InvalidArgument, "shop_ids")

	// Chats: bound to a token of the caller's tenant.
	ch, err := c.CreateChat(ctx, &nl2sqlv1.CreateChatRequest{Token: tok.GetToken()})
	if err != nil || ch.GetChatId() == "" || ch.GetBotId() != setup.GetBotId() {
		t.Fatalf("CreateChat: %v %v", ch, err)
	}
	got, err := c.GetChat(ctx, &nl2sqlv1.GetChatRequest{ChatId: ch.GetChatId()})
	if err != nil || got.GetBotId() != ch.GetBotId() || len(got.GetShopIds()) != 2 || got.GetTokenExpiresAt() == nil {
		t.Fatalf("GetChat: %v %v", got, err)
	}
	_, err = c.GetChat(other, &nl2sqlv1.GetChatRequest{ChatId: ch.GetChatId()})
	wantCode(t, "GetChat of another tenant", err, codes.NotFound, "not found")
	_, err = c.CreateChat(other, &nl2sqlv1.CreateChatRequest{Token: tok.GetToken()})
	wantCode(t, "CreateChat with another tenant's token", err, codes.InvalidArgument, "token")
	_, err = c.CreateChat(ctx, &nl2sqlv1.CreateChatRequest{Token: "not-a-token"})
	wantCode(t, "CreateChat with an unknown token", err, codes.InvalidArgument, "token")

	// Embed URL: the provider address with chatId and the temporary token.
	emb, err := c.CreateEmbedUrl(ctx, &nl2sqlv1.CreateEmbedUrlRequest{ShopIds: []int64{mine}})
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(emb.GetEmbedUrl())
	if err != nil || u.Path != "/embed" || u.Query().Get("chatId") != emb.GetChatId() || u.Query().Get("apiKey") != emb.GetToken() || emb.GetToken() == "" {
		t.Fatalf("CreateEmbedUrl: %v %v", emb, err)
	}
	_, err = c.CreateEmbedUrl(ctx, &nl2sqlv1.CreateEmbedUrlRequest{ShopIds: []int64{theirs}})
	wantCode(t, "CreateEmbedUrl with another tenant's shop", err, codes.PermissionDenied, "does not belong")

	// Policies: the configured datasource only; table families; the tenant's shops.
	_, err = c.CreatePolicy(ctx, &nl2sqlv1.CreatePolicyRequest{DatasourceId: "ds_other", ShopIds: []int64{mine}})
	if status.Code(err) != codes.InvalidArgument || strings.Join(stack.Violations(err), ",") != "datasource_id" {
		t.Fatalf("CreatePolicy on another datasource: %v", err)
	}
	pol, err := c.CreatePolicy(ctx, &nl2sqlv1.CreatePolicyRequest{DatasourceId: setup.GetDatasourceId(), ShopIds: []int64{mine}, TablePattern: "^basic_orders$"})
	if err != nil || pol.GetPolicyId() == "" || pol.GetRoleId() == "" || pol.GetRowFilterSql() != "shop_id IN ("+itoa(mine)+")" || pol.GetTablePattern() != "^basic_orders$" {
		t.Fatalf("CreatePolicy: %v %v", pol, err)
	}
	_, err = c.CreatePolicy(ctx, &nl2sqlv1.CreatePolicyRequest{DatasourceId: setup.GetDatasourceId(), ShopIds: []int64{theirs}})
	wantCode(t, "CreatePolicy with another tenant's shop", err, codes.PermissionDenied, "does not belong")
	_, err = c.CreatePolicy(ctx, &nl2sqlv1.CreatePolicyRequest{DatasourceId: setup.GetDatasourceId(), ShopIds: []int64{mine}, TablePattern: "^basic_x|.*"})
	wantCode(t, "CreatePolicy with an escaping table pattern", err, codes.InvalidArgument, "table_pattern")
	_, err = c.CreatePolicy(ctx, &nl2sqlv1.CreatePolicyRequest{DatasourceId: setup.GetDatasourceId(), ShopIds: []int64{mine}, TablePattern: "^users"})
	wantCode(t, "CreatePolicy with a table pattern outside the families", err, codes.InvalidArgument, "table_pattern")
	varPol, err := c.CreatePolicy(ctx, &nl2sqlv1.CreatePolicyRequest{DatasourceId: setup.GetDatasourceId(), RoleId: pol.GetRoleId(),
		RowFilter: &nl2sqlv1.RowFilter{Column: "shop_id", Operator: "in", Variable: "shop_ids"}})
	if err != nil || varPol.GetRoleId() != pol.GetRoleId() || varPol.GetRowFilterSql() != "shop_id IN {{ shop_ids }}" {
		t.Fatalf("CreatePolicy with a variable on the tenant's role: %v %v", varPol, err)
	}
	_, err = c.CreatePolicy(other, &nl2sqlv1.CreatePolicyRequest{DatasourceId: setup.GetDatasourceId(), ShopIds: []int64{theirs}, RoleId: pol.GetRoleId()})
	wantCode(t, "CreatePolicy on another tenant's role", err, codes.PermissionDenied, "role")
	_, err = c.CreatePolicy(ctx, &nl2sqlv1.CreatePolicyRequest{DatasourceId: setup.GetDatasourceId(), ShopIds: []int64{mine}, RoleId: setup.GetRoleId()})
	wantCode(t, "CreatePolicy on the shared role", err, codes.PermissionDenied, "role")

	// Tokens playing the tenant's role; never another tenant's.
	if rt, err := c.CreateToken(ctx, &nl2sqlv1.CreateTokenRequest{ShopIds: []int64{mine}, RoleId: pol.GetRoleId()}); err != nil || rt.GetToken() == tok.GetToken() {
		t.Fatalf("CreateToken with the tenant's role: %v %v", rt, err)
	}
	_, err = c.CreateToken(other, &nl2sqlv1.CreateTokenRequest{ShopIds: []int64{theirs}, RoleId: pol.GetRoleId()})
	wantCode(t, "CreateToken with another tenant's role", err, codes.PermissionDenied, "role")

	// Without a token: 401 on every RPC but Health.
	_, err = c.CreateToken(context.Background(), &nl2sqlv1.CreateTokenRequest{ShopIds: []int64{mine}})
	wantCode(t, "CreateToken without a token", err, codes.Unauthenticated, "")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Policies added to one role at once: the role at the provider holds every one of them
// (adding is a read-modify-write of the role's policy list at the provider; concurrent
// additions must not drop each other's).
func TestContractConcurrentPoliciesOnOneRole(t *testing.T) {
	s := stack.StartServices(t, "basic", "nl2sql", "nl2sql-provider")
	c := nl2sqlv1.NewNl2SqlServiceClient(s.Conn)
	shop := addShop(t, s, stack.DemoTenant(t, s.DB), "demo-shop-a")
	setup, err := c.SetupDatasource(addOperator(t, s), &nl2sqlv1.SetupDatasourceRequest{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := c.CreatePolicy(s.Admin, &nl2sqlv1.CreatePolicyRequest{DatasourceId: setup.GetDatasourceId(), ShopIds: []int64{shop}})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		r   *nl2sqlv1.CreatePolicyResponse
		err error
	}
	rs := testutil.Burst(8, func(int) result {
		r, err := c.CreatePolicy(s.Admin, &nl2sqlv1.CreatePolicyRequest{DatasourceId: setup.GetDatasourceId(), ShopIds: []int64{shop}, RoleId: first.GetRoleId()})
		return result{r, err}
	})
	want := []string{first.GetPolicyId()}
	for _, x := range rs {
		if x.err != nil || x.r.GetRoleId() != first.GetRoleId() {
			t.Fatalf("CreatePolicy on role %s: %v %v", first.GetRoleId(), x.r, x.err)
		}
		want = append(want, x.r.GetPolicyId())
	}
	var held []string
	if err := s.DB.Pool.QueryRow(context.Background(), `SELECT array(SELECT jsonb_array_elements_text(body->'policy_ids'))
		FROM nl2sql_provider.objects WHERE kind = 'role' AND id = $1`, first.GetRoleId()).Scan(&held); err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	slices.Sort(held)
	if !slices.Equal(held, want) {
		t.Errorf("the role holds policies %v at the provider, the answers put %v on it", held, want)
	}
}

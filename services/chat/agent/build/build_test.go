package build

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	analysisv1 "github.com/shopmind/shopmind/gen/go/shopmind/analysis/v1"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/testutil/pgtest"
	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/agent/agenttest"
	"github.com/shopmind/shopmind/services/chat/agent/entities"
	"github.com/shopmind/shopmind/services/chat/agent/llmagent"
	"github.com/shopmind/shopmind/services/chat/agent/team"
	"github.com/shopmind/shopmind/services/chat/chatconfig"
	"github.com/shopmind/shopmind/services/chat/llm/llmtest"
)

// analysisServer serves the fake semantic layer over gRPC and refuses calls without the
// forwarded bearer token, as the real interceptor does.
type analysisServer struct {
	analysisv1.UnimplementedMetricServiceServer
	analysisv1.UnimplementedQueryServiceServer
	f    *agenttest.FakeAnalytics
	mu   sync.Mutex
	envs []string
}

func (s *analysisServer) check(ctx context.Context) error {
	md, _ := metadata.FromIncomingContext(ctx)
	if a := md.Get("authorization"); len(a) != 1 || a[0] != "Bearer tok-123" {
		return status.Error(codes.Unauthenticated, "missing token")
	}
	s.mu.Lock()
	s.envs = append(s.envs, md.Get(authn.EnvHeader)...)
	s.mu.Unlock()
	return nil
}

func (s *analysisServer) ListMetrics(ctx context.Context, r *analysisv1.ListMetricsRequest) (*analysisv1.ListMetricsResponse, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	return s.f.ListMetrics(context.Background(), r)
}

func (s *analysisServer) GetCatalog(ctx context.Context, r *analysisv1.GetCatalogRequest) (*analysisv1.GetCatalogResponse, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	return s.f.GetCatalog(context.Background(), r)
}

func (s *analysisServer) PreviewQuery(ctx context.Context, r *analysisv1.PreviewQueryRequest) (*analysisv1.PreviewQueryResponse, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	return s.f.PreviewQuery(context.Background(), r)
}

func startAnalysis(t *testing.T) (*analysisServer, func(string) (grpc.ClientConnInterface, error)) {
	t.Helper()
	srv := &analysisServer{f: agenttest.NewFakeAnalytics()}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	analysisv1.RegisterMetricServiceServer(s, srv)
	analysisv1.RegisterQueryServiceServer(s, srv)
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	var dialled []string
	dial := func(target string) (grpc.ClientConnInterface, error) {
		dialled = append(dialled, target)
		if target != AnalysisTarget && target != entities.BasicTarget && target != entities.CrxTarget {
			return nil, errors.New("unexpected target " + target)
		}
		return grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	}
	return srv, dial
}

func TestGRPCAnalyticsForwardsIdentity(t *testing.T) {
	srv, dial := startAnalysis(t)
	conn, _ := dial(AnalysisTarget)
	g := agent.NewGRPCAnalytics(conn, 0)
	if _, err := g.ListMetrics(context.Background(), &analysisv1.ListMetricsRequest{}); !errors.Is(err, agent.ErrNoIdentity) {
		t.Fatalf("without identity: %v", err)
	}
	ctx := authn.WithIdentity(context.Background(), agenttest.Identity())
	resp, err := g.ListMetrics(ctx, &analysisv1.ListMetricsRequest{})
	if err != nil || len(resp.GetGroups()) != 4 { // After-sales, Customers, Goods, Sales
		t.Fatalf("%v %v", resp, err)
	}
	if _, err := g.GetCatalog(ctx, &analysisv1.GetCatalogRequest{}); err != nil {
		t.Fatal(err)
	}
	_, err = g.PreviewQuery(ctx, &analysisv1.PreviewQueryRequest{MetricNames: []string{"nope"}, StartTime: timestamppb.New(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)), EndTime: timestamppb.New(time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC))})
	if status.Code(err) != codes.InvalidArgument || agent.ToolErrorMessage(err) != `metric_names: unknown metric "nope"` {
		t.Fatalf("%v", err)
	}
	if len(srv.envs) != 3 || srv.envs[0] != "test" {
		t.Fatalf("x-env %v", srv.envs)
	}
}

func TestNewOfflineWithPostgres(t *testing.T) {
	db := pgtest.New(t) // New applies the chatvec migrations itself
	_, dial := startAnalysis(t)
	llmCfg := mustLLMConfig(t, map[string]string{})
	a, checks, err := New(context.Background(), llmCfg, dial, db.Pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.(*team.Planner); !ok {
		t.Fatalf("%T", a)
	}
	if len(checks) != 1 || checks[0].Name() != "vector_store" || checks[0].Kind() != "postgres" || checks[0].Check(context.Background()) != nil {
		t.Fatalf("%+v", checks)
	}
	ev := agenttest.Ask(t, a, "What was GMV by shop last 7 days?")
	if !strings.Contains(ev.Text(), "**GMV** (gmv) in the last 7 days") || len(ev.Visualizations()) != 1 {
		t.Fatal(ev.Text())
	}
	// the metric catalog was indexed in chatvec
	var n int
	if err := db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM chatvec.items WHERE tenant_id = 42 AND collection = 'metrics'").Scan(&n); err != nil || n < 20 {
		t.Fatalf("%d items: %v", n, err)
	}
	// a second New on the same database: migrations are applied once
	if _, _, err := New(context.Background(), llmCfg, dial, db.Pool, nil); err != nil {
		t.Fatal(err)
	}
}

func TestNewLLMAgentFromConfig(t *testing.T) {
	_, dial := startAnalysis(t)
	srv := llmtest.New(t, llmtest.Reply{Text: []string{"Hello from the model."}})
	cfg := mustLLMConfig(t, map[string]string{
		"SHOPMIND_LLM_BASE_URL": srv.BaseURL(), "SHOPMIND_LLM_MODEL": "fake-gpt", "SHOPMIND_VECTOR_STORE": "memory",
		"SHOPMIND_EMBEDDINGS_MODEL": "fake-emb", "SHOPMIND_AGENT_MAX_ITERATIONS": "2",
	})
	a, checks, err := New(context.Background(), cfg, dial, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	la, ok := a.(*llmagent.Agent)
	if !ok || la.Options().MaxIterations != 2 || checks[0].Kind() != "memory" {
		t.Fatalf("%T %+v", a, checks)
	}
	ev := agenttest.Ask(t, a, "hi")
	if ev.Text() != "Hello from the model." {
		t.Fatal(ev.Text())
	}
	// search_indicators embeds with the configured endpoint
	content, _, err := la.Tools().Run(authn.WithIdentity(context.Background(), agenttest.Identity()), &agent.ToolEnv{Request: &agent.Request{Identity: agenttest.Identity()}},
		agent.ToolSearchIndicators, `{"query":"gmv"}`)
	if err != nil || !strings.Contains(content, `"name":"gmv"`) || len(srv.EmbeddingInputs()) != 2 {
		t.Fatalf("%v %s %v", err, content, srv.EmbeddingInputs())
	}
	// a memory store without a database
	cfg = mustLLMConfig(t, map[string]string{})
	a, checks, err = New(context.Background(), cfg, dial, nil, nil)
	if err != nil || checks[0].Kind() != "memory" {
		t.Fatalf("%v %+v", err, checks)
	}
	if _, ok := a.(*team.Planner); !ok {
		t.Fatalf("%T", a)
	}
	// Neo4j by configuration (lazy: no server needed to build), its health reported
	cfg = mustLLMConfig(t, map[string]string{"SHOPMIND_NEO4J_URI": "bolt://127.0.0.1:1"})
	_, checks, err = New(context.Background(), cfg, dial, nil, nil)
	if err != nil || len(checks) != 2 || checks[1].Name() != "graph_store" || checks[1].Kind() != "neo4j" || checks[1].Check(context.Background()) == nil {
		t.Fatalf("%v %+v", err, checks)
	}
	for _, bad := range []map[string]string{{"SHOPMIND_GRAPH_STORE": "neo4j"}, {"SHOPMIND_GRAPH_STORE": "neo4j", "SHOPMIND_NEO4J_URI": "http://x:7474"},
		{"SHOPMIND_GRAPH_STORE": "arango"}} {
		if _, err := chatconfig.LLMFromMap(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	// qdrant by configuration (lazy: no server needed to build)
	cfg = mustLLMConfig(t, map[string]string{"SHOPMIND_QDRANT_ADDR": "127.0.0.1:1"})
	_, checks, err = New(context.Background(), cfg, dial, nil, nil)
	if err != nil || checks[0].Kind() != "qdrant" {
		t.Fatalf("%v %+v", err, checks)
	}
}

func mustLLMConfig(t *testing.T, vars map[string]string) chatconfig.LLMConfig {
	t.Helper()
	c, err := chatconfig.LLMFromMap(vars)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

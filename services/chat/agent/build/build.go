// Package build assembles the chat agent from configuration (New): the analysis client,
// the embedder, the vector store, the tool registry, and the LLM agent or the offline
// analyst. The chat service calls it from its wiring.
package build

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc"

	"github.com/shopmind/shopmind/internal/postgres"
	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/agent/entities"
	"github.com/shopmind/shopmind/services/chat/agent/graph"
	"github.com/shopmind/shopmind/services/chat/agent/llmagent"
	"github.com/shopmind/shopmind/services/chat/agent/offline"
	"github.com/shopmind/shopmind/services/chat/agent/plan"
	"github.com/shopmind/shopmind/services/chat/agent/team"
	"github.com/shopmind/shopmind/services/chat/chatconfig"
	"github.com/shopmind/shopmind/services/chat/llm"
	"github.com/shopmind/shopmind/services/chat/promotion"
	"github.com/shopmind/shopmind/services/chat/vector"
)

// AnalysisTarget is the target the agents dial for the analysis service.
const AnalysisTarget = "analysis"

// MetricsCollection is the vector collection of the metric catalogs.
const MetricsCollection = "metrics"

// HealthCheck is a dependency the chat service's health endpoint reports; it satisfies
// the chat service's HealthChecker (Name, Check).
type HealthCheck struct {
	name, kind string
	check      func(ctx context.Context) error
}

// Name is the dependency: "vector_store".
func (h HealthCheck) Name() string { return h.name }

// Kind is the implementation: postgres, qdrant or memory.
func (h HealthCheck) Kind() string { return h.kind }

// Check returns nil when the dependency answers.
func (h HealthCheck) Check(ctx context.Context) error { return h.check(ctx) }

// New builds the chat agent from configuration: the LLM agent when a model endpoint is
// configured (cfg.LLMEnabled), the offline analyst otherwise; both with the tools over the
// analysis service (dialled as target "analysis", called with the caller's identity) and
// the metric vector index (PostgreSQL schema chatvec by default, whose migrations New
// applies; Qdrant or memory by configuration). pool may be nil (the store is then in
// memory). It returns the health checks of its dependencies (the vector database).
func New(ctx context.Context, cfg chatconfig.LLMConfig, dial func(target string) (grpc.ClientConnInterface, error), pool *pgxpool.Pool, logger *slog.Logger) (agent.Agent, []HealthCheck, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	conn, err := dial(AnalysisTarget)
	if err != nil {
		return nil, nil, fmt.Errorf("chat agent: dial analysis: %w", err)
	}
	analytics := agent.NewGRPCAnalytics(conn, cfg.AnalyticsTimeout)

	var embedder vector.Embedder = vector.NewHashEmbedder(cfg.EmbeddingDimensions)
	if cfg.EmbeddingsEnabled() {
		emb, err := llm.NewEmbeddings(llm.EmbeddingsConfig{Endpoint: llm.Endpoint{BaseURL: cfg.EmbeddingsBaseURL,
			APIKey: cfg.EmbeddingsAPIKey, Model: cfg.EmbeddingsModel, Timeout: cfg.EmbeddingsTimeout, MaxRetries: cfg.MaxRetries}})
		if err != nil {
			return nil, nil, fmt.Errorf("chat agent: %w", err)
		}
		embedder = emb
	}

	if cfg.VectorStore != "qdrant" && cfg.VectorStore != "memory" && pool != nil { // the PostgreSQL store, once for its collections
		if err := postgres.Migrate(ctx, pool, logger, vector.Migrations()); err != nil {
			return nil, nil, fmt.Errorf("chat agent: %w", err)
		}
	}
	store, err := openStore(cfg, pool, logger, MetricsCollection)
	if err != nil {
		return nil, nil, err
	}
	entityStore, err := openStore(cfg, pool, logger, entities.Collection)
	if err != nil {
		return nil, nil, err
	}
	basicConn, err := dial(entities.BasicTarget)
	if err != nil {
		return nil, nil, fmt.Errorf("chat agent: dial basic: %w", err)
	}
	basic := entities.NewGRPCBasic(basicConn, cfg.AnalyticsTimeout)
	adhocStore, err := openStore(cfg, pool, logger, entities.AdhocCollection)
	if err != nil {
		return nil, nil, err
	}
	crxConn, err := dial(entities.CrxTarget)
	if err != nil {
		return nil, nil, fmt.Errorf("chat agent: dial crx: %w", err)
	}
	// search_entities finds the pages users captured with the extension too (as the caller)
	entityIndex := entities.NewIndex(basic, entityStore, embedder).WithAdhoc(entities.NewGRPCAdhoc(crxConn, cfg.AnalyticsTimeout), adhocStore)
	index := agent.NewMetricIndex(store, embedder)
	tools := agent.NewRegistry(cfg.ToolResultMaxChars, append(agent.Tools(analytics, index, nil), agent.SQLTools(analytics)...)...)
	tools.Add(plan.Tool(analytics, nil))
	tools.Add(entityIndex.Tool())
	checks := []HealthCheck{{name: "vector_store", kind: store.Name(), check: store.Health}}
	if pool != nil { // the plans and the graph are kept in the chat service's schema
		plans := promotion.NewStore(pool)
		for _, t := range promotion.Tools(plans, promotion.NewGRPCGoods(basicConn, cfg.AnalyticsTimeout), nil) {
			tools.Add(t)
		}
		if cfg.GraphStore != "neo4j" {
			tools.Add(graph.NewBuilder(basic, basic, analytics, plans, graph.NewPostgres(pool), nil).Tool())
		}
	}
	if cfg.GraphStore == "neo4j" {
		neo, err := graph.NewNeo4j(graph.Neo4jConfig{URI: cfg.Neo4jURI, User: cfg.Neo4jUser, Password: cfg.Neo4jPassword, Database: cfg.Neo4jDatabase})
		if err != nil {
			return nil, nil, fmt.Errorf("chat agent: %w", err)
		}
		var plans graph.Plans
		if pool != nil {
			plans = promotion.NewStore(pool)
		}
		tools.Add(graph.NewBuilder(basic, basic, analytics, plans, neo, nil).Tool())
		checks = append(checks, HealthCheck{name: "graph_store", kind: neo.Name(), check: neo.Health})
	}

	teamOpts := team.Options{Concurrency: cfg.TeamConcurrency, Timeout: cfg.TeamTimeout, Logger: logger}

	if !cfg.LLMEnabled() {
		logger.Info("chat agent: offline team (no SHOPMIND_LLM_BASE_URL)", "vector_store", store.Name(), "embeddings", embedder.ID())
		experts := team.New(team.DefaultExperts(), team.NewOfflineRunner(analytics, tools, nil), teamOpts)
		tools.Add(experts.Tool())
		analyst := offline.New(analytics, tools, offline.Options{Logger: logger})
		return team.NewPlanner(analyst, experts, tools, offline.Model, nil), checks, nil
	}
	client, err := llm.New(llm.Config{Endpoint: llm.Endpoint{BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, Model: cfg.Model,
		Timeout: cfg.Timeout, MaxRetries: cfg.MaxRetries}, Temperature: cfg.Temperature, StreamIdleTimeout: cfg.StreamIdleTimeout})
	if err != nil {
		return nil, nil, fmt.Errorf("chat agent: %w", err)
	}
	logger.Info("chat agent: LLM agent", "model", cfg.Model, "vector_store", store.Name(), "embeddings", embedder.ID(),
		"max_iterations", cfg.MaxIterations)
	experts := team.New(team.DefaultExperts(), team.NewLLMRunner(client, tools, cfg.MaxIterations), teamOpts)
	tools.Add(experts.Tool())
	return llmagent.New(client, tools, llmagent.Options{MaxIterations: cfg.MaxIterations, Logger: logger,
		SystemPrompt: llmagent.DefaultSystemPrompt + "\n" + team.PlannerPrompt}), checks, nil
}

// openStore opens the configured vector store for one collection: PostgreSQL (schema
// chatvec, migrated by New; memory without a pool), Qdrant or memory.
func openStore(cfg chatconfig.LLMConfig, pool *pgxpool.Pool, logger *slog.Logger, collection string) (vector.Store, error) {
	switch cfg.VectorStore {
	case "qdrant":
		q, err := vector.NewQdrant(vector.QdrantConfig{Addr: cfg.QdrantAddr, APIKey: cfg.QdrantAPIKey, TLS: cfg.QdrantTLS,
			Collection: cfg.QdrantCollection + "_" + collection})
		if err != nil {
			return nil, fmt.Errorf("chat agent: %w", err)
		}
		return q, nil
	case "memory":
		return vector.NewMemory(), nil
	}
	if pool == nil {
		logger.Warn("chat agent: no database; a vector index is kept in memory", "collection", collection)
		return vector.NewMemory(), nil
	}
	return vector.NewPostgres(pool, collection), nil
}

package agent

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc"

	"github.com/shopmind/shopmind/internal/postgres"
	"github.com/shopmind/shopmind/services/chat/chatconfig"
	"github.com/shopmind/shopmind/services/chat/llm"
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
func New(ctx context.Context, cfg chatconfig.LLMConfig, dial func(target string) (grpc.ClientConnInterface, error), pool *pgxpool.Pool, logger *slog.Logger) (Agent, []HealthCheck, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	conn, err := dial(AnalysisTarget)
	if err != nil {
		return nil, nil, fmt.Errorf("chat agent: dial analysis: %w", err)
	}
	analytics := NewGRPCAnalytics(conn, cfg.AnalyticsTimeout)

	var embedder vector.Embedder = vector.NewHashEmbedder(cfg.EmbeddingDimensions)
	if cfg.EmbeddingsEnabled() {
		emb, err := llm.NewEmbeddings(llm.EmbeddingsConfig{Endpoint: llm.Endpoint{BaseURL: cfg.EmbeddingsBaseURL,
			APIKey: cfg.EmbeddingsAPIKey, Model: cfg.EmbeddingsModel, Timeout: cfg.EmbeddingsTimeout, MaxRetries: cfg.MaxRetries}})
		if err != nil {
			return nil, nil, fmt.Errorf("chat agent: %w", err)
		}
		embedder = emb
	}

	var store vector.Store
	switch cfg.VectorStore {
	case "qdrant":
		q, err := vector.NewQdrant(vector.QdrantConfig{Addr: cfg.QdrantAddr, APIKey: cfg.QdrantAPIKey, TLS: cfg.QdrantTLS,
			Collection: cfg.QdrantCollection + "_" + MetricsCollection})
		if err != nil {
			return nil, nil, fmt.Errorf("chat agent: %w", err)
		}
		store = q
	case "memory":
		store = vector.NewMemory()
	default:
		if pool == nil {
			logger.Warn("chat agent: no database; the metric vector index is kept in memory")
			store = vector.NewMemory()
			break
		}
		if err := postgres.Migrate(ctx, pool, logger, vector.Migrations()); err != nil {
			return nil, nil, fmt.Errorf("chat agent: %w", err)
		}
		store = vector.NewPostgres(pool, MetricsCollection)
	}
	index := NewMetricIndex(store, embedder)
	tools := NewRegistry(cfg.ToolResultMaxChars, Tools(analytics, index, nil)...)
	checks := []HealthCheck{{name: "vector_store", kind: store.Name(), check: store.Health}}

	if !cfg.LLMEnabled() {
		logger.Info("chat agent: offline analyst (no SHOPMIND_LLM_BASE_URL)", "vector_store", store.Name(), "embeddings", embedder.ID())
		return NewOfflineAnalyst(analytics, tools, OfflineOptions{Logger: logger}), checks, nil
	}
	client, err := llm.New(llm.Config{Endpoint: llm.Endpoint{BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, Model: cfg.Model,
		Timeout: cfg.Timeout, MaxRetries: cfg.MaxRetries}, Temperature: cfg.Temperature, StreamIdleTimeout: cfg.StreamIdleTimeout})
	if err != nil {
		return nil, nil, fmt.Errorf("chat agent: %w", err)
	}
	logger.Info("chat agent: LLM agent", "model", cfg.Model, "vector_store", store.Name(), "embeddings", embedder.ID(),
		"max_iterations", cfg.MaxIterations)
	return NewLLMAgent(client, tools, LLMOptions{MaxIterations: cfg.MaxIterations, Logger: logger}), checks, nil
}

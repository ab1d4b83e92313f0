package chatconfig

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/shopmind/shopmind/internal/config"
)

// LLM and agent defaults.
const (
	DefaultLLMModel              = "gpt-4o-mini"
	DefaultLLMTimeout            = 120 * time.Second
	DefaultLLMStreamIdleTimeout  = 60 * time.Second
	DefaultLLMMaxRetries         = 2
	DefaultAgentMaxIterations    = 6
	DefaultAgentToolResultChars  = 8000
	DefaultEmbeddingDimensions   = 256
	DefaultQdrantAddr            = "localhost:6334"
	DefaultQdrantCollectionStem  = "shopmind"
	DefaultVectorStore           = "postgres"
	DefaultAgentMode             = "auto"
	DefaultEmbeddingsTimeout     = 30 * time.Second
	DefaultAgentAnalyticsTimeout = 30 * time.Second
	DefaultTeamConcurrency       = 4
	DefaultTeamTimeout           = 90 * time.Second
)

// LLMConfig configures the chat agents: the OpenAI-compatible model and embeddings
// endpoints, the agent loop, and the vector store. Read by loadLLM; every variable is in
// services/chat/agent/AGENTS.md's table.
type LLMConfig struct {
	// AgentMode is auto (the LLM agent when BaseURL is set, the offline analyst otherwise),
	// llm or offline (SHOPMIND_CHAT_AGENT).
	AgentMode string
	// BaseURL is the OpenAI-compatible API root, for example https://api.openai.com/v1
	// (SHOPMIND_LLM_BASE_URL). Empty: no model; the offline analyst answers.
	BaseURL string
	// APIKey is sent as a bearer token (SHOPMIND_LLM_API_KEY); may be empty for local servers.
	APIKey string
	// Model is the chat model name (SHOPMIND_LLM_MODEL).
	Model string
	// Temperature is the sampling temperature; nil: the provider's default
	// (SHOPMIND_LLM_TEMPERATURE).
	Temperature *float64
	// Timeout bounds a non-streaming completion and the wait for a stream's first byte
	// (SHOPMIND_LLM_TIMEOUT).
	Timeout time.Duration
	// StreamIdleTimeout bounds the gap between two chunks of a stream
	// (SHOPMIND_LLM_STREAM_IDLE_TIMEOUT).
	StreamIdleTimeout time.Duration
	// MaxRetries is how often a request failing with 429 or 5xx before any output is retried
	// (SHOPMIND_LLM_MAX_RETRIES).
	MaxRetries int

	// EmbeddingsBaseURL is the embeddings API root (SHOPMIND_EMBEDDINGS_BASE_URL); empty:
	// BaseURL.
	EmbeddingsBaseURL string
	// EmbeddingsAPIKey (SHOPMIND_EMBEDDINGS_API_KEY); empty: APIKey.
	EmbeddingsAPIKey string
	// EmbeddingsModel is the embeddings model (SHOPMIND_EMBEDDINGS_MODEL). Empty: the local
	// hashed character n-gram embedding (EmbeddingDimensions wide).
	EmbeddingsModel string
	// EmbeddingsTimeout bounds one embeddings request (SHOPMIND_EMBEDDINGS_TIMEOUT).
	EmbeddingsTimeout time.Duration
	// EmbeddingDimensions is the width of the local embedding (SHOPMIND_EMBEDDING_DIMENSIONS).
	EmbeddingDimensions int

	// MaxIterations bounds the model calls of one LLM answer (SHOPMIND_AGENT_MAX_ITERATIONS).
	MaxIterations int
	// ToolResultMaxChars truncates longer tool results (SHOPMIND_AGENT_TOOL_RESULT_MAX_CHARS).
	ToolResultMaxChars int
	// AnalyticsTimeout bounds each call to the analysis service (SHOPMIND_AGENT_ANALYTICS_TIMEOUT).
	AnalyticsTimeout time.Duration
	// TeamConcurrency bounds the experts of a parallel analysis running at once
	// (SHOPMIND_AGENT_TEAM_CONCURRENCY).
	TeamConcurrency int
	// TeamTimeout is the deadline of each expert of a parallel analysis
	// (SHOPMIND_AGENT_TEAM_TIMEOUT).
	TeamTimeout time.Duration
	// GraphStore is the knowledge graph's store: postgres or neo4j (SHOPMIND_GRAPH_STORE;
	// default neo4j when SHOPMIND_NEO4J_URI is set, postgres otherwise).
	GraphStore string
	// Neo4jURI, Neo4jUser, Neo4jPassword, Neo4jDatabase locate Neo4j (SHOPMIND_NEO4J_*).
	Neo4jURI, Neo4jUser, Neo4jPassword, Neo4jDatabase string

	// VectorStore is postgres (embedded default, schema chatvec), qdrant or memory
	// (SHOPMIND_VECTOR_STORE).
	VectorStore string
	// QdrantAddr is the Qdrant gRPC address host:port (SHOPMIND_QDRANT_ADDR).
	QdrantAddr string
	// QdrantAPIKey (SHOPMIND_QDRANT_API_KEY).
	QdrantAPIKey string
	// QdrantTLS connects to Qdrant over TLS (SHOPMIND_QDRANT_TLS).
	QdrantTLS bool
	// QdrantCollection is the stem of the Qdrant collection names (SHOPMIND_QDRANT_COLLECTION).
	QdrantCollection string
}

// LLMEnabled reports whether the LLM agent answers (rather than the offline analyst).
func (c LLMConfig) LLMEnabled() bool {
	switch c.AgentMode {
	case "llm":
		return true
	case "offline":
		return false
	}
	return c.BaseURL != ""
}

// EmbeddingsEnabled reports whether a remote embeddings endpoint is configured.
func (c LLMConfig) EmbeddingsEnabled() bool {
	return c.EmbeddingsModel != "" && c.EmbeddingsBaseURL != ""
}

// loadLLM reads the LLM, agent and vector store variables, appending a message naming the
// variable to errs for each malformed value.
func loadLLM(getenv func(string) string, errs *[]string) LLMConfig {
	str := config.Vars{Getenv: getenv, Errs: errs}.Str
	dur := config.Vars{Getenv: getenv, Errs: errs}.Duration
	num := config.Vars{Getenv: getenv, Errs: errs}.Integer
	baseURL := func(key string) string {
		v := strings.TrimRight(strings.TrimSpace(getenv(key)), "/")
		if v == "" {
			return ""
		}
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			*errs = append(*errs, fmt.Sprintf("%s: %q is not an http(s) URL", key, v))
			return ""
		}
		return v
	}
	c := LLMConfig{
		AgentMode:           str("SHOPMIND_CHAT_AGENT", DefaultAgentMode),
		BaseURL:             baseURL("SHOPMIND_LLM_BASE_URL"),
		APIKey:              strings.TrimSpace(getenv("SHOPMIND_LLM_API_KEY")),
		Model:               str("SHOPMIND_LLM_MODEL", DefaultLLMModel),
		Timeout:             dur("SHOPMIND_LLM_TIMEOUT", DefaultLLMTimeout),
		StreamIdleTimeout:   dur("SHOPMIND_LLM_STREAM_IDLE_TIMEOUT", DefaultLLMStreamIdleTimeout),
		MaxRetries:          num("SHOPMIND_LLM_MAX_RETRIES", DefaultLLMMaxRetries, 0, 10),
		EmbeddingsBaseURL:   baseURL("SHOPMIND_EMBEDDINGS_BASE_URL"),
		EmbeddingsAPIKey:    strings.TrimSpace(getenv("SHOPMIND_EMBEDDINGS_API_KEY")),
		EmbeddingsModel:     strings.TrimSpace(getenv("SHOPMIND_EMBEDDINGS_MODEL")),
		EmbeddingsTimeout:   dur("SHOPMIND_EMBEDDINGS_TIMEOUT", DefaultEmbeddingsTimeout),
		EmbeddingDimensions: num("SHOPMIND_EMBEDDING_DIMENSIONS", DefaultEmbeddingDimensions, 16, 4096),
		MaxIterations:       num("SHOPMIND_AGENT_MAX_ITERATIONS", DefaultAgentMaxIterations, 1, 50),
		ToolResultMaxChars:  num("SHOPMIND_AGENT_TOOL_RESULT_MAX_CHARS", DefaultAgentToolResultChars, 200, 1_000_000),
		AnalyticsTimeout:    dur("SHOPMIND_AGENT_ANALYTICS_TIMEOUT", DefaultAgentAnalyticsTimeout),
		TeamConcurrency:     num("SHOPMIND_AGENT_TEAM_CONCURRENCY", DefaultTeamConcurrency, 1, 16),
		TeamTimeout:         dur("SHOPMIND_AGENT_TEAM_TIMEOUT", DefaultTeamTimeout),
		Neo4jURI:            strings.TrimSpace(getenv("SHOPMIND_NEO4J_URI")),
		Neo4jUser:           strings.TrimSpace(getenv("SHOPMIND_NEO4J_USER")),
		Neo4jPassword:       getenv("SHOPMIND_NEO4J_PASSWORD"),
		Neo4jDatabase:       strings.TrimSpace(getenv("SHOPMIND_NEO4J_DATABASE")),
		QdrantAddr:          str("SHOPMIND_QDRANT_ADDR", ""),
		QdrantAPIKey:        strings.TrimSpace(getenv("SHOPMIND_QDRANT_API_KEY")),
		QdrantCollection:    str("SHOPMIND_QDRANT_COLLECTION", DefaultQdrantCollectionStem),
	}
	graphDefault := "postgres"
	if c.Neo4jURI != "" {
		graphDefault = "neo4j"
	}
	c.GraphStore = str("SHOPMIND_GRAPH_STORE", graphDefault)
	switch c.GraphStore {
	case "postgres":
	case "neo4j":
		if u, err := url.Parse(c.Neo4jURI); err != nil || c.Neo4jURI == "" || !strings.HasPrefix(u.Scheme, "bolt") && !strings.HasPrefix(u.Scheme, "neo4j") {
			*errs = append(*errs, fmt.Sprintf("SHOPMIND_NEO4J_URI: %q is not a bolt:// or neo4j:// URI (SHOPMIND_GRAPH_STORE is neo4j)", c.Neo4jURI))
		}
	default:
		*errs = append(*errs, fmt.Sprintf("SHOPMIND_GRAPH_STORE: %q is not postgres or neo4j", c.GraphStore))
	}
	switch c.AgentMode {
	case "auto", "llm", "offline":
	default:
		*errs = append(*errs, fmt.Sprintf("SHOPMIND_CHAT_AGENT: %q is not auto, llm or offline", c.AgentMode))
	}
	if c.AgentMode == "llm" && c.BaseURL == "" {
		*errs = append(*errs, "SHOPMIND_CHAT_AGENT: llm needs SHOPMIND_LLM_BASE_URL")
	}
	if v := strings.TrimSpace(getenv("SHOPMIND_LLM_TEMPERATURE")); v != "" {
		t, err := strconv.ParseFloat(v, 64)
		if err != nil || t < 0 || t > 2 {
			*errs = append(*errs, fmt.Sprintf("SHOPMIND_LLM_TEMPERATURE: %q is not a number from 0 to 2", v))
		} else {
			c.Temperature = &t
		}
	}
	if c.EmbeddingsBaseURL == "" {
		c.EmbeddingsBaseURL = c.BaseURL
	}
	if c.EmbeddingsAPIKey == "" {
		c.EmbeddingsAPIKey = c.APIKey
	}
	if c.EmbeddingsModel != "" && c.EmbeddingsBaseURL == "" {
		*errs = append(*errs, "SHOPMIND_EMBEDDINGS_MODEL: needs SHOPMIND_EMBEDDINGS_BASE_URL or SHOPMIND_LLM_BASE_URL")
	}
	if v := strings.TrimSpace(getenv("SHOPMIND_QDRANT_TLS")); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			*errs = append(*errs, fmt.Sprintf("SHOPMIND_QDRANT_TLS: %q is not a boolean", v))
		}
		c.QdrantTLS = b
	}
	def := DefaultVectorStore
	if c.QdrantAddr != "" {
		def = "qdrant"
	}
	c.VectorStore = str("SHOPMIND_VECTOR_STORE", def)
	switch c.VectorStore {
	case "postgres", "memory":
	case "qdrant":
		if c.QdrantAddr == "" {
			c.QdrantAddr = DefaultQdrantAddr
		}
	default:
		*errs = append(*errs, fmt.Sprintf("SHOPMIND_VECTOR_STORE: %q is not postgres, qdrant or memory", c.VectorStore))
	}
	return c
}

// LLMFromMap reads only the LLM, agent and vector store variables from a map (tests,
// tools); Load reads them with the chat's.
func LLMFromMap(vars map[string]string) (LLMConfig, error) {
	var errs []string
	c := loadLLM(func(k string) string { return vars[k] }, &errs)
	if len(errs) > 0 {
		return c, fmt.Errorf("configuration: %s", strings.Join(errs, "; "))
	}
	return c, nil
}

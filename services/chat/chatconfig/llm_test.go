package chatconfig

import (
	"strings"
	"testing"
	"time"
)

func TestLLMDefaults(t *testing.T) {
	c, err := LLMFromMap(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if c.LLMEnabled() || c.EmbeddingsEnabled() || c.VectorStore != "postgres" || c.Model != DefaultLLMModel ||
		c.MaxIterations != 6 || c.ToolResultMaxChars != 8000 || c.EmbeddingDimensions != 256 || c.Timeout != DefaultLLMTimeout ||
		c.MaxRetries != 2 || c.AgentMode != "auto" || c.Temperature != nil {
		t.Fatalf("%+v", c)
	}
}

func TestLLMValues(t *testing.T) {
	c, err := LLMFromMap(map[string]string{
		"SHOPMIND_LLM_BASE_URL": "https://llm.example/v1/", "SHOPMIND_LLM_API_KEY": "sk-1", "SHOPMIND_LLM_MODEL": "qwen-max",
		"SHOPMIND_EMBEDDINGS_MODEL": "text-embedding-3-small", "SHOPMIND_LLM_TIMEOUT": "30s", "SHOPMIND_LLM_TEMPERATURE": "0.2",
		"SHOPMIND_AGENT_MAX_ITERATIONS": "4", "SHOPMIND_AGENT_TOOL_RESULT_MAX_CHARS": "2000", "SHOPMIND_QDRANT_ADDR": "qdrant:6334",
	})
	if err != nil {
		t.Fatal(err)
	}
	if !c.LLMEnabled() || c.BaseURL != "https://llm.example/v1" || c.EmbeddingsBaseURL != c.BaseURL || c.EmbeddingsAPIKey != "sk-1" ||
		!c.EmbeddingsEnabled() || c.Timeout != 30*time.Second || *c.Temperature != 0.2 || c.MaxIterations != 4 ||
		c.ToolResultMaxChars != 2000 || c.VectorStore != "qdrant" || c.QdrantAddr != "qdrant:6334" {
		t.Fatalf("%+v", c)
	}
	c, _ = LLMFromMap(map[string]string{"SHOPMIND_LLM_BASE_URL": "http://x:1/v1", "SHOPMIND_CHAT_AGENT": "offline"})
	if c.LLMEnabled() {
		t.Fatal("offline mode ignored")
	}
	c, _ = LLMFromMap(map[string]string{"SHOPMIND_VECTOR_STORE": "qdrant"})
	if c.QdrantAddr != DefaultQdrantAddr {
		t.Fatal(c.QdrantAddr)
	}
}

func TestLLMErrors(t *testing.T) {
	_, err := LLMFromMap(map[string]string{
		"SHOPMIND_LLM_BASE_URL": "ftp://x", "SHOPMIND_CHAT_AGENT": "magic", "SHOPMIND_LLM_TIMEOUT": "soon",
		"SHOPMIND_AGENT_MAX_ITERATIONS": "0", "SHOPMIND_VECTOR_STORE": "redis", "SHOPMIND_LLM_TEMPERATURE": "3",
		"SHOPMIND_EMBEDDINGS_MODEL": "e", "SHOPMIND_QDRANT_TLS": "maybe",
	})
	for _, want := range []string{"SHOPMIND_LLM_BASE_URL", "SHOPMIND_CHAT_AGENT", "SHOPMIND_LLM_TIMEOUT", "SHOPMIND_AGENT_MAX_ITERATIONS",
		"SHOPMIND_VECTOR_STORE", "SHOPMIND_LLM_TEMPERATURE", "SHOPMIND_EMBEDDINGS_MODEL", "SHOPMIND_QDRANT_TLS"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("no error for %s: %v", want, err)
		}
	}
	if _, err := LLMFromMap(map[string]string{"SHOPMIND_CHAT_AGENT": "llm"}); err == nil {
		t.Fatal("llm mode without a base URL accepted")
	}
}

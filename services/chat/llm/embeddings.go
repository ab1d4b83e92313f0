package llm

import (
	"context"
	"encoding/json"
	"io"
)

// DefaultEmbeddingsBatch is how many texts one embeddings request carries at most.
const DefaultEmbeddingsBatch = 128

// EmbeddingsConfig configures an Embeddings client.
type EmbeddingsConfig struct {
	Endpoint
	// Dimensions asks models that support it for shorter vectors; 0: the model's width.
	Dimensions int
	// Batch is the most texts per request (DefaultEmbeddingsBatch when 0).
	Batch int
}

// Embeddings turns texts into vectors with an OpenAI-compatible embeddings endpoint.
type Embeddings struct {
	cfg EmbeddingsConfig
	url string
}

// NewEmbeddings validates cfg and returns a client.
func NewEmbeddings(cfg EmbeddingsConfig) (*Embeddings, error) {
	base, err := cfg.prepare("embeddings")
	if err != nil {
		return nil, err
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultEmbeddingsBatch
	}
	return &Embeddings{cfg: cfg, url: base + "/embeddings"}, nil
}

// ID names the embedding space (vectors of different IDs are not comparable).
func (e *Embeddings) ID() string { return "openai:" + e.cfg.Model }

type embeddingsRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
	Dimensions     int      `json:"dimensions,omitempty"`
}

type embeddingsResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
	Error *apiError `json:"error"`
}

// Embed returns one vector per text, in order.
func (e *Embeddings) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += e.cfg.Batch {
		batch := texts[start:min(start+e.cfg.Batch, len(texts))]
		vecs, err := e.embedBatch(ctx, batch)
		if err != nil {
			return nil, err
		}
		out = append(out, vecs...)
	}
	return out, nil
}

func (e *Embeddings) embedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	const op = "embeddings"
	body, err := json.Marshal(embeddingsRequest{Model: e.cfg.Model, Input: texts, EncodingFormat: "float", Dimensions: e.cfg.Dimensions})
	if err != nil {
		return nil, err
	}
	var out [][]float32
	err = retry(ctx, e.cfg.MaxRetries, e.cfg.RetryBackoff, func(int) (bool, error) {
		cctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
		defer cancel()
		resp, err := post(cctx, e.cfg.HTTPClient, e.url, e.cfg.APIKey, nil, body, false)
		if err != nil {
			return true, transportError(op, ctx, context.Cause(cctx), err)
		}
		defer resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
			return true, upstream(statusError(op, resp, b))
		}
		var er embeddingsResponse
		if err := json.NewDecoder(resp.Body).Decode(&er); err != nil {
			return false, upstream(&ProviderError{Op: op, Message: "malformed answer: " + shorten(err.Error())})
		}
		if er.Error != nil {
			return false, upstream(&ProviderError{Op: op, Message: shorten(er.Error.Message), Type: er.Error.Type, Code: codeString(er.Error.Code)})
		}
		if len(er.Data) != len(texts) {
			return false, upstream(&ProviderError{Op: op, Message: "the answer does not hold one vector per input"})
		}
		vecs := make([][]float32, len(texts))
		for i, d := range er.Data {
			idx := d.Index
			if idx < 0 || idx >= len(texts) || vecs[idx] != nil {
				idx = i
			}
			vecs[idx] = d.Embedding
		}
		for _, v := range vecs {
			if len(v) == 0 {
				return false, upstream(&ProviderError{Op: op, Message: "the answer holds an empty vector"})
			}
		}
		out = vecs
		return false, nil
	})
	return out, err
}

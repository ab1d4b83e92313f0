// Package vector is the chat agents' vector store: texts with their embedding vectors, per
// tenant, searched by cosine similarity. Three stores implement Store: Postgres (the
// embedded default, schema chatvec, brute-force similarity over the tenant's rows), Qdrant
// (github.com/qdrant/go-client over gRPC) and Memory (tests, and a process without a
// database). Embedder turns texts into vectors: an OpenAI-compatible embeddings endpoint
// (services/chat/llm) or, without one, HashEmbedder's hashed character n-grams.
package vector

import (
	"context"
	"errors"
	"math"
	"slices"
	"sort"
	"sync"
)

// Item is one stored text with its vector.
type Item struct {
	// ID identifies the item within the tenant and collection (any string).
	ID       string
	Text     string
	Metadata map[string]string
	Vector   []float32
}

// Hit is a search result.
type Hit struct {
	ID       string
	Text     string
	Metadata map[string]string
	// Score is the cosine similarity to the query, from -1 to 1.
	Score float32
}

// Store keeps items per tenant. A store instance serves one collection (for example the
// metric catalog); items of another tenant are never returned.
type Store interface {
	// Upsert inserts the items or replaces those with the same ID.
	Upsert(ctx context.Context, tenantID int64, items []Item) error
	// Replace makes items the tenant's whole content of the collection.
	Replace(ctx context.Context, tenantID int64, items []Item) error
	// Search returns the topK items most similar to vector (same width only), best first,
	// among those whose metadata has every Match (none: all the tenant's items). The filter
	// applies before the topK cut, so a narrow filter still yields its best items.
	Search(ctx context.Context, tenantID int64, vector []float32, topK int, where ...Match) ([]Hit, error)
	// Health reports whether the store can be used.
	Health(ctx context.Context) error
	// Name is the store's kind: postgres, qdrant or memory.
	Name() string
}

// Match selects items whose metadata Key equals Value.
type Match struct{ Key, Value string }

// matches reports whether md satisfies every condition.
func matches(md map[string]string, where []Match) bool {
	for _, w := range where {
		if v, ok := md[w.Key]; !ok || v != w.Value {
			return false
		}
	}
	return true
}

// Embedder turns texts into vectors.
type Embedder interface {
	// Embed returns one vector per text, in order.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// ID names the embedding space; vectors of different IDs must not be compared.
	ID() string
}

// ErrInvalid reports an item or query that cannot be stored or searched.
var ErrInvalid = errors.New("vector: invalid item")

func validate(items []Item) error {
	for _, it := range items {
		if it.ID == "" || len(it.Vector) == 0 {
			return ErrInvalid
		}
	}
	return nil
}

// Cosine is the cosine similarity of two vectors of the same width (0 when either is zero
// or the widths differ).
func Cosine(a, b []float32) float32 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return float32(dot / (math.Sqrt(na) * math.Sqrt(nb)))
}

// Normalize scales v to unit length in place (a zero vector stays zero) and returns it.
func Normalize(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n == 0 {
		return v
	}
	inv := float32(1 / math.Sqrt(n))
	for i := range v {
		v[i] *= inv
	}
	return v
}

// rank keeps the topK hits, best first (ties by ID, so results are stable).
func rank(hits []Hit, topK int) []Hit {
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].ID < hits[j].ID
	})
	if topK > 0 && len(hits) > topK {
		hits = hits[:topK]
	}
	return hits
}

// Memory is an in-process Store (not persisted).
type Memory struct {
	mu    sync.RWMutex
	items map[int64]map[string]Item
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory { return &Memory{items: map[int64]map[string]Item{}} }

func cloneItem(it Item) Item {
	it.Vector = slices.Clone(it.Vector)
	if it.Metadata != nil {
		m := make(map[string]string, len(it.Metadata))
		for k, v := range it.Metadata {
			m[k] = v
		}
		it.Metadata = m
	}
	return it
}

// Upsert implements Store.
func (m *Memory) Upsert(_ context.Context, tenantID int64, items []Item) error {
	if err := validate(items); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.items[tenantID]
	if t == nil {
		t = map[string]Item{}
		m.items[tenantID] = t
	}
	for _, it := range items {
		t[it.ID] = cloneItem(it)
	}
	return nil
}

// Replace implements Store.
func (m *Memory) Replace(ctx context.Context, tenantID int64, items []Item) error {
	if err := validate(items); err != nil {
		return err
	}
	m.mu.Lock()
	delete(m.items, tenantID)
	m.mu.Unlock()
	return m.Upsert(ctx, tenantID, items)
}

// Search implements Store.
func (m *Memory) Search(_ context.Context, tenantID int64, vector []float32, topK int, where ...Match) ([]Hit, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var hits []Hit
	for _, it := range m.items[tenantID] {
		if len(it.Vector) != len(vector) || !matches(it.Metadata, where) {
			continue
		}
		it = cloneItem(it)
		hits = append(hits, Hit{ID: it.ID, Text: it.Text, Metadata: it.Metadata, Score: Cosine(vector, it.Vector)})
	}
	return rank(hits, topK), nil
}

// Health implements Store.
func (m *Memory) Health(context.Context) error { return nil }

// Name implements Store.
func (m *Memory) Name() string { return "memory" }

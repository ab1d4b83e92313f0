package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/shopmind/shopmind/services/chat/vector"
)

// MetricIndex keeps the vector index of each tenant's metric catalog: one item per metric
// name, display name, synonym and description (short texts match short questions far
// better than one long text per metric). A tenant is re-indexed when its metric list
// (or the embedder) changes; the fingerprint is kept in memory, so a new process
// re-indexes each tenant once on its first search.
type MetricIndex struct {
	store    vector.Store
	embedder vector.Embedder
	mu       sync.Mutex
	indexed  map[int64]string
}

// NewMetricIndex returns an index over store with embedder.
func NewMetricIndex(store vector.Store, embedder vector.Embedder) *MetricIndex {
	return &MetricIndex{store: store, embedder: embedder, indexed: map[int64]string{}}
}

// MetricHit is a metric found for a query.
type MetricHit struct {
	Metric MetricInfo
	Score  float32
	// Matched is the indexed text that matched best.
	Matched string
}

func metricTexts(m MetricInfo) []struct{ field, text string } {
	var out []struct{ field, text string }
	seen := map[string]bool{}
	add := func(field, text string) {
		text = strings.TrimSpace(text)
		if text == "" || seen[strings.ToLower(text)] {
			return
		}
		seen[strings.ToLower(text)] = true
		out = append(out, struct{ field, text string }{field, text})
	}
	add("name", m.Name)
	add("name", strings.ReplaceAll(m.Name, "_", " "))
	add("display_name", m.DisplayName)
	for _, s := range m.Synonyms {
		add("synonym", s)
	}
	add("description", m.Description)
	return out
}

func (x *MetricIndex) fingerprint(metrics []MetricInfo) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", x.embedder.ID())
	for _, m := range metrics {
		for _, t := range metricTexts(m) {
			fmt.Fprintf(h, "%s\x00%s\x00%s\n", m.Name, t.field, t.text)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ensure (re)indexes the tenant's metrics when they changed.
func (x *MetricIndex) ensure(ctx context.Context, tenantID int64, metrics []MetricInfo) error {
	fp := x.fingerprint(metrics)
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.indexed[tenantID] == fp {
		return nil
	}
	var items []vector.Item
	var texts []string
	for _, m := range metrics {
		for i, t := range metricTexts(m) {
			items = append(items, vector.Item{ID: fmt.Sprintf("metric:%s:%d", m.Name, i), Text: t.text,
				Metadata: map[string]string{"kind": "metric", "metric": m.Name, "field": t.field}})
			texts = append(texts, t.text)
		}
	}
	if len(items) > 0 {
		vecs, err := x.embedder.Embed(ctx, texts)
		if err != nil {
			return fmt.Errorf("embed metrics: %w", err)
		}
		for i := range items {
			items[i].Vector = vecs[i]
		}
	}
	if err := x.store.Replace(ctx, tenantID, items); err != nil {
		return err
	}
	x.indexed[tenantID] = fp
	return nil
}

// Search returns the topK metrics closest to query, best first (one hit per metric, its
// best text). metrics is the tenant's current list: hits of metrics no longer listed are
// dropped.
func (x *MetricIndex) Search(ctx context.Context, tenantID int64, metrics []MetricInfo, query string, topK int) ([]MetricHit, error) {
	if topK <= 0 {
		topK = 5
	}
	if err := x.ensure(ctx, tenantID, metrics); err != nil {
		return nil, err
	}
	vecs, err := x.embedder.Embed(ctx, []string{query})
	if err != nil {
		return nil, fmt.Errorf("embed query: %w", err)
	}
	hits, err := x.store.Search(ctx, tenantID, vecs[0], topK*12+12)
	if err != nil {
		return nil, err
	}
	byName := map[string]MetricInfo{}
	for _, m := range metrics {
		byName[m.Name] = m
	}
	best := map[string]*MetricHit{}
	for _, h := range hits {
		m, ok := byName[h.Metadata["metric"]]
		if !ok {
			continue
		}
		if b := best[m.Name]; b == nil || h.Score > b.Score {
			best[m.Name] = &MetricHit{Metric: m, Score: h.Score, Matched: h.Text}
		}
	}
	out := make([]MetricHit, 0, len(best))
	for _, b := range best {
		out = append(out, *b)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].Metric.Name < out[j].Metric.Name
	})
	if len(out) > topK {
		out = out[:topK]
	}
	return out, nil
}

package vector_test

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/shopmind/shopmind/internal/testutil/pgtest"
	"github.com/shopmind/shopmind/services/chat/vector"
)

// demoMetrics are the demo tenant's metrics as the chat indexer sees them: one text per
// name, display name, synonym and description.
var demoMetrics = map[string][]string{
	"gmv":             {"gmv", "GMV", "销售额", "成交额", "sales", "revenue", "Paid amount of paid, shipped and completed orders"},
	"order_count":     {"order_count", "Orders", "订单数", "订单量", "orders", "Number of paid, shipped and completed orders"},
	"units_sold":      {"units_sold", "Units sold", "销量", "件数", "units", "Units on all order lines"},
	"line_amount":     {"line_amount", "Line amount", "商品销售额", "goods sales", "Amount of order lines (by goods or category)"},
	"buyers":          {"buyers", "Buyers", "买家数", "客户数", "customers", "Distinct buyers"},
	"avg_order_value": {"avg_order_value", "Average order value", "客单价", "AOV", "average order value", "GMV per order"},
}

func metricItems(t testing.TB, e vector.Embedder) []vector.Item {
	var items []vector.Item
	for name, texts := range demoMetrics {
		vecs, err := e.Embed(context.Background(), texts)
		if err != nil {
			t.Fatal(err)
		}
		for i, txt := range texts {
			items = append(items, vector.Item{ID: fmt.Sprintf("%s#%d", name, i), Text: txt,
				Metadata: map[string]string{"metric": name}, Vector: vecs[i]})
		}
	}
	return items
}

func TestHashEmbedderProperties(t *testing.T) {
	h := vector.NewHashEmbedder(0)
	v := h.Vector("GMV by shop")
	if len(v) != vector.DefaultHashDimensions {
		t.Fatalf("width %d", len(v))
	}
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if math.Abs(n-1) > 1e-5 {
		t.Fatalf("norm %v", n)
	}
	if s := vector.Cosine(h.Vector("GMV, by  SHOP!"), v); s < 0.9999 {
		t.Fatalf("case and punctuation not folded: %v", s)
	}
	if s := vector.Cosine(h.Vector("ＧＭＶ"), h.Vector("gmv")); s < 0.9999 {
		t.Fatalf("full-width not folded: %v", s)
	}
	zero := h.Vector("  ")
	for _, x := range zero {
		if x != 0 {
			t.Fatal("blank text is not the zero vector")
		}
	}
	if h.ID() != "hash-ngram-256" {
		t.Fatal(h.ID())
	}
}

// nearest ranks the demo metrics for a query: per metric, its best text.
func nearest(t *testing.T, store vector.Store, e vector.Embedder, query string) []string {
	t.Helper()
	qv, _ := e.Embed(context.Background(), []string{query})
	hits, err := store.Search(context.Background(), 1, qv[0], 100)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	seen := map[string]bool{}
	for _, h := range hits {
		m := h.Metadata["metric"]
		if !seen[m] {
			seen[m] = true
			order = append(order, m)
		}
	}
	return order
}

func TestHashEmbedderFindsMetrics(t *testing.T) {
	e := vector.NewHashEmbedder(256)
	store := vector.NewMemory()
	if err := store.Upsert(context.Background(), 1, metricItems(t, e)); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		"销售额":                     "gmv",
		"orders by shop":          "order_count",
		"GMV by shop last 7 days": "gmv",
		"上个月各类目的销售额是多少": "gmv",
		"客单价":                      "avg_order_value",
		"how many buyers":          "buyers",
		"units sold this month":    "units_sold",
		"revenue":                  "gmv",
		"订单":                       "order_count",
		"商品销售额":                    "line_amount",
		"average order value 2026": "avg_order_value",
	}
	for q, want := range cases {
		if got := nearest(t, store, e, q); len(got) == 0 || got[0] != want {
			t.Errorf("%q: nearest %v, want %s", q, got, want)
		}
	}
}

// TestCombinedTextNearest checks the same with one text per metric (all its words joined).
func TestCombinedTextNearest(t *testing.T) {
	e := vector.NewHashEmbedder(256)
	best := func(q string) string {
		qv := e.Vector(q)
		var name string
		var score float32 = -2
		for m, texts := range demoMetrics {
			var all string
			for _, s := range texts {
				all += s + " "
			}
			if s := vector.Cosine(qv, e.Vector(all)); s > score {
				name, score = m, s
			}
		}
		return name
	}
	if got := best("销售额"); got != "gmv" {
		t.Errorf("销售额: %s", got)
	}
	if got := best("orders by shop"); got != "order_count" {
		t.Errorf("orders by shop: %s", got)
	}
}

func storeContract(t *testing.T, store vector.Store) {
	ctx := context.Background()
	e := vector.NewHashEmbedder(64)
	vec := func(s string) []float32 { return e.Vector(s) }
	if err := store.Health(ctx); err != nil {
		t.Fatal(err)
	}
	// empty store: no hits, no error
	hits, err := store.Search(ctx, 1, vec("gmv"), 3)
	if err != nil || len(hits) != 0 {
		t.Fatalf("empty: %v %v", hits, err)
	}
	err = store.Upsert(ctx, 1, []vector.Item{
		{ID: "a", Text: "gross merchandise value", Metadata: map[string]string{"metric": "gmv"}, Vector: vec("gross merchandise value")},
		{ID: "b", Text: "orders", Metadata: map[string]string{"metric": "order_count"}, Vector: vec("orders")},
		{ID: "c", Text: "buyers", Vector: vec("buyers")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Upsert(ctx, 2, []vector.Item{{ID: "a", Text: "other tenant", Vector: vec("orders")}}); err != nil {
		t.Fatal(err)
	}
	hits, err = store.Search(ctx, 1, vec("orders"), 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 2 || hits[0].ID != "b" || hits[0].Text != "orders" || hits[0].Metadata["metric"] != "order_count" || hits[0].Score < 0.999 {
		t.Fatalf("hits %+v", hits)
	}
	if hits[1].Score > hits[0].Score {
		t.Fatal("not ordered")
	}
	// metadata conditions apply before the topK cut: the best match of the filter is found
	// even when unfiltered items score higher
	hits, err = store.Search(ctx, 1, vec("orders"), 1, vector.Match{Key: "metric", Value: "gmv"})
	if err != nil || len(hits) != 1 || hits[0].ID != "a" {
		t.Fatalf("filtered: %+v %v", hits, err)
	}
	hits, err = store.Search(ctx, 1, vec("orders"), 10, vector.Match{Key: "metric", Value: "gmv"}, vector.Match{Key: "metric", Value: "order_count"})
	if err != nil || len(hits) != 0 {
		t.Fatalf("contradictory filter: %+v %v", hits, err)
	}
	hits, err = store.Search(ctx, 2, vec("orders"), 10, vector.Match{Key: "metric", Value: "gmv"})
	if err != nil || len(hits) != 0 {
		t.Fatalf("filter crossed tenants: %+v %v", hits, err)
	}
	// upsert replaces by id
	if err := store.Upsert(ctx, 1, []vector.Item{{ID: "b", Text: "buyers too", Vector: vec("buyers")}}); err != nil {
		t.Fatal(err)
	}
	hits, _ = store.Search(ctx, 1, vec("orders"), 10)
	if len(hits) != 3 {
		t.Fatalf("after upsert: %+v", hits)
	}
	for _, h := range hits {
		if h.ID == "b" && h.Text != "buyers too" {
			t.Fatalf("not replaced: %+v", h)
		}
	}
	// other widths are not compared
	hits, err = store.Search(ctx, 1, []float32{1, 0, 0}, 10)
	if err != nil || len(hits) != 0 {
		t.Fatalf("width 3: %v %v", hits, err)
	}
	// replace
	if err := store.Replace(ctx, 1, []vector.Item{{ID: "z", Text: "only", Vector: vec("only")}}); err != nil {
		t.Fatal(err)
	}
	hits, _ = store.Search(ctx, 1, vec("orders"), 10)
	if len(hits) != 1 || hits[0].ID != "z" {
		t.Fatalf("after replace: %+v", hits)
	}
	hits, _ = store.Search(ctx, 2, vec("orders"), 10)
	if len(hits) != 1 || hits[0].Text != "other tenant" {
		t.Fatalf("tenant 2 touched: %+v", hits)
	}
	if err := store.Upsert(ctx, 1, []vector.Item{{ID: "", Vector: vec("x")}}); err == nil {
		t.Fatal("item without id accepted")
	}
}

func TestMemoryStore(t *testing.T) { storeContract(t, vector.NewMemory()) }

func TestPostgresStore(t *testing.T) {
	db := pgtest.New(t, vector.Migrations())
	store := vector.NewPostgres(db.Pool, "metrics")
	storeContract(t, store)
	// another collection of the same tenant is separate
	other := vector.NewPostgres(db.Pool, "entities")
	hits, err := other.Search(context.Background(), 1, vector.NewHashEmbedder(64).Vector("only"), 10)
	if err != nil || len(hits) != 0 {
		t.Fatalf("collections mixed: %v %v", hits, err)
	}
	// demo metrics through PostgreSQL
	e := vector.NewHashEmbedder(256)
	if err := store.Replace(context.Background(), 1, metricItems(t, e)); err != nil {
		t.Fatal(err)
	}
	if got := nearest(t, store, e, "销售额"); got[0] != "gmv" {
		t.Fatalf("%v", got)
	}
}

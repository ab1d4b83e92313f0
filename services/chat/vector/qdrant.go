package vector

import (
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// QdrantConfig configures the Qdrant adapter.
type QdrantConfig struct {
	// Addr is the gRPC address host:port (Qdrant's gRPC port is 6334).
	Addr string
	// APIKey is sent as the api-key header when not empty.
	APIKey string
	// TLS connects over TLS.
	TLS bool
	// Collection is the collection's name stem; the adapter uses one Qdrant collection per
	// vector width, named <stem>_<width> (for example shopmind_metrics_256), so a change of
	// embedding model never mixes widths.
	Collection string
	// GrpcOptions are extra dial options (tests).
	GrpcOptions []grpc.DialOption
}

// Qdrant is the Store on a Qdrant server. Tenants share a collection; every point carries
// the payload tenant_id (indexed), and every search and delete filters on it.
//
// Points: id = a UUID derived from (collection stem, tenant, item id); payload tenant_id
// (integer), item_id, text and metadata (an object of strings); one unnamed dense vector,
// cosine distance.
type Qdrant struct {
	client *qdrant.Client
	stem   string
	mu     sync.Mutex
	ready  map[string]bool // collections known to exist
}

// NewQdrant connects lazily to Qdrant (no request is made until the first use).
func NewQdrant(cfg QdrantConfig) (*Qdrant, error) {
	host, portStr, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("qdrant address %q: %w", cfg.Addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port <= 0 || port > 65535 {
		return nil, fmt.Errorf("qdrant address %q: bad port", cfg.Addr)
	}
	if cfg.Collection == "" {
		return nil, errors.New("qdrant: collection is required")
	}
	c, err := qdrant.NewClient(&qdrant.Config{
		Host: host, Port: port, APIKey: cfg.APIKey, UseTLS: cfg.TLS,
		SkipCompatibilityCheck: true, PoolSize: 1, GrpcOptions: cfg.GrpcOptions,
	})
	if err != nil {
		return nil, fmt.Errorf("qdrant: %w", err)
	}
	return &Qdrant{client: c, stem: cfg.Collection, ready: map[string]bool{}}, nil
}

// Close closes the connection.
func (q *Qdrant) Close() error { return q.client.Close() }

func (q *Qdrant) collection(dim int) string { return q.stem + "_" + strconv.Itoa(dim) }

// ensure creates the collection of a width (and its tenant_id index) when missing.
func (q *Qdrant) ensure(ctx context.Context, dim int, create bool) (string, bool, error) {
	name := q.collection(dim)
	q.mu.Lock()
	ok := q.ready[name]
	q.mu.Unlock()
	if ok {
		return name, true, nil
	}
	exists, err := q.client.CollectionExists(ctx, name)
	if err != nil {
		return name, false, qerr("collection exists", err)
	}
	if !exists {
		if !create {
			return name, false, nil
		}
		err := q.client.CreateCollection(ctx, &qdrant.CreateCollection{
			CollectionName: name,
			VectorsConfig:  qdrant.NewVectorsConfig(&qdrant.VectorParams{Size: uint64(dim), Distance: qdrant.Distance_Cosine}),
		})
		if err != nil && !alreadyExists(err) {
			return name, false, qerr("create collection", err)
		}
		_, err = q.client.CreateFieldIndex(ctx, &qdrant.CreateFieldIndexCollection{
			CollectionName: name, FieldName: "tenant_id", FieldType: qdrant.FieldType_FieldTypeInteger.Enum(),
			Wait: qdrant.PtrOf(true),
		})
		if err != nil && !alreadyExists(err) {
			return name, false, qerr("create tenant index", err)
		}
	}
	q.mu.Lock()
	q.ready[name] = true
	q.mu.Unlock()
	return name, true, nil
}

func alreadyExists(err error) bool {
	return status.Code(errors.Unwrap(err)) == codes.AlreadyExists || status.Code(err) == codes.AlreadyExists ||
		strings.Contains(strings.ToLower(err.Error()), "already exists")
}

func qerr(op string, err error) error { return fmt.Errorf("vector store (qdrant) %s: %w", op, err) }

// pointID derives a stable UUID for an item (Qdrant ids are UUIDs or integers).
func (q *Qdrant) pointID(tenantID int64, id string) string {
	h := sha1.Sum([]byte(q.stem + "\x00" + strconv.FormatInt(tenantID, 10) + "\x00" + id))
	h[6] = (h[6] & 0x0f) | 0x50 // version 5
	h[8] = (h[8] & 0x3f) | 0x80 // RFC 4122 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

func tenantFilter(tenantID int64) *qdrant.Filter {
	return &qdrant.Filter{Must: []*qdrant.Condition{qdrant.NewMatchInt("tenant_id", tenantID)}}
}

// Upsert implements Store. Items of several widths go to their collections.
func (q *Qdrant) Upsert(ctx context.Context, tenantID int64, items []Item) error {
	if err := validate(items); err != nil {
		return err
	}
	byDim := map[int][]*qdrant.PointStruct{}
	var dims []int
	for _, it := range items {
		md := map[string]any{}
		for k, v := range it.Metadata {
			md[k] = v
		}
		payload, err := qdrant.TryValueMap(map[string]any{"tenant_id": tenantID, "item_id": it.ID, "text": it.Text, "metadata": md})
		if err != nil {
			return fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		d := len(it.Vector)
		if _, ok := byDim[d]; !ok {
			dims = append(dims, d)
		}
		byDim[d] = append(byDim[d], &qdrant.PointStruct{
			Id: qdrant.NewIDUUID(q.pointID(tenantID, it.ID)), Vectors: qdrant.NewVectorsDense(it.Vector), Payload: payload,
		})
	}
	for _, d := range dims {
		name, _, err := q.ensure(ctx, d, true)
		if err != nil {
			return err
		}
		if _, err := q.client.Upsert(ctx, &qdrant.UpsertPoints{CollectionName: name, Wait: qdrant.PtrOf(true), Points: byDim[d]}); err != nil {
			return qerr("upsert", err)
		}
	}
	return nil
}

// Replace implements Store: the tenant's points are deleted from the collections of the
// items' widths, then the items upserted (not atomic: a concurrent search may see fewer).
func (q *Qdrant) Replace(ctx context.Context, tenantID int64, items []Item) error {
	if err := validate(items); err != nil {
		return err
	}
	seen := map[int]bool{}
	for _, it := range items {
		d := len(it.Vector)
		if seen[d] {
			continue
		}
		seen[d] = true
		name, ok, err := q.ensure(ctx, d, false)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		_, err = q.client.Delete(ctx, &qdrant.DeletePoints{CollectionName: name, Wait: qdrant.PtrOf(true),
			Points: qdrant.NewPointsSelectorFilter(tenantFilter(tenantID))})
		if err != nil {
			return qerr("delete", err)
		}
	}
	return q.Upsert(ctx, tenantID, items)
}

// Search implements Store.
func (q *Qdrant) Search(ctx context.Context, tenantID int64, vector []float32, topK int, where ...Match) ([]Hit, error) {
	if len(vector) == 0 {
		return nil, ErrInvalid
	}
	name, ok, err := q.ensure(ctx, len(vector), false)
	if err != nil || !ok {
		return nil, err
	}
	if topK <= 0 {
		topK = 10
	}
	filter := tenantFilter(tenantID)
	for _, w := range where { // the metadata map is a nested payload object
		filter.Must = append(filter.Must, qdrant.NewMatchKeyword("metadata."+w.Key, w.Value))
	}
	points, err := q.client.Query(ctx, &qdrant.QueryPoints{
		CollectionName: name,
		Query:          qdrant.NewQueryDense(vector),
		Filter:         filter,
		Limit:          qdrant.PtrOf(uint64(topK)),
		WithPayload:    qdrant.NewWithPayload(true),
	})
	if err != nil {
		return nil, qerr("query", err)
	}
	hits := make([]Hit, 0, len(points))
	for _, p := range points {
		pl := p.GetPayload()
		h := Hit{ID: pl["item_id"].GetStringValue(), Text: pl["text"].GetStringValue(), Score: p.GetScore()}
		if f := pl["metadata"].GetStructValue().GetFields(); len(f) > 0 {
			h.Metadata = make(map[string]string, len(f))
			for k, v := range f {
				h.Metadata[k] = v.GetStringValue()
			}
		}
		hits = append(hits, h)
	}
	return rank(hits, topK), nil
}

// Health implements Store: Qdrant's health check answers.
func (q *Qdrant) Health(ctx context.Context) error {
	if _, err := q.client.HealthCheck(ctx); err != nil {
		return qerr("health check", err)
	}
	return nil
}

// Name implements Store.
func (q *Qdrant) Name() string { return "qdrant" }

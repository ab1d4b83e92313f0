package vector_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/shopmind/shopmind/services/chat/vector"
)

// fakeQdrant implements the few Qdrant gRPC methods the adapter calls (HealthCheck,
// CollectionExists, Create, CreateFieldIndex, Upsert, Delete by filter, Query nearest with
// a tenant filter) over an in-memory map, on a real gRPC server on loopback. It checks what
// a real Qdrant would refuse: unknown collections, wrong vector widths, filters it does not
// understand.
type fakeQdrant struct {
	qdrant.UnimplementedQdrantServer
	qdrant.UnimplementedCollectionsServer

	mu          sync.Mutex
	collections map[string]*fakeCollection
	apiKeys     []string
	calls       map[string]int
}

// fakePoints is the Points service of the fake (Delete collides with Collections.Delete).
type fakePoints struct {
	qdrant.UnimplementedPointsServer
	*fakeQdrant
}

type fakeCollection struct {
	size    uint64
	indexed map[string]bool
	points  map[string]*qdrant.PointStruct
}

func startFakeQdrant(t *testing.T) (*fakeQdrant, string) {
	f := &fakeQdrant{collections: map[string]*fakeCollection{}, calls: map[string]int{}}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		f.mu.Lock()
		f.apiKeys = append(f.apiKeys, md.Get("api-key")...)
		f.calls[info.FullMethod]++
		f.mu.Unlock()
		return h(ctx, req)
	}))
	qdrant.RegisterQdrantServer(s, f)
	qdrant.RegisterCollectionsServer(s, f)
	qdrant.RegisterPointsServer(s, fakePoints{fakeQdrant: f})
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	return f, lis.Addr().String()
}

func (f *fakeQdrant) HealthCheck(context.Context, *qdrant.HealthCheckRequest) (*qdrant.HealthCheckReply, error) {
	return &qdrant.HealthCheckReply{Title: "qdrant - vector search engine (fake)", Version: "1.17.0"}, nil
}

func (f *fakeQdrant) CollectionExists(_ context.Context, r *qdrant.CollectionExistsRequest) (*qdrant.CollectionExistsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.collections[r.GetCollectionName()]
	return &qdrant.CollectionExistsResponse{Result: &qdrant.CollectionExists{Exists: ok}}, nil
}

func (f *fakeQdrant) Create(_ context.Context, r *qdrant.CreateCollection) (*qdrant.CollectionOperationResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.collections[r.GetCollectionName()]; ok {
		return nil, status.Errorf(codes.AlreadyExists, "Collection `%s` already exists!", r.GetCollectionName())
	}
	p := r.GetVectorsConfig().GetParams()
	if p == nil || p.GetSize() == 0 || p.GetDistance() != qdrant.Distance_Cosine {
		return nil, status.Error(codes.InvalidArgument, "expected one unnamed cosine vector")
	}
	f.collections[r.GetCollectionName()] = &fakeCollection{size: p.GetSize(), indexed: map[string]bool{}, points: map[string]*qdrant.PointStruct{}}
	return &qdrant.CollectionOperationResponse{Result: true}, nil
}

func (f *fakeQdrant) coll(name string) (*fakeCollection, error) {
	c, ok := f.collections[name]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "Collection `%s` doesn't exist!", name)
	}
	return c, nil
}

func (f fakePoints) CreateFieldIndex(_ context.Context, r *qdrant.CreateFieldIndexCollection) (*qdrant.PointsOperationResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.coll(r.GetCollectionName())
	if err != nil {
		return nil, err
	}
	if r.GetFieldType() != qdrant.FieldType_FieldTypeInteger {
		return nil, status.Error(codes.InvalidArgument, "expected an integer index")
	}
	c.indexed[r.GetFieldName()] = true
	return &qdrant.PointsOperationResponse{Result: &qdrant.UpdateResult{Status: qdrant.UpdateStatus_Completed}}, nil
}

func (f fakePoints) Upsert(_ context.Context, r *qdrant.UpsertPoints) (*qdrant.PointsOperationResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.coll(r.GetCollectionName())
	if err != nil {
		return nil, err
	}
	for _, p := range r.GetPoints() {
		if p.GetId().GetUuid() == "" {
			return nil, status.Error(codes.InvalidArgument, "expected uuid ids")
		}
		if uint64(len(p.GetVectors().GetVector().GetDense().GetData())) != c.size {
			return nil, status.Errorf(codes.InvalidArgument, "Wrong input: Vector dimension error: expected dim: %d", c.size)
		}
		c.points[p.GetId().GetUuid()] = p
	}
	return &qdrant.PointsOperationResponse{Result: &qdrant.UpdateResult{Status: qdrant.UpdateStatus_Completed}}, nil
}

// tenantOf reads the adapter's filter: must [tenant_id == N, metadata.K == V...].
func tenantOf(fl *qdrant.Filter) (int64, error) {
	if fl == nil || len(fl.GetMust()) == 0 || fl.GetMust()[0].GetField().GetKey() != "tenant_id" {
		return 0, status.Error(codes.InvalidArgument, "fake: expected a tenant_id filter")
	}
	m, ok := fl.GetMust()[0].GetField().GetMatch().GetMatchValue().(*qdrant.Match_Integer)
	if !ok {
		return 0, status.Error(codes.InvalidArgument, "fake: expected an integer match")
	}
	return m.Integer, nil
}

// metadataMatches applies the filter's keyword conditions on nested metadata keys, as
// Qdrant does for "metadata.key" paths.
func metadataMatches(fl *qdrant.Filter, p *qdrant.PointStruct) bool {
	md := p.GetPayload()["metadata"].GetStructValue().GetFields()
	for _, c := range fl.GetMust()[1:] {
		key, ok := strings.CutPrefix(c.GetField().GetKey(), "metadata.")
		kw, isKw := c.GetField().GetMatch().GetMatchValue().(*qdrant.Match_Keyword)
		if !ok || !isKw || md[key].GetStringValue() != kw.Keyword {
			return false
		}
	}
	return true
}

func (f fakePoints) Delete(_ context.Context, r *qdrant.DeletePoints) (*qdrant.PointsOperationResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.coll(r.GetCollectionName())
	if err != nil {
		return nil, err
	}
	tenant, err := tenantOf(r.GetPoints().GetFilter())
	if err != nil {
		return nil, err
	}
	for id, p := range c.points {
		if p.GetPayload()["tenant_id"].GetIntegerValue() == tenant {
			delete(c.points, id)
		}
	}
	return &qdrant.PointsOperationResponse{Result: &qdrant.UpdateResult{Status: qdrant.UpdateStatus_Completed}}, nil
}

func (f fakePoints) Query(_ context.Context, r *qdrant.QueryPoints) (*qdrant.QueryResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.coll(r.GetCollectionName())
	if err != nil {
		return nil, err
	}
	tenant, err := tenantOf(r.GetFilter())
	if err != nil {
		return nil, err
	}
	q := r.GetQuery().GetNearest().GetDense().GetData()
	if uint64(len(q)) != c.size {
		return nil, status.Errorf(codes.InvalidArgument, "Wrong input: Vector dimension error: expected dim: %d", c.size)
	}
	var res []*qdrant.ScoredPoint
	for _, p := range c.points {
		if p.GetPayload()["tenant_id"].GetIntegerValue() != tenant || !metadataMatches(r.GetFilter(), p) {
			continue
		}
		sp := &qdrant.ScoredPoint{Id: p.GetId(), Score: vector.Cosine(q, p.GetVectors().GetVector().GetDense().GetData())}
		if r.GetWithPayload().GetEnable() {
			sp.Payload = p.GetPayload()
		}
		res = append(res, sp)
	}
	// Qdrant orders by score and cuts at limit
	for i := range res {
		for j := i + 1; j < len(res); j++ {
			if res[j].Score > res[i].Score {
				res[i], res[j] = res[j], res[i]
			}
		}
	}
	if lim := int(r.GetLimit()); lim > 0 && len(res) > lim {
		res = res[:lim]
	}
	return &qdrant.QueryResponse{Result: res}, nil
}

func TestQdrantStore(t *testing.T) {
	f, addr := startFakeQdrant(t)
	store, err := vector.NewQdrant(vector.QdrantConfig{Addr: addr, APIKey: "secret-key", Collection: "shopmind_metrics"})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	storeContract(t, store)

	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.collections["shopmind_metrics_64"]
	if c == nil || c.size != 64 || !c.indexed["tenant_id"] {
		t.Fatalf("collection %+v", c)
	}
	if len(f.apiKeys) == 0 || f.apiKeys[0] != "secret-key" {
		t.Fatalf("api key not sent: %v", f.apiKeys)
	}
	if n := f.calls["/qdrant.Collections/Create"]; n != 1 {
		t.Fatalf("collection created %d times", n)
	}
	if _, ok := f.collections["shopmind_metrics_3"]; ok {
		t.Fatal("a search created a collection")
	}
}

func TestQdrantUnreachable(t *testing.T) {
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := lis.Addr().String()
	lis.Close()
	store, err := vector.NewQdrant(vector.QdrantConfig{Addr: addr, Collection: "x"})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.Health(context.Background()); err == nil {
		t.Fatal("health of an unreachable server passed")
	}
	if _, err := vector.NewQdrant(vector.QdrantConfig{Addr: "no-port", Collection: "x"}); err == nil {
		t.Fatal("bad address accepted")
	}
}

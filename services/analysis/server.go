// Package analysis is the analytics service: metric definitions (derived, order and
// formula metrics) and the semantic layer that compiles metric queries to SQL for the
// analytical store (PostgreSQL schema analytics by default, ClickHouse when configured),
// with SQL generation and data preview.
package analysis

import (
	"context"
	"embed"
	"fmt"
	"math"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	analysisv1 "github.com/shopmind/shopmind/gen/go/shopmind/analysis/v1"
	"github.com/shopmind/shopmind/internal/analytics/catalog"
	"github.com/shopmind/shopmind/internal/analytics/warehouse"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/notifyclient"
	"github.com/shopmind/shopmind/internal/postgres"
	"github.com/shopmind/shopmind/internal/restapi"
	"github.com/shopmind/shopmind/internal/service"
	"github.com/shopmind/shopmind/internal/sqlsandbox"
	"github.com/shopmind/shopmind/services/analysis/semantic"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Service describes the analysis service to the binary.
func Service() service.Def {
	st := &registration{}
	return service.Def{
		Name:       "analysis",
		Migrations: postgres.Embedded("analysis", migrationFiles),
		Register:   st.register,
		Gateway:    restapi.Routes(restapi.Route(analysisv1.RegisterMetricServiceHandlerClient, analysisv1.NewMetricServiceClient), restapi.Route(analysisv1.RegisterQueryServiceHandlerClient, analysisv1.NewQueryServiceClient)),
		Seed:       st.seed,
		Config:     service.ConfigLoader(sqlsandbox.LoadConfig),
	}
}

// registration is what Register builds and Seed uses.
type registration struct {
	store   warehouse.Store
	metrics *metrics
}

func (st *registration) register(ctx context.Context, s grpc.ServiceRegistrar, deps service.Deps) error {
	store, err := warehouse.Open(ctx, deps.Config.Analytics.URL, deps.DB, deps.Logger)
	if err != nil {
		return fmt.Errorf("analytical store: %w", err)
	}
	if err := store.EnsureSchema(ctx); err != nil {
		return fmt.Errorf("analytical store schema: %w", err)
	}
	st.store = store
	cats := &catalogCache{load: store.Catalog}
	st.metrics = &metrics{pool: deps.DB, catalog: cats.get}
	var sandboxErr error
	// Without its role (an account that may not create roles, a password the server
	// refuses) the sandbox is off: the SQL lab answers 503 with the cause, the rest serves.
	sandbox, err := sqlsandbox.Open(ctx, service.Settings(deps, sqlsandbox.LoadConfig), store, deps.DB)
	if err != nil {
		deps.Logger.Error("SQL sandbox unavailable: ExecuteSql answers 503", "error", err)
		sandboxErr = err
		sandbox = nil
	} else {
		sandbox.WithCatalog(cats.get)
		context.AfterFunc(ctx, sandbox.Close) // ctx lasts until the gRPC server has drained
	}
	analysisv1.RegisterMetricServiceServer(s, &metricServer{metrics: st.metrics})
	analysisv1.RegisterQueryServiceServer(s, &queryServer{metrics: st.metrics, store: store, sandbox: sandbox, sandboxErr: sandboxErr,
		timeout: deps.Config.Analytics.QueryTimeout, maxRows: deps.Config.Analytics.MaxRows,
		notify: notifyclient.New(deps.Dial, deps.Logger)})
	return nil
}

// metricServer is MetricService.
type metricServer struct {
	analysisv1.UnimplementedMetricServiceServer
	metrics *metrics
}

func metricPB(m *metricRecord) *analysisv1.Metric {
	return &analysisv1.Metric{Id: m.ID, Name: m.Name, DisplayName: m.DisplayName, Description: m.Desc, Group: m.Group,
		Type: m.Type, Config: m.Config, Synonyms: m.Synonyms, CreatedAt: timestamppb.New(m.CreatedAt), UpdatedAt: timestamppb.New(m.UpdatedAt)}
}

func (s *metricServer) ListMetrics(ctx context.Context, req *analysisv1.ListMetricsRequest) (*analysisv1.ListMetricsResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	groups, err := s.metrics.list(ctx, id.TenantID, req.GetGroupFilter())
	if err != nil {
		return nil, err
	}
	return &analysisv1.ListMetricsResponse{Groups: groups}, nil
}

func (s *metricServer) CreateMetric(ctx context.Context, req *analysisv1.CreateMetricRequest) (*analysisv1.CreateMetricResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	m, err := s.metrics.create(ctx, id.TenantID, req.GetMetric())
	if err != nil {
		return nil, err
	}
	return &analysisv1.CreateMetricResponse{Metric: metricPB(m)}, nil
}

func (s *metricServer) UpdateMetric(ctx context.Context, req *analysisv1.UpdateMetricRequest) (*analysisv1.UpdateMetricResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	m, err := s.metrics.update(ctx, id.TenantID, req.GetId(), req.GetMetric(), req.GetUpdateMask().GetPaths())
	if err != nil {
		return nil, err
	}
	return &analysisv1.UpdateMetricResponse{Metric: metricPB(m)}, nil
}

func (s *metricServer) DeleteMetric(ctx context.Context, req *analysisv1.DeleteMetricRequest) (*analysisv1.DeleteMetricResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.metrics.remove(ctx, id.TenantID, req.GetId()); err != nil {
		return nil, err
	}
	return &analysisv1.DeleteMetricResponse{Success: true}, nil
}

// queryServer is QueryService.
type queryServer struct {
	analysisv1.UnimplementedQueryServiceServer
	metrics *metrics
	store   warehouse.Store
	sandbox *sqlsandbox.Sandbox
	// sandboxErr is why the sandbox could not open (sandbox nil).
	sandboxErr error
	timeout    time.Duration
	maxRows    int
	notify     *notifyclient.Publisher // metric_alert notifications of CheckAnomalies
}

// queryRequest is what PreviewQueryRequest and GenerateSqlRequest share.
type queryRequest interface {
	GetMetricIds() []int64
	GetMetricNames() []string
	GetDimensions() []string
	GetTimeGranularity() string
	GetStartTime() *timestamppb.Timestamp
	GetEndTime() *timestamppb.Timestamp
	GetFilters() []*analysisv1.Condition
	GetSort() []*analysisv1.QuerySort
	GetLimit() int32
}

// defaultLimit is the preview's row count when none is asked for.
const defaultLimit = 100

func (s *queryServer) dialect() semantic.Dialect {
	if s.store.Dialect() == "clickhouse" {
		return semantic.ClickHouse()
	}
	return semantic.Postgres()
}

// compile resolves the requested metrics of the caller's tenant and compiles the query.
func (s *queryServer) compile(ctx context.Context, req queryRequest, limit int) (*semantic.Compiled, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	live, err := s.metrics.live(ctx, s.metrics.pool, id.TenantID)
	if err != nil {
		return nil, err
	}
	return s.compileLive(ctx, id, live, req, limit)
}

// compileLive is compile over the tenant's live metrics already read (CheckAnomalies needs
// them too, and reads them once).
func (s *queryServer) compileLive(ctx context.Context, id *authn.Identity, live map[int64]*metricRecord, req queryRequest, limit int) (*semantic.Compiled, error) {
	byName := map[string]*semantic.Metric{}
	for _, m := range live {
		byName[m.Name] = toSemantic(m)
	}
	q := &semantic.Query{TenantID: id.TenantID, Resolve: func(name string) *semantic.Metric { return byName[name] },
		Dimensions: req.GetDimensions(), Granularity: req.GetTimeGranularity(),
		Start: req.GetStartTime().AsTime(), End: req.GetEndTime().AsTime(), Limit: limit}
	for i, mid := range req.GetMetricIds() {
		m, ok := live[mid]
		if !ok {
			return nil, apperr.Invalid(fmt.Sprintf("metric_ids[%d]", i), "metric.exists", fmt.Sprintf("no metric %d in your tenant", mid))
		}
		q.Metrics = append(q.Metrics, byName[m.Name])
	}
	for i, name := range req.GetMetricNames() {
		m, ok := byName[name]
		if !ok {
			return nil, apperr.Invalid(fmt.Sprintf("metric_names[%d]", i), "metric.exists", fmt.Sprintf("no metric named %s in your tenant", name))
		}
		q.Metrics = append(q.Metrics, m)
	}
	for _, f := range req.GetFilters() {
		q.Filters = append(q.Filters, conditionOf(f))
	}
	for _, srt := range req.GetSort() {
		q.Sort = append(q.Sort, semantic.SortKey{Field: srt.GetField(), Desc: srt.GetOrder() != "asc"})
	}
	cat, err := s.metrics.catalog(ctx)
	if err != nil {
		return nil, err
	}
	return semantic.Compile(q, cat, s.dialect())
}

func paramsPB(args []any) []*structpb.Value {
	out := make([]*structpb.Value, len(args))
	for i, a := range args {
		out[i] = valuePB(a)
	}
	return out
}

// roundNoise rounds x to 12 significant digits: a sum of double precision amounts carries the
// error of its additions in the last digits (6396094.460000039 for a GMV of 6396094.46), which
// the answer should not show; 12 digits keep every cent below ten billion.
func roundNoise(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) || x == 0 {
		return x
	}
	r, err := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 12, 64), 64)
	if err != nil {
		return x
	}
	return r
}

// rowsPB is result rows as the contract's lists of values (an empty list, never null).
func rowsPB(rows [][]any) []*structpb.ListValue {
	out := make([]*structpb.ListValue, 0, len(rows))
	for _, row := range rows {
		lv := &structpb.ListValue{Values: make([]*structpb.Value, len(row))}
		for i, v := range row {
			lv.Values[i] = valuePB(v)
		}
		out = append(out, lv)
	}
	return out
}

// valuePB turns a SQL value into JSON: numbers, strings, booleans, null; times as RFC 3339.
func valuePB(v any) *structpb.Value {
	switch x := v.(type) {
	case nil:
		return structpb.NewNullValue()
	case time.Time:
		return structpb.NewStringValue(x.UTC().Format(time.RFC3339))
	case int64:
		return structpb.NewNumberValue(float64(x))
	case int:
		return structpb.NewNumberValue(float64(x))
	case int32:
		return structpb.NewNumberValue(float64(x))
	case uint64:
		return structpb.NewNumberValue(float64(x))
	case float64:
		return structpb.NewNumberValue(roundNoise(x))
	case float32:
		return structpb.NewNumberValue(float64(x))
	case bool:
		return structpb.NewBoolValue(x)
	case string:
		return structpb.NewStringValue(x)
	case []any:
		list := make([]*structpb.Value, len(x))
		for i, e := range x {
			list[i] = valuePB(e)
		}
		return structpb.NewListValue(&structpb.ListValue{Values: list})
	default:
		return structpb.NewStringValue(fmt.Sprint(x))
	}
}

func (s *queryServer) GenerateSql(ctx context.Context, req *analysisv1.GenerateSqlRequest) (*analysisv1.GenerateSqlResponse, error) {
	limit := defaultLimit
	if req.Limit != nil {
		limit = int(req.GetLimit())
	}
	c, err := s.compile(ctx, req, limit)
	if err != nil {
		return nil, err
	}
	return &analysisv1.GenerateSqlResponse{Sql: c.SQL, Params: paramsPB(c.Args), Dialect: c.Dialect}, nil
}

func (s *queryServer) PreviewQuery(ctx context.Context, req *analysisv1.PreviewQueryRequest) (*analysisv1.PreviewQueryResponse, error) {
	limit := defaultLimit
	if req.Limit != nil {
		limit = int(req.GetLimit())
	}
	limit = min(limit, s.maxRows)
	c, err := s.compile(ctx, req, limit+1) // one more row tells whether the answer was cut
	if err != nil {
		return nil, err
	}
	start := time.Now()
	res, err := s.store.Query(ctx, c.SQL, c.Args, warehouse.QueryOptions{MaxRows: limit, Timeout: s.timeout})
	if err != nil {
		return nil, err
	}
	resp := &analysisv1.PreviewQueryResponse{Sql: c.SQL, Params: paramsPB(c.Args), ElapsedMs: time.Since(start).Milliseconds(),
		Truncated: res.Truncated, Rows: rowsPB(res.Rows)}
	for _, col := range c.Columns {
		resp.Columns = append(resp.Columns, &analysisv1.ResultColumn{Name: col.Name, Type: string(col.Type), Role: string(col.Role)})
	}
	return resp, nil
}

func (s *queryServer) GetCatalog(ctx context.Context, req *analysisv1.GetCatalogRequest) (*analysisv1.GetCatalogResponse, error) {
	if _, err := authn.Caller(ctx); err != nil {
		return nil, err
	}
	cat, err := s.metrics.catalog(ctx)
	if err != nil {
		return nil, err
	}
	resp := &analysisv1.GetCatalogResponse{}
	for _, t := range cat.Tables {
		if req.GetTable() != "" && t.Name != req.GetTable() {
			continue
		}
		ct := &analysisv1.CatalogTable{Name: t.Name, DisplayName: t.Description, Description: t.Description, DefaultTimeColumn: t.TimeColumn}
		for _, c := range t.Columns {
			if c.Name == catalog.TenantColumn {
				continue
			}
			ct.Columns = append(ct.Columns, &analysisv1.CatalogColumn{Name: c.Name, DisplayName: c.Description, Type: string(c.Type), Role: string(c.Role), Description: c.Description})
		}
		resp.Tables = append(resp.Tables, ct)
	}
	if req.GetTable() != "" && len(resp.Tables) == 0 {
		return nil, apperr.NotFound("table", req.GetTable())
	}
	for _, d := range cat.Dimensions {
		resp.Dimensions = append(resp.Dimensions, &analysisv1.CatalogDimension{Name: d.Name, DisplayName: d.LabelColumn, Columns: []string{d.Table + "." + d.Column, d.LabelTable + "." + d.LabelColumn}})
	}
	return resp, nil
}

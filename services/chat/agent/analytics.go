package agent

import (
	"context"
	"errors"
	"strings"
	"time"

	"google.golang.org/grpc"

	analysisv1 "github.com/shopmind/shopmind/gen/go/shopmind/analysis/v1"
	"github.com/shopmind/shopmind/internal/authn"
)

// Analytics is what the agents use of the analysis service: the metric definitions, the
// catalog and previews. The gRPC implementation forwards the caller's identity; tests use
// fakes.
type Analytics interface {
	ListMetrics(ctx context.Context, req *analysisv1.ListMetricsRequest) (*analysisv1.ListMetricsResponse, error)
	GetCatalog(ctx context.Context, req *analysisv1.GetCatalogRequest) (*analysisv1.GetCatalogResponse, error)
	PreviewQuery(ctx context.Context, req *analysisv1.PreviewQueryRequest) (*analysisv1.PreviewQueryResponse, error)
}

// GRPCAnalytics calls MetricService and QueryService over gRPC as the caller: the identity
// in the context (authn.WithIdentity; the agents put the request's there) is forwarded with
// authn.Outgoing, so queries run with the caller's tenant and permissions.
type GRPCAnalytics struct {
	metrics analysisv1.MetricServiceClient
	query   analysisv1.QueryServiceClient
	timeout time.Duration
}

// NewGRPCAnalytics wraps a connection to the analysis target; timeout bounds each call (0:
// none beyond the context's).
func NewGRPCAnalytics(conn grpc.ClientConnInterface, timeout time.Duration) *GRPCAnalytics {
	return &GRPCAnalytics{metrics: analysisv1.NewMetricServiceClient(conn), query: analysisv1.NewQueryServiceClient(conn), timeout: timeout}
}

// ErrNoIdentity is the failure of a call made without a signed-in caller.
var ErrNoIdentity = errors.New("no caller identity: the analysis service is called on behalf of a signed-in user")

// AsCaller is the context of a call to another service on behalf of the caller in ctx
// (authn.WithIdentity): the identity forwarded with authn.Outgoing (bearer token, x-env),
// bounded by timeout when positive. ErrNoIdentity without a caller.
func AsCaller(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc, error) {
	if authn.FromContext(ctx) == nil {
		return nil, nil, ErrNoIdentity
	}
	ctx = authn.Outgoing(ctx)
	if timeout > 0 {
		c, cancel := context.WithTimeout(ctx, timeout)
		return c, cancel, nil
	}
	return ctx, func() {}, nil
}

// CallAs makes one call to another service as the caller in ctx (AsCaller), bounded by
// timeout: the body of every method of the agents' gRPC clients.
func CallAs[Req, Resp any](ctx context.Context, timeout time.Duration,
	call func(context.Context, Req, ...grpc.CallOption) (Resp, error), req Req) (Resp, error) {
	ctx, cancel, err := AsCaller(ctx, timeout)
	if err != nil {
		var none Resp
		return none, err
	}
	defer cancel()
	return call(ctx, req)
}

// ListMetrics implements Analytics.
func (g *GRPCAnalytics) ListMetrics(ctx context.Context, req *analysisv1.ListMetricsRequest) (*analysisv1.ListMetricsResponse, error) {
	return CallAs(ctx, g.timeout, g.metrics.ListMetrics, req)
}

// GetCatalog implements Analytics.
func (g *GRPCAnalytics) GetCatalog(ctx context.Context, req *analysisv1.GetCatalogRequest) (*analysisv1.GetCatalogResponse, error) {
	return CallAs(ctx, g.timeout, g.query.GetCatalog, req)
}

// PreviewQuery implements Analytics.
func (g *GRPCAnalytics) PreviewQuery(ctx context.Context, req *analysisv1.PreviewQueryRequest) (*analysisv1.PreviewQueryResponse, error) {
	return CallAs(ctx, g.timeout, g.query.PreviewQuery, req)
}

// Grain is the row level a metric is measured at, which decides the dimensions it can be
// split by: an order-level amount (gmv) cannot be split by goods or category, because one
// order holds goods of several categories.
type Grain string

// Metric grains.
const (
	GrainOrder Grain = "order" // aggregates basic_orders
	GrainLine  Grain = "line"  // aggregates basic_order_items (order lines)
	GrainOther Grain = "other"
)

// MetricInfo is a metric as the agents use it.
type MetricInfo struct {
	ID          int64
	Name        string
	DisplayName string
	Description string
	Group       string
	Type        string // derived, order, formula
	Synonyms    []string
	Grain       Grain
	// Money is true for amounts (formatted with two decimals).
	Money bool
	// Additive is true when the values of a split add up to the total (sum and count
	// aggregations), so shares of the total make sense.
	Additive bool
	// Expression is a formula metric's expression.
	Expression string
}

// Label is the display name, or the name.
func (m MetricInfo) Label() string {
	if m.DisplayName != "" {
		return m.DisplayName
	}
	return m.Name
}

// LabelIn is the label for an answer in Chinese (the first Chinese synonym, when there is
// one) or English (Label).
func (m MetricInfo) LabelIn(zh bool) string {
	if zh {
		for _, s := range m.Synonyms {
			if HasHan(s) {
				return s
			}
		}
	}
	return m.Label()
}

var moneyWords = []string{"amount", "price", "cost", "value", "gmv", "revenue", "sales"}

// MetricInfos flattens ListMetrics' groups.
func MetricInfos(resp *analysisv1.ListMetricsResponse) []MetricInfo {
	var out []MetricInfo
	for _, g := range resp.GetGroups() {
		for _, m := range g.GetMetrics() {
			mi := MetricInfo{ID: m.GetId(), Name: m.GetName(), DisplayName: m.GetDisplayName(), Description: m.GetDescription(),
				Group: m.GetGroup(), Type: m.GetType(), Synonyms: m.GetSynonyms(), Grain: GrainOther}
			if mi.Group == "" {
				mi.Group = g.GetGroup()
			}
			switch c := m.GetConfig().GetKind().(type) {
			case *analysisv1.MetricConfig_Order:
				mi.Grain = GrainOrder
				f := c.Order.GetOrderField()
				mi.Additive = true
				mi.Money = containsAny(f, moneyWords)
			case *analysisv1.MetricConfig_Derived:
				src := c.Derived.GetSourceField()
				switch {
				case strings.HasPrefix(src, "basic_order_items."):
					mi.Grain = GrainLine
				case strings.HasPrefix(src, "basic_orders."):
					mi.Grain = GrainOrder
				}
				agg := c.Derived.GetAggregation()
				mi.Additive = agg == "sum" || agg == "count"
				mi.Money = (agg == "sum" || agg == "avg" || agg == "min" || agg == "max") && containsAny(src, moneyWords)
			case *analysisv1.MetricConfig_Formula:
				mi.Expression = c.Formula.GetExpression()
			}
			out = append(out, mi)
		}
	}
	byName := map[string]*MetricInfo{}
	for i := range out {
		byName[out[i].Name] = &out[i]
	}
	// formulas: the grain of their operands; money when a money metric is divided or scaled
	for i := range out {
		m := &out[i]
		if m.Type != "formula" || m.Expression == "" {
			continue
		}
		grain := Grain("")
		for _, tok := range strings.FieldsFunc(m.Expression, func(r rune) bool { return !(r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') }) {
			dep := byName[tok]
			if dep == nil {
				continue
			}
			if dep.Money {
				m.Money = true
			}
			if grain == "" {
				grain = dep.Grain
			} else if grain != dep.Grain {
				grain = GrainOther
			}
		}
		if grain != "" {
			m.Grain = grain
		}
	}
	return out
}

func containsAny(s string, words []string) bool {
	s = strings.ToLower(s)
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// FetchMetrics fetches the caller's metrics.
func FetchMetrics(ctx context.Context, a Analytics) ([]MetricInfo, error) {
	resp, err := a.ListMetrics(ctx, &analysisv1.ListMetricsRequest{})
	if err != nil {
		return nil, err
	}
	return MetricInfos(resp), nil
}

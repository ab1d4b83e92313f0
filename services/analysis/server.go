// Package analysis is the Analytics service: metric definitions and the semantic layer (preview and SQL generation).
//
// Not built yet: every RPC of its contract is registered and answers an honest 501
// "not implemented" until the issue that builds this service lands.
package analysis

import (
	"context"

	"google.golang.org/grpc"

	"github.com/shopmind/shopmind/gateway"
	analysisv1 "github.com/shopmind/shopmind/gen/go/shopmind/analysis/v1"
	"github.com/shopmind/shopmind/internal/service"
)

// Service describes the analysis service to the binary.
func Service() service.Def {
	return service.Def{
		Name: "analysis",
		Register: func(_ context.Context, s grpc.ServiceRegistrar, _ service.Deps) error {
			analysisv1.RegisterMetricServiceServer(s, analysisv1.UnimplementedMetricServiceServer{})
			analysisv1.RegisterQueryServiceServer(s, analysisv1.UnimplementedQueryServiceServer{})
			return nil
		},
		Gateway: gateway.Routes(analysisv1.RegisterMetricServiceHandler, analysisv1.RegisterQueryServiceHandler),
	}
}

// Package nl2sql is the Natural-language-to-SQL integration service: provider tokens, chats, access policies, datasource setup, embed URLs.
//
// Not built yet: every RPC of its contract is registered and answers an honest 501
// "not implemented" until the issue that builds this service lands.
package nl2sql

import (
	"context"

	"google.golang.org/grpc"

	nl2sqlv1 "github.com/shopmind/shopmind/gen/go/shopmind/nl2sql/v1"
	"github.com/shopmind/shopmind/internal/restapi"
	"github.com/shopmind/shopmind/internal/service"
)

// Service describes the nl2sql service to the binary.
func Service() service.Def {
	return service.Def{
		Name: "nl2sql",
		Register: func(_ context.Context, s grpc.ServiceRegistrar, _ service.Deps) error {
			nl2sqlv1.RegisterNl2SqlServiceServer(s, nl2sqlv1.UnimplementedNl2SqlServiceServer{})
			return nil
		},
		Gateway: restapi.Routes(restapi.Route(nl2sqlv1.RegisterNl2SqlServiceHandlerClient, nl2sqlv1.NewNl2SqlServiceClient)),
	}
}

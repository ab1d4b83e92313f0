// Package notify is the Notification service: collected notifications.
//
// Not built yet: every RPC of its contract is registered and answers an honest 501
// "not implemented" until the issue that builds this service lands.
package notify

import (
	"context"

	"google.golang.org/grpc"

	notifyv1 "github.com/shopmind/shopmind/gen/go/shopmind/notify/v1"
	"github.com/shopmind/shopmind/internal/restapi"
	"github.com/shopmind/shopmind/internal/service"
)

// Service describes the notify service to the binary.
func Service() service.Def {
	return service.Def{
		Name: "notify",
		Register: func(_ context.Context, s grpc.ServiceRegistrar, _ service.Deps) error {
			notifyv1.RegisterNotifyServiceServer(s, notifyv1.UnimplementedNotifyServiceServer{})
			return nil
		},
		Gateway: restapi.Routes(restapi.Route(notifyv1.RegisterNotifyServiceHandlerClient, notifyv1.NewNotifyServiceClient)),
	}
}

// Package chat is the chat service: streamed replies (v2 over SSE), v1 messages and
// workflows, sessions and history, and its health endpoint.
//
// Not built yet: every RPC of its contract is registered and answers an honest 501
// "not implemented" until the issue that builds this service lands.
package chat

import (
	"context"

	"google.golang.org/grpc"

	"github.com/shopmind/shopmind/gateway"
	chatv1 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v1"
	chatv2 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v2"
	"github.com/shopmind/shopmind/internal/service"
)

// Service describes the chat service to the binary.
func Service() service.Def {
	return service.Def{
		Name: "chat",
		Register: func(_ context.Context, s grpc.ServiceRegistrar, _ service.Deps) error {
			chatv2.RegisterChatServiceServer(s, chatv2.UnimplementedChatServiceServer{})
			chatv1.RegisterChatServiceServer(s, chatv1.UnimplementedChatServiceServer{})
			chatv1.RegisterSessionServiceServer(s, chatv1.UnimplementedSessionServiceServer{})
			chatv1.RegisterHealthServiceServer(s, chatv1.UnimplementedHealthServiceServer{})
			return nil
		},
		Gateway: gateway.Routes(chatv2.RegisterChatServiceHandler, chatv1.RegisterChatServiceHandler,
			chatv1.RegisterSessionServiceHandler, chatv1.RegisterHealthServiceHandler),
	}
}

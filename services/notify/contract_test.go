package notify_test

import (
	"testing"

	notifyv1 "github.com/shopmind/shopmind/gen/go/shopmind/notify/v1"
	"github.com/shopmind/shopmind/internal/testutil/stack"
)

// Contract test: the notify service is not built yet; every RPC answers Unimplemented,
// naming itself, to a valid request on the gRPC server.
func TestContractUnimplemented(t *testing.T) {
	s := stack.StartServices(t, "notify")
	c := notifyv1.NewNotifyServiceClient(s.Conn)
	stack.Unimplemented(t, notifyv1.NotifyService_ServiceDesc, map[string]func() error{
		"ListCollected": func() error { _, err := c.ListCollected(s.Admin, &notifyv1.ListCollectedRequest{}); return err },
	})
}

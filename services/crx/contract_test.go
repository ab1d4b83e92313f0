package crx_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	crxv1 "github.com/shopmind/shopmind/gen/go/shopmind/crx/v1"
	"github.com/shopmind/shopmind/internal/testutil/stack"
)

// Contract test: the crx service is not built yet; every RPC answers Unimplemented,
// naming itself, to a valid request on the gRPC server.
func TestContractUnimplemented(t *testing.T) {
	s := stack.StartServices(t, "crx")
	c := crxv1.NewExtensionServiceClient(s.Conn)
	now := timestamppb.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	const batch = "7b0d3c52-0a4f-4f5e-9d8e-2f1f3b9c1a77"
	stack.Unimplemented(t, crxv1.ExtensionService_ServiceDesc, map[string]func() error{
		"GetAuthConfig": func() error { _, err := c.GetAuthConfig(s.Admin, &crxv1.GetAuthConfigRequest{}); return err },
		"SyncMetrics": func() error {
			_, err := c.SyncMetrics(s.Admin, &crxv1.SyncMetricsRequest{ClientBatchId: batch,
				Items: []*crxv1.MetricItem{{MetricKey: "gmv", ShopId: 1, Value: 1, CollectedAt: now}}})
			return err
		},
		"UploadAdhoc": func() error {
			_, err := c.UploadAdhoc(s.Admin, &crxv1.UploadAdhocRequest{ClientId: batch, PageUrl: "https://shop.example.com/p",
				CollectedAt: now, Data: &structpb.Struct{Fields: map[string]*structpb.Value{"k": structpb.NewStringValue("v")}}})
			return err
		},
		"LogError": func() error {
			_, err := c.LogError(s.Admin, &crxv1.LogErrorRequest{Level: "error", Message: "boom"})
			return err
		},
		"GetVersion": func() error { _, err := c.GetVersion(s.Admin, &crxv1.GetVersionRequest{}); return err },
	})
}

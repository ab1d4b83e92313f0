package nl2sql_test

import (
	"testing"

	nl2sqlv1 "github.com/shopmind/shopmind/gen/go/shopmind/nl2sql/v1"
	"github.com/shopmind/shopmind/internal/testutil/stack"
)

// Contract test: the nl2sql service is not built yet; every RPC answers Unimplemented,
// naming itself, to a valid request on the gRPC server.
func TestContractUnimplemented(t *testing.T) {
	s := stack.StartServices(t, "nl2sql")
	c := nl2sqlv1.NewNl2SqlServiceClient(s.Conn)
	stack.Unimplemented(t, nl2sqlv1.Nl2SqlService_ServiceDesc, map[string]func() error{
		"CreateToken": func() error {
			_, err := c.CreateToken(s.Admin, &nl2sqlv1.CreateTokenRequest{ShopIds: []int64{1}})
			return err
		},
		"CreateChat": func() error { _, err := c.CreateChat(s.Admin, &nl2sqlv1.CreateChatRequest{Token: "t"}); return err },
		"GetChat":    func() error { _, err := c.GetChat(s.Admin, &nl2sqlv1.GetChatRequest{ChatId: "c1"}); return err },
		"CreateEmbedUrl": func() error {
			_, err := c.CreateEmbedUrl(s.Admin, &nl2sqlv1.CreateEmbedUrlRequest{ShopIds: []int64{1}})
			return err
		},
		"CreatePolicy": func() error {
			_, err := c.CreatePolicy(s.Admin, &nl2sqlv1.CreatePolicyRequest{DatasourceId: "ds1", ShopIds: []int64{1}})
			return err
		},
		"SetupDatasource": func() error {
			_, err := c.SetupDatasource(s.Admin, &nl2sqlv1.SetupDatasourceRequest{})
			return err
		},
		"Health": func() error { _, err := c.Health(s.Admin, &nl2sqlv1.HealthRequest{}); return err },
	})
}

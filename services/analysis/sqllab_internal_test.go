package analysis

import (
	"context"
	"errors"
	"strings"
	"testing"

	analysisv1 "github.com/shopmind/shopmind/gen/go/shopmind/analysis/v1"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/authn"
)

// A sandbox that could not open at start answers 503 naming what to look at, not a panic.
func TestSQLLabWithoutSandbox(t *testing.T) {
	s := &queryServer{sandboxErr: errors.New("permission denied to create role")}
	ctx := authn.WithIdentity(context.Background(), &authn.Identity{TenantID: 1, UserID: 1})
	_, err := s.ExecuteSql(ctx, &analysisv1.ExecuteSqlRequest{Sql: "SELECT 1"})
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Kind != apperr.KindUnavailable || !strings.Contains(ae.Message, "SHOPMIND_SANDBOX_ROLE") {
		t.Fatalf("ExecuteSql: %v", err)
	}
	if _, err := s.GetSqlSandbox(ctx, &analysisv1.GetSqlSandboxRequest{}); !errors.As(err, &ae) || ae.Kind != apperr.KindUnavailable {
		t.Fatalf("GetSqlSandbox: %v", err)
	}
}

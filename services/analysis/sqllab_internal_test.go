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

// Sums of double precision amounts answer without their addition error; other values as
// they are.
func TestValueRoundsSummationNoise(t *testing.T) {
	for in, want := range map[float64]float64{6396094.460000039: 6396094.46, 2840226.5399999823: 2840226.54,
		0.1 + 0.2: 0.3, 1.5e-20: 1.5e-20, 123456789.125: 123456789.125, 0: 0, -42.000000000001: -42} {
		if got := valuePB(in).GetNumberValue(); got != want {
			t.Errorf("%v: got %v, want %v", in, got, want)
		}
	}
}

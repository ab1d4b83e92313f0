package tenant

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/config"
	"github.com/shopmind/shopmind/internal/testutil/pgtest"
)

// A production start on a database whose demo tenant a development start created warns
// about the development passwords, naming the users, and creates nothing.
func TestProductionWarnsAboutLeftoverDefaultPasswords(t *testing.T) {
	db := pgtest.New(t, authn.Migrations(), *migrations())
	st := &store{pool: db.Pool}
	ctx := context.Background()
	dev, err := config.FromMap(map[string]string{"SHOPMIND_BCRYPT_COST": "4", "SHOPMIND_ADMIN_PASSWORD": "Changed-Admin-2040"})
	if err != nil {
		t.Fatal(err)
	}
	if err := bootstrap(ctx, st, dev, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	prod, err := config.FromMap(map[string]string{"SHOPMIND_MODE": "production", "SHOPMIND_JWT_SECRET": strings.Repeat("s", 40)})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	if err := bootstrap(ctx, st, prod, slog.New(slog.NewTextHandler(&logs, nil))); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if !strings.Contains(out, "user=analyst") || strings.Contains(out, "user=admin") || !strings.Contains(out, "default password") {
		t.Fatalf("want a warning about analyst only:\n%s", out)
	}
}

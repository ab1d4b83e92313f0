package authn

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/shopmind/shopmind/internal/apperr"
)

// operators is an OperatorSource answering from a set of user ids.
type operators map[int64]bool

func (o operators) IsOperator(_ context.Context, id *Identity) (bool, error) {
	return o[id.UserID], nil
}

// TestOperatorRule checks the operator access rule: declared in the contract on
// PlatformService, it implies the administrator rule, needs an OperatorSource (none:
// everyone refused) and asks it about the caller.
func TestOperatorRule(t *testing.T) {
	const listTenants = "/shopmind.tenant.v1.PlatformService/ListTenants"
	if r := RuleFor(listTenants); !r.Operator || !r.Admin {
		t.Fatalf("rule of ListTenants: %+v (the contract declares operator: true)", r)
	}
	tk := NewTokens(secret, time.Hour, 24*time.Hour)
	call := func(a *Authenticator, sub Subject) error {
		p, err := tk.Issue(sub, "dev", "")
		if err != nil {
			t.Fatal(err)
		}
		ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("authorization", "Bearer "+p.Access))
		_, err = a.Authenticate(ctx, listTenants)
		return err
	}
	admin := Subject{UserID: 7, TenantID: 3, IsAdmin: true}
	user := Subject{UserID: 8, TenantID: 3}
	forbidden := func(err error) bool {
		var ae *apperr.Error
		return errors.As(err, &ae) && ae.Kind == apperr.KindForbidden
	}
	base := Authenticator{Tokens: tk, Revocations: NewRevocations(nil, nil), DefaultEnv: "dev"}
	if err := call(&base, admin); !forbidden(err) {
		t.Errorf("no operator source: want 403, got %v", err)
	}
	withOps := base
	withOps.Operators = operators{7: true, 8: true}
	if err := call(&withOps, admin); err != nil {
		t.Errorf("an operator: %v", err)
	}
	if err := call(&withOps, user); !forbidden(err) {
		t.Errorf("a non-administrator the source calls an operator: want 403, got %v", err)
	}
	withOps.Operators = operators{}
	if err := call(&withOps, admin); !forbidden(err) {
		t.Errorf("an administrator who is no operator: want 403, got %v", err)
	}
}

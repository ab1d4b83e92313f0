package tenant

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/config"
)

// sessions ends the sessions (refresh-token families, with the access tokens issued in
// them) of a user or of a whole tenant, inside the transaction of the change that asks for
// it: a disabled user or tenant, a new password, a lost administrator flag, a deleted user.
// The change and the revocations commit together, so a failure never leaves a disabled user
// with working tokens, nor revoked tokens for a change that was rolled back.
type sessions struct {
	rev *authn.Revocations
	// accessTTL bounds how long the access tokens of a family stay valid after its last
	// rotation: the revocation is kept at least that long.
	accessTTL time.Duration
}

// Selectors of whose sessions end.
const (
	ofUsers  = "user_id = ANY($1::bigint[])"
	ofTenant = "tenant_id = $1"
)

// endTx revokes, inside tx, every live refresh family matching cond (ofUsers or ofTenant)
// with arg. It returns the number of families ended and the function to call after the
// commit (applies the revocations in this process at once; the others learn of them by the
// notification sent at commit).
func (s sessions) endTx(ctx context.Context, tx pgx.Tx, cond string, arg any) (int, func(), error) {
	// Rows locked in id order first, as revokeFamilyRows does, so that concurrent revokers
	// of overlapping families cannot deadlock.
	if _, err := tx.Exec(ctx, "SELECT id FROM tenant.refresh_tokens WHERE revoked_at IS NULL AND "+cond+" ORDER BY id FOR UPDATE", arg); err != nil {
		return 0, nil, err
	}
	rows, err := tx.Query(ctx, `WITH r AS (UPDATE tenant.refresh_tokens SET revoked_at = now()
		WHERE revoked_at IS NULL AND `+cond+` RETURNING family, expires_at)
		SELECT family, max(expires_at) FROM r GROUP BY family`, arg)
	if err != nil {
		return 0, nil, err
	}
	floor := time.Now().Add(s.accessTTL)
	families := map[string]time.Time{}
	for rows.Next() {
		var family string
		var latest time.Time
		if err := rows.Scan(&family, &latest); err != nil {
			rows.Close()
			return 0, nil, err
		}
		families[family] = later(latest, floor)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, nil, err
	}
	apply, err := s.rev.RevokeInTx(ctx, tx, authn.KindFamily, families)
	if err != nil {
		return 0, nil, err
	}
	return len(families), apply, nil
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// checkPassword applies the password rules (config.CheckPassword, the one place they are
// written) to a password chosen through the API, as a 400 naming field.
func checkPassword(field, password, username, tenantCode string) error {
	if err := config.CheckPassword(password, username, tenantCode); err != nil {
		return apperr.Invalid(field, "password.policy", err.Error())
	}
	return nil
}

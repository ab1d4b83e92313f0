package nl2sql

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"google.golang.org/protobuf/proto"

	nl2sqlv1 "github.com/shopmind/shopmind/gen/go/shopmind/nl2sql/v1"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/service"
)

// CreatePolicy changes two systems: the provider (the policy, and the role it creates or
// extends) and the bridge's own tables. The provider commits first; the local record must
// then never turn the answer into a failure for a change that was made. So the record is
// tried a few times in the request and, if the database still refuses, kept in memory and
// retried every recordEvery until it is stored (the answer is the policy either way; a
// warning names it). A policy given a name can be retried safely: the same name with the
// same content answers the policy already made, with other content 409.

// policyRecord is the local record of one policy (and of the role, when the request made it).
type policyRecord struct {
	PolicyID, RoleID, DatasourceID string
	TenantID                       int64
	Name, Fingerprint              string
	CreatedAt                      time.Time
}

const (
	recordAttempts = 3
	recordEvery    = time.Second
)

// unrecorded are the policies made at the provider whose local record failed, retried in
// the background; they are also answered to a retry by name.
type unrecorded struct {
	mu      sync.Mutex
	pending []policyRecord
}

// policyFingerprint identifies what a policy says (role, pattern, filter, datasource).
func policyFingerprint(roleID, pattern, datasource string, filter *nl2sqlv1.RowFilter) string {
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(filter)
	h := sha256.New()
	for _, s := range []string{roleID, pattern, datasource, string(b)} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// namedPolicy finds the tenant's policy of that name (recorded, or waiting to be): found
// false when there is none.
func (b *bridge) namedPolicy(ctx context.Context, tenantID int64, name string) (policyRecord, bool, error) {
	b.unrecorded.mu.Lock()
	for _, p := range b.unrecorded.pending {
		if p.TenantID == tenantID && p.Name == name {
			b.unrecorded.mu.Unlock()
			return p, true, nil
		}
	}
	b.unrecorded.mu.Unlock()
	p := policyRecord{TenantID: tenantID, Name: name}
	err := b.pool.QueryRow(ctx, `SELECT policy_id, role_id, datasource_id, fingerprint, created_at FROM nl2sql.policies
		WHERE tenant_id = $1 AND name = $2`, tenantID, name).Scan(&p.PolicyID, &p.RoleID, &p.DatasourceID, &p.Fingerprint, &p.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, false, nil
	}
	return p, err == nil, err
}

// sameNamed answers a request whose name the tenant already used: the policy, when it says
// the same; 409 otherwise.
func sameNamed(p policyRecord, fingerprint string) error {
	if p.Fingerprint != fingerprint {
		return apperr.New(apperr.KindConflict, "a policy named %q exists with another role, pattern or filter; choose another name", apperr.Clip(p.Name, 64))
	}
	return nil
}

// record stores p locally, trying recordAttempts times; when the database keeps refusing, p
// waits in memory for the background recorder. It never fails: the provider has the policy.
func (b *bridge) record(ctx context.Context, p policyRecord) {
	var err error
	for attempt := 0; attempt < recordAttempts; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
			}
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		err = b.store(rctx, p)
		cancel()
		if err == nil {
			return
		}
	}
	b.log.Warn("nl2sql: policy made at the provider, its local record failed; retrying in the background",
		"policy", p.PolicyID, "role", p.RoleID, "tenant", p.TenantID, "error", err)
	b.unrecorded.mu.Lock()
	b.unrecorded.pending = append(b.unrecorded.pending, p)
	b.unrecorded.mu.Unlock()
}

// store writes the role (when new) and the policy in one transaction; storing twice is
// harmless. A name another request recorded first (two concurrent first requests) is
// dropped: the policy is recorded without it.
func (b *bridge) store(ctx context.Context, p policyRecord) error {
	err := b.storeOnce(ctx, p)
	if pgErr := (*pgconn.PgError)(nil); p.Name != "" && errors.As(err, &pgErr) && pgErr.Code == "23505" {
		p.Name = ""
		err = b.storeOnce(ctx, p)
	}
	return err
}

func (b *bridge) storeOnce(ctx context.Context, p policyRecord) error {
	tx, err := b.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `INSERT INTO nl2sql.roles (role_id, tenant_id) VALUES ($1, $2) ON CONFLICT (role_id) DO NOTHING`, p.RoleID, p.TenantID); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO nl2sql.policies (policy_id, tenant_id, role_id, datasource_id, name, fingerprint)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (policy_id) DO NOTHING`,
		p.PolicyID, p.TenantID, p.RoleID, p.DatasourceID, p.Name, p.Fingerprint); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// recorder retries the unrecorded policies every recordEvery until ctx ends.
func (b *bridge) recorder(ctx context.Context) {
	service.Every(ctx, recordEvery, func() {
		b.unrecorded.mu.Lock()
		pending := append([]policyRecord(nil), b.unrecorded.pending...)
		b.unrecorded.mu.Unlock()
		for _, p := range pending {
			if err := b.store(ctx, p); err != nil {
				if ctx.Err() == nil {
					b.log.Debug("nl2sql: policy still not recorded", "policy", p.PolicyID, "error", err)
				}
				continue
			}
			b.unrecorded.mu.Lock()
			for i, q := range b.unrecorded.pending {
				if q.PolicyID == p.PolicyID {
					b.unrecorded.pending = append(b.unrecorded.pending[:i], b.unrecorded.pending[i+1:]...)
					break
				}
			}
			b.unrecorded.mu.Unlock()
		}
	})
}

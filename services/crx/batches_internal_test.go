package crx

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	crxv1 "github.com/shopmind/shopmind/gen/go/shopmind/crx/v1"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/testutil/pgtest"
)

// Batch ids are remembered 7 days (batchMemory), then forgotten by the hourly sweep, answered
// or not; younger ones stay.
func TestOldBatchesAreForgotten(t *testing.T) {
	db := pgtest.New(t, *Service().Migrations)
	ctx := context.Background()
	rows := []struct {
		id, age  string
		answered bool
	}{
		{"00000000-0000-0000-0000-000000000001", "8 days", true},
		{"00000000-0000-0000-0000-000000000002", "6 days", true},
		{"00000000-0000-0000-0000-000000000003", "8 days", false},
		{"00000000-0000-0000-0000-000000000004", "0 days", false},
	}
	for _, r := range rows {
		var response any
		if r.answered {
			response = `{"accepted":1}`
		}
		if _, err := db.Pool.Exec(ctx, `INSERT INTO crx.sync_batches (tenant_id, client_batch_id, user_id, response, created_at)
			VALUES (1, $1, 1, $2, now() - $3::interval)`, r.id, response, r.age); err != nil {
			t.Fatal(err)
		}
	}
	s := &server{pool: db.Pool}
	n, err := s.forgetOldBatches(ctx)
	if err != nil || n != 2 {
		t.Fatalf("forgot %d (%v), want 2", n, err)
	}
	var left []string
	r, err := db.Pool.Query(ctx, `SELECT client_batch_id::text FROM crx.sync_batches ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		var id string
		if err := r.Scan(&id); err != nil {
			t.Fatal(err)
		}
		left = append(left, id)
	}
	if want := []string{rows[1].id, rows[3].id}; !slices.Equal(left, want) {
		t.Fatalf("left %v, want %v", left, want)
	}
}

// A claim taken over by a retry (its first request outlived claimExpiry) is the retry's: the
// first request neither releases it nor answers into it.
func TestTakenOverClaimIsTheRetrys(t *testing.T) {
	db := pgtest.New(t, *Service().Migrations)
	ctx := context.Background()
	s := &server{pool: db.Pool, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	id := &authn.Identity{TenantID: 1, UserID: 1}
	const batch = "00000000-0000-0000-0000-0000000000aa"
	_, first, err := s.claimBatch(ctx, id, batch)
	if err != nil || first.IsZero() {
		t.Fatalf("first claim: %v %v", first, err)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE crx.sync_batches SET created_at = created_at - interval '2 minutes'`); err != nil {
		t.Fatal(err)
	}
	_, retry, err := s.claimBatch(ctx, id, batch)
	if err != nil || retry.IsZero() || retry.Equal(first) {
		t.Fatalf("takeover: %v %v", retry, err)
	}
	first = first.Add(-2 * time.Minute) // the first claim as it was stored
	if err := s.rememberBatch(ctx, id, &crxv1.SyncMetricsResponse{ClientBatchId: batch, Accepted: 9}, first); !errors.Is(err, errClaimTaken) {
		t.Fatalf("the first request answered into the retry's claim: %v", err)
	}
	s.releaseBatch(id.TenantID, batch, first)
	var open bool
	if err := db.Pool.QueryRow(ctx, `SELECT response IS NULL FROM crx.sync_batches WHERE client_batch_id = $1`, batch).Scan(&open); err != nil || !open {
		t.Fatalf("the retry's claim is gone or answered: %v %v", open, err)
	}
	if err := s.rememberBatch(ctx, id, &crxv1.SyncMetricsResponse{ClientBatchId: batch, Accepted: 3}, retry); err != nil {
		t.Fatalf("the retry's answer: %v", err)
	}
}

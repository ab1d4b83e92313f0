package crx

import (
	"context"
	"slices"
	"testing"

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

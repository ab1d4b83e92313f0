package chat

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	chatv1 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v1"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/testutil/pgtest"
)

// Each workflow event writes what changed, not the whole row: a large render written once
// is not written again by thirty progress events (its TOAST value is kept), and the stored
// workflow still reads back whole.
func TestWorkflowEventWritesOnlyWhatChanged(t *testing.T) {
	db := pgtest.New(t, authn.Migrations(), *migrations())
	st := &store{pool: db.Pool}
	ctx := context.Background()
	const wfID = "0b6d6b1e-1d2c-4c3b-9a4e-5f6a7b8c9d0e"
	o := owner{tenantID: 1, userID: 1}
	if _, err := st.createWorkflow(ctx, &workflowRecord{ID: wfID, Owner: o, Task: "t", Agents: []string{"a"}, Lease: time.Minute}); err != nil {
		t.Fatal(err)
	}
	noise := make([]byte, 100<<10)
	_, _ = rand.Read(noise)
	props, _ := structpb.NewStruct(map[string]any{"blob": hex.EncodeToString(noise)}) // 200 KiB, incompressible
	snap := &workflowSnapshot{Status: wfRunning, Renders: []*chatv1.RenderEvent{{Id: "r1", Component: "Big", Props: props}}}
	toast := func() int64 {
		var n int64
		if err := db.Pool.QueryRow(ctx, `SELECT pg_total_relation_size(reltoastrelid) FROM pg_class WHERE oid = 'chat.workflows'::regclass`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := st.appendWorkflowEvent(ctx, wfID, snap, &chatv1.StreamWorkflowEventsResponse{Type: "render"}); err != nil {
		t.Fatal(err)
	}
	before := toast()
	for i := int32(1); i <= 30; i++ {
		snap.Progress = i
		if err := st.appendWorkflowEvent(ctx, wfID, snap, &chatv1.StreamWorkflowEventsResponse{Type: "progress"}); err != nil {
			t.Fatal(err)
		}
	}
	if grown := toast() - before; grown > 1<<20 {
		t.Errorf("thirty progress events grew the workflow's TOAST by %d KiB: the unchanged 200 KiB render was written again each time", grown>>10)
	}
	w, err := st.getWorkflow(ctx, o, wfID)
	if err != nil || w.GetProgress() != 30 || len(w.GetRenders()) != 1 || w.GetRenders()[0].GetProps().GetFields()["blob"].GetStringValue() != hex.EncodeToString(noise) {
		t.Fatalf("read back: progress %d, %d renders, %v", w.GetProgress(), len(w.GetRenders()), err)
	}
}

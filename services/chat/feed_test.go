package chat

import "testing"

func TestFeed(t *testing.T) {
	f := newFeed[string](100, 3)
	if r := f.since(99); r.gone || len(r.items) != 0 || r.last != 99 {
		t.Fatalf("empty feed: %+v", r)
	}
	if r := f.since(100); !r.gone {
		t.Fatalf("an offset not given out yet is gone: %+v", r)
	}
	wait := f.since(99).wait
	for _, s := range []string{"a", "b", "c", "d"} {
		f.add(s)
	}
	select {
	case <-wait:
	default:
		t.Fatal("add did not wake the followers")
	}
	// Kept: b (101), c (102), d (103).
	if r := f.since(100); r.gone || len(r.items) != 3 || r.items[0] != "b" || r.last != 103 {
		t.Fatalf("since 100: %+v", r)
	}
	if r := f.since(102); len(r.items) != 1 || r.items[0] != "d" {
		t.Fatalf("since 102: %+v", r)
	}
	if r := f.since(99); !r.gone {
		t.Fatalf("a dropped offset is gone: %+v", r)
	}
	if r := f.since(103); r.gone || len(r.items) != 0 || r.done {
		t.Fatalf("at the head: %+v", r)
	}
	f.close()
	if r := f.since(103); !r.done {
		t.Fatalf("closed: %+v", r)
	}
	if f.head() != 103 {
		t.Fatalf("head %d", f.head())
	}
}

func TestStepsFromTheTaskPlanCard(t *testing.T) {
	for in, want := range map[string]string{"todo": wfPending, "in_progress": wfRunning, "done": wfCompleted,
		"failed": wfFailed, "error": wfFailed, "skipped": wfCancelled, "": wfPending, "Running": wfRunning} {
		if got := stepStatus(in); got != want {
			t.Errorf("%q: %s, want %s", in, got, want)
		}
	}
}

package basic

import (
	"context"
	"testing"
)

// A sync whose own time limit ran out is a partner failure to notify; one whose caller went
// away (cancelled, or past the caller's deadline) is not.
func TestCallerEnded(t *testing.T) {
	live := context.Background()
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		ctx  context.Context
		err  error
		want bool
	}{
		{live, context.DeadlineExceeded, false}, // the sync's SyncTimeout, inside a live request
		{gone, context.Canceled, true},
		{gone, nil, false},
	} {
		if got := callerEnded(c.ctx, c.err); got != c.want {
			t.Errorf("ctx err %v, err %v: %v, want %v", c.ctx.Err(), c.err, got, c.want)
		}
	}
}

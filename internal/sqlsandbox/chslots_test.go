package sqlsandbox

import (
	"testing"
	"time"
)

// TestClickHouseParserSlotsQueue: with every parser slot taken, a statement waits for a slot
// to come back instead of answering 503 at once (a burst queues briefly).
func TestClickHouseParserSlotsQueue(t *testing.T) {
	for range chParseSlots {
		chParsing <- struct{}{}
	}
	released := false
	release := func() {
		if !released {
			released = true
			for range chParseSlots {
				<-chParsing
			}
		}
	}
	t.Cleanup(release)
	done := make(chan error, 1)
	go func() {
		_, err := parseClickHouse("SELECT 1")
		done <- err
	}()
	time.Sleep(50 * time.Millisecond) // let the parse reach the full slots; not a timing assertion
	release()
	if err := <-done; err != nil {
		t.Fatalf("a statement arriving while the slots are busy: %v (want it to wait for a slot)", err)
	}
}

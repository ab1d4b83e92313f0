package catalog

import (
	"context"
	"testing"
	"time"
)

// The catalog is read once per TTL, not on every call.
func TestCache(t *testing.T) {
	loads := 0
	get := Cache(func(context.Context) (*Catalog, error) { loads++; return Base(), nil }, time.Hour)
	for range 5 {
		if c, err := get(context.Background()); err != nil || c == nil {
			t.Fatal(err)
		}
	}
	if loads != 1 {
		t.Fatalf("%d loads for 5 calls within the TTL, want 1", loads)
	}
}

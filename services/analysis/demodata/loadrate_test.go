package demodata_test

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/shopmind/shopmind/services/analysis/demodata"
	"github.com/shopmind/shopmind/services/analysis/warehouse/warehousetest"
)

// TestLoadRate measures the load rate into both stores (fresh databases, dropped after).
// It runs only when SHOPMIND_DEMO_LOAD_ORDERS is set:
//
//	SHOPMIND_DEMO_LOAD_ORDERS=1000000 go test ./services/analysis/demodata -run TestLoadRate -v -timeout 30m
func TestLoadRate(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SHOPMIND_DEMO_LOAD_ORDERS"))
	if n <= 0 {
		t.Skip("set SHOPMIND_DEMO_LOAD_ORDERS to measure the load rate")
	}
	batch, _ := strconv.Atoi(os.Getenv("SHOPMIND_DEMO_LOAD_BATCH"))
	writers, _ := strconv.Atoi(os.Getenv("SHOPMIND_DEMO_LOAD_WRITERS"))
	warehousetest.Each(t, func(t *testing.T, db *warehousetest.DB) {
		stats, err := demodata.Generate(context.Background(), db.Store.Writer(),
			demodata.Options{TenantID: 1, Orders: n, Seed: 1, Now: now, BatchSize: batch, Writers: writers, Progress: os.Stderr})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d orders, %d lines in %s: %.0f orders/s", db.Store.Dialect(), stats.Orders, stats.Items,
			stats.Elapsed.Round(1e8), stats.OrdersPerSecond())
	})
}

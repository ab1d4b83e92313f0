package stack

import (
	"testing"

	"github.com/shopmind/shopmind/internal/analytics/warehouse"
	"github.com/shopmind/shopmind/internal/analytics/warehouse/warehousetest"
	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/testutil/tier"
)

// StartAnalytics runs the platform (Start) with its analytical store in dialect:
// warehouse.DialectPostgres is the platform's own database, warehouse.DialectClickHouse a
// fresh ClickHouse database (the test skips without one). It returns that store too, for
// the test's own rows; opts apply after the store's.
func StartAnalytics(t testing.TB, dialect string, opts ...Option) (*Stack, *warehousetest.DB) {
	t.Helper()
	if dialect == warehouse.DialectClickHouse {
		db := warehousetest.ClickHouse(t)
		return Start(t, append([]Option{func(c *app.Config) { c.Analytics.URL = db.URL }}, opts...)...), db
	}
	tier.Needs(t, "the platform (stack)")
	s := StartOn(t, NewDatabase(t), opts...) // PostgreSQL whatever SHOPMIND_TEST_ANALYTICS says
	return s, warehousetest.OnPool(t, s.DB.Pool)
}

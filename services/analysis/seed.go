package analysis

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	analysisv1 "github.com/shopmind/shopmind/gen/go/shopmind/analysis/v1"
	"github.com/shopmind/shopmind/internal/analytics/demodata"
	"github.com/shopmind/shopmind/internal/service"
)

// DemoOrders is how many orders `make run` loads into the demo tenant.
const DemoOrders = 20_000

// seed loads the demo tenant's orders and metrics once (SHOPMIND_DEMO_DATA).
func (st *registration) seed(ctx context.Context, deps service.Deps) error {
	var tenantID int64
	err := deps.DB.QueryRow(ctx, "SELECT id FROM tenant.tenants WHERE code = 'demo'").Scan(&tenantID)
	if errors.Is(err, pgx.ErrNoRows) || err != nil {
		deps.Logger.Warn("demo data: tenant demo not found (the tenant service creates it); skipped", "error", err)
		return nil
	}
	var n int
	if err := deps.DB.QueryRow(ctx, "SELECT count(*) FROM analysis.metrics WHERE tenant_id = $1", tenantID).Scan(&n); err != nil {
		return err
	}
	if n > 0 { // seeded before: bring the demo definitions up to date
		return st.upgradeDemoMetrics(ctx, deps, tenantID)
	}
	existing, err := demodata.ExistingOrders(ctx, st.store, tenantID)
	if err != nil {
		return err
	}
	loaded := int(existing)
	if existing == 0 { // `shopmind demo-data` may have loaded orders already
		stats, err := demodata.Generate(ctx, st.store.Writer(), demodata.Options{TenantID: tenantID, Orders: DemoOrders, Seed: 1,
			Now: time.Now().UTC().Truncate(24 * time.Hour)})
		if err != nil {
			return err
		}
		loaded = stats.Orders
	}
	created, err := demodata.StandardMetrics(func(m *analysisv1.Metric) (int64, error) {
		rec, err := st.metrics.create(ctx, tenantID, m)
		if err != nil {
			return 0, err
		}
		return rec.ID, nil
	})
	if err != nil {
		return err
	}
	deps.Logger.Info("demo data loaded", "tenant", "demo", "orders", loaded, "metrics", len(created))
	return nil
}

// upgradeDemoMetrics migrates a demo tenant seeded by an earlier release: the standard
// metrics it lacks are created (the refund and cancellation metrics, refund_rate), and the
// derived sales metrics still counting every order (units_sold, line_amount, buyers without
// a query_condition) get the sold-orders condition. Metrics the tenant changed otherwise are
// left alone.
func (st *registration) upgradeDemoMetrics(ctx context.Context, deps service.Deps, tenantID int64) error {
	live, err := st.metrics.live(ctx, st.metrics.pool, tenantID)
	if err != nil {
		return err
	}
	byName := map[string]*metricRecord{}
	for _, m := range live {
		byName[m.Name] = m
	}
	changed := 0
	_, err = demodata.StandardMetrics(func(m *analysisv1.Metric) (int64, error) {
		cur, ok := byName[m.GetName()]
		if !ok {
			rec, err := st.metrics.create(ctx, tenantID, m)
			if err != nil {
				return 0, err
			}
			changed++
			return rec.ID, nil
		}
		want, have := m.GetConfig().GetDerived(), cur.Config.GetDerived()
		if want != nil && have != nil && len(have.GetQueryCondition()) == 0 && len(want.GetQueryCondition()) > 0 &&
			want.GetSourceField() == have.GetSourceField() && want.GetAggregation() == have.GetAggregation() {
			if _, err := st.metrics.update(ctx, tenantID, cur.ID, &analysisv1.Metric{Config: m.GetConfig(), Description: m.GetDescription()},
				[]string{"config", "description"}); err != nil {
				return 0, err
			}
			changed++
		}
		return cur.ID, nil
	})
	if err != nil {
		return err
	}
	if changed > 0 {
		deps.Logger.Info("demo metrics brought up to date", "tenant", "demo", "metrics", changed)
	}
	return nil
}

package analysis

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgxpool"

	analysisv1 "github.com/shopmind/shopmind/gen/go/shopmind/analysis/v1"
	"github.com/shopmind/shopmind/internal/analytics/demodata"
	"github.com/shopmind/shopmind/internal/analytics/warehouse"
	"github.com/shopmind/shopmind/internal/apperr"
)

// InstallStandardCatalog gives a tenant the standard e-commerce metric catalog: the demo
// tenant's definitions (demodata.StandardMetrics: sales, customers, goods, the refund and
// cancellation metrics, and the formulas over them), checked and stored as
// MetricService.CreateMetric stores them, so the tenant's administrators edit or delete them
// like their own. A metric whose name the tenant already uses is left as it is (its id still
// feeds the formulas). It returns how many metrics it created. `shopmind tenant create` calls
// it for every new tenant, so orders imported into the tenant can be analysed at once.
func InstallStandardCatalog(ctx context.Context, pool *pgxpool.Pool, store warehouse.Store, tenantID int64) (int, error) {
	m := &metrics{pool: pool, catalog: store.Catalog}
	created := 0
	_, err := demodata.StandardMetrics(func(def *analysisv1.Metric) (int64, error) {
		rec, err := m.create(ctx, tenantID, def)
		var ae *apperr.Error
		if errors.As(err, &ae) && ae.Kind == apperr.KindConflict {
			var id int64
			err := pool.QueryRow(ctx, "SELECT id FROM analysis.metrics WHERE tenant_id = $1 AND name = $2 AND deleted_at IS NULL",
				tenantID, def.GetName()).Scan(&id)
			return id, err
		}
		if err != nil {
			return 0, err
		}
		created++
		return rec.ID, nil
	})
	return created, err
}

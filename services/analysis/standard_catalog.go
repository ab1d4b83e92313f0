package analysis

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/shopmind/shopmind/internal/analytics/demodata"
	"github.com/shopmind/shopmind/internal/analytics/warehouse"
	"github.com/shopmind/shopmind/internal/apperr"
)

// InstallStandardCatalog gives a tenant the standard e-commerce metric catalog: the demo
// tenant's definitions (demodata.Metrics and the formula demodata.AverageOrderValue over
// gmv and order_count), checked and stored as MetricService.CreateMetric stores them, so
// the tenant's administrators edit or delete them like their own. A metric whose name the
// tenant already uses is left as it is. It returns how many metrics it created.
// `shopmind tenant create` calls it for every new tenant, so orders imported into the
// tenant can be analysed at once.
func InstallStandardCatalog(ctx context.Context, pool *pgxpool.Pool, store warehouse.Store, tenantID int64) (int, error) {
	m := &metrics{pool: pool, catalog: store.Catalog}
	created := 0
	ids := map[string]int64{}
	defs := demodata.Metrics()
	for _, def := range defs {
		rec, err := m.create(ctx, tenantID, def)
		var ae *apperr.Error
		if errors.As(err, &ae) && ae.Kind == apperr.KindConflict {
			var id int64
			if err := pool.QueryRow(ctx, "SELECT id FROM analysis.metrics WHERE tenant_id = $1 AND name = $2 AND deleted_at IS NULL",
				tenantID, def.GetName()).Scan(&id); err != nil {
				return created, err
			}
			ids[def.GetName()] = id
			continue
		}
		if err != nil {
			return created, err
		}
		ids[def.GetName()] = rec.ID
		created++
	}
	gmv, okG := ids["gmv"]
	orders, okO := ids["order_count"]
	if !okG || !okO {
		return created, nil
	}
	_, err := m.create(ctx, tenantID, demodata.AverageOrderValue(gmv, orders))
	var ae *apperr.Error
	if errors.As(err, &ae) && ae.Kind == apperr.KindConflict {
		return created, nil
	}
	if err != nil {
		return created, err
	}
	return created + 1, nil
}

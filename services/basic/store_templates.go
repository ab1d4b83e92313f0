package basic

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	basicv1 "github.com/shopmind/shopmind/gen/go/shopmind/basic/v1"
	"github.com/shopmind/shopmind/internal/apperr"
)

// Link-analysis templates: a name, a description, an optional shop, the ordered goods and
// the ordered metrics. Rules checked here (the request rules check shapes): the name is
// unique in the tenant (409); the shop, every goods and every metric belong to the
// caller's tenant (400 naming the field); goods are live (not deleted); with a shop, every
// goods belongs to it (400).

const templateColumns = `t.id, t.name, t.description, t.shop_id, t.sort_order, t.created_at, t.updated_at,
	coalesce((SELECT array_agg(goods_id ORDER BY position) FROM basic.link_template_goods x WHERE x.tenant_id = t.tenant_id AND x.template_id = t.id), '{}'),
	coalesce((SELECT array_agg(metric_id ORDER BY position) FROM basic.link_template_metrics x WHERE x.tenant_id = t.tenant_id AND x.template_id = t.id), '{}')`

func scanTemplate(row pgx.Row) (*templateRecord, error) {
	t := &templateRecord{}
	err := row.Scan(&t.ID, &t.Name, &t.Description, &t.ShopID, &t.SortOrder, &t.CreatedAt, &t.UpdatedAt, &t.GoodsIDs, &t.MetricIDs)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return t, err
}

func (s *store) template(ctx context.Context, q querier, tenantID, id int64) (*templateRecord, error) {
	return scanTemplate(q.QueryRow(ctx, "SELECT "+templateColumns+" FROM basic.link_templates t WHERE t.tenant_id = $1 AND t.id = $2", tenantID, id))
}

// checkTemplate checks a template's references against the tenant.
func (s *store) checkTemplate(ctx context.Context, q querier, tenantID int64, t *templateRecord) error {
	if t.ShopID != 0 {
		if _, err := s.shopRef(ctx, q, tenantID, t.ShopID, "link_template.shop_id"); err != nil {
			return err
		}
	}
	type goodsRef struct {
		shop    int64
		deleted bool
	}
	found := map[int64]goodsRef{}
	rows, err := q.Query(ctx, "SELECT id, shop_id, status = 'deleted' FROM basic.goods WHERE tenant_id = $1 AND id = ANY($2)", tenantID, t.GoodsIDs)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id int64
		var g goodsRef
		if err := rows.Scan(&id, &g.shop, &g.deleted); err != nil {
			rows.Close()
			return err
		}
		found[id] = g
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for i, id := range t.GoodsIDs {
		field := fmt.Sprintf("link_template.goods_ids[%d]", i)
		g, ok := found[id]
		switch {
		case !ok:
			return apperr.Invalid(field, "goods.exists", fmt.Sprintf("no goods %d in your tenant", id))
		case g.deleted:
			return apperr.Invalid(field, "goods.live", fmt.Sprintf("goods %d is deleted", id))
		case t.ShopID != 0 && g.shop != t.ShopID:
			return apperr.Invalid(field, "goods.shop", fmt.Sprintf("goods %d belongs to shop %d, not to the template's shop %d", id, g.shop, t.ShopID))
		}
	}
	if len(t.MetricIDs) > 0 {
		rows, err := q.Query(ctx, "SELECT id FROM analysis.metrics WHERE tenant_id = $1 AND id = ANY($2) AND deleted_at IS NULL", tenantID, t.MetricIDs)
		if err != nil {
			return err
		}
		live, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		for i, id := range t.MetricIDs {
			if !slices.Contains(live, id) {
				return apperr.Invalid(fmt.Sprintf("link_template.metric_ids[%d]", i), "metric.exists", fmt.Sprintf("no metric %d in your tenant", id))
			}
		}
	}
	return nil
}

// writeLists replaces a template's goods and metrics.
func writeLists(ctx context.Context, tx pgx.Tx, tenantID int64, t *templateRecord, goods, metrics bool) error {
	if goods {
		if _, err := tx.Exec(ctx, "DELETE FROM basic.link_template_goods WHERE tenant_id = $1 AND template_id = $2", tenantID, t.ID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO basic.link_template_goods (tenant_id, template_id, position, goods_id)
			SELECT $1, $2, p, g FROM unnest($3::bigint[]) WITH ORDINALITY AS u(g, p)`, tenantID, t.ID, t.GoodsIDs); err != nil {
			return err
		}
	}
	if metrics {
		if _, err := tx.Exec(ctx, "DELETE FROM basic.link_template_metrics WHERE tenant_id = $1 AND template_id = $2", tenantID, t.ID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO basic.link_template_metrics (tenant_id, template_id, position, metric_id)
			SELECT $1, $2, p, m FROM unnest($3::bigint[]) WITH ORDINALITY AS u(m, p)`, tenantID, t.ID, t.MetricIDs); err != nil {
			return err
		}
	}
	return nil
}

func nameTaken(name string) error {
	return apperr.New(apperr.KindConflict, "a link template named %q already exists", name)
}

// createTemplate stores a template and returns it as stored, read in the same transaction
// (a committed change always gets its answer).
func (s *store) createTemplate(ctx context.Context, tenantID int64, t *templateRecord) (*templateRecord, error) {
	var out *templateRecord
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if err := s.checkTemplate(ctx, tx, tenantID, t); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, `INSERT INTO basic.link_templates (tenant_id, name, description, shop_id, sort_order)
			VALUES ($1, $2, $3, $4, $5) RETURNING id`, tenantID, t.Name, t.Description, t.ShopID, t.SortOrder).Scan(&t.ID)
		if isUnique(err, "") {
			return nameTaken(t.Name)
		}
		if err != nil {
			return err
		}
		if err := writeLists(ctx, tx, tenantID, t, true, true); err != nil {
			return err
		}
		out, err = s.template(ctx, tx, tenantID, t.ID)
		return err
	})
	return out, err
}

// updateTemplate applies the masked fields and returns the template as stored (see
// createTemplate).
func (s *store) updateTemplate(ctx context.Context, tenantID, id int64, in *basicv1.LinkTemplate, mask []string) (*templateRecord, error) {
	var out *templateRecord
	err := s.tx(ctx, func(tx pgx.Tx) error {
		t, err := scanTemplate(tx.QueryRow(ctx, "SELECT "+templateColumns+" FROM basic.link_templates t WHERE t.tenant_id = $1 AND t.id = $2 FOR UPDATE", tenantID, id))
		if err != nil {
			return err
		}
		if t == nil {
			return apperr.NotFound("link template", id)
		}
		var goods, metrics bool
		for _, p := range mask {
			switch p {
			case "name":
				t.Name = in.GetName()
			case "description":
				t.Description = in.GetDescription()
			case "shop_id":
				t.ShopID = in.GetShopId()
			case "goods_ids":
				t.GoodsIDs, goods = in.GetGoodsIds(), true
			case "metric_ids":
				t.MetricIDs, metrics = in.GetMetricIds(), true
			case "sort_order":
				t.SortOrder = in.GetSortOrder()
			}
		}
		if err := s.checkTemplate(ctx, tx, tenantID, t); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE basic.link_templates SET name = $3, description = $4, shop_id = $5, sort_order = $6, updated_at = now()
			WHERE tenant_id = $1 AND id = $2`, tenantID, id, t.Name, t.Description, t.ShopID, t.SortOrder)
		if isUnique(err, "") {
			return nameTaken(t.Name)
		}
		if err != nil {
			return err
		}
		if err := writeLists(ctx, tx, tenantID, t, goods, metrics); err != nil {
			return err
		}
		out, err = s.template(ctx, tx, tenantID, id)
		return err
	})
	return out, err
}

func (s *store) sortTemplates(ctx context.Context, tenantID int64, ids []int64, orders []int32) (int32, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE basic.link_templates t SET sort_order = v.sort_order, updated_at = now()
		FROM unnest($2::bigint[], $3::int[]) AS v(id, sort_order) WHERE t.tenant_id = $1 AND t.id = v.id`, tenantID, ids, orders)
	return int32(tag.RowsAffected()), err
}

func (s *store) listTemplates(ctx context.Context, tenantID int64, shopID *int64, name string, p page) ([]*templateRecord, int64, error) {
	w := &sqlWhere{}
	w.add("t.tenant_id = %s", tenantID)
	if shopID != nil {
		w.add("t.shop_id = %s", *shopID)
	}
	if name != "" {
		w.add("t.name ILIKE %s", likePattern(name))
	}
	out := []*templateRecord{}
	total, err := s.page(ctx, "basic.link_templates t", w, "ORDER BY t.sort_order, t.id", p, templateColumns, func(r pgx.Rows) error {
		t, err := scanTemplate(r)
		if err != nil {
			return err
		}
		out = append(out, t)
		return nil
	})
	return out, total, err
}

package analysis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/encoding/protojson"

	analysisv1 "github.com/shopmind/shopmind/gen/go/shopmind/analysis/v1"
	"github.com/shopmind/shopmind/internal/analytics/catalog"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/services/analysis/semantic"
)

// metricRecord is a stored metric definition.
type metricRecord struct {
	ID                      int64
	Name, DisplayName, Desc string
	Group, Type             string
	Config                  *analysisv1.MetricConfig
	Synonyms                []string
	CreatedAt, UpdatedAt    time.Time
}

// metrics is the metric definitions' store and rules.
type metrics struct {
	pool    *pgxpool.Pool
	catalog func(ctx context.Context) (*catalog.Catalog, error)
}

const metricColumns = `id, name, display_name, description, metric_group, type, config, synonyms, created_at, updated_at`

func scanMetric(row pgx.Row) (*metricRecord, error) {
	m := &metricRecord{}
	var raw []byte
	err := row.Scan(&m.ID, &m.Name, &m.DisplayName, &m.Desc, &m.Group, &m.Type, &raw, &m.Synonyms, &m.CreatedAt, &m.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	m.Config = &analysisv1.MetricConfig{}
	if err := protojson.Unmarshal(raw, m.Config); err != nil {
		return nil, fmt.Errorf("stored config of metric %d: %w", m.ID, err)
	}
	return m, nil
}

// live returns every live metric of the tenant, by id (for formula resolution).
func (s *metrics) live(ctx context.Context, q querier, tenantID int64) (map[int64]*metricRecord, error) {
	rows, err := q.Query(ctx, "SELECT "+metricColumns+" FROM analysis.metrics WHERE tenant_id = $1 AND deleted_at IS NULL ORDER BY metric_group, name", tenantID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64]*metricRecord{}
	for rows.Next() {
		m, err := scanMetric(rows)
		if err != nil {
			return nil, err
		}
		out[m.ID] = m
	}
	return out, rows.Err()
}

// querier is a pool or a transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// list returns live metrics grouped by group (sorted), optionally one group only.
func (s *metrics) list(ctx context.Context, tenantID int64, group string) ([]*analysisv1.MetricGroup, error) {
	all, err := s.live(ctx, s.pool, tenantID)
	if err != nil {
		return nil, err
	}
	byGroup := map[string][]*analysisv1.Metric{}
	var groups []string
	for _, m := range all {
		if group != "" && m.Group != group {
			continue
		}
		if _, ok := byGroup[m.Group]; !ok {
			groups = append(groups, m.Group)
		}
		byGroup[m.Group] = append(byGroup[m.Group], metricPB(m))
	}
	slices.Sort(groups)
	out := make([]*analysisv1.MetricGroup, 0, len(groups))
	for _, g := range groups {
		ms := byGroup[g]
		slices.SortFunc(ms, func(a, b *analysisv1.Metric) int { return strings.Compare(a.GetName(), b.GetName()) })
		out = append(out, &analysisv1.MetricGroup{Group: g, Metrics: ms})
	}
	return out, nil
}

// toSemantic converts a stored definition for the semantic layer.
func toSemantic(m *metricRecord) *semantic.Metric {
	out := &semantic.Metric{ID: m.ID, Name: m.Name, Type: m.Type}
	switch c := m.Config.GetKind().(type) {
	case *analysisv1.MetricConfig_Derived:
		dc := &semantic.DerivedConfig{SourceField: c.Derived.GetSourceField(), Aggregation: c.Derived.GetAggregation(),
			TimeRangeField: c.Derived.GetTimeRangeField()}
		for _, cond := range c.Derived.GetQueryCondition() {
			dc.Conditions = append(dc.Conditions, conditionOf(cond))
		}
		out.Derived = dc
	case *analysisv1.MetricConfig_Order:
		oc := &semantic.OrderConfig{OrderField: c.Order.GetOrderField(), TimeBasis: c.Order.GetTimeBasis()}
		for _, cond := range c.Order.GetQueryCondition() {
			oc.Conditions = append(oc.Conditions, conditionOf(cond))
		}
		out.Order = oc
	case *analysisv1.MetricConfig_Formula:
		out.Formula = &semantic.FormulaConfig{Expression: c.Formula.GetExpression(), DependencyIDs: c.Formula.GetDependencyIds()}
	}
	return out
}

func conditionOf(c *analysisv1.Condition) semantic.Condition {
	var v any
	if c.GetValue() != nil {
		v = c.GetValue().AsInterface()
	}
	return semantic.Condition{Field: c.GetField(), Operator: c.GetOperator(), Value: v}
}

// validate checks a definition against the catalog and the tenant's other live metrics
// (formula references, dependency ids, cycles).
// validate checks a definition against the store's catalog and the tenant's other metrics.
// The catalog is read before the write's transaction begins: reading it may take a second
// connection, which a transaction holding the tenant lock must never wait for.
func (s *metrics) validate(cat *catalog.Catalog, m *metricRecord, others map[int64]*metricRecord) error {
	byName := map[string]*semantic.Metric{}
	byID := map[int64]*semantic.Metric{}
	for id, o := range others {
		if id == m.ID {
			continue
		}
		sm := toSemantic(o)
		byName[o.Name], byID[id] = sm, sm
	}
	self := toSemantic(m)
	if m.ID != 0 {
		byID[m.ID] = self
	}
	byName[m.Name] = self
	return semantic.CheckDefinition(self, cat, func(id int64) *semantic.Metric { return byID[id] },
		func(name string) *semantic.Metric { return byName[name] })
}

// lockTenant serialises metric writes of one tenant, so two concurrent formula changes
// cannot form a cycle that neither saw.
func lockTenant(ctx context.Context, tx pgx.Tx, tenantID int64) error {
	_, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(7262012, $1::int)", int32(tenantID))
	return err
}

func (s *metrics) create(ctx context.Context, tenantID int64, in *analysisv1.Metric) (*metricRecord, error) {
	m := &metricRecord{Name: in.GetName(), DisplayName: in.GetDisplayName(), Desc: in.GetDescription(), Group: in.GetGroup(),
		Type: in.GetType(), Config: in.GetConfig(), Synonyms: in.GetSynonyms()}
	cat, err := s.catalog(ctx)
	if err != nil {
		return nil, err
	}
	var id int64
	var out *metricRecord
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockTenant(ctx, tx, tenantID); err != nil {
			return err
		}
		others, err := s.live(ctx, tx, tenantID)
		if err != nil {
			return err
		}
		if err := s.validate(cat, m, others); err != nil {
			return err
		}
		raw, err := protojson.Marshal(m.Config)
		if err != nil {
			return err
		}
		err = tx.QueryRow(ctx, `INSERT INTO analysis.metrics (tenant_id, name, display_name, description, metric_group, type, config, synonyms)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`, tenantID, m.Name, m.DisplayName, m.Desc, m.Group, m.Type, raw, nonNil(m.Synonyms)).Scan(&id)
		if isUniqueViolation(err) {
			return apperr.New(apperr.KindConflict, "metric name %s already exists in this tenant", m.Name)
		}
		if err != nil {
			return err
		}
		if err := setDependencies(ctx, tx, id, m); err != nil {
			return err
		}
		out, err = s.get(ctx, tx, tenantID, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func setDependencies(ctx context.Context, tx pgx.Tx, id int64, m *metricRecord) error {
	if _, err := tx.Exec(ctx, "DELETE FROM analysis.metric_dependencies WHERE metric_id = $1", id); err != nil {
		return err
	}
	if f := m.Config.GetFormula(); f != nil {
		_, err := tx.Exec(ctx, "INSERT INTO analysis.metric_dependencies (metric_id, depends_on) SELECT $1, unnest($2::bigint[])", id, f.GetDependencyIds())
		return err
	}
	return nil
}

// get reads a live metric through q (the pool, or the transaction that just wrote it, so
// a committed change is never answered by a failed read).
func (s *metrics) get(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, tenantID, id int64) (*metricRecord, error) {
	m, err := scanMetric(q.QueryRow(ctx, "SELECT "+metricColumns+" FROM analysis.metrics WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL", tenantID, id))
	if err == nil && m == nil {
		return nil, apperr.NotFound("metric", id)
	}
	return m, err
}

// dependents names the live formulas that use metric id.
func dependents(ctx context.Context, q querier, tenantID, id int64) ([]string, error) {
	rows, err := q.Query(ctx, `SELECT m.name FROM analysis.metric_dependencies d JOIN analysis.metrics m ON m.id = d.metric_id
		WHERE d.depends_on = $1 AND m.tenant_id = $2 AND m.deleted_at IS NULL ORDER BY m.name`, id, tenantID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

func (s *metrics) update(ctx context.Context, tenantID, id int64, in *analysisv1.Metric, mask []string) (*metricRecord, error) {
	cat, err := s.catalog(ctx)
	if err != nil {
		return nil, err
	}
	var out *metricRecord
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockTenant(ctx, tx, tenantID); err != nil {
			return err
		}
		others, err := s.live(ctx, tx, tenantID)
		if err != nil {
			return err
		}
		cur, ok := others[id]
		if !ok {
			return apperr.NotFound("metric", id)
		}
		next := *cur
		for _, f := range mask {
			switch f {
			case "name":
				next.Name = in.GetName()
			case "display_name":
				next.DisplayName = in.GetDisplayName()
			case "description":
				next.Desc = in.GetDescription()
			case "group":
				next.Group = in.GetGroup()
			case "type":
				next.Type = in.GetType()
			case "config":
				next.Config = in.GetConfig()
			case "synonyms":
				next.Synonyms = in.GetSynonyms()
			}
		}
		if next.Name != cur.Name {
			users, err := dependents(ctx, tx, tenantID, id)
			if err != nil {
				return err
			}
			if len(users) > 0 {
				return apperr.New(apperr.KindRule, "metric %s is used by formula(s) %s: renaming it would break them", cur.Name, strings.Join(users, ", "))
			}
		}
		if err := s.validate(cat, &next, others); err != nil {
			return err
		}
		raw, err := protojson.Marshal(next.Config)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE analysis.metrics SET name = $3, display_name = $4, description = $5, metric_group = $6,
			type = $7, config = $8, synonyms = $9, updated_at = now() WHERE tenant_id = $1 AND id = $2`,
			tenantID, id, next.Name, next.DisplayName, next.Desc, next.Group, next.Type, raw, nonNil(next.Synonyms))
		if isUniqueViolation(err) {
			return apperr.New(apperr.KindConflict, "metric name %s already exists in this tenant", next.Name)
		}
		if err != nil {
			return err
		}
		if err := setDependencies(ctx, tx, id, &next); err != nil {
			return err
		}
		out, err = s.get(ctx, tx, tenantID, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// remove soft-deletes a metric unless a live formula depends on it.
func (s *metrics) remove(ctx context.Context, tenantID, id int64) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockTenant(ctx, tx, tenantID); err != nil {
			return err
		}
		users, err := dependents(ctx, tx, tenantID, id)
		if err != nil {
			return err
		}
		if len(users) > 0 {
			return apperr.New(apperr.KindRule, "metric %d is used by live formula(s) %s: delete or change them first", id, strings.Join(users, ", "))
		}
		tag, err := tx.Exec(ctx, "UPDATE analysis.metrics SET deleted_at = now() WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL", tenantID, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return apperr.NotFound("metric", id)
		}
		return nil
	})
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

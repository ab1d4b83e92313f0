// Package promotion keeps the tenant's promotion plans (chat schema: promotion_plans and
// promotion_executions): the store, the PromotionService handlers, and the agent tools
// create_promotion_plan and promotion_strategy that write them. Every query is scoped by
// the tenant: another tenant's plan is indistinguishable from a missing one.
package promotion

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Template statuses.
const (
	PlanDraft     = "draft"
	PlanApproved  = "approved"
	PlanActive    = "active"
	PlanCompleted = "completed"
	PlanCancelled = "cancelled"
)

// Execution statuses.
const (
	ExecPlanned   = "planned"
	ExecRunning   = "running"
	ExecPaused    = "paused"
	ExecFinished  = "finished"
	ExecCancelled = "cancelled"
)

// planMoves and execMoves are the allowed status changes.
var (
	planMoves = map[string][]string{
		PlanDraft:    {PlanApproved, PlanCancelled},
		PlanApproved: {PlanActive, PlanCancelled},
		PlanActive:   {PlanCompleted, PlanCancelled},
	}
	execMoves = map[string][]string{
		ExecPlanned: {ExecRunning, ExecCancelled},
		ExecRunning: {ExecPaused, ExecFinished, ExecCancelled},
		ExecPaused:  {ExecRunning, ExecFinished, ExecCancelled},
	}
)

// Plan is a template as stored.
type Plan struct {
	ID             int64
	TenantID       int64
	Title          string
	Goal           string
	ProductIDs     []int64
	ProductNames   []string
	Mechanics      string
	DiscountRate   float64
	Budget         float64
	StartDate      time.Time
	EndDate        time.Time
	Metrics        []string
	AnalysisResult string
	Status         string
	CreatedBy      int64
	ConversationID string
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// Execution is an execution plan as stored.
type Execution struct {
	ID         int64
	TenantID   int64
	TemplateID int64
	Name       string
	Channel    string
	StartDate  time.Time
	EndDate    time.Time
	Budget     float64
	Strategy   map[string]any
	Status     string
	CreatedBy  int64
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// ErrNotFound is a template or execution plan the tenant does not have.
var ErrNotFound = errors.New("not found")

// MoveError is a refused status change.
type MoveError struct{ From, To string }

func (e *MoveError) Error() string {
	return fmt.Sprintf("status cannot change from %s to %s", e.From, e.To)
}

// Store reads and writes the plans.
type Store struct{ pool *pgxpool.Pool }

// NewStore returns the store over the chat service's database.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

const planColumns = `id, tenant_id, title, goal, product_ids, product_names, mechanics, discount_rate::float8, budget::float8,
	start_date, end_date, metrics, analysis_result, status, created_by, conversation_id, created_at, updated_at`

func scanPlan(row pgx.Row) (*Plan, error) {
	p := &Plan{}
	err := row.Scan(&p.ID, &p.TenantID, &p.Title, &p.Goal, &p.ProductIDs, &p.ProductNames, &p.Mechanics, &p.DiscountRate, &p.Budget,
		&p.StartDate, &p.EndDate, &p.Metrics, &p.AnalysisResult, &p.Status, &p.CreatedBy, &p.ConversationID, &p.CreatedAt, &p.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	return p, err
}

const execColumns = `id, tenant_id, template_id, name, channel, start_date, end_date, budget::float8, strategy, status, created_by, created_at, updated_at`

func scanExec(row pgx.Row) (*Execution, error) {
	e := &Execution{}
	err := row.Scan(&e.ID, &e.TenantID, &e.TemplateID, &e.Name, &e.Channel, &e.StartDate, &e.EndDate, &e.Budget, &e.Strategy, &e.Status,
		&e.CreatedBy, &e.CreatedAt, &e.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	return e, err
}

// CreatePlan stores a template (status draft) and returns it as stored.
func (s *Store) CreatePlan(ctx context.Context, p *Plan) (*Plan, error) {
	return scanPlan(s.pool.QueryRow(ctx, `INSERT INTO chat.promotion_plans (tenant_id, title, goal, product_ids, product_names, mechanics,
		discount_rate, budget, start_date, end_date, metrics, analysis_result, created_by, conversation_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING `+planColumns,
		p.TenantID, p.Title, p.Goal, p.ProductIDs, nonNil(p.ProductNames), p.Mechanics, p.DiscountRate, p.Budget, p.StartDate, p.EndDate,
		nonNil(p.Metrics), p.AnalysisResult, p.CreatedBy, p.ConversationID))
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// GetPlan reads a template of the tenant.
func (s *Store) GetPlan(ctx context.Context, tenantID, id int64) (*Plan, error) {
	return scanPlan(s.pool.QueryRow(ctx, `SELECT `+planColumns+` FROM chat.promotion_plans WHERE tenant_id = $1 AND id = $2`, tenantID, id))
}

// PlanFilter selects templates.
type PlanFilter struct {
	Status    string
	ProductID int64
	Limit     int
	Offset    int
}

// ListPlans returns the total and a page of the tenant's templates, newest first.
func (s *Store) ListPlans(ctx context.Context, tenantID int64, f PlanFilter) (int64, []*Plan, error) {
	where := `tenant_id = $1 AND ($2::text = '' OR status = $2::text) AND ($3::bigint = 0 OR $3::bigint = ANY (product_ids))`
	var total int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM chat.promotion_plans WHERE `+where, tenantID, f.Status, f.ProductID).Scan(&total); err != nil {
		return 0, nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT `+planColumns+` FROM chat.promotion_plans WHERE `+where+` ORDER BY id DESC LIMIT $4 OFFSET $5`,
		tenantID, f.Status, f.ProductID, f.Limit, f.Offset)
	if err != nil {
		return 0, nil, err
	}
	defer rows.Close()
	var out []*Plan
	for rows.Next() {
		p, err := scanPlan(rows)
		if err != nil {
			return 0, nil, err
		}
		out = append(out, p)
	}
	return total, out, rows.Err()
}

// AllPlans returns every template of the tenant (the knowledge graph reads them).
func (s *Store) AllPlans(ctx context.Context, tenantID int64) ([]*Plan, error) {
	_, plans, err := s.ListPlans(ctx, tenantID, PlanFilter{Limit: 10000})
	return plans, err
}

// MovePlan changes a template's status when the move is allowed (*MoveError otherwise), in
// one transaction holding the row.
func (s *Store) MovePlan(ctx context.Context, tenantID, id int64, to string) (*Plan, error) {
	var out *Plan
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var from string
		err := tx.QueryRow(ctx, `SELECT status FROM chat.promotion_plans WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, tenantID, id).Scan(&from)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if !slices.Contains(planMoves[from], to) {
			return &MoveError{From: from, To: to}
		}
		out, err = scanPlan(tx.QueryRow(ctx, `UPDATE chat.promotion_plans SET status = $3, updated_at = clock_timestamp()
			WHERE tenant_id = $1 AND id = $2 RETURNING `+planColumns, tenantID, id, to))
		return err
	})
	return out, err
}

// DeletePlan deletes a template and its execution plans; it returns how many execution
// plans went with it.
func (s *Store) DeletePlan(ctx context.Context, tenantID, id int64) (int64, error) {
	var n int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM chat.promotion_executions WHERE tenant_id = $1 AND template_id = $2`, tenantID, id).Scan(&n); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM chat.promotion_plans WHERE tenant_id = $1 AND id = $2`, tenantID, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return ErrNotFound
		}
		return nil
	})
	return n, err
}

// CreateExecution stores an execution plan (status planned) of a template of the tenant
// (ErrNotFound when the tenant has no such template).
func (s *Store) CreateExecution(ctx context.Context, e *Execution) (*Execution, error) {
	out, err := scanExec(s.pool.QueryRow(ctx, `INSERT INTO chat.promotion_executions (tenant_id, template_id, name, channel, start_date,
		end_date, budget, strategy, created_by)
		SELECT $1, id, $3, $4, $5, $6, $7, $8, $9 FROM chat.promotion_plans WHERE tenant_id = $1 AND id = $2
		RETURNING `+execColumns, e.TenantID, e.TemplateID, e.Name, e.Channel, e.StartDate, e.EndDate, e.Budget, e.Strategy, e.CreatedBy))
	return out, err
}

// GetExecution reads an execution plan of the tenant.
func (s *Store) GetExecution(ctx context.Context, tenantID, id int64) (*Execution, error) {
	return scanExec(s.pool.QueryRow(ctx, `SELECT `+execColumns+` FROM chat.promotion_executions WHERE tenant_id = $1 AND id = $2`, tenantID, id))
}

// ExecFilter selects execution plans.
type ExecFilter struct {
	TemplateID int64
	Status     string
	Limit      int
	Offset     int
	Oldest     bool // oldest first (a template's executions); newest first otherwise
}

// ListExecutions returns the total and a page of the tenant's execution plans.
func (s *Store) ListExecutions(ctx context.Context, tenantID int64, f ExecFilter) (int64, []*Execution, error) {
	where := `tenant_id = $1 AND ($2::bigint = 0 OR template_id = $2::bigint) AND ($3::text = '' OR status = $3::text)`
	var total int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM chat.promotion_executions WHERE `+where, tenantID, f.TemplateID, f.Status).Scan(&total); err != nil {
		return 0, nil, err
	}
	order := "id DESC"
	if f.Oldest {
		order = "id"
	}
	rows, err := s.pool.Query(ctx, `SELECT `+execColumns+` FROM chat.promotion_executions WHERE `+where+` ORDER BY `+order+` LIMIT $4 OFFSET $5`,
		tenantID, f.TemplateID, f.Status, f.Limit, f.Offset)
	if err != nil {
		return 0, nil, err
	}
	defer rows.Close()
	var out []*Execution
	for rows.Next() {
		e, err := scanExec(rows)
		if err != nil {
			return 0, nil, err
		}
		out = append(out, e)
	}
	return total, out, rows.Err()
}

// MoveExecution changes an execution plan's status when the move is allowed.
func (s *Store) MoveExecution(ctx context.Context, tenantID, id int64, to string) (*Execution, error) {
	var out *Execution
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var from string
		err := tx.QueryRow(ctx, `SELECT status FROM chat.promotion_executions WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, tenantID, id).Scan(&from)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if !slices.Contains(execMoves[from], to) {
			return &MoveError{From: from, To: to}
		}
		out, err = scanExec(tx.QueryRow(ctx, `UPDATE chat.promotion_executions SET status = $3, updated_at = clock_timestamp()
			WHERE tenant_id = $1 AND id = $2 RETURNING `+execColumns, tenantID, id, to))
		return err
	})
	return out, err
}

// DeleteExecution deletes an execution plan of the tenant.
func (s *Store) DeleteExecution(ctx context.Context, tenantID, id int64) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM chat.promotion_executions WHERE tenant_id = $1 AND id = $2`, tenantID, id)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

package vector

import (
	"context"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/shopmind/shopmind/internal/postgres"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations are the embedded store's migrations (schema chatvec, version table
// goose_chatvec); the chat service's agent builder (agent/build) applies them when the
// PostgreSQL store is configured.
func Migrations() postgres.Migrations {
	return *postgres.Embedded("chatvec", migrationFiles)
}

// Postgres is the embedded default Store: rows of chatvec.items, one collection per store
// instance; Search reads the tenant's rows of the query's width and ranks them by cosine
// similarity in the process (fine for catalogs of hundreds to a few thousand items).
type Postgres struct {
	pool       *pgxpool.Pool
	collection string
}

// NewPostgres returns the store of one collection (for example "metrics"). The chatvec
// migrations must have run.
func NewPostgres(pool *pgxpool.Pool, collection string) *Postgres {
	return &Postgres{pool: pool, collection: collection}
}

const upsertSQL = `INSERT INTO chatvec.items (tenant_id, collection, id, text, metadata, dim, vector, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, now())
ON CONFLICT (tenant_id, collection, id) DO UPDATE
SET text = EXCLUDED.text, metadata = EXCLUDED.metadata, dim = EXCLUDED.dim, vector = EXCLUDED.vector, updated_at = now()`

func (p *Postgres) queue(b *pgx.Batch, tenantID int64, items []Item) {
	for _, it := range items {
		md := it.Metadata
		if md == nil {
			md = map[string]string{}
		}
		b.Queue(upsertSQL, tenantID, p.collection, it.ID, it.Text, md, len(it.Vector), it.Vector)
	}
}

// Upsert implements Store.
func (p *Postgres) Upsert(ctx context.Context, tenantID int64, items []Item) error {
	if err := validate(items); err != nil {
		return err
	}
	if len(items) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	p.queue(b, tenantID, items)
	if err := p.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("vector upsert: %w", err)
	}
	return nil
}

// Replace implements Store: the delete and the inserts are one transaction.
func (p *Postgres) Replace(ctx context.Context, tenantID int64, items []Item) error {
	if err := validate(items); err != nil {
		return err
	}
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		b.Queue("DELETE FROM chatvec.items WHERE tenant_id = $1 AND collection = $2", tenantID, p.collection)
		p.queue(b, tenantID, items)
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return fmt.Errorf("vector replace: %w", err)
	}
	return nil
}

// Search implements Store (the metadata conditions in SQL, on the jsonb column).
func (p *Postgres) Search(ctx context.Context, tenantID int64, vector []float32, topK int, where ...Match) ([]Hit, error) {
	sql := "SELECT id, text, metadata, vector FROM chatvec.items WHERE tenant_id = $1 AND collection = $2 AND dim = $3"
	args := []any{tenantID, p.collection, len(vector)}
	for _, w := range where {
		args = append(args, w.Key, w.Value)
		sql += fmt.Sprintf(" AND metadata->>$%d = $%d", len(args)-1, len(args))
	}
	rows, err := p.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("vector search: %w", err)
	}
	defer rows.Close()
	var hits []Hit
	for rows.Next() {
		var h Hit
		var vec []float32
		if err := rows.Scan(&h.ID, &h.Text, &h.Metadata, &vec); err != nil {
			return nil, fmt.Errorf("vector search: %w", err)
		}
		h.Score = Cosine(vector, vec)
		hits = append(hits, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("vector search: %w", err)
	}
	return rank(hits, topK), nil
}

// Health implements Store: the table answers.
func (p *Postgres) Health(ctx context.Context) error {
	var one int
	err := p.pool.QueryRow(ctx, "SELECT 1 FROM chatvec.items LIMIT 1").Scan(&one)
	if err == nil || err == pgx.ErrNoRows {
		return nil
	}
	return fmt.Errorf("vector store (postgres): %w", err)
}

// Name implements Store.
func (p *Postgres) Name() string { return "postgres" }

package nl2sql

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/shopmind/shopmind/internal/analytics/catalog"
	"github.com/shopmind/shopmind/internal/analytics/warehouse"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/service"
	"github.com/shopmind/shopmind/internal/sqlsandbox"
	"github.com/shopmind/shopmind/services/nl2sql/provider"
)

// catalogTTL bounds how long a new diy_* table takes to reach the built-in provider's sandbox.
const catalogTTL = 30 * time.Second

// providerSettings are the built-in provider's configuration: the nl2sql variables and the
// SQL sandbox's caps (SHOPMIND_SANDBOX_*, internal/sqlsandbox/SANDBOX.md).
type providerSettings struct {
	NL2SQL  Config
	Sandbox sqlsandbox.Config
}

// loadProviderSettings reads both; malformed values are reported by the Defs that own the
// variables (the bridge's, the analysis service's), not twice.
func loadProviderSettings(getenv func(string) string) (providerSettings, []string) {
	n, _ := LoadConfig(getenv)
	s, _ := sqlsandbox.LoadConfig(getenv)
	return providerSettings{NL2SQL: n, Sandbox: s}, nil
}

// openExecutor opens the analytical store and the SQL sandbox over it: every question of the
// built-in provider runs through the sandbox, as the chat's tenant with its role's row
// filters. The sandbox closes when ctx ends.
func openExecutor(ctx context.Context, deps service.Deps, cfg sqlsandbox.Config) (sandboxExecutor, error) {
	url := ""
	if deps.Config != nil {
		url = deps.Config.Analytics.URL
	}
	store, err := warehouse.Open(ctx, url, deps.DB, deps.Logger)
	if err != nil {
		return sandboxExecutor{}, fmt.Errorf("analytical store: %w", err)
	}
	if err := store.EnsureSchema(ctx); err != nil {
		return sandboxExecutor{}, fmt.Errorf("analytical store schema: %w", err)
	}
	sb, err := sqlsandbox.Open(ctx, cfg, store, deps.DB)
	if err != nil {
		return sandboxExecutor{}, err
	}
	// The catalog is read once per catalogTTL, not on every question; the provider's
	// metadata and policies read the same cached catalog as the sandbox (diy_* included).
	cat := catalog.Cache(store.Catalog, catalogTTL)
	sb.WithCatalog(cat)
	context.AfterFunc(ctx, sb.Close)
	return sandboxExecutor{sb: sb, catalog: cat}, nil
}

// sandboxExecutor adapts the sandbox to the provider's Executor.
type sandboxExecutor struct {
	sb      *sqlsandbox.Sandbox
	catalog func(context.Context) (*catalog.Catalog, error)
}

func (e sandboxExecutor) Dialect() string {
	if e.sb.Dialect() == sqlsandbox.ClickHouse {
		return "clickhouse"
	}
	return "postgresql"
}

func (e sandboxExecutor) Run(ctx context.Context, scope provider.Scope, sql string, maxRows int) (*provider.Result, error) {
	sc := sqlsandbox.Scope{TenantID: scope.TenantID}
	for _, f := range scope.RowFilters {
		vals := make([]any, len(f.Values))
		for i, v := range f.Values {
			vals[i] = v
		}
		sc.RowFilters = append(sc.RowFilters, sqlsandbox.RowFilter{Table: f.Table, Column: f.Column, Values: vals})
	}
	if scope.Tables != nil { // only the tables the role's policies allow
		rw, err := e.sb.Rewrite(ctx, sc, sql, maxRows)
		if err != nil {
			return nil, err
		}
		for _, t := range rw.Tables {
			if !slices.Contains(scope.Tables, t) {
				return nil, apperr.New(apperr.KindForbidden, "the chat's role does not allow table %s", t)
			}
		}
	}
	res, err := e.sb.Run(ctx, sc, sql, maxRows)
	if err != nil {
		return nil, err
	}
	out := &provider.Result{SQL: res.SQLRun, Rows: res.Rows, Truncated: res.Truncated}
	for _, c := range res.Columns {
		out.Columns = append(out.Columns, c.Name)
	}
	return out, nil
}

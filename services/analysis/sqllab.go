package analysis

import (
	"context"
	"slices"

	analysisv1 "github.com/shopmind/shopmind/gen/go/shopmind/analysis/v1"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/sqlsandbox"
)

// ExecuteSql runs the caller's SELECT through the SQL sandbox, scoped to the caller's tenant
// (see the contract and internal/sqlsandbox/SANDBOX.md).
func (s *queryServer) ExecuteSql(ctx context.Context, req *analysisv1.ExecuteSqlRequest) (*analysisv1.ExecuteSqlResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.sandboxReady(); err != nil {
		return nil, err
	}
	res, err := s.sandbox.Run(ctx, sqlsandbox.Scope{TenantID: id.TenantID}, req.GetSql(), int(req.GetMaxRows()))
	if err != nil {
		return nil, err
	}
	resp := &analysisv1.ExecuteSqlResponse{Truncated: res.Truncated, ElapsedMs: res.Elapsed.Milliseconds(),
		Sql: res.SQLRun, Params: paramsPB(res.Args), Dialect: s.sandbox.Dialect(), Rows: rowsPB(res.Rows)}
	for _, c := range res.Columns {
		resp.Columns = append(resp.Columns, &analysisv1.SqlColumn{Name: c.Name, Type: sqlColumnTypes[c.Type]})
	}
	return resp, nil
}

// sqlColumnTypes maps the store's column types to the contract's names.
var sqlColumnTypes = map[string]string{"int": "integer", "float": "decimal", "string": "string", "time": "timestamp", "bool": "boolean"}

// GetSqlSandbox states the sandbox's rules and caps.
func (s *queryServer) GetSqlSandbox(ctx context.Context, _ *analysisv1.GetSqlSandboxRequest) (*analysisv1.GetSqlSandboxResponse, error) {
	if _, err := authn.Caller(ctx); err != nil {
		return nil, err
	}
	if err := s.sandboxReady(); err != nil {
		return nil, err
	}
	cat, err := s.metrics.catalog(ctx)
	if err != nil {
		return nil, err
	}
	c := s.sandbox.Config()
	resp := &analysisv1.GetSqlSandboxResponse{Dialect: s.sandbox.Dialect(), MaxRows: int32(c.MaxRows),
		TimeoutMs: c.Timeout.Milliseconds(), Functions: sqlsandbox.Functions(s.sandbox.Dialect()), Rules: s.sandbox.Rules()}
	if resp.Dialect == sqlsandbox.ClickHouse {
		resp.MaxScanRows = c.MaxScanRows
	} else {
		resp.MaxCost = c.MaxCost
	}
	for _, t := range cat.Tables {
		resp.Tables = append(resp.Tables, t.Name)
	}
	slices.Sort(resp.Tables)
	return resp, nil
}

// sandboxReady is nil, or the 503 of a sandbox that could not open at start.
func (s *queryServer) sandboxReady() error {
	if s.sandbox != nil {
		return nil
	}
	return &apperr.Error{Kind: apperr.KindUnavailable, Cause: s.sandboxErr,
		Message: "the SQL sandbox is unavailable: its database role could not be set up at start (see the log; internal/sqlsandbox/SANDBOX.md, SHOPMIND_SANDBOX_ROLE and SHOPMIND_SANDBOX_PASSWORD)"}
}

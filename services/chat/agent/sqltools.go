// The SQL tools: execute_sql, which runs a SELECT through the analysis service's SQL
// sandbox (QueryService.ExecuteSql) as the caller, and get_database_info extended with the
// sandbox's real rules and caps (QueryService.GetSqlSandbox). The chat service never sees
// the sandbox itself: both go over the analysis gRPC client with the caller's identity, so
// the statement runs with the caller's tenant and permission (analysis:query:execute).

package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	analysisv1 "github.com/shopmind/shopmind/gen/go/shopmind/analysis/v1"
)

// ToolExecuteSQL is the name of the SQL tool.
const ToolExecuteSQL = "execute_sql"

// SQLRunner is what the SQL tools use of the analysis service; GRPCAnalytics implements it.
type SQLRunner interface {
	ExecuteSql(ctx context.Context, req *analysisv1.ExecuteSqlRequest) (*analysisv1.ExecuteSqlResponse, error)
	GetSqlSandbox(ctx context.Context, req *analysisv1.GetSqlSandboxRequest) (*analysisv1.GetSqlSandboxResponse, error)
}

// ExecuteSql implements SQLRunner.
func (g *GRPCAnalytics) ExecuteSql(ctx context.Context, req *analysisv1.ExecuteSqlRequest) (*analysisv1.ExecuteSqlResponse, error) {
	return CallAs(ctx, g.timeout, g.query.ExecuteSql, req)
}

// GetSqlSandbox implements SQLRunner.
func (g *GRPCAnalytics) GetSqlSandbox(ctx context.Context, req *analysisv1.GetSqlSandboxRequest) (*analysisv1.GetSqlSandboxResponse, error) {
	return CallAs(ctx, g.timeout, g.query.GetSqlSandbox, req)
}

// SQLTools returns execute_sql and the get_database_info that states the sandbox's rules
// (it replaces the plain one when added to a Registry after Tools), when analytics can run
// SQL; none otherwise.
func SQLTools(analytics Analytics) []Tool {
	runner, ok := analytics.(SQLRunner)
	if !ok {
		return nil
	}
	return []Tool{&sqlDatabaseInfo{plain: getDatabaseInfo{analytics: analytics}, sql: runner}, &executeSQL{sql: runner}}
}

// DefaultSQLToolRows is how many rows execute_sql asks for when the model names none.
const DefaultSQLToolRows = 100

// --- execute_sql ---------------------------------------------------------------------

type executeSQL struct{ sql SQLRunner }

func (t *executeSQL) Name() string { return ToolExecuteSQL }
func (t *executeSQL) Description() string {
	return "Run one read-only SQL SELECT on the analytical database (the dialect, tables, functions and caps are in " +
		"get_database_info) and return its columns and rows. It runs in a sandbox: one SELECT only, the analytics " +
		"tables only, every table is filtered to the user's own data automatically, and refused statements come back " +
		"as an error naming the reason. Prefer query_metrics for the tenant's defined metrics; use execute_sql for " +
		"questions the metrics cannot answer."
}
func (t *executeSQL) Parameters() *Schema {
	return Object(map[string]*Schema{
		"sql":      {Type: "string", Description: "one SELECT statement in the database's dialect", MaxLength: ptr(20000)},
		"max_rows": {Type: "integer", Description: "most rows to return (default 100)", Minimum: ptr(1.0), Maximum: ptr(1000.0), Default: DefaultSQLToolRows},
	}, "sql")
}

func (t *executeSQL) Call(ctx context.Context, env *ToolEnv, raw json.RawMessage) (*ToolResult, error) {
	var args struct {
		SQL     string `json:"sql"`
		MaxRows int32  `json:"max_rows"`
	}
	if _, err := DecodeCall(env, raw, &args); err != nil {
		return nil, err
	}
	if strings.TrimSpace(args.SQL) == "" {
		return nil, fmt.Errorf("sql is empty")
	}
	if args.MaxRows <= 0 {
		args.MaxRows = DefaultSQLToolRows
	}
	resp, err := t.sql.ExecuteSql(ctx, &analysisv1.ExecuteSqlRequest{Sql: args.SQL, MaxRows: args.MaxRows})
	if err != nil {
		return nil, err
	}
	cols := make([]map[string]string, len(resp.GetColumns()))
	for i, c := range resp.GetColumns() {
		cols[i] = map[string]string{"name": c.GetName(), "type": c.GetType()}
	}
	rows := make([][]any, len(resp.GetRows()))
	for i, r := range resp.GetRows() {
		rows[i] = r.AsSlice()
	}
	summary := fmt.Sprintf("%d rows", len(rows))
	if resp.GetTruncated() {
		summary += fmt.Sprintf(" (cut at %d)", len(rows))
	}
	return &ToolResult{JSON: map[string]any{
		"status": "ok", "dialect": resp.GetDialect(), "columns": cols, "rows": rows, "row_count": len(rows),
		"truncated": resp.GetTruncated(), "sql_run": resp.GetSql(), "elapsed_ms": resp.GetElapsedMs(),
	}, Data: resp, Summary: summary}, nil
}

// --- get_database_info, with the sandbox ----------------------------------------------

type sqlDatabaseInfo struct {
	plain getDatabaseInfo
	sql   SQLRunner
}

func (t *sqlDatabaseInfo) Name() string        { return ToolGetDatabaseInfo }
func (t *sqlDatabaseInfo) Description() string { return t.plain.Description() }
func (t *sqlDatabaseInfo) Parameters() *Schema { return t.plain.Parameters() }

// Call is the plain description with sql_rules replaced by what the sandbox enforces (its
// own statement of its rules, the dialect, caps and functions) and the advice on metrics.
func (t *sqlDatabaseInfo) Call(ctx context.Context, env *ToolEnv, raw json.RawMessage) (*ToolResult, error) {
	res, err := t.plain.Call(ctx, env, raw)
	if err != nil {
		return nil, err
	}
	info, err := t.sql.GetSqlSandbox(ctx, &analysisv1.GetSqlSandboxRequest{})
	out := res.JSON.(map[string]any)
	if err != nil {
		out["execute_sql"] = "unavailable: " + ToolErrorMessage(err)
		return res, nil
	}
	rules := append([]string{}, info.GetRules()...)
	for _, r := range SQLRules {
		if !strings.HasPrefix(r, "SELECT statements only") && !strings.HasPrefix(r, "Tenant filter") && !strings.HasPrefix(r, "Limits") {
			rules = append(rules, r) // the advice on time columns and metrics
		}
	}
	out["sql_rules"] = rules
	sandbox := map[string]any{"dialect": info.GetDialect(), "max_rows": info.GetMaxRows(), "timeout_ms": info.GetTimeoutMs(),
		"tables": info.GetTables(), "functions": info.GetFunctions()}
	if info.GetMaxScanRows() > 0 {
		sandbox["max_scan_rows"] = info.GetMaxScanRows()
	}
	if info.GetMaxCost() > 0 {
		sandbox["max_cost"] = info.GetMaxCost()
	}
	out["sql_sandbox"] = sandbox
	res.Summary += "; SQL dialect " + info.GetDialect()
	return res, nil
}

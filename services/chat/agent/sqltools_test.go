package agent_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	chatv2 "github.com/shopmind/shopmind/gen/go/shopmind/chat/v2"
	"github.com/shopmind/shopmind/internal/analytics/demodata"
	"github.com/shopmind/shopmind/internal/analytics/warehouse"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/testutil/stack"
	"github.com/shopmind/shopmind/services/chat/agent"
	"github.com/shopmind/shopmind/services/chat/agent/llmagent"
	"github.com/shopmind/shopmind/services/chat/llm"
	"github.com/shopmind/shopmind/services/chat/llm/llmtest"
	"github.com/shopmind/shopmind/services/chat/vector"
)

func sqlCall(id, sql string, maxRows int) llm.ToolCall {
	args, _ := json.Marshal(map[string]any{"sql": sql, "max_rows": maxRows})
	return llm.ToolCall{ID: id, Type: "function", Function: llm.FunctionCall{Name: agent.ToolExecuteSQL, Arguments: string(args)}}
}

// TestExecuteSQLToolAgainstTheSandbox: a scripted model calls execute_sql with legitimate
// and hostile SQL and get_database_info, on the real analysis service and its sandbox (two
// tenants with orders). It reads the caller's rows only, refusals as {"status":"error"},
// long results truncated, and the sandbox's own rules.
func TestExecuteSQLToolAgainstTheSandbox(t *testing.T) {
	s := stack.StartServices(t, "analysis")
	ctx := context.Background()
	demo, acme := stack.DemoTenant(t, s.DB), stack.AddTenant(t, s.DB, "acme")
	store, err := warehouse.Open(ctx, "", s.DB.Pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, tenant := range []int64{demo, acme} {
		if _, err := demodata.Generate(ctx, store.Writer(), demodata.Options{TenantID: tenant, Orders: 150 + 50*i, Seed: int64(i + 1),
			Now: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), Days: 60}); err != nil {
			t.Fatal(err)
		}
	}

	srv := llmtest.New(t,
		llmtest.Reply{ToolCalls: []llm.ToolCall{call("c1", agent.ToolGetDatabaseInfo, `{}`)}},
		llmtest.Reply{ToolCalls: []llm.ToolCall{sqlCall("c2", "SELECT count(*) AS n FROM basic_orders", 10)}},
		llmtest.Reply{ToolCalls: []llm.ToolCall{sqlCall("c3", fmt.Sprintf("SELECT i_tenant_id, order_id, order_no, status, platform, paid_amount, ordered_at FROM basic_orders WHERE i_tenant_id = %d OR TRUE", acme), 1000)}},
		llmtest.Reply{ToolCalls: []llm.ToolCall{sqlCall("c4", "SELECT 1; DROP TABLE basic_orders", 10)}},
		llmtest.Reply{ToolCalls: []llm.ToolCall{sqlCall("c5", "SELECT set_config('default_transaction_read_only', 'off', false)", 10)}},
		llmtest.Reply{ToolCalls: []llm.ToolCall{sqlCall("c6", "WITH d AS (DELETE FROM basic_orders RETURNING *) SELECT count(*) FROM d", 10)}},
		llmtest.Reply{ToolCalls: []llm.ToolCall{sqlCall("c7", "SELECT * FROM pg_catalog.pg_authid", 10)}},
		llmtest.Reply{Text: []string{"There are 150 orders."}},
	)
	client, err := llm.New(llm.Config{Endpoint: llm.Endpoint{BaseURL: srv.BaseURL(), APIKey: "sk-test", Model: "fake-gpt", RetryBackoff: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	analytics := agent.NewGRPCAnalytics(s.Conn, 0)
	index := agent.NewMetricIndex(vector.NewMemory(), vector.NewHashEmbedder(64))
	tools := agent.NewRegistry(0, append(agent.Tools(analytics, index, nil), agent.SQLTools(analytics)...)...)
	a := llmagent.New(client, tools, llmagent.Options{MaxIterations: 10})
	id := identityOf(t, s.AdminToken)
	err = a.Answer(ctx, &agent.Request{Identity: id, ConversationID: "sql", Message: "How many orders?"}, func(*chatv2.SendMessageResponse) error { return nil })
	if err != nil {
		t.Fatal(err)
	}

	reqs := srv.Requests()
	results := map[string]string{}
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role == llm.RoleTool {
			results[m.ToolCallID] = m.Content
		}
	}
	if !strings.Contains(results["c1"], `"sql_sandbox"`) || !strings.Contains(results["c1"], "Exactly one statement") ||
		!strings.Contains(results["c1"], `"dialect":"postgres"`) {
		t.Errorf("get_database_info does not state the sandbox: %.600s", results["c1"])
	}
	var ok struct {
		Status string  `json:"status"`
		Rows   [][]any `json:"rows"`
		SQLRun string  `json:"sql_run"`
	}
	if err := json.Unmarshal([]byte(results["c2"]), &ok); err != nil || ok.Status != "ok" || len(ok.Rows) != 1 || ok.Rows[0][0] != 150.0 {
		t.Errorf("execute_sql count: %s (%v)", results["c2"], err)
	}
	// The OR TRUE trick: the result is long (shortened for the model by its structure: fewer
	// rows and how many were left out, still valid JSON) and only the caller's.
	c3 := results["c3"]
	if !json.Valid([]byte(c3)) || !strings.Contains(c3, `"rows`+agent.OmittedSuffix+`"`) {
		t.Errorf("a long result is not shortened by its structure: %.200s", c3)
	}
	if strings.Contains(c3, fmt.Sprintf("[%d,", acme)) || !strings.Contains(c3, fmt.Sprintf("[%d,", demo)) {
		t.Errorf("execute_sql as tenant %d shows another tenant's rows: %.400s", demo, c3)
	}
	for id, reason := range map[string]string{"c4": "exactly one statement", "c5": "set_config", "c6": "writing CTE", "c7": "pg_authid"} {
		var e struct{ Status, Message string }
		if err := json.Unmarshal([]byte(results[id]), &e); err != nil || e.Status != "error" || !strings.Contains(e.Message, reason) {
			t.Errorf("%s: want {\"status\":\"error\"} naming %q, got %s", id, reason, results[id])
		}
	}
	var n int
	if err := s.DB.Pool.QueryRow(ctx, "SELECT count(*) FROM analytics.basic_orders").Scan(&n); err != nil || n != 350 {
		t.Errorf("orders after the hostile calls: %d %v", n, err)
	}
}

// identityOf builds the caller's identity from an access token (its claims are trusted
// here: the analysis service verifies the token again).
func identityOf(t *testing.T, token string) *authn.Identity {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[1])
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Tid int64           `json:"tid"`
		Uid int64           `json:"uid"`
		Aud json.RawMessage `json:"aud"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	var aud string
	if json.Unmarshal(c.Aud, &aud) != nil {
		var list []string
		_ = json.Unmarshal(c.Aud, &list)
		if len(list) > 0 {
			aud = list[0]
		}
	}
	return &authn.Identity{Token: token, TenantID: c.Tid, UserID: c.Uid, Audience: aud}
}

func call(id, name, args string) llm.ToolCall {
	return llm.ToolCall{ID: id, Type: "function", Function: llm.FunctionCall{Name: name, Arguments: args}}
}

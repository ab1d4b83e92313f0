//go:build platform

package analysis

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	analysisv1 "github.com/shopmind/shopmind/gen/go/shopmind/analysis/v1"
	"github.com/shopmind/shopmind/internal/analytics/demodata"
	"github.com/shopmind/shopmind/internal/analytics/warehouse"
	"github.com/shopmind/shopmind/internal/analytics/warehouse/warehousetest"
	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/testutil"
	"github.com/shopmind/shopmind/internal/testutil/stack"
)

type envelope = testutil.Envelope

func call(t *testing.T, s *stack.Stack, token, method, path, body string) envelope {
	t.Helper()
	_, env := (&stack.User{Stack: s, Token: token}).Call(t, method, path, body)
	return env
}

func want(t *testing.T, s *stack.Stack, token, method, path, body string, code int, contains string) envelope {
	t.Helper()
	return (&stack.User{Stack: s, Token: token}).Expect(t, method, path, body, code, contains)
}

func createMetric(t *testing.T, s *stack.Stack, token, body string) int64 {
	t.Helper()
	env := want(t, s, token, "POST", "/analysis/api/v1/analytics/metrics", body, 0, `"metric"`)
	var d struct {
		Metric struct {
			ID string `json:"id"`
		} `json:"metric"`
	}
	_ = json.Unmarshal(env.Data, &d)
	var id int64
	fmt.Sscan(d.Metric.ID, &id)
	if id == 0 {
		t.Fatalf("no id in %s", env.Data)
	}
	return id
}

const (
	gmvBody   = `{"name":"gmv","display_name":"GMV","group":"Sales","type":"order","config":{"order":{"order_field":"paid_amount","time_basis":"ordered_at","query_condition":[{"field":"status","operator":"in","value":["paid","shipped","completed"]}]}}}`
	ordersBdy = `{"name":"order_count","display_name":"Orders","group":"Sales","type":"order","config":{"order":{"order_field":"order_id","time_basis":"ordered_at","query_condition":[{"field":"status","operator":"in","value":["paid","shipped","completed"]}]}}}`
	lineBody  = `{"name":"line_amount","display_name":"Line amount","group":"Goods","type":"derived","config":{"derived":{"source_field":"basic_order_items.amount","aggregation":"sum"}}}`
	unitsBody = `{"name":"units","display_name":"Units","group":"Goods","type":"derived","config":{"derived":{"source_field":"basic_order_items.quantity","aggregation":"sum"}}}`
)

func formulaBody(name, expr string, deps ...int64) string {
	ids := make([]string, len(deps))
	for i, d := range deps {
		ids[i] = fmt.Sprint(d)
	}
	return fmt.Sprintf(`{"name":%q,"display_name":%q,"group":"Ratios","type":"formula","config":{"formula":{"expression":%q,"dependency_ids":[%s]}}}`,
		name, name, expr, strings.Join(ids, ","))
}

// Metric definitions: CRUD, field masks, soft delete, and every rule of the issue.
func TestMetricsCRUDAndRules(t *testing.T) {
	s := stack.Start(t)
	tok := s.Admin(t).Access
	gmv := createMetric(t, s, tok, gmvBody)
	orders := createMetric(t, s, tok, ordersBdy)
	aov := createMetric(t, s, tok, formulaBody("aov", "gmv / order_count", gmv, orders))
	createMetric(t, s, tok, formulaBody("aov_pct", "aov * 100", aov))
	list := want(t, s, tok, "GET", "/analysis/api/v1/analytics/metrics", "", 0, `"group":"Ratios"`)
	if !strings.Contains(string(list.Data), `"group":"Sales"`) {
		t.Fatalf("groups: %s", list.Data)
	}
	only := want(t, s, tok, "GET", "/analysis/api/v1/analytics/metrics?group_filter=Ratios", "", 0, "aov")
	if strings.Contains(string(only.Data), `"gmv"`) {
		t.Fatalf("group filter ignored: %s", only.Data)
	}
	want(t, s, tok, "POST", "/analysis/api/v1/analytics/metrics", gmvBody, 409, "already exists")
	// Formula rules.
	want(t, s, tok, "POST", "/analysis/api/v1/analytics/metrics", formulaBody("bad", "gmv / nothing", gmv), 422, "nothing")
	want(t, s, tok, "POST", "/analysis/api/v1/analytics/metrics", formulaBody("bad2", "gmv / order_count", gmv), 422, "")
	// A cycle through other formulas: gmv_x -> aov_pct -> aov -> ... made by updating aov.
	want(t, s, tok, "PUT", fmt.Sprintf("/analysis/api/v1/analytics/metrics/%d", aov),
		`{"metric":{"config":{"formula":{"expression":"aov_pct / 100","dependency_ids":[`+fmt.Sprint(aov+1)+`]}}},"update_mask":"config"}`, 422, "cycle")
	// Only masked fields change.
	upd := want(t, s, tok, "PUT", fmt.Sprintf("/analysis/api/v1/analytics/metrics/%d", gmv),
		`{"metric":{"display_name":"Gross merchandise value","description":"ignored"},"update_mask":"displayName"}`, 0, "Gross merchandise value")
	if strings.Contains(string(upd.Data), "ignored") {
		t.Fatalf("unmasked field changed: %s", upd.Data)
	}
	// Deleting a dependency of a live formula: 422; the formula first, then it works.
	want(t, s, tok, "DELETE", fmt.Sprintf("/analysis/api/v1/analytics/metrics/%d", gmv), "", 422, "aov")
	want(t, s, tok, "DELETE", fmt.Sprintf("/analysis/api/v1/analytics/metrics/%d", aov+1), "", 0, `"success":true`)
	want(t, s, tok, "DELETE", fmt.Sprintf("/analysis/api/v1/analytics/metrics/%d", aov), "", 0, `"success":true`)
	want(t, s, tok, "DELETE", fmt.Sprintf("/analysis/api/v1/analytics/metrics/%d", aov), "", 404, "not found")
	list = want(t, s, tok, "GET", "/analysis/api/v1/analytics/metrics", "", 0, "gmv")
	if strings.Contains(string(list.Data), "aov") {
		t.Fatalf("deleted metric still listed: %s", list.Data)
	}
	// The name is reusable.
	createMetric(t, s, tok, formulaBody("aov", "gmv / order_count", gmv, orders))
	// Hostile and malformed definitions are refused, and nothing is stored.
	for _, body := range []string{
		`{"name":"x1","display_name":"x","group":"g","type":"derived","config":{"derived":{"source_field":"amount); DROP TABLE x; --","aggregation":"sum"}}}`,
		`{"name":"x2","display_name":"x","group":"g","type":"derived","config":{"derived":{"source_field":"basic_orders.nope","aggregation":"sum"}}}`,
		`{"name":"x3","display_name":"x","group":"g","type":"derived","config":{"derived":{"source_field":"basic_orders.paid_amount","aggregation":"median"}}}`,
		`{"name":"x4","display_name":"x","group":"g","type":"order","config":{"order":{"order_field":"paid_amount","time_basis":"ordered_at","query_condition":[{"field":"status","operator":"eq","value":"paid' OR 1=1 --"},{"field":"no_such","operator":"eq","value":1}]}}}`,
		`{"name":"x5","display_name":"x","group":"g","type":"formula","config":{"formula":{"expression":"` + strings.Repeat("(", 10000) + "gmv" + strings.Repeat(")", 10000) + `","dependency_ids":[` + fmt.Sprint(gmv) + `]}}}`,
		`{"name":"x6","display_name":"x","group":"g","type":"derived","config":{"order":{"order_field":"paid_amount","time_basis":"ordered_at"}}}`,
	} {
		// Through the gateway the WAF may stop it first (403); the service itself refuses it too.
		env := call(t, s, tok, "POST", "/analysis/api/v1/analytics/metrics", body)
		if env.Code != 400 && env.Code != 422 && env.Code != 403 {
			t.Fatalf("hostile metric accepted: %d %s (%.80s)", env.Code, env.Message, body)
		}
		var m analysisv1.Metric
		if err := protojson.Unmarshal([]byte(body), &m); err != nil {
			t.Fatal(err)
		}
		ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+tok)
		_, err := analysisv1.NewMetricServiceClient(s.Conn).CreateMetric(ctx, &analysisv1.CreateMetricRequest{Metric: &m})
		if c := status.Code(err); c != codes.InvalidArgument && c != codes.FailedPrecondition {
			t.Fatalf("service accepted a hostile metric over gRPC: %v (%.80s)", err, body)
		}
	}
	list = want(t, s, tok, "GET", "/analysis/api/v1/analytics/metrics", "", 0, "gmv")
	if strings.Contains(string(list.Data), `"x`) {
		t.Fatalf("a refused metric was stored: %s", list.Data)
	}
}

// loadOrders fills the store with a deterministic data set for a tenant.
func loadOrders(t *testing.T, w warehouse.Writer, tenantID int64, orders int, seed int64) {
	t.Helper()
	if _, err := demodata.Generate(context.Background(), w, demodata.Options{TenantID: tenantID, Orders: orders, Seed: seed,
		Now: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), Days: 120}); err != nil {
		t.Fatal(err)
	}
}

func tenantID(t *testing.T, s *stack.Stack, code string) int64 {
	t.Helper()
	var id int64
	if err := s.DB.Pool.QueryRow(context.Background(), "SELECT id FROM tenant.tenants WHERE code = $1", code).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// previewRows runs a preview and returns its rows keyed by the joined non-metric cells.
func previewRows(t *testing.T, s *stack.Stack, tok, body string) (map[string][]float64, envelope) {
	t.Helper()
	env := want(t, s, tok, "POST", "/api/v1/anls/query/preview", body, 0, `"rows"`)
	var d struct {
		Columns []struct{ Name, Role string } `json:"columns"`
		Rows    [][]any                       `json:"rows"`
	}
	if err := json.Unmarshal(env.Data, &d); err != nil {
		t.Fatal(err)
	}
	out := map[string][]float64{}
	for _, row := range d.Rows {
		var key []string
		var vals []float64
		for i, c := range d.Columns {
			if c.Role == "measure" {
				f, _ := row[i].(float64)
				if row[i] == nil {
					f = math.NaN()
				}
				vals = append(vals, f)
			} else if !strings.HasSuffix(c.Name, "_name") {
				key = append(key, normalizeKey(row[i]))
			}
		}
		out[strings.Join(key, "|")] = vals
	}
	return out, env
}

func normalizeKey(v any) string {
	switch x := v.(type) {
	case string:
		if tm, err := time.Parse(time.RFC3339, x); err == nil {
			return tm.UTC().Format("2006-01-02")
		}
		return x
	case float64:
		return fmt.Sprint(int64(x))
	default:
		return fmt.Sprint(x)
	}
}

// leftOfJoin is the left side of a hand-written JOIN: the table, or on a ClickHouse 18.16
// cluster a subquery over it (a Distributed table named directly on the left of a JOIN
// does not resolve qualified names there; WAREHOUSE.md, "Cluster mode").
func leftOfJoin(db *warehousetest.DB, table string) string {
	if db.Store.Dialect() == warehouse.DialectClickHouse && warehousetest.ClickHouseCluster() != "" {
		return "(SELECT * FROM " + table + ")"
	}
	return table
}

// handRows runs a hand-written query whose first keys columns are the row key and whose
// other columns are measures.
func handRows(t *testing.T, db *warehousetest.DB, keys int, sql string, args ...any) map[string][]float64 {
	t.Helper()
	res, err := db.Store.Query(context.Background(), sql, args, warehouse.QueryOptions{MaxRows: 100000, Timeout: time.Minute})
	if err != nil {
		t.Fatalf("hand-written query: %v\n%s", err, sql)
	}
	out := map[string][]float64{}
	for _, row := range res.Rows {
		var key []string
		var vals []float64
		for i, v := range row {
			if i < keys {
				if tm, ok := v.(time.Time); ok {
					key = append(key, tm.UTC().Format("2006-01-02"))
				} else {
					key = append(key, fmt.Sprint(v))
				}
				continue
			}
			switch x := v.(type) {
			case float64:
				vals = append(vals, x)
			case int64:
				vals = append(vals, float64(x))
			case nil:
				vals = append(vals, math.NaN())
			default:
				t.Fatalf("measure of type %T", v)
			}
		}
		out[strings.Join(key, "|")] = vals
	}
	return out
}

func sameRows(t *testing.T, name string, got, wantRows map[string][]float64) {
	t.Helper()
	if len(got) != len(wantRows) || len(got) == 0 {
		t.Fatalf("%s: %d rows, hand-written %d", name, len(got), len(wantRows))
	}
	t.Logf("%s: %d rows equal the hand-written answer", name, len(got))
	keys := make([]string, 0, len(wantRows))
	for k := range wantRows {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		g, ok := got[k]
		w := wantRows[k]
		if !ok || len(g) != len(w) {
			t.Fatalf("%s: row %q: got %v want %v", name, k, g, w)
		}
		for i := range w {
			if math.IsNaN(w[i]) != math.IsNaN(g[i]) || !math.IsNaN(w[i]) && math.Abs(g[i]-w[i]) > 1e-6*math.Max(1, math.Abs(w[i])) {
				t.Fatalf("%s: row %q: got %v want %v", name, k, g, w)
			}
		}
	}
}

// The preview answers equal hand-written SQL over the same data, on PostgreSQL and on
// ClickHouse, for each metric type, formulas over formulas, day/week/month and
// shop/goods/category; a second tenant sees none of it.
func TestPreviewMatchesHandWrittenSQL(t *testing.T) {
	for _, store := range []string{"postgres", "clickhouse"} {
		t.Run(store, func(t *testing.T) {
			s, db := stack.StartAnalytics(t, store)
			demo := tenantID(t, s, "demo")
			loadOrders(t, db.Store.Writer(), demo, 3000, 11)
			tok := s.Admin(t).Access
			gmv := createMetric(t, s, tok, gmvBody)
			orders := createMetric(t, s, tok, ordersBdy)
			createMetric(t, s, tok, lineBody)
			createMetric(t, s, tok, unitsBody)
			aov := createMetric(t, s, tok, formulaBody("aov", "gmv / order_count", gmv, orders))
			createMetric(t, s, tok, formulaBody("aov_cents", "aov * 100", aov))

			pg := store == "postgres"
			p := db.P
			tbl := func(name string) string {
				if pg {
					return "analytics." + name
				}
				return name
			}
			bucketOf := func(unit, col string) string {
				if pg {
					return fmt.Sprintf("date_trunc('%s', %s AT TIME ZONE 'UTC')", unit, col)
				}
				return fmt.Sprintf(map[string]string{"day": "toStartOfDay(%s)", "week": "toMonday(%s)", "month": "toStartOfMonth(%s)"}[unit], col)
			}
			countDistinct := "count(DISTINCT order_id)"
			if !pg {
				countDistinct = "uniqExact(order_id)"
			}
			paid := "status IN ('paid', 'shipped', 'completed')"
			from, to := time.Date(2026, 7, 6, 0, 0, 0, 0, time.UTC), time.Date(2026, 10, 26, 0, 0, 0, 0, time.UTC)
			rng := fmt.Sprintf(`"start_time":"%s","end_time":"%s"`, from.Format(time.RFC3339), to.Format(time.RFC3339))

			cases := []struct {
				name, body string
				keys       int
				sql        string
			}{
				{"gmv by day", `{"metric_names":["gmv"],"time_granularity":"day",` + rng + `,"limit":10000}`, 1,
					fmt.Sprintf("SELECT %s AS b, sum(paid_amount) FROM %s WHERE i_tenant_id = %s AND %s AND ordered_at >= %s AND ordered_at < %s GROUP BY b",
						bucketOf("day", "ordered_at"), tbl("basic_orders"), p(1), paid, p(2), p(3))},
				{"orders by shop and week", `{"metric_names":["order_count"],"dimensions":["shop"],"time_granularity":"week",` + rng + `,"limit":10000}`, 2,
					fmt.Sprintf("SELECT %s AS b, shop_id, %s FROM %s WHERE i_tenant_id = %s AND %s AND ordered_at >= %s AND ordered_at < %s GROUP BY b, shop_id",
						bucketOf("week", "ordered_at"), countDistinct, tbl("basic_orders"), p(1), paid, p(2), p(3))},
				{"line amount by category and month", `{"metric_names":["line_amount"],"dimensions":["category"],"time_granularity":"month",` + rng + `,"limit":10000}`, 2,
					fmt.Sprintf("SELECT %s AS b, g.category_id, sum(i.amount) FROM %s AS i INNER JOIN (SELECT goods_id, category_id FROM %s WHERE i_tenant_id = %s) AS g ON g.goods_id = i.goods_id WHERE i.i_tenant_id = %s AND i.ordered_at >= %s AND i.ordered_at < %s GROUP BY b, g.category_id",
						bucketOf("month", "i.ordered_at"), leftOfJoin(db, tbl("basic_order_items")), tbl("basic_goods"), p(1), p(2), p(3), p(4))},
				{"units by goods", `{"metric_names":["units"],"dimensions":["goods"],` + rng + `,"limit":10000}`, 1,
					fmt.Sprintf("SELECT goods_id, sum(quantity) FROM %s WHERE i_tenant_id = %s AND ordered_at >= %s AND ordered_at < %s GROUP BY goods_id",
						tbl("basic_order_items"), p(1), p(2), p(3))},
				{"formula over formula by shop", `{"metric_names":["gmv","aov","aov_cents"],"dimensions":["shop"],` + rng + `,"limit":10000}`, 1,
					fmt.Sprintf("SELECT shop_id, sum(paid_amount), sum(paid_amount) / %s, sum(paid_amount) / %s * 100 FROM %s WHERE i_tenant_id = %s AND %s AND ordered_at >= %s AND ordered_at < %s GROUP BY shop_id",
						countDistinct, countDistinct, tbl("basic_orders"), p(1), paid, p(2), p(3))},
			}
			for _, c := range cases {
				got, _ := previewRows(t, s, tok, c.body)
				var args []any
				switch c.name {
				case "line amount by category and month":
					args = []any{demo, demo, from, to}
				default:
					args = []any{demo, from, to}
				}
				sameRows(t, c.name, got, handRows(t, db, c.keys, c.sql, args...))
			}
			// GenerateSql returns the statement and its parameters without running it.
			sqlEnv := want(t, s, tok, "POST", "/api/v1/anls/query/sql", `{"metric_names":["gmv"],"dimensions":["shop"],`+rng+`}`, 0, `"dialect":"`+store+`"`)
			if !strings.Contains(string(sqlEnv.Data), "i_tenant_id") || !strings.Contains(string(sqlEnv.Data), `"params":[`) {
				t.Fatalf("sql: %s", sqlEnv.Data)
			}

			// A second tenant sees none of the first tenant's metrics or rows.
			acme, acmeTok := secondTenant(t, s)
			want(t, s, acmeTok, "GET", "/analysis/api/v1/analytics/metrics", "", 0, `"groups":[]`)
			want(t, s, acmeTok, "POST", "/api/v1/anls/query/preview", `{"metric_ids":[`+fmt.Sprint(gmv)+`],`+rng+`}`, 400, "no metric")
			createMetric(t, s, acmeTok, gmvBody)
			got, _ := previewRows(t, s, acmeTok, `{"metric_names":["gmv"],`+rng+`}`)
			if v, ok := got[""]; ok && len(v) == 1 && !math.IsNaN(v[0]) && v[0] != 0 {
				t.Fatalf("the second tenant sees the first tenant's GMV: %v", v)
			}
			loadOrders(t, db.Store.Writer(), acme, 200, 99)
			got, _ = previewRows(t, s, acmeTok, `{"metric_names":["gmv"],`+rng+`}`)
			sameRows(t, "second tenant gmv", got, handRows(t, db, 0,
				fmt.Sprintf("SELECT sum(paid_amount) FROM %s WHERE i_tenant_id = %s AND %s AND ordered_at >= %s AND ordered_at < %s",
					tbl("basic_orders"), p(1), paid, p(2), p(3)), acme, from, to))
		})
	}
}

// secondTenant creates tenant acme with an administrator and signs in.
func secondTenant(t *testing.T, s *stack.Stack) (int64, string) {
	t.Helper()
	tid := stack.AddTenant(t, s.DB, "acme")
	return tid, s.Login(t, "acme", "admin", stack.AdminPassword).Access
}

// SHOPMIND_DEMO_DATA loads the demo tenant's orders and metrics, and they answer queries.
func TestDemoData(t *testing.T) {
	s := stack.Start(t, func(c *app.Config) { c.DemoData = true })
	tok := s.Admin(t).Access
	list := want(t, s, tok, "GET", "/analysis/api/v1/analytics/metrics", "", 0, `"avg_order_value"`)
	for _, name := range []string{"gmv", "order_count", "units_sold", "line_amount", "buyers"} {
		if !strings.Contains(string(list.Data), `"`+name+`"`) {
			t.Fatalf("demo metric %s missing: %s", name, list.Data)
		}
	}
	end := time.Now().UTC().Truncate(24 * time.Hour)
	body := fmt.Sprintf(`{"metric_names":["gmv","avg_order_value"],"dimensions":["shop"],"start_time":"%s","end_time":"%s"}`,
		end.AddDate(0, 0, -30).Format(time.RFC3339), end.Format(time.RFC3339))
	rows, _ := previewRows(t, s, tok, body)
	if len(rows) == 0 {
		t.Fatal("no demo rows for the last 30 days")
	}
	// The analyst sees the same metrics (read permission) but cannot create them.
	analyst := s.Login(t, "demo", "analyst", "analyst123").Access
	want(t, s, analyst, "GET", "/analysis/api/v1/analytics/metrics", "", 0, "gmv")
	want(t, s, analyst, "POST", "/analysis/api/v1/analytics/metrics", gmvBody, 403, "analysis:metric:create")
	want(t, s, analyst, "POST", "/api/v1/anls/query/preview", body, 0, "rows")
}

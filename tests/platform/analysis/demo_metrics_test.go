//go:build platform

package analysis

import (
	"encoding/json"
	"testing"

	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/testutil/stack"
)

// demoMetrics lists the tenant's metrics by name with their id and config.
func demoMetrics(t *testing.T, s *stack.Stack, tok string) map[string]struct {
	ID     string         `json:"id"`
	Config map[string]any `json:"config"`
} {
	t.Helper()
	env := want(t, s, tok, "GET", "/analysis/api/v1/analytics/metrics", "", 0, `"groups"`)
	var d struct {
		Groups []struct {
			Metrics []struct {
				Name   string         `json:"name"`
				ID     string         `json:"id"`
				Config map[string]any `json:"config"`
			} `json:"metrics"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(env.Data, &d); err != nil {
		t.Fatal(err)
	}
	out := map[string]struct {
		ID     string         `json:"id"`
		Config map[string]any `json:"config"`
	}{}
	for _, g := range d.Groups {
		for _, m := range g.Metrics {
			out[m.Name] = struct {
				ID     string         `json:"id"`
				Config map[string]any `json:"config"`
			}{m.ID, m.Config}
		}
	}
	return out
}

// derivedConds counts a derived metric's query_condition.
func derivedConds(cfg map[string]any) int {
	d, _ := cfg["derived"].(map[string]any)
	c, _ := d["query_condition"].([]any)
	return len(c)
}

// The demo catalog: refund and cancellation metrics, sold-only derived metrics through the
// derived query_condition (checked like an order metric's), and a demo tenant seeded by an
// earlier release brought up to date at the next start.
func TestDemoMetricsConditionsAndUpgrade(t *testing.T) {
	s := stack.Start(t, func(c *app.Config) { c.DemoData = true })
	tok := s.Admin(t).Access
	ms := demoMetrics(t, s, tok)
	for _, n := range []string{"refunded_orders", "refund_amount", "cancelled_orders", "refund_rate", "units_sold", "buyers"} {
		if _, ok := ms[n]; !ok {
			t.Fatalf("demo metric %s missing", n)
		}
	}
	if derivedConds(ms["units_sold"].Config) != 1 {
		t.Fatalf("units_sold without its condition: %v", ms["units_sold"].Config)
	}
	// a derived condition on an unknown column: 400 naming the field, nothing stored
	want(t, s, tok, "POST", "/analysis/api/v1/analytics/metrics",
		`{"name":"bad_units","display_name":"x","group":"x","type":"derived","config":{"derived":{"source_field":"basic_order_items.quantity","aggregation":"sum","query_condition":[{"field":"nope","operator":"eq","value":"x"}]}}}`,
		400, "config.derived.query_condition[0].field")
	if _, ok := demoMetrics(t, s, tok)["bad_units"]; ok {
		t.Fatal("a refused metric was stored")
	}
	// an earlier release's demo tenant: units_sold counting every order, no refund_rate
	want(t, s, tok, "PUT", "/analysis/api/v1/analytics/metrics/"+ms["units_sold"].ID,
		`{"metric":{"config":{"derived":{"source_field":"basic_order_items.quantity","aggregation":"sum"}}},"update_mask":"config"}`, 0, "")
	want(t, s, tok, "DELETE", "/analysis/api/v1/analytics/metrics/"+ms["refund_rate"].ID, "", 0, "")
	if derivedConds(demoMetrics(t, s, tok)["units_sold"].Config) != 0 {
		t.Fatal("the update did not take")
	}
	s2 := stack.StartOn(t, s.DB, func(c *app.Config) { c.DemoData = true })
	after := demoMetrics(t, s2, s2.Admin(t).Access)
	if derivedConds(after["units_sold"].Config) != 1 {
		t.Fatalf("units_sold not migrated: %v", after["units_sold"].Config)
	}
	if _, ok := after["refund_rate"]; !ok {
		t.Fatal("refund_rate not recreated")
	}
}

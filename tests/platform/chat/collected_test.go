//go:build platform

package chat

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shopmind/shopmind/internal/testutil/stack"
)

// TestCollectedValuesInAChatAnswer: values the browser extension uploads (POST
// /api/v1/data/crx/sync) are counted by a derived metric over diy_crx_metrics, and the
// production chat service (the offline analyst: no LLM configured) answers a question
// naming that metric by its display name and a period with the number the analysis
// preview gives for the same metric and period, all through the gateway.
func TestCollectedValuesInAChatAnswer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole platform")
	}
	s := stack.Start(t)
	token := s.Admin(t).Access
	var shop int64
	if err := s.DB.Pool.QueryRow(context.Background(), `INSERT INTO basic.shops (tenant_id, name, platform, platform_shop_id, status)
		SELECT id, 'Sycm Flagship', 'taobao', 'tb-collect-1', 'active' FROM tenant.tenants WHERE code = 'demo' RETURNING id`).Scan(&shop); err != nil {
		t.Fatal(err)
	}
	today := time.Now().UTC().Truncate(24 * time.Hour)
	yesterday := today.AddDate(0, 0, -1)
	item := func(metric string, value float64, at time.Time, channel string) string {
		return fmt.Sprintf(`{"metric_key":%q,"shop_id":%d,"value":%v,"collected_at":%q,"stat_time":%q,"dims":{"channel":%q}}`,
			metric, shop, value, at.Add(10*time.Hour).Format(time.RFC3339), at.Format(time.RFC3339), channel)
	}
	expect(t, s, "POST", "/api/v1/data/crx/sync", `{"client_batch_id":"5e0c7a1e-3b7a-4c39-9f0e-6f2b1a9c4d11","extension_version":"1.0.0","items":[`+
		strings.Join([]string{item("gmv", 1234.25, yesterday, "search"), item("gmv", 766.5, yesterday, "ads"),
			item("gmv", 50, yesterday.AddDate(0, 0, -1), "search")}, ",")+`]}`, token, 0, `"accepted":3`)

	expect(t, s, "POST", "/analysis/api/v1/analytics/metrics", `{"name":"crx_gmv","display_name":"Collected GMV","group":"Extension",
		"type":"derived","config":{"derived":{"source_field":"diy_crx_metrics.value","aggregation":"sum"}}}`, token, 0, `"metric"`)
	rows := preview(t, s, token, map[string]any{"metric_names": []string{"crx_gmv"}, "start_time": day(yesterday), "end_time": day(today)})
	v, ok := rows[0][0].(float64)
	if !ok || v != 2000.75 {
		t.Fatalf("preview of yesterday: %v", rows)
	}

	text, _, _ := ask(t, s, token, "What was the Collected GMV yesterday?")
	if !strings.Contains(text, money(v)) || !strings.Contains(text, money(50)) { // and the day before, compared
		t.Fatalf("the answer lacks the preview's %s (and the previous day's %s):\n%s", money(v), money(50), text)
	}
	// by its name and a longer period: the two days together
	week := preview(t, s, token, map[string]any{"metric_names": []string{"crx_gmv"}, "start_time": day(today.AddDate(0, 0, -7)), "end_time": day(today)})
	if w, _ := week[0][0].(float64); w != 2050.75 {
		t.Fatalf("preview of the last 7 days: %v", week)
	}
	if text, _, _ := ask(t, s, token, "crx_gmv last 7 days"); !strings.Contains(text, money(2050.75)) {
		t.Fatalf("by name: the answer lacks the preview's %s:\n%s", money(2050.75), text)
	}
}

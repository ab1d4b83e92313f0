//go:build platform

package notify

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shopmind/shopmind/internal/testutil/stack"
)

// TestMetricAnomalyNotifies: daily values uploaded by the extension, a derived metric over
// them, an anomaly check finding the spike of the last day, one metric_alert notification
// for every user of the tenant (not repeated by a second check).
func TestMetricAnomalyNotifies(t *testing.T) {
	s := stack.Start(t)
	d := &user{s.DemoAdmin(t)}
	shop := stack.AddShop(t, s.DB, d.Tenant, "Flagship", "taobao", "tb-1")
	today := time.Now().UTC().Truncate(24 * time.Hour)
	checked := today.AddDate(0, 0, -1)
	collected := time.Now().UTC().Add(-time.Hour).Format(time.RFC3339)
	var items []string
	for i := 14; i >= 1; i-- {
		v := 1000.0 + float64(i%3)*10 // 1000..1020 for the baseline
		if i == 1 {
			v = 3000 // the day checked
		}
		items = append(items, fmt.Sprintf(`{"metric_key":"gmv","shop_id":%d,"value":%v,"collected_at":%q,"stat_time":%q}`,
			shop, v, collected, today.AddDate(0, 0, -i).Format(time.RFC3339)))
	}
	d.Expect(t, "POST", "/api/v1/data/crx/sync", `{"client_batch_id":"aaaaaaaa-1111-4111-8111-111111111111","items":[`+strings.Join(items, ",")+`]}`, 0, `"accepted":14`)
	d.Expect(t, "POST", "/analysis/api/v1/analytics/metrics", `{"name":"crx_gmv","display_name":"Extension GMV","group":"Extension",
		"type":"derived","config":{"derived":{"source_field":"diy_crx_metrics.value","aggregation":"sum"}}}`, 0, `"metric"`)

	check := fmt.Sprintf(`{"metric_names":["crx_gmv"],"day":%q,"baseline_days":10,
		"filters":[{"field":"diy_crx_metrics.metric_key","operator":"eq","value":"gmv"}]}`, checked.Format(time.RFC3339))
	d.Expect(t, "POST", "/api/v1/anls/anomalies/check", check, 0, `"notified":1`)
	env := d.Expect(t, "POST", "/api/v1/anls/anomalies/check", check, 0, `"direction":"up"`)
	if strings.Contains(string(env.Data), `"notified":1`) {
		t.Fatalf("second check notified again: %s", env.Data)
	}
	l := d.list(t, `{"type":"metric_alert"}`)
	if l.Total != "1" || l.Items[0].Source != "analysis" || !strings.Contains(l.Items[0].Title, "Extension GMV") || !strings.Contains(l.Items[0].Title, "high") {
		t.Fatalf("metric alerts: %+v", l)
	}
	// The day before was normal: no anomaly, nothing published.
	normal := strings.Replace(check, checked.Format(time.RFC3339), checked.AddDate(0, 0, -1).Format(time.RFC3339), 1)
	d.Expect(t, "POST", "/api/v1/anls/anomalies/check", normal, 0, `"anomaly":false`)
	if l := d.list(t, `{"type":"metric_alert"}`); l.Total != "1" {
		t.Fatalf("a normal day notified: %+v", l)
	}
	d.Expect(t, "POST", "/api/v1/anls/anomalies/check", `{"metric_names":[]}`, 400, "metric_names")
	d.Expect(t, "POST", "/api/v1/anls/anomalies/check", `{"metric_names":["crx_gmv"],"baseline_days":3}`, 400, "baseline_days")
	d.Expect(t, "POST", "/api/v1/anls/anomalies/check", `{"metric_names":["nope"]}`, 400, "metric_names[0]")
}

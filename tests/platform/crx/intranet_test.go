//go:build platform

package crx

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shopmind/shopmind/internal/testutil/stack"
)

// A merchant whose back office is on an intranet host (an IP address, localhost) uses the
// extension there: its uploads, ad-hoc captures, error reports and URL patterns carry those
// URLs and pass the WAF (internal/waf/WAF.md, TEXT_KIND_URL), through the gateway with the
// WAF on; the same URL in a field that is not a URL is still blocked.
func TestIntranetURLsPassTheWAF(t *testing.T) {
	s := stack.Start(t)
	d := &tenant{s.DemoAdmin(t)}
	shop := d.addShop(t, "tb-intranet")
	at := time.Now().UTC().Add(-time.Hour)
	withURL := func(url, channel string) string {
		return strings.Replace(item("visitors", shop, 5, at, channel), "https://sycm.taobao.com/portal/home.htm", url, 1)
	}
	var a syncAnswer
	d.data(t, "POST", "/api/v1/data/crx/sync", batch("66666666-6666-4666-8666-666666666666",
		withURL("http://127.0.0.1:8081/backoffice", "a"), withURL("http://localhost/x", "b"), withURL("http://10.1.2.3/erp/report?day=1", "c")), &a)
	if a.Accepted != 3 {
		t.Fatalf("upload from intranet pages: %+v", a)
	}
	d.Expect(t, "POST", "/api/v1/data/crx/adhoc", `{"client_id":"77777777-7777-4777-8777-777777777777","page_url":"http://192.168.1.20:8080/orders",
		"collected_at":"2026-11-20T10:00:00Z","data":{"next":"http://localhost/orders?page=2","rows":[["report","http://127.0.0.1:8081/backoffice/r/1"]]}}`, 0, `"id"`)
	d.Expect(t, "GET", "/api/v1/data/crx/adhoc", "", 0, "http://192.168.1.20:8080/orders")
	d.Expect(t, "POST", "/api/v1/log/error", `{"level":"error","message":"selector not found","url":"http://127.0.0.1:8081/backoffice"}`, 0, "")
	d.Expect(t, "PUT", "/api/v1/crx/config-m", `{"metrics":[{"key":"visitors","name":"Visitors","platform":"erp","url_pattern":"^http://127.0.0.1:8081/backoffice",
		"source":"api","api_url_pattern":"^http://localhost/api/stats","json_path":"$.visitors","interval_seconds":600}],
		"upload":{"batch_size":50,"interval_seconds":120,"max_concurrent_tabs":2}}`, 0, `"config_version"`)

	// The same URL where no URL belongs: the RFI rule still blocks it.
	d.Expect(t, "POST", "/api/v1/data/crx/sync", fmt.Sprintf(`{"client_batch_id":"88888888-8888-4888-8888-888888888888","items":[{"metric_key":"visitors","platform_shop_id":"http://127.0.0.1/x","value":1,"collected_at":%q}]}`,
		at.Format(time.RFC3339)), 403, "931100")
}

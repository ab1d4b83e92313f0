//go:build platform

package basic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/testutil"
	"github.com/shopmind/shopmind/internal/testutil/stack"
	"github.com/shopmind/shopmind/services/basic"
)

type importJob struct {
	ID              id     `json:"id"`
	Status          string `json:"status"`
	Format          string `json:"format"`
	Encoding        string `json:"encoding"`
	RowsRead        id     `json:"rows_read"`
	RowsStored      id     `json:"rows_stored"`
	RowsRejected    id     `json:"rows_rejected"`
	OrdersCreated   id     `json:"orders_created"`
	OrdersUpdated   id     `json:"orders_updated"`
	OrdersUnchanged id     `json:"orders_unchanged"`
	Message         string `json:"message"`
	ShopIDs         []id   `json:"shop_ids"`
	Errors          []struct {
		Line   id     `json:"line"`
		Column string `json:"column"`
		Reason string `json:"reason"`
	} `json:"errors"`
}

func sample(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "services", "basic", "testdata", "imports", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// upload posts a file to the import endpoint as tn and returns the HTTP status and envelope.
func (tn *tenant) upload(t testing.TB, query string, body []byte) (int, testutil.Envelope) {
	t.Helper()
	req, err := http.NewRequest("POST", tn.BaseURL+"/basic/api/v1/basic/imports/orders?"+query, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "text/csv")
	req.Header.Set("Authorization", "Bearer "+tn.Token)
	resp, err := tn.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, testutil.DecodeEnvelope(t, "upload", resp.StatusCode, b)
}

func (tn *tenant) importOK(t testing.TB, query string, body []byte) importJob {
	t.Helper()
	st, env := tn.upload(t, query, body)
	if st != 200 || env.Code != 0 {
		t.Fatalf("import %s: HTTP %d %d %s", query, st, env.Code, env.Message)
	}
	var j struct {
		Job importJob `json:"job"`
	}
	if err := json.Unmarshal(env.Data, &j); err != nil {
		t.Fatal(err)
	}
	return j.Job
}

const (
	refundedMetric   = `{"name":"refunded_paid","display_name":"Refunded","group":"Sales","type":"order","config":{"order":{"order_field":"paid_amount","time_basis":"ordered_at","query_condition":[{"field":"status","operator":"in","value":["refunded"]}]}}}`
	orderCountMetric = `{"name":"order_count","display_name":"Orders","group":"Sales","type":"order","config":{"order":{"order_field":"order_id","time_basis":"ordered_at","query_condition":[{"field":"status","operator":"in","value":["paid","shipped","completed"]}]}}}`
	importRange      = `"start_time":"2026-09-01T00:00:00Z","end_time":"2026-11-01T00:00:00Z"`
)

// totalsOf previews GMV, orders and the refunded orders' paid amount of the tenant.
func totalsOf(t *testing.T, tn *tenant) (gmv, orders, refunded float64) {
	t.Helper()
	rows := preview(t, tn, `{"metric_names":["gmv","order_count","refunded_paid"],`+importRange+`}`)
	if len(rows) != 1 {
		t.Fatalf("preview rows %v", rows)
	}
	f := func(k string) float64 {
		v, _ := rows[0][k].(float64)
		return v
	}
	return f("gmv"), f("order_count"), f("refunded_paid")
}

func withMetrics(t *testing.T, tn *tenant) {
	t.Helper()
	tn.Expect(t, "POST", "/analysis/api/v1/analytics/metrics", gmvMetric, 0, "gmv")
	tn.Expect(t, "POST", "/analysis/api/v1/analytics/metrics", orderCountMetric, 0, "order_count")
	tn.Expect(t, "POST", "/analysis/api/v1/analytics/metrics", refundedMetric, 0, "refunded_paid")
}

// Each sample export (written by hand from the platforms' documentation) imported through
// the gateway: the preview's GMV, order count and refunds are the totals computed by hand
// from the file; importing it again changes nothing.
func TestImportSampleExports(t *testing.T) {
	s := stack.Start(t)
	cases := []struct {
		file, query              string
		format                   string
		gmv, orders, refundedAmt float64
		rows                     int64
	}{
		{"shopify_orders.csv", "shop_name=Linen%20Co", "shopify", 149.00, 3, 59.00, 7},
		{"shopmind_orders.csv", "", "shopmind", 245.50, 3, 40.00, 6},
		{"taobao_orders_gb18030.csv", "format=taobao", "taobao", 553.00, 3, 120.00, 5},
		{"jd_orders.csv", "", "jd", 696.00, 2, 599.00, 5},
		{"pdd_orders.csv", "encoding=utf-8", "pdd", 157.70, 3, 45.00, 4},
		{"jd_orders.xlsx", "", "jd", 288.70, 2, 599.00, 3},
	}
	for i, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			tn := addTenant(t, s, fmt.Sprintf("imp%d", i))
			withMetrics(t, tn)
			j := tn.importOK(t, c.query+"&file_name="+url.QueryEscape(c.file), sample(t, c.file))
			if j.Status != "succeeded" || j.Format != c.format || int64(j.RowsRead) != c.rows || int64(j.RowsStored) != c.rows || j.RowsRejected != 0 {
				t.Fatalf("job %+v", j)
			}
			gmv, orders, refunded := totalsOf(t, tn)
			if !near(gmv, c.gmv) || orders != c.orders || !near(refunded, c.refundedAmt) {
				t.Fatalf("preview gmv %.2f orders %v refunded %.2f, want %.2f %v %.2f", gmv, orders, refunded, c.gmv, c.orders, c.refundedAmt)
			}
			var listed pageOf[order]
			tn.get(t, "/basic/api/v1/basic/orders?page_size=100", &listed)
			// The same file again: nothing created or changed.
			again := tn.importOK(t, c.query, sample(t, c.file))
			if again.OrdersCreated != 0 || again.OrdersUpdated != 0 || again.OrdersUnchanged != j.OrdersCreated {
				t.Fatalf("re-import: %+v after %+v", again, j)
			}
			var relisted pageOf[order]
			tn.get(t, "/basic/api/v1/basic/orders?page_size=100", &relisted)
			g2, o2, r2 := totalsOf(t, tn)
			if relisted.Total != listed.Total || g2 != gmv || o2 != orders || r2 != refunded {
				t.Fatalf("re-import changed the data: %d/%d orders, %v %v %v", relisted.Total, listed.Total, g2, o2, r2)
			}
			var got importJob
			var wrapped struct {
				Job *importJob `json:"job"`
			}
			wrapped.Job = &got
			tn.get(t, fmt.Sprintf("/basic/api/v1/basic/imports/%d", j.ID), &wrapped)
			if got.ID != j.ID || got.Status != "succeeded" || got.RowsStored != j.RowsStored {
				t.Fatalf("GET job: %+v", got)
			}
		})
	}
}

// Bad rows are reported by line with their column while the good rows are stored; a later
// export with changed statuses updates those orders and adds the new ones.
func TestImportBadRowsAndOverlap(t *testing.T) {
	s := stack.Start(t)
	tn := addTenant(t, s, "imperr")
	withMetrics(t, tn)
	j := tn.importOK(t, "", sample(t, "shopmind_bad_rows.csv"))
	if j.Status != "partial" || j.RowsRead != 8 || j.RowsStored != 2 || j.RowsRejected != 6 || len(j.Errors) != 6 {
		t.Fatalf("job %+v", j)
	}
	want := map[id]string{3: "missing order number", 4: "negative quantity", 5: "unknown status", 6: "wrong date", 7: "NUL byte", 8: "invalid UTF-8"}
	for _, e := range j.Errors {
		if !strings.Contains(e.Reason, want[e.Line]) || e.Column == "" {
			t.Errorf("line %d: %+v, want %q", e.Line, e, want[e.Line])
		}
	}
	var errs struct {
		Items []struct {
			Line id `json:"line"`
		} `json:"items"`
		Total id `json:"total"`
	}
	tn.get(t, fmt.Sprintf("/basic/api/v1/basic/imports/%d/errors?page_size=2&page_num=2", j.ID), &errs)
	if errs.Total != 6 || len(errs.Items) != 2 || errs.Items[0].Line != 5 {
		t.Fatalf("errors page: %+v", errs)
	}
	if gmv, orders, _ := totalsOf(t, tn); !near(gmv, 35.50) || orders != 2 {
		t.Fatalf("good rows: gmv %v orders %v", gmv, orders)
	}

	// ShopMind CSV, then a later export: SM-2 refunded, SM-5 paid after all, SM-6 new.
	tn2 := addTenant(t, s, "impover")
	withMetrics(t, tn2)
	first := sample(t, "shopmind_orders.csv")
	tn2.importOK(t, "", first)
	later := strings.Replace(string(first), "SM-2,paid,2026-10-02T09:30:00+08:00,2026-10-02T09:31:00+08:00,,,u2@example.com,80.00,0,80.00,0",
		"SM-2,refunded,2026-10-02T09:30:00+08:00,2026-10-02T09:31:00+08:00,,,u2@example.com,80.00,0,80.00,80.00", 1)
	later = strings.Replace(later, "SM-5,cancelled,2026-10-05T12:00:00Z,,,,", "SM-5,paid,2026-10-05T12:00:00Z,2026-10-05T12:01:00Z,,,", 1)
	later += "SM-6,completed,2026-10-06T12:00:00Z,2026-10-06T12:01:00Z,,,u5@example.com,19.90,0,19.90,0,CAP-B,Black Cap,1,19.90,Main store\n"
	if later == string(first) {
		t.Fatal("the overlap edit did not apply")
	}
	j2 := tn2.importOK(t, "", []byte(later))
	if j2.OrdersCreated != 1 || j2.OrdersUpdated != 2 || j2.OrdersUnchanged != 3 {
		t.Fatalf("overlap: %+v", j2)
	}
	gmv, orders, refunded := totalsOf(t, tn2)
	// 245.50 - 80 (SM-2 refunded) + 40 (SM-5 paid) + 19.90 (SM-6)
	if !near(gmv, 225.40) || orders != 4 || !near(refunded, 120.00) {
		t.Fatalf("after the overlap: gmv %v orders %v refunded %v", gmv, orders, refunded)
	}
	var listed pageOf[order]
	tn2.get(t, "/basic/api/v1/basic/orders?page_size=100", &listed)
	if listed.Total != 6 {
		t.Fatalf("%d orders listed, want 6", listed.Total)
	}
}

// Eight concurrent uploads of one file store it once: one runs, the others are refused
// with 409 while it runs or find every order already stored.
func TestImportConcurrent(t *testing.T) {
	s := stack.Start(t)
	tn := addTenant(t, s, "impconc")
	withMetrics(t, tn)
	body := sample(t, "shopify_orders.csv")
	var wg sync.WaitGroup
	codes := make([]int, 8)
	created := make([]int64, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, env := tn.upload(t, "", body)
			codes[i] = env.Code
			if st == 200 {
				var j struct {
					Job importJob `json:"job"`
				}
				_ = json.Unmarshal(env.Data, &j)
				created[i] = int64(j.Job.OrdersCreated)
			} else if env.Code != 409 || !strings.Contains(env.Message, "is running") {
				t.Errorf("upload %d: HTTP %d %d %s", i, st, env.Code, env.Message)
			}
		}()
	}
	wg.Wait()
	var sum int64
	for _, c := range created {
		sum += c
	}
	if sum != 6 {
		t.Fatalf("orders created over the 8 uploads: %d (codes %v)", sum, codes)
	}
	var listed pageOf[order]
	tn.get(t, "/basic/api/v1/basic/orders?page_size=100", &listed)
	if gmv, orders, _ := totalsOf(t, tn); listed.Total != 6 || !near(gmv, 149) || orders != 3 {
		t.Fatalf("after 8 uploads: %d orders listed, gmv %v, paid orders %v", listed.Total, gmv, orders)
	}
}

// Files the importer cannot read are answered clearly, naming the file; too large is 413;
// another tenant sees none of a tenant's jobs or orders.
func TestImportBadFiles(t *testing.T) {
	s := stack.Start(t, func(c *app.Config) {
		app.ServiceConfig[basic.Config](c, "basic").ImportMaxBytes = 4096
	})
	tn := addTenant(t, s, "impbad")
	cases := []struct {
		query, body string
		code        int
		contains    string
	}{
		{"", "\x00\x01\x02\x03binary\x00\x00", 400, "binary"},
		{"", "just some text\nwithout a known header\n", 400, "matches no known format"},
		{"format=shopify", string(sample(t, "shopmind_orders.csv")), 400, "the header is shopmind's"},
		{"format=nope", "a\n", 400, "format"},
		{"", "", 400, "empty"},
		{"", strings.Repeat("x", 5000), 413, "too large"},
		{"shop_id=999999", string(sample(t, "shopmind_orders.csv")), 400, "shop_id"},
	}
	for _, c := range cases {
		st, env := tn.upload(t, c.query, []byte(c.body))
		if env.Code != c.code || st != c.code || !strings.Contains(env.Message, c.contains) {
			t.Errorf("%q %q: HTTP %d %d %s, want %d containing %q", c.query, clipStr(c.body), st, env.Code, env.Message, c.code, c.contains)
		}
	}
	// Streamed past the limit (no declared length): 413 too.
	req, _ := http.NewRequest("POST", s.BaseURL+"/basic/api/v1/basic/imports/orders", io.MultiReader(
		strings.NewReader("order_no,status,ordered_at,paid_amount,quantity\n"), strings.NewReader(strings.Repeat("A-1,paid,2026-10-01,1,1\n", 400))))
	req.Header.Set("Authorization", "Bearer "+tn.Token)
	req.ContentLength = -1
	resp, err := s.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 413 || !strings.Contains(string(b), "SHOPMIND_IMPORT_MAX_BYTES") {
		t.Errorf("streamed too large: HTTP %d %s", resp.StatusCode, b)
	}
	// Tenant isolation.
	j := tn.importOK(t, "", []byte("order_no,status,ordered_at,paid_amount,quantity\nA-1,paid,2026-10-01,1,1\n"))
	// The job's progress stream (the topic import:<id> of the real-time channel): a
	// finished job's last state, then the end.
	ev := s.Do(t, "GET", fmt.Sprintf("/basic/api/v1/basic/imports/%d/events", j.ID), "", stack.Bearer(tn.Token)...)
	if ev.Status != 200 || !strings.Contains(string(ev.Body), `"status":"succeeded"`) || !strings.Contains(string(ev.Body), "data: ") {
		t.Fatalf("events: HTTP %d %s", ev.Status, ev.Body)
	}
	other := addTenant(t, s, "impother")
	other.Expect(t, "GET", fmt.Sprintf("/basic/api/v1/basic/imports/%d", j.ID), "", 404, "not found")
	var listed pageOf[order]
	other.get(t, "/basic/api/v1/basic/orders", &listed)
	if listed.Total != 0 {
		t.Fatalf("another tenant sees %d orders", listed.Total)
	}
}

func clipStr(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

package imports_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shopmind/shopmind/services/basic/imports"
)

type totals struct {
	orders, paidOrders, refunded int
	gmv, refundedPaid            int64
	lines                        int
	rejected                     []imports.RowError
	format, encoding             string
}

func readAll(t *testing.T, name string, opts imports.Options) (totals, []*imports.Order) {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "testdata", "imports", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd, err := imports.NewReader(f, opts)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var tt totals
	var all []*imports.Order
	for {
		o, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		tt.rejected = append(tt.rejected, rd.TakeErrors()...)
		if len(o.Lines) == 0 {
			continue
		}
		all = append(all, o)
		tt.orders++
		tt.lines += len(o.Lines)
		switch o.Status {
		case "paid", "shipped", "completed":
			tt.paidOrders++
			tt.gmv += o.Paid
		case "refunded":
			tt.refunded++
			tt.refundedPaid += o.Paid
		}
	}
	tt.rejected = append(tt.rejected, rd.TakeErrors()...)
	tt.format, tt.encoding = rd.Format().Name, rd.Encoding()
	return tt, all
}

// The expected totals are computed by hand from the sample files (testdata/imports).
func TestSampleExports(t *testing.T) {
	cases := []struct {
		file, format, encoding string
		orders, paid, refunded int
		gmv, refundedPaid      int64
	}{
		{"shopify_orders.csv", "shopify", "utf-8", 6, 3, 1, 14900, 5900},
		{"shopmind_orders.csv", "shopmind", "utf-8", 5, 3, 1, 24550, 4000},
		{"taobao_orders_gb18030.csv", "taobao", "gb18030", 5, 3, 1, 55300, 12000},
		{"jd_orders.csv", "jd", "utf-8", 4, 2, 1, 69600, 59900},
		{"pdd_orders.csv", "pdd", "utf-8", 4, 3, 1, 15770, 4500},
		{"jd_orders.xlsx", "jd", "xlsx", 3, 2, 1, 28870, 59900},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			tt, _ := readAll(t, c.file, imports.Options{})
			if len(tt.rejected) != 0 {
				t.Fatalf("rejected: %+v", tt.rejected)
			}
			if tt.format != c.format || tt.encoding != c.encoding {
				t.Errorf("format %s %s, want %s %s", tt.format, tt.encoding, c.format, c.encoding)
			}
			if tt.orders != c.orders || tt.paidOrders != c.paid || tt.refunded != c.refunded || tt.gmv != c.gmv || tt.refundedPaid != c.refundedPaid {
				t.Errorf("got %+v, want orders %d paid %d refunded %d gmv %d refunded paid %d", tt, c.orders, c.paid, c.refunded, c.gmv, c.refundedPaid)
			}
		})
	}
}

func TestShopifyLinesAndFormulaText(t *testing.T) {
	_, orders := readAll(t, "shopify_orders.csv", imports.Options{Format: "shopify"})
	o := orders[0]
	if o.OrderNo != "#1001" || len(o.Lines) != 2 || o.Lines[1].SKU != "SS-2" || o.Lines[1].Quantity != 2 || o.Lines[1].Amount != 3100 || o.Status != "shipped" {
		t.Fatalf("first order: %+v", o)
	}
	if o.OrderedAt.UTC().Format("2006-01-02 15:04:05") != "2026-10-01 02:15:32" {
		t.Errorf("ordered at %v", o.OrderedAt)
	}
	_, orders = readAll(t, "shopmind_orders.csv", imports.Options{})
	if got := orders[3].Lines[0].GoodsName; got != `=HYPERLINK("http://evil.example/x","Mug")` {
		t.Errorf("formula cell: %q (kept as text)", got)
	}
	_, orders = readAll(t, "taobao_orders_gb18030.csv", imports.Options{})
	if orders[0].OrderNo != "3012345678901234567" || orders[0].Shop != "小林服饰旗舰店" || orders[0].Lines[0].GoodsName != "夏季新款连衣裙 雪纺" {
		t.Errorf("taobao: %+v", orders[0])
	}
}

func TestXLSXDates(t *testing.T) {
	_, orders := readAll(t, "jd_orders.xlsx", imports.Options{})
	// 46296.5: the spreadsheet's serial date 2026-10-01 12:00 in JD's time (UTC+8).
	if got := orders[0].OrderedAt.UTC().Format("2006-01-02 15:04"); got != "2026-10-01 04:00" {
		t.Errorf("serial date read as %s", got)
	}
	if orders[1].OrderedAt.UTC().Format("2006-01-02 15:04") != "2026-10-02 01:15" || orders[1].Lines[0].Quantity != 3 {
		t.Errorf("second order %+v", orders[1])
	}
}

func TestBadRowsReportedByLine(t *testing.T) {
	tt, orders := readAll(t, "shopmind_bad_rows.csv", imports.Options{})
	if len(orders) != 2 || tt.gmv != 3550 {
		t.Fatalf("good rows: %d orders, gmv %d", len(orders), tt.gmv)
	}
	want := map[int64]string{3: "missing order number", 4: "negative quantity", 5: "unknown status", 6: "wrong date", 7: "NUL byte", 8: "invalid UTF-8"}
	if len(tt.rejected) != len(want) {
		t.Fatalf("rejected %+v", tt.rejected)
	}
	for _, e := range tt.rejected {
		if !strings.Contains(e.Reason, want[e.Line]) || e.Column == "" {
			t.Errorf("line %d: %+v, want %q", e.Line, e, want[e.Line])
		}
	}
}

func TestFileErrors(t *testing.T) {
	cases := map[string]struct {
		body string
		opts imports.Options
		want string
	}{
		"empty":         {"", imports.Options{}, "empty"},
		"binary":        {"\x00\x01\x02garbage", imports.Options{}, "binary"},
		"unknown":       {"a,b,c\n1,2,3\n", imports.Options{}, "matches no known format"},
		"other header":  {"order_no,status,ordered_at,paid_amount,quantity\n", imports.Options{Format: "shopify"}, "the header is shopmind's"},
		"bad mapping":   {"x\n", imports.Options{Format: "mapped", Mapping: "nope=x"}, "mapping"},
		"wrong enc":     {"order_no,status,ordered_at,paid_amount,quantity\nA,paid,2026-01-01,\xff\xfe,1\n", imports.Options{Encoding: "utf-8"}, ""},
		"xlsx not real": {"PK\x03\x04garbage", imports.Options{}, "xlsx"},
	}
	for name, c := range cases {
		_, err := imports.NewReader(strings.NewReader(c.body), c.opts)
		var fe *imports.FileError
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		if !errors.As(err, &fe) || !strings.Contains(fe.Message, c.want) {
			t.Errorf("%s: %v, want a FileError with %q", name, err, c.want)
		}
	}
}

func TestMapped(t *testing.T) {
	body := "Order ID,State,Date,Paid,Qty\nX1,paid,2026-10-01 10:00:00,12.50,2\n"
	rd, err := imports.NewReader(strings.NewReader(body), imports.Options{Format: "mapped",
		Mapping: "order_no=Order ID,status=State,ordered_at=Date,paid_amount=Paid,quantity=Qty"})
	if err != nil {
		t.Fatal(err)
	}
	o, err := rd.Next()
	if err != nil || o.OrderNo != "X1" || o.Paid != 1250 || o.Lines[0].Quantity != 2 {
		t.Fatalf("%+v %v", o, err)
	}
}

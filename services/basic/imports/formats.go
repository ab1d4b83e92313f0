// Package imports reads merchants' order exports (Shopify, Taobao/Tmall, JD, Pinduoduo,
// ShopMind's own CSV, or any CSV through a column mapping; .csv or .xlsx; UTF-8 with or
// without a byte order mark, or GB18030) into orders with their lines, row by row, holding
// one order at a time. Every row it cannot take is reported with its line, column and
// reason; the caller stores the orders. IMPORT.md (services/basic) documents each format.
package imports

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Field is one thing a row can say, whatever the file calls it.
type Field int

const (
	FOrderNo Field = iota
	FStatus
	FFinancialStatus   // Shopify
	FFulfillmentStatus // Shopify
	FCancelledAt
	FOrderedAt
	FPaidAt
	FShippedAt
	FCompletedAt
	FBuyer
	FTotal
	FDiscount
	FPaid
	FRefund
	FRefundStatus // Pinduoduo's 售后状态
	FSKU
	FGoodsName
	FQuantity
	FUnitPrice
	FShop
	numFields
)

// shopmindNames are ShopMind's own column names (format "shopmind", and the left side of a
// mapping).
var shopmindNames = map[Field]string{
	FOrderNo: "order_no", FStatus: "status", FOrderedAt: "ordered_at", FPaidAt: "paid_at", FShippedAt: "shipped_at",
	FCompletedAt: "completed_at", FBuyer: "buyer", FTotal: "total_amount", FDiscount: "discount_amount",
	FPaid: "paid_amount", FRefund: "refund_amount", FSKU: "sku", FGoodsName: "goods_name", FQuantity: "quantity",
	FUnitPrice: "unit_price", FShop: "shop",
}

// Format is one export format.
type Format struct {
	// Name is what ImportOptions.format says.
	Name string
	// Platform is the shops' platform (basic.shops.platform).
	Platform string
	// Columns: the file's header names of each field (first match wins).
	Columns map[Field][]string
	// Required fields: a header lacking one is not this format.
	Required []Field
	// Zone of times written without an offset.
	Zone *time.Location
	// OrderFieldsOnFirstRow: an order's rows after its first leave the order's fields
	// empty (Shopify).
	OrderFieldsOnFirstRow bool
	// status maps a row to ShopMind's status ("" with a reason: unknown).
	status func(r *row) (string, string)
}

// chinaTime is the time of the Chinese platforms' exports (UTC+8, no daylight saving).
var chinaTime = time.FixedZone("UTC+8", 8*3600)

// Formats are the known formats, in detection order.
var Formats = []*Format{shopmindFormat, shopifyFormat, taobaoFormat, jdFormat, pddFormat}

// FormatByName returns the named format, nil when unknown.
func FormatByName(name string) *Format {
	for _, f := range Formats {
		if f.Name == name {
			return f
		}
	}
	return nil
}

var shopmindFormat = &Format{
	Name: "shopmind", Platform: "import", Zone: time.UTC,
	Columns:  columnsOf(shopmindNames),
	Required: []Field{FOrderNo, FStatus, FOrderedAt, FPaid, FQuantity},
	status: func(r *row) (string, string) {
		s := strings.ToLower(r.get(FStatus))
		switch s {
		case "pending", "paid", "shipped", "completed", "cancelled", "refunded":
			return s, ""
		}
		return "", "one of pending, paid, shipped, completed, cancelled, refunded"
	},
}

func columnsOf(names map[Field]string) map[Field][]string {
	out := map[Field][]string{}
	for f, n := range names {
		out[f] = []string{n}
	}
	return out
}

// Shopify's orders export (Admin > Orders > Export, "Plain CSV file"): one row per line
// item; the order's fields on its first row only.
var shopifyFormat = &Format{
	Name: "shopify", Platform: "shopify", Zone: time.UTC, OrderFieldsOnFirstRow: true,
	Columns: map[Field][]string{
		FOrderNo: {"Name"}, FBuyer: {"Email"}, FFinancialStatus: {"Financial Status"}, FPaidAt: {"Paid at"},
		FFulfillmentStatus: {"Fulfillment Status"}, FShippedAt: {"Fulfilled at"}, FOrderedAt: {"Created at"},
		FTotal: {"Subtotal"}, FDiscount: {"Discount Amount"}, FPaid: {"Total"}, FRefund: {"Refunded Amount"},
		FCancelledAt: {"Cancelled at"}, FQuantity: {"Lineitem quantity"}, FGoodsName: {"Lineitem name"},
		FUnitPrice: {"Lineitem price"}, FSKU: {"Lineitem sku"}, FShop: {},
	},
	Required: []Field{FOrderNo, FFinancialStatus, FOrderedAt, FQuantity, FGoodsName},
	status: func(r *row) (string, string) {
		if r.get(FCancelledAt) != "" {
			return "cancelled", ""
		}
		fin := strings.ToLower(r.get(FFinancialStatus))
		ful := strings.ToLower(r.get(FFulfillmentStatus))
		switch fin {
		case "pending", "authorized", "expired":
			return "pending", ""
		case "voided":
			return "cancelled", ""
		case "refunded":
			return "refunded", ""
		case "paid", "partially_paid", "partially_refunded":
			switch ful {
			case "fulfilled":
				return "shipped", ""
			case "", "unfulfilled", "partial", "restocked", "pending", "open":
				return "paid", ""
			}
			return "", "Fulfillment Status: one of fulfilled, partial, unfulfilled, restocked"
		}
		return "", "one of pending, authorized, paid, partially_paid, partially_refunded, refunded, voided, expired"
	},
}

// Taobao and Tmall's 订单报表 (seller centre, 已卖出的宝贝 > 批量导出): one row per order.
var taobaoFormat = &Format{
	Name: "taobao", Platform: "taobao", Zone: chinaTime,
	Columns: map[Field][]string{
		FOrderNo: {"订单编号"}, FBuyer: {"买家会员名"}, FTotal: {"总金额", "买家应付货款"}, FPaid: {"买家实际支付金额"},
		FStatus: {"订单状态"}, FOrderedAt: {"订单创建时间"}, FPaidAt: {"订单付款时间"}, FShippedAt: {"发货时间"},
		FCompletedAt: {"确认收货时间", "交易成功时间"}, FGoodsName: {"宝贝标题"}, FQuantity: {"宝贝总数量"},
		FSKU: {"商家编码"}, FRefund: {"退款金额"}, FShop: {"店铺名称"},
	},
	Required: []Field{FOrderNo, FPaid, FStatus, FOrderedAt},
	status: func(r *row) (string, string) {
		switch r.get(FStatus) {
		case "等待买家付款":
			return "pending", ""
		case "买家已付款，等待卖家发货", "买家已付款,等待卖家发货", "等待卖家发货":
			return "paid", ""
		case "卖家已发货，等待买家确认", "卖家已发货,等待买家确认", "等待买家确认收货":
			return "shipped", ""
		case "交易成功":
			return "completed", ""
		case "交易关闭", "付款以前，卖家或买家主动关闭交易", "付款以前,卖家或买家主动关闭交易":
			return "cancelled", ""
		}
		return "", "one of 等待买家付款, 买家已付款，等待卖家发货, 卖家已发货，等待买家确认, 交易成功, 交易关闭"
	},
}

// JD's order export (商家后台 订单管理 > 订单导出): one row per goods line; the order's
// amounts repeated on each.
var jdFormat = &Format{
	Name: "jd", Platform: "jd", Zone: chinaTime,
	Columns: map[Field][]string{
		FOrderNo: {"订单号"}, FSKU: {"商品ID"}, FGoodsName: {"商品名称"}, FQuantity: {"订购数量"},
		FUnitPrice: {"京东价"}, FTotal: {"订单金额"}, FPaid: {"应付金额"}, FStatus: {"订单状态"},
		FOrderedAt: {"下单时间"}, FPaidAt: {"付款确认时间"}, FShippedAt: {"出库时间"}, FCompletedAt: {"完成时间"},
		FBuyer: {"下单帐号", "下单账号"}, FRefund: {"退款金额"}, FShop: {"店铺名称"},
	},
	Required: []Field{FOrderNo, FQuantity, FPaid, FStatus, FOrderedAt},
	status: func(r *row) (string, string) {
		switch r.get(FStatus) {
		case "等待付款":
			return "pending", ""
		case "等待出库", "等待打印", "等待发货":
			return "paid", ""
		case "等待确认收货", "已出库":
			return "shipped", ""
		case "完成", "已完成":
			return "completed", ""
		case "已取消", "(删除)已取消", "锁定":
			return "cancelled", ""
		case "退款成功", "已退款":
			return "refunded", ""
		}
		return "", "one of 等待付款, 等待出库, 等待确认收货, 完成, 已取消, 退款成功"
	},
}

// Pinduoduo's order export (商家后台 订单查询 > 批量导出): one row per order.
var pddFormat = &Format{
	Name: "pdd", Platform: "pdd", Zone: chinaTime,
	Columns: map[Field][]string{
		FOrderNo: {"订单号"}, FGoodsName: {"商品"}, FSKU: {"商家编码-SKU维度", "商家编码-商品维度", "样式ID"},
		FQuantity: {"商品数量(件)"}, FTotal: {"商品总价(元)"}, FDiscount: {"店铺优惠折扣(元)"}, FPaid: {"用户实付金额(元)"},
		FStatus: {"订单状态"}, FRefundStatus: {"售后状态"}, FOrderedAt: {"订单成交时间"}, FPaidAt: {"支付时间"},
		FShippedAt: {"发货时间"}, FCompletedAt: {"确认收货时间"}, FRefund: {"退款金额(元)"}, FShop: {"店铺名称"},
	},
	Required: []Field{FOrderNo, FQuantity, FPaid, FStatus, FOrderedAt},
	status: func(r *row) (string, string) {
		switch r.get(FRefundStatus) {
		case "退款成功", "退货退款成功", "已退款":
			return "refunded", ""
		}
		switch r.get(FStatus) {
		case "待支付", "未支付":
			return "pending", ""
		case "待发货", "已支付":
			return "paid", ""
		case "已发货，待收货", "已发货,待收货", "已发货":
			return "shipped", ""
		case "已收货", "已签收", "交易成功":
			return "completed", ""
		case "已取消", "交易取消", "已关闭":
			return "cancelled", ""
		}
		return "", "one of 待支付, 待发货, 已发货，待收货, 已收货, 已签收, 已取消"
	},
}

// Mapped builds the "mapped" format: ShopMind's columns under the names spec gives
// ("order_no=Order ID,paid_amount=Paid"); statuses, times and amounts as in ShopMind's CSV.
func Mapped(spec string) (*Format, error) {
	names := map[Field]string{}
	for f, n := range shopmindNames {
		names[f] = n
	}
	byName := map[string]Field{}
	for f, n := range shopmindNames {
		byName[n] = f
	}
	if strings.TrimSpace(spec) != "" {
		for _, pair := range strings.Split(spec, ",") {
			k, v, ok := strings.Cut(pair, "=")
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			f, known := byName[k]
			if !ok || v == "" || !known {
				var all []string
				for n := range byName {
					all = append(all, n)
				}
				sort.Strings(all)
				return nil, fmt.Errorf("%q is not column=file column with a column among %s", pair, strings.Join(all, ", "))
			}
			names[f] = v
		}
	}
	f := *shopmindFormat
	f.Name, f.Columns = "mapped", columnsOf(names)
	return &f, nil
}

// headerIndex maps a format's fields to the header's columns (-1: absent), and lists the
// required fields missing.
func (f *Format) headerIndex(header []string) (idx [numFields]int, names [numFields]string, missing []string) {
	pos := map[string]int{}
	for i, h := range header {
		h = normHeader(h)
		if _, dup := pos[h]; !dup {
			pos[h] = i
		}
	}
	for i := range idx {
		idx[i] = -1
	}
	for fld, alts := range f.Columns {
		for _, a := range alts {
			if i, ok := pos[normHeader(a)]; ok {
				idx[fld], names[fld] = i, header[i]
				break
			}
		}
	}
	for _, fld := range f.Required {
		if idx[fld] < 0 {
			missing = append(missing, f.Columns[fld][0])
		}
	}
	return idx, names, missing
}

// normHeader compares header names without case, surrounding spaces, quotes or a tab
// prefix some exports add.
func normHeader(h string) string {
	h = strings.TrimPrefix(h, "\ufeff")
	h = strings.Trim(h, " \t\"'=")
	return strings.ToLower(h)
}

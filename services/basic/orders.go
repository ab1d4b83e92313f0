package basic

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	basicv1 "github.com/shopmind/shopmind/gen/go/shopmind/basic/v1"
	"github.com/shopmind/shopmind/internal/analytics/warehouse"
	"github.com/shopmind/shopmind/internal/authn"
)

// Orders live only in the analytical store (basic_orders and basic_order_items, written
// by the platform order sync and the demo data generator): the listing queries the store
// through warehouse.Store.Query, so it lists exactly the orders the metrics count. The SQL
// is generated for the store's dialect: PostgreSQL (analytics.<table>, $n placeholders,
// LIMIT n OFFSET m) or ClickHouse (bare table names, ? placeholders, LIMIT m, n). Every
// statement filters on i_tenant_id; the sort column comes from a whitelist; the page is
// bounded by page_size (at most 100).
//
// What the analytical store does not keep is filled from schema basic: shop names, and for
// order lines the goods name, platform goods id, item number and SKU details (current
// values, not as at the time of the order). The store keeps no buyer nickname (buyer is
// "buyer-<buyer_id>") and no separate sync time (created_at is ordered_at).

// orderSorts is the orders listing's sort whitelist (API field -> column).
var orderSorts = map[string]string{
	"ordered_at": "ordered_at", "paid_at": "paid_at", "total_amount": "total_amount", "paid_amount": "paid_amount",
	"created_at": "ordered_at", "id": "order_id",
}

var defaultOrderSort = sortKey{Field: "ordered_at", Desc: true}

// orderFilter are the orders listing's filters.
type orderFilter struct {
	ShopID  *int64
	Status  string
	OrderNo string
	Start   *time.Time
	End     *time.Time
}

// maxLinesPerPage bounds the lines read for one page of orders.
const maxLinesPerPage = 100_000

func (s *dataServer) ListOrders(ctx context.Context, req *basicv1.ListOrdersRequest) (*basicv1.ListOrdersResponse, error) {
	id, err := authn.Caller(ctx)
	if err != nil {
		return nil, err
	}
	sk, err := parseSort(req.GetSort(), orderSorts, defaultOrderSort)
	if err != nil {
		return nil, err
	}
	p := pageOf(req.PageNum, req.PageSize)
	f := orderFilter{ShopID: req.ShopId, Status: req.GetStatus(), OrderNo: req.GetOrderNo()}
	if req.StartTime != nil {
		t := req.GetStartTime().AsTime()
		f.Start = &t
	}
	if req.EndTime != nil {
		t := req.GetEndTime().AsTime()
		f.End = &t
	}
	orders, total, err := s.c.listOrders(ctx, id.TenantID, f, sk, p)
	if err != nil {
		return nil, err
	}
	return &basicv1.ListOrdersResponse{Items: orders, Total: total, PageNum: p.Num, PageSize: p.Size}, nil
}

// listOrders runs the listing against the analytical store and completes it from basic.
func (c *handlerDeps) listOrders(ctx context.Context, tenantID int64, f orderFilter, sk sortKey, p page) ([]*basicv1.Order, int64, error) {
	dialect := c.wh.Dialect()
	q := buildOrdersSQL(dialect, tenantID, f, sk, p)
	opts := warehouse.QueryOptions{Timeout: c.queryTimeout}
	countRes, err := c.wh.Query(ctx, q.Count, q.Args, warehouse.QueryOptions{MaxRows: 1, Timeout: c.queryTimeout})
	if err != nil {
		return nil, 0, err
	}
	var total int64
	if len(countRes.Rows) == 1 {
		total = asInt(countRes.Rows[0][0])
	}
	orders := []*basicv1.Order{}
	if total == 0 || p.offset() >= total {
		return orders, total, nil
	}
	opts.MaxRows = int(p.Size)
	pageRes, err := c.wh.Query(ctx, q.Page, q.Args, opts)
	if err != nil {
		return nil, 0, err
	}
	if len(pageRes.Rows) == 0 {
		return orders, total, nil
	}
	byID := map[int64]*basicv1.Order{}
	var ids []int64
	var from, to time.Time
	shopIDs := map[int64]bool{}
	for _, r := range pageRes.Rows {
		o := &basicv1.Order{Id: asInt(r[0]), OrderNo: asString(r[1]), ShopId: asInt(r[2]), Platform: asString(r[3]),
			Status: asString(r[4]), Buyer: fmt.Sprintf("buyer-%d", asInt(r[5])), TotalAmount: money(asFloat(r[6])),
			DiscountAmount: money(asFloat(r[7])), PaidAmount: money(asFloat(r[8])), Lines: []*basicv1.OrderLine{},
			OrderedAt: asTimestamp(r[9]), PaidAt: asTimestamp(r[10]), ShippedAt: asTimestamp(r[11]),
			CompletedAt: asTimestamp(r[12]), CreatedAt: asTimestamp(r[9])}
		orders = append(orders, o)
		byID[o.Id] = o
		ids = append(ids, o.Id)
		shopIDs[o.ShopId] = true
		if t, ok := r[9].(time.Time); ok {
			if from.IsZero() || t.Before(from) {
				from = t
			}
			if t.After(to) {
				to = t
			}
		}
	}
	sql, args := buildLinesSQL(dialect, tenantID, ids, from, to)
	linesRes, err := c.wh.Query(ctx, sql, args, warehouse.QueryOptions{MaxRows: maxLinesPerPage, Timeout: c.queryTimeout})
	if err != nil {
		return nil, 0, err
	}
	var goodsIDs, skuIDs []int64
	for _, r := range linesRes.Rows {
		o := byID[asInt(r[0])]
		if o == nil {
			continue
		}
		l := &basicv1.OrderLine{GoodsId: asInt(r[2]), SkuId: asInt(r[3]), Quantity: int32(asInt(r[4])),
			UnitPrice: money(asFloat(r[5])), Amount: money(asFloat(r[6]))}
		o.Lines = append(o.Lines, l)
		goodsIDs = append(goodsIDs, l.GoodsId)
		if l.SkuId != 0 {
			skuIDs = append(skuIDs, l.SkuId)
		}
	}
	if err := c.completeOrders(ctx, tenantID, orders, shopIDs, goodsIDs, skuIDs); err != nil {
		return nil, 0, err
	}
	return orders, total, nil
}

// completeOrders fills shop names and line details from schema basic. A line whose goods
// (or SKU) is unknown to basic gets goods_id (sku_id) 0, as the contract says.
func (c *handlerDeps) completeOrders(ctx context.Context, tenantID int64, orders []*basicv1.Order, shopIDs map[int64]bool, goodsIDs, skuIDs []int64) error {
	shops := make([]int64, 0, len(shopIDs))
	for id := range shopIDs {
		shops = append(shops, id)
	}
	names, err := shopNames(ctx, c.pool, tenantID, shops)
	if err != nil {
		return err
	}
	goods, err := lineGoods(ctx, c.pool, tenantID, goodsIDs)
	if err != nil {
		return err
	}
	skus, err := lineSKUs(ctx, c.pool, tenantID, skuIDs)
	if err != nil {
		return err
	}
	for _, o := range orders {
		o.ShopName = names[o.ShopId]
		for _, l := range o.Lines {
			g, ok := goods[l.GoodsId]
			if !ok {
				l.GoodsId, l.SkuId = 0, 0
				continue
			}
			l.GoodsName, l.PlatformGoodsId, l.ItemNo = g.name, g.platformID, g.itemNo
			if k, ok := skus[l.SkuId]; ok && k.goodsID == l.GoodsId {
				l.PlatformSkuId, l.Spec = k.platformID, k.spec
				if k.itemNo != "" {
					l.ItemNo = k.itemNo
				}
			} else {
				l.SkuId = 0
			}
		}
	}
	return nil
}

func asInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case float64:
		return int64(x)
	case bool:
		if x {
			return 1
		}
	}
	return 0
}

func asFloat(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int64:
		return float64(x)
	}
	return 0
}

func asString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return ""
}

func asTimestamp(v any) *timestamppb.Timestamp {
	if t, ok := v.(time.Time); ok {
		return timestamppb.New(t)
	}
	return nil
}

package warehouse

import (
	"time"

	"github.com/shopmind/shopmind/internal/analytics/catalog"
)

// The row types mirror the base tables of catalog.Base(), field for field in column order
// (a test keeps them in step). Times are stored in UTC; ClickHouse keeps seconds, so
// callers that want both stores to hold identical data truncate times to the second.

// Shop is a row of basic_shops.
type Shop struct {
	TenantID  int64
	ShopID    int64
	ShopName  string
	Platform  string
	Status    string
	CreatedAt time.Time
}

// Category is a row of basic_categories.
type Category struct {
	TenantID     int64
	CategoryID   int64
	ParentID     int64
	CategoryName string
	Level        int64
}

// Goods is a row of basic_goods.
type Goods struct {
	TenantID   int64
	GoodsID    int64
	ShopID     int64
	CategoryID int64
	StaffID    int64
	GoodsName  string
	ItemNo     string
	Platform   string
	IsVirtual  bool
	Status     string
	Price      float64
	Cost       float64
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// Order is a row of basic_orders.
type Order struct {
	TenantID       int64
	OrderID        int64
	OrderNo        string
	ShopID         int64
	Platform       string
	Status         string
	BuyerID        int64
	TotalAmount    float64
	DiscountAmount float64
	PaidAmount     float64
	ItemCount      int64
	OrderedAt      time.Time
	PaidAt         *time.Time
	ShippedAt      *time.Time
	CompletedAt    *time.Time
}

// OrderItem is a row of basic_order_items.
type OrderItem struct {
	TenantID   int64
	ItemID     int64
	OrderID    int64
	GoodsID    int64
	SkuID      int64
	ShopID     int64
	Status     string
	Quantity   int64
	UnitPrice  float64
	Amount     float64
	CostAmount float64
	OrderedAt  time.Time
}

// Table names of the base tables.
const (
	TableShops      = "basic_shops"
	TableCategories = "basic_categories"
	TableGoods      = "basic_goods"
	TableOrders     = "basic_orders"
	TableOrderItems = "basic_order_items"
)

// baseTables are the base tables in load order (parents first).
var baseTables = []string{TableShops, TableCategories, TableGoods, TableOrders, TableOrderItems}

// row values in catalog column order; times in UTC, bools as Go bools (each dialect
// converts what it must).

func (r *Shop) values() []any {
	return []any{r.TenantID, r.ShopID, r.ShopName, r.Platform, r.Status, r.CreatedAt.UTC()}
}

func (r *Category) values() []any {
	return []any{r.TenantID, r.CategoryID, r.ParentID, r.CategoryName, r.Level}
}

func (r *Goods) values() []any {
	return []any{r.TenantID, r.GoodsID, r.ShopID, r.CategoryID, r.StaffID, r.GoodsName, r.ItemNo, r.Platform,
		r.IsVirtual, r.Status, r.Price, r.Cost, r.CreatedAt.UTC(), r.UpdatedAt.UTC()}
}

func (r *Order) values() []any {
	return []any{r.TenantID, r.OrderID, r.OrderNo, r.ShopID, r.Platform, r.Status, r.BuyerID, r.TotalAmount,
		r.DiscountAmount, r.PaidAmount, r.ItemCount, r.OrderedAt.UTC(), utcPtr(r.PaidAt), utcPtr(r.ShippedAt), utcPtr(r.CompletedAt)}
}

func (r *OrderItem) values() []any {
	return []any{r.TenantID, r.ItemID, r.OrderID, r.GoodsID, r.SkuID, r.ShopID, r.Status, r.Quantity,
		r.UnitPrice, r.Amount, r.CostAmount, r.OrderedAt.UTC()}
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// base is the base catalog, built once (callers of Catalog get their own copy).
var base = catalog.Base()

// columnNames lists a table's columns in order.
func columnNames(t *catalog.Table) []string {
	names := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		names[i] = c.Name
	}
	return names
}

// Package catalog says which analytical tables and columns exist, their types and their
// role (time, dimension, measure), and how the tables join. Metrics and queries may only
// name catalog columns; the semantic layer compiles against it and the warehouse creates
// the base tables from it. Every table carries the tenant column i_tenant_id.
package catalog

import (
	"fmt"
	"strings"
)

// TenantColumn is the tenant column of every analytical table.
const TenantColumn = "i_tenant_id"

// Role is what a column is for.
type Role string

// Column roles.
const (
	RoleTime      Role = "time"
	RoleDimension Role = "dimension"
	RoleMeasure   Role = "measure"
)

// Type is a column's logical type; each warehouse dialect maps it to its own SQL type.
type Type string

// Column types.
const (
	TypeInt    Type = "int"    // 64-bit integer
	TypeFloat  Type = "float"  // double precision (amounts in currency units)
	TypeString Type = "string" // text
	TypeTime   Type = "time"   // timestamp (UTC)
	TypeBool   Type = "bool"
)

// Column is one catalog column.
type Column struct {
	Name        string
	Type        Type
	Role        Role
	Nullable    bool
	Description string
}

// Table is one analytical table.
type Table struct {
	Name        string
	Description string
	Columns     []Column
	// TimeColumn is the default time column (range filters and time buckets).
	TimeColumn string
	// Key is the column identifying a row (order_id, goods_id ...).
	Key string
	// Diy marks tenant-defined tables discovered in the store (diy_*).
	Diy bool
}

// Column returns the named column, or nil.
func (t *Table) Column(name string) *Column {
	for i := range t.Columns {
		if t.Columns[i].Name == name {
			return &t.Columns[i]
		}
	}
	return nil
}

// Join is a many-to-one relationship: From.FromColumn references To.ToColumn (both tables
// also match on the tenant column).
type Join struct {
	From, FromColumn, To, ToColumn string
}

// NamedDimension is a dimension users ask for by name (shop, goods, category): the column
// grouped on and the column that labels it.
type NamedDimension struct {
	Name        string
	Table       string // table holding the key column
	Column      string // the key grouped on
	LabelTable  string // table holding the label
	LabelColumn string // human-readable label (shop_name ...)
	// LabelKey is the column of LabelTable the key refers to, when it is not a column of
	// the same name (root_category groups on parent_id and labels it by category_id).
	LabelKey string
}

// Catalog is the set of tables of the analytical store.
type Catalog struct {
	Tables     []*Table
	Joins      []Join
	Dimensions []NamedDimension
}

// Table returns the named table, or nil.
func (c *Catalog) Table(name string) *Table {
	for _, t := range c.Tables {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// Dimension returns a named dimension, or nil.
func (c *Catalog) Dimension(name string) *NamedDimension {
	for i := range c.Dimensions {
		if c.Dimensions[i].Name == name {
			return &c.Dimensions[i]
		}
	}
	return nil
}

// Resolve finds a column reference written `column` (in defaultTable) or `table.column`.
func (c *Catalog) Resolve(ref, defaultTable string) (*Table, *Column, error) {
	tableName, colName := defaultTable, ref
	if t, col, ok := strings.Cut(ref, "."); ok {
		tableName, colName = t, col
	}
	t := c.Table(tableName)
	if t == nil {
		return nil, nil, fmt.Errorf("unknown table %q", tableName)
	}
	col := t.Column(colName)
	if col == nil || col.Name == TenantColumn {
		return nil, nil, fmt.Errorf("unknown column %q in table %s", colName, tableName)
	}
	return t, col, nil
}

// WithDiy returns a copy of the catalog with the tenant-defined tables added.
func (c *Catalog) WithDiy(diy []*Table) *Catalog {
	out := &Catalog{Tables: append(append([]*Table(nil), c.Tables...), diy...), Joins: c.Joins, Dimensions: c.Dimensions}
	return out
}

func col(name string, typ Type, role Role, desc string) Column {
	return Column{Name: name, Type: typ, Role: role, Description: desc}
}

func nullable(c Column) Column { c.Nullable = true; return c }

// Base is the platform's base catalog: the basic_* tables every store has.
func Base() *Catalog {
	tenant := col(TenantColumn, TypeInt, RoleDimension, "tenant id")
	return &Catalog{
		Tables: []*Table{
			{Name: "basic_shops", Description: "shops", Key: "shop_id", TimeColumn: "created_at", Columns: []Column{
				tenant,
				col("shop_id", TypeInt, RoleDimension, "shop id"),
				col("shop_name", TypeString, RoleDimension, "shop name"),
				col("platform", TypeString, RoleDimension, "sales platform"),
				col("status", TypeString, RoleDimension, "shop status"),
				col("created_at", TypeTime, RoleTime, "when the shop was created"),
			}},
			{Name: "basic_categories", Description: "goods categories", Key: "category_id", Columns: []Column{
				tenant,
				col("category_id", TypeInt, RoleDimension, "category id"),
				col("parent_id", TypeInt, RoleDimension, "parent category id (0 for a root)"),
				col("category_name", TypeString, RoleDimension, "category name"),
				col("level", TypeInt, RoleDimension, "depth, 1 for a root"),
			}},
			{Name: "basic_goods", Description: "goods", Key: "goods_id", TimeColumn: "created_at", Columns: []Column{
				tenant,
				col("goods_id", TypeInt, RoleDimension, "goods id"),
				col("shop_id", TypeInt, RoleDimension, "shop id"),
				col("category_id", TypeInt, RoleDimension, "category id"),
				col("staff_id", TypeInt, RoleDimension, "staff member responsible"),
				col("goods_name", TypeString, RoleDimension, "goods name"),
				col("item_no", TypeString, RoleDimension, "item number"),
				col("platform", TypeString, RoleDimension, "sales platform"),
				col("is_virtual", TypeBool, RoleDimension, "virtual goods"),
				col("status", TypeString, RoleDimension, "on_sale, off_sale or deleted"),
				col("price", TypeFloat, RoleMeasure, "list price"),
				col("cost", TypeFloat, RoleMeasure, "unit cost"),
				col("created_at", TypeTime, RoleTime, "when the goods was created"),
				col("updated_at", TypeTime, RoleTime, "last change"),
			}},
			{Name: "basic_orders", Description: "orders", Key: "order_id", TimeColumn: "ordered_at", Columns: []Column{
				tenant,
				col("order_id", TypeInt, RoleDimension, "order id"),
				col("order_no", TypeString, RoleDimension, "order number"),
				col("shop_id", TypeInt, RoleDimension, "shop id"),
				col("platform", TypeString, RoleDimension, "sales platform"),
				col("status", TypeString, RoleDimension, "pending, paid, shipped, completed, cancelled or refunded"),
				col("buyer_id", TypeInt, RoleDimension, "buyer id"),
				col("total_amount", TypeFloat, RoleMeasure, "order total before discounts"),
				col("discount_amount", TypeFloat, RoleMeasure, "discounts"),
				col("paid_amount", TypeFloat, RoleMeasure, "amount paid (GMV)"),
				col("item_count", TypeInt, RoleMeasure, "units in the order"),
				col("ordered_at", TypeTime, RoleTime, "when the order was placed"),
				nullable(col("paid_at", TypeTime, RoleTime, "when it was paid")),
				nullable(col("shipped_at", TypeTime, RoleTime, "when it was shipped")),
				nullable(col("completed_at", TypeTime, RoleTime, "when it was completed")),
			}},
			{Name: "basic_order_items", Description: "order lines", Key: "item_id", TimeColumn: "ordered_at", Columns: []Column{
				tenant,
				col("item_id", TypeInt, RoleDimension, "order line id"),
				col("order_id", TypeInt, RoleDimension, "order id"),
				col("goods_id", TypeInt, RoleDimension, "goods id"),
				col("sku_id", TypeInt, RoleDimension, "SKU id"),
				col("shop_id", TypeInt, RoleDimension, "shop id"),
				col("status", TypeString, RoleDimension, "the order's status"),
				col("quantity", TypeInt, RoleMeasure, "units"),
				col("unit_price", TypeFloat, RoleMeasure, "price per unit"),
				col("amount", TypeFloat, RoleMeasure, "line amount paid"),
				col("cost_amount", TypeFloat, RoleMeasure, "line cost"),
				col("ordered_at", TypeTime, RoleTime, "when the order was placed"),
			}},
		},
		Joins: []Join{
			{From: "basic_order_items", FromColumn: "order_id", To: "basic_orders", ToColumn: "order_id"},
			{From: "basic_order_items", FromColumn: "goods_id", To: "basic_goods", ToColumn: "goods_id"},
			{From: "basic_order_items", FromColumn: "shop_id", To: "basic_shops", ToColumn: "shop_id"},
			{From: "basic_orders", FromColumn: "shop_id", To: "basic_shops", ToColumn: "shop_id"},
			{From: "basic_goods", FromColumn: "shop_id", To: "basic_shops", ToColumn: "shop_id"},
			{From: "basic_goods", FromColumn: "category_id", To: "basic_categories", ToColumn: "category_id"},
		},
		Dimensions: []NamedDimension{
			{Name: "shop", Table: "basic_shops", Column: "shop_id", LabelTable: "basic_shops", LabelColumn: "shop_name"},
			{Name: "goods", Table: "basic_goods", Column: "goods_id", LabelTable: "basic_goods", LabelColumn: "goods_name"},
			{Name: "category", Table: "basic_categories", Column: "category_id", LabelTable: "basic_categories", LabelColumn: "category_name"},
			// root_category: the top-level category of a goods' category. The store's tree has
			// two levels (level 1 roots, level 2 leaves holding the goods), so a leaf's
			// parent_id is its root, labelled by the root's own row.
			{Name: "root_category", Table: "basic_categories", Column: "parent_id", LabelTable: "basic_categories", LabelColumn: "category_name", LabelKey: "category_id"},
			{Name: "staff", Table: "basic_goods", Column: "staff_id", LabelTable: "basic_goods", LabelColumn: "staff_id"},
			{Name: "platform", Table: "basic_orders", Column: "platform", LabelTable: "basic_orders", LabelColumn: "platform"},
			{Name: "status", Table: "basic_orders", Column: "status", LabelTable: "basic_orders", LabelColumn: "status"},
		},
	}
}

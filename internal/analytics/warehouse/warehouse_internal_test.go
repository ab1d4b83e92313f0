package warehouse

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shopmind/shopmind/internal/analytics/catalog"
)

// TestRowTypesMirrorCatalog keeps the row structs in step with catalog.Base(): same columns,
// same order, Go types matching the catalog types.
func TestRowTypesMirrorCatalog(t *testing.T) {
	now := time.Now()
	cases := map[string]struct {
		typ    any
		values []any
	}{
		TableShops:      {Shop{}, (&Shop{CreatedAt: now}).values()},
		TableCategories: {Category{}, (&Category{}).values()},
		TableGoods:      {Goods{}, (&Goods{CreatedAt: now, UpdatedAt: now}).values()},
		TableOrders:     {Order{}, (&Order{OrderedAt: now, PaidAt: &now, ShippedAt: &now, CompletedAt: &now}).values()},
		TableOrderItems: {OrderItem{}, (&OrderItem{OrderedAt: now}).values()},
	}
	for _, name := range baseTables {
		c := cases[name]
		table := catalog.Base().Table(name)
		rt := reflect.TypeOf(c.typ)
		if rt.NumField() != len(table.Columns) || len(c.values) != len(table.Columns) {
			t.Fatalf("%s: %d fields, %d values, %d columns", name, rt.NumField(), len(c.values), len(table.Columns))
		}
		for i, col := range table.Columns {
			field := strings.ToLower(rt.Field(i).Name)
			want := strings.ReplaceAll(strings.TrimPrefix(col.Name, "i_"), "_", "")
			if field != want {
				t.Errorf("%s: field %d is %s, column is %s", name, i, rt.Field(i).Name, col.Name)
			}
			var ok bool
			switch v := c.values[i].(type) {
			case int64:
				ok = col.Type == catalog.TypeInt
			case float64:
				ok = col.Type == catalog.TypeFloat
			case string:
				ok = col.Type == catalog.TypeString
			case bool:
				ok = col.Type == catalog.TypeBool
			case time.Time:
				ok = col.Type == catalog.TypeTime && !col.Nullable && v.Location() == time.UTC
			case *time.Time:
				ok = col.Type == catalog.TypeTime && col.Nullable && v.Location() == time.UTC
			}
			if !ok {
				t.Errorf("%s.%s: value %T does not fit %s (nullable %v)", name, col.Name, c.values[i], col.Type, col.Nullable)
			}
		}
	}
}

func TestPostgresDDL(t *testing.T) {
	ddl := strings.Join(pgDDL(), ";\n")
	for _, want := range []string{
		`CREATE SCHEMA IF NOT EXISTS "analytics"`,
		`CREATE TABLE IF NOT EXISTS "analytics"."basic_orders" (`,
		`"paid_amount" double precision NOT NULL,`,
		`"paid_at" timestamptz,`,
		`"is_virtual" boolean NOT NULL,`,
		`PRIMARY KEY ("i_tenant_id", "order_id")`,
		`CREATE INDEX IF NOT EXISTS "basic_orders_tenant_id_ordered_at_idx" ON "analytics"."basic_orders" ("i_tenant_id", "ordered_at")`,
		`CREATE INDEX IF NOT EXISTS "basic_order_items_tenant_id_goods_id_idx" ON "analytics"."basic_order_items" ("i_tenant_id", "goods_id")`,
	} {
		if !strings.Contains(ddl, want) {
			t.Errorf("DDL lacks %s\n%s", want, ddl)
		}
	}
}

func TestClickHouseDDL(t *testing.T) {
	cols, engine := chTableDDL(catalog.Base().Table(TableOrders))
	for _, want := range []string{
		"    paid_at Nullable(DateTime('UTC')),",
		"    ordered_at DateTime('UTC'),",
	} {
		if !strings.Contains(cols, want) {
			t.Errorf("orders columns lack %q\n%s", want, cols)
		}
	}
	if want := "MergeTree() PARTITION BY toYYYYMM(ordered_at) ORDER BY (i_tenant_id, ordered_at, order_id)"; engine != want {
		t.Errorf("orders engine %q, want %q", engine, want)
	}
	if got, want := replicatedEngine(engine, "shop", "basic_orders_local"),
		"ReplicatedMergeTree('/clickhouse/tables/{shard}/shop/basic_orders_local', '{replica}') PARTITION BY toYYYYMM(ordered_at) ORDER BY (i_tenant_id, ordered_at, order_id)"; got != want {
		t.Errorf("replicated engine %q, want %q", got, want)
	}
	cols, engine = chTableDDL(catalog.Base().Table(TableGoods))
	if !strings.Contains(cols, "is_virtual UInt8,") || engine != "ReplacingMergeTree() ORDER BY (i_tenant_id, goods_id)" {
		t.Errorf("goods DDL:\n%s\n%s", cols, engine)
	}
	if got := replicatedEngine(engine, "shop", "basic_goods_local"); got != "ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/shop/basic_goods_local', '{replica}') ORDER BY (i_tenant_id, goods_id)" {
		t.Errorf("replicated goods engine %q", got)
	}
}

func TestSplitClusterParam(t *testing.T) {
	u, name, err := splitClusterParam("clickhouse://a:9101,b:9102/shop?dial_timeout=5s&cluster=shopmind")
	if err != nil || name != "shopmind" || u != "clickhouse://a:9101,b:9102/shop?dial_timeout=5s" {
		t.Errorf("got %q %q %v", u, name, err)
	}
	if u, name, err := splitClusterParam("clickhouse://a:9000/shop"); err != nil || name != "" || u != "clickhouse://a:9000/shop" {
		t.Errorf("no cluster: got %q %q %v", u, name, err)
	}
	if _, _, err := splitClusterParam("clickhouse://a:9000/shop?cluster=x%60y"); err == nil {
		t.Error("a cluster name with a back quote was accepted")
	}
}

func TestCheckSelect(t *testing.T) {
	for sql, ok := range map[string]bool{
		"SELECT 1":                             true,
		"  select 1 ;  ":                       true,
		"WITH x AS (SELECT 1) SELECT * FROM x": true,
		"(SELECT 1) UNION ALL (SELECT 2)":      true,
		"-- comment\nSELECT 1":                 true,
		"/* c */ SELECT 1":                     true,
		"INSERT INTO t SELECT 1":               false,
		"DELETE FROM basic_orders":             false,
		"drop table basic_orders":              false,
		"/* SELECT */ DROP TABLE x":            false,
		"-- SELECT":                            false,
		"":                                     false,
	} {
		_, err := checkSelect(sql)
		if (err == nil) != ok {
			t.Errorf("%q: err %v, want ok=%v", sql, err, ok)
		}
	}
}

func TestTypeMapping(t *testing.T) {
	for typ, want := range map[string]catalog.Type{
		"Int64": catalog.TypeInt, "UInt8": catalog.TypeInt, "Nullable(UInt32)": catalog.TypeInt,
		"Float64": catalog.TypeFloat, "Decimal(18, 2)": catalog.TypeFloat,
		"String": catalog.TypeString, "LowCardinality(String)": catalog.TypeString, "FixedString(3)": catalog.TypeString,
		"Enum8('a' = 1)": catalog.TypeString, "DateTime": catalog.TypeTime, "Date": catalog.TypeTime,
		"Nullable(DateTime('UTC'))": catalog.TypeTime, "DateTime64(3)": catalog.TypeTime, "Bool": catalog.TypeBool,
	} {
		got, _, ok := chCatalogType(typ)
		if !ok || got != want {
			t.Errorf("clickhouse %s: %s %v, want %s", typ, got, ok, want)
		}
	}
	for _, typ := range []string{"Array(Int64)", "Tuple(Int8, String)", "Map(String, Int64)"} {
		if _, _, ok := chCatalogType(typ); ok {
			t.Errorf("clickhouse %s: mapped, want skipped", typ)
		}
	}
	if _, nullable, _ := chCatalogType("Nullable(String)"); !nullable {
		t.Error("Nullable(String) is nullable")
	}
	for typ, want := range map[string]catalog.Type{
		"bigint": catalog.TypeInt, "integer": catalog.TypeInt, "numeric": catalog.TypeFloat, "double precision": catalog.TypeFloat,
		"text": catalog.TypeString, "character varying": catalog.TypeString, "timestamp with time zone": catalog.TypeTime,
		"date": catalog.TypeTime, "boolean": catalog.TypeBool,
	} {
		if got, ok := pgCatalogType(typ); !ok || got != want {
			t.Errorf("postgres %s: %s %v, want %s", typ, got, ok, want)
		}
	}
	if _, ok := pgCatalogType("bytea"); ok {
		t.Error("bytea mapped")
	}
}

func TestDiyTables(t *testing.T) {
	c := func(table, name string, typ catalog.Type) diyColumn {
		return diyColumn{table: table, name: name, typ: typ, ok: true}
	}
	cols := []diyColumn{
		c("diy_ads", "i_tenant_id", catalog.TypeInt),
		c("diy_ads", "ad_id", catalog.TypeInt),
		c("diy_ads", "spend", catalog.TypeFloat),
		c("diy_ads", "clicks", catalog.TypeInt),
		c("diy_ads", "channel", catalog.TypeString),
		c("diy_ads", "day", catalog.TypeTime),
		c("diy_ads", "Bad Name", catalog.TypeString),
		{table: "diy_ads", name: "tags", ok: false},
		c("diy_no_tenant", "id", catalog.TypeInt),
		c("diy_no_tenant", "amount", catalog.TypeFloat),
		c("diy_Upper", "i_tenant_id", catalog.TypeInt),
		c("diy_text_tenant", "i_tenant_id", catalog.TypeString),
		c("diy_z", "i_tenant_id", catalog.TypeInt),
		c("diy_z", "id", catalog.TypeInt),
	}
	tables := diyTables(cols, map[string]string{"diy_ads": "ad spend"})
	if len(tables) != 2 || tables[0].Name != "diy_ads" || tables[1].Name != "diy_z" {
		t.Fatalf("tables: %+v", tables)
	}
	ads := tables[0]
	if !ads.Diy || ads.Description != "ad spend" || ads.TimeColumn != "day" || ads.Key != "ad_id" || len(ads.Columns) != 6 {
		t.Fatalf("diy_ads: %+v", ads)
	}
	roles := map[string]catalog.Role{"i_tenant_id": catalog.RoleDimension, "ad_id": catalog.RoleDimension,
		"spend": catalog.RoleMeasure, "clicks": catalog.RoleMeasure, "channel": catalog.RoleDimension, "day": catalog.RoleTime}
	for _, col := range ads.Columns {
		if roles[col.Name] != col.Role {
			t.Errorf("%s: role %s, want %s", col.Name, col.Role, roles[col.Name])
		}
	}
	if tables[1].Key != "id" || tables[1].TimeColumn != "" {
		t.Errorf("diy_z: %+v", tables[1])
	}
}

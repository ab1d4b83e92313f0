-- +goose Up
-- Keyword listings (name_search LIKE '%kw%') of frequent keywords walk a sort index and
-- test the keyword on its entries: the listing indexes carry name_search so that walk is
-- index-only (before, every entry walked read its table row: 10 to 40 ms for a keyword
-- matching a few percent of 100,000 goods). Sorting by id gets a covering index of its
-- own (the primary key carries no filter columns). See BASIC.md, "Listings".
DROP INDEX basic.goods_created, basic.goods_updated, basic.goods_price, basic.goods_cost,
    basic.goods_name_sort, basic.goods_display, basic.goods_shop;
CREATE INDEX goods_created ON basic.goods (tenant_id, created_at, id) INCLUDE (status, shop_id, category_id, staff_id, is_virtual, name_search);
CREATE INDEX goods_updated ON basic.goods (tenant_id, updated_at, id) INCLUDE (status, shop_id, category_id, staff_id, is_virtual, name_search);
CREATE INDEX goods_price ON basic.goods (tenant_id, price, id) INCLUDE (status, shop_id, category_id, staff_id, is_virtual, name_search);
CREATE INDEX goods_cost ON basic.goods (tenant_id, cost, id) INCLUDE (status, shop_id, category_id, staff_id, is_virtual, name_search);
CREATE INDEX goods_name_sort ON basic.goods (tenant_id, name, id) INCLUDE (status, shop_id, category_id, staff_id, is_virtual, name_search);
CREATE INDEX goods_display ON basic.goods (tenant_id, display_order, id) INCLUDE (status, shop_id, category_id, staff_id, is_virtual, name_search);
CREATE INDEX goods_id_sort ON basic.goods (tenant_id, id) INCLUDE (status, shop_id, category_id, staff_id, is_virtual, name_search);
CREATE INDEX goods_shop ON basic.goods (tenant_id, shop_id, status, display_order, id) INCLUDE (category_id, staff_id, is_virtual, name_search);

-- +goose Down
DROP INDEX basic.goods_created, basic.goods_updated, basic.goods_price, basic.goods_cost,
    basic.goods_name_sort, basic.goods_display, basic.goods_id_sort, basic.goods_shop;
CREATE INDEX goods_created ON basic.goods (tenant_id, created_at, id) INCLUDE (status, shop_id, category_id, staff_id, is_virtual);
CREATE INDEX goods_updated ON basic.goods (tenant_id, updated_at, id) INCLUDE (status, shop_id, category_id, staff_id, is_virtual);
CREATE INDEX goods_price ON basic.goods (tenant_id, price, id) INCLUDE (status, shop_id, category_id, staff_id, is_virtual);
CREATE INDEX goods_cost ON basic.goods (tenant_id, cost, id) INCLUDE (status, shop_id, category_id, staff_id, is_virtual);
CREATE INDEX goods_name_sort ON basic.goods (tenant_id, name, id) INCLUDE (status, shop_id, category_id, staff_id, is_virtual);
CREATE INDEX goods_display ON basic.goods (tenant_id, display_order, id) INCLUDE (status, shop_id, category_id, staff_id, is_virtual);
CREATE INDEX goods_shop ON basic.goods (tenant_id, shop_id, status, display_order, id) INCLUDE (category_id, staff_id, is_virtual);

-- Legitimate analyst queries (ClickHouse 18.16 and later), one per line. Each runs through
-- the sandbox and by hand against views that write the tenant (and shop) filter out; the
-- rows must match.
SELECT count() FROM basic_orders
SELECT count(), sum(paid_amount), avg(paid_amount) FROM basic_orders
SELECT status, count() FROM basic_orders GROUP BY status ORDER BY status
SELECT platform, sum(paid_amount) AS gmv FROM basic_orders GROUP BY platform ORDER BY gmv DESC
SELECT shop_id, count() AS orders, round(sum(paid_amount), 2) AS gmv FROM basic_orders GROUP BY shop_id ORDER BY shop_id
SELECT toStartOfMonth(ordered_at) AS month, sum(paid_amount) FROM basic_orders GROUP BY month ORDER BY month
SELECT toMonday(ordered_at) AS week, count() FROM basic_orders GROUP BY week ORDER BY week
SELECT toDate(ordered_at) AS day, sum(paid_amount) FROM basic_orders WHERE ordered_at >= toDateTime('2026-10-01 00:00:00') GROUP BY day ORDER BY day
SELECT toDayOfWeek(ordered_at) AS dow, count() FROM basic_orders GROUP BY dow ORDER BY dow
SELECT toHour(ordered_at) AS h, count() FROM basic_orders GROUP BY h ORDER BY h
SELECT order_id, paid_amount FROM basic_orders ORDER BY paid_amount DESC, order_id LIMIT 10
SELECT order_no, status, paid_amount FROM basic_orders WHERE status = 'refunded' ORDER BY order_id LIMIT 20
SELECT countIf(status = 'cancelled') AS cancelled, count() AS total FROM basic_orders
SELECT round(100 * countIf(status IN ('refunded', 'cancelled')) / count(), 2) AS bad_rate FROM basic_orders
SELECT s.shop_name, count() AS orders FROM basic_orders AS o ANY LEFT JOIN basic_shops AS s USING shop_id GROUP BY s.shop_name ORDER BY s.shop_name
SELECT shop_name, platform, gmv FROM basic_shops ANY LEFT JOIN (SELECT shop_id, sum(paid_amount) AS gmv FROM basic_orders GROUP BY shop_id) USING shop_id ORDER BY shop_name
SELECT goods_name, units FROM (SELECT goods_id, sum(quantity) AS units FROM basic_order_items GROUP BY goods_id) ANY INNER JOIN basic_goods USING goods_id ORDER BY units DESC, goods_name LIMIT 10
SELECT category_id, sum(amount) AS sales FROM basic_order_items ANY INNER JOIN (SELECT goods_id, category_id FROM basic_goods) USING goods_id GROUP BY category_id ORDER BY sales DESC, category_id
SELECT level, count() FROM basic_categories GROUP BY level ORDER BY level
SELECT parent_id, count() AS children FROM basic_categories WHERE parent_id != 0 GROUP BY parent_id ORDER BY parent_id
SELECT staff_id, count() AS goods FROM basic_goods GROUP BY staff_id ORDER BY goods DESC, staff_id LIMIT 5
SELECT status, count(), avg(price) FROM basic_goods GROUP BY status ORDER BY status
SELECT goods_name, price, cost, round(price - cost, 2) AS margin FROM basic_goods ORDER BY margin DESC, goods_name LIMIT 15
SELECT is_virtual, count() FROM basic_goods GROUP BY is_virtual ORDER BY is_virtual
SELECT goods_id, goods_name FROM basic_goods WHERE lower(goods_name) LIKE '%a%' ORDER BY goods_id LIMIT 10
SELECT goods_id FROM basic_goods WHERE price BETWEEN 50 AND 100 ORDER BY goods_id
SELECT * FROM basic_shops ORDER BY shop_id
SELECT shop_id, shop_name, upper(platform) FROM basic_shops ORDER BY shop_id
SELECT buyer_id, count() AS n FROM basic_orders GROUP BY buyer_id HAVING count() > 1 ORDER BY n DESC, buyer_id LIMIT 10
SELECT uniqExact(buyer_id) FROM basic_orders
SELECT uniqExactIf(buyer_id, status = 'completed') FROM basic_orders
SELECT uniq(buyer_id) > 0 FROM basic_orders
SELECT shop_id, order_id, paid_amount FROM basic_orders ORDER BY shop_id, paid_amount DESC, order_id LIMIT 3 BY shop_id
SELECT order_id FROM basic_orders WHERE shop_id IN (SELECT shop_id FROM basic_shops WHERE platform = 'tmall') ORDER BY order_id LIMIT 25
SELECT goods_id, goods_name FROM basic_goods WHERE goods_id IN (SELECT goods_id FROM basic_order_items WHERE quantity > 3) ORDER BY goods_id
SELECT goods_id FROM basic_goods WHERE goods_id NOT IN (SELECT goods_id FROM basic_order_items) ORDER BY goods_id
SELECT order_id, lines FROM basic_orders ANY LEFT JOIN (SELECT order_id, count() AS lines FROM basic_order_items GROUP BY order_id) USING order_id ORDER BY order_id LIMIT 15
SELECT kind, n FROM (SELECT 'orders' AS kind, count() AS n FROM basic_orders UNION ALL SELECT 'items' AS kind, count() AS n FROM basic_order_items UNION ALL SELECT 'goods' AS kind, count() AS n FROM basic_goods) ORDER BY kind
SELECT shop_id FROM basic_orders UNION ALL SELECT shop_id FROM basic_goods
SELECT multiIf(paid_amount < 50, 'small', paid_amount < 200, 'medium', 'large') AS size, count() FROM basic_orders GROUP BY size ORDER BY size
SELECT CASE WHEN paid_amount < 50 THEN 'small' WHEN paid_amount < 200 THEN 'medium' ELSE 'large' END AS size, count() FROM basic_orders GROUP BY size ORDER BY size
SELECT toDate(ifNull(paid_at, ordered_at)) AS d, count() FROM basic_orders GROUP BY d ORDER BY d LIMIT 10
SELECT count() FROM basic_orders WHERE paid_at IS NULL
SELECT count() FROM basic_orders WHERE shipped_at IS NOT NULL AND completed_at IS NULL
SELECT avg((toUInt32(assumeNotNull(shipped_at)) - toUInt32(assumeNotNull(paid_at))) / 3600) AS hours_to_ship FROM basic_orders WHERE shipped_at IS NOT NULL AND paid_at IS NOT NULL
SELECT quantileExact(0.5)(paid_amount) AS median FROM basic_orders
SELECT shop_id, quantileExact(0.9)(paid_amount) FROM basic_orders GROUP BY shop_id ORDER BY shop_id
SELECT round(stddevPop(paid_amount), 4), round(varPop(paid_amount), 2) FROM basic_orders
SELECT min(ordered_at), max(ordered_at) FROM basic_orders
SELECT toYYYYMM(ordered_at) AS ym, count() FROM basic_orders GROUP BY ym ORDER BY ym
SELECT formatDateTime(ordered_at, '%Y-%m') AS ym, count() FROM basic_orders GROUP BY ym ORDER BY ym
SELECT arrayStringConcat(arraySort(groupArray(shop_name)), ', ') FROM basic_shops
SELECT shop_id, length(groupArray(order_id)) FROM basic_orders GROUP BY shop_id ORDER BY shop_id
SELECT greatest(total_amount, paid_amount), least(total_amount, paid_amount) FROM basic_orders ORDER BY order_id LIMIT 5
SELECT nullIf(discount_amount, 0) FROM basic_orders ORDER BY order_id LIMIT 5
SELECT sum(discount_amount) / sum(total_amount) AS discount_rate FROM basic_orders
SELECT item_count, count() FROM basic_orders GROUP BY item_count ORDER BY item_count
SELECT order_id, lines_total, paid_amount FROM (SELECT order_id, sum(amount) AS lines_total FROM basic_order_items GROUP BY order_id) ANY INNER JOIN basic_orders USING order_id ORDER BY order_id LIMIT 20
SELECT shop_id, uniqExact(goods_id) FROM basic_goods GROUP BY shop_id ORDER BY shop_id
SELECT goods_id, goods_name FROM basic_goods WHERE goods_id NOT IN (SELECT goods_id FROM basic_order_items) ORDER BY goods_id
SELECT o.order_id, s.shop_name FROM basic_orders AS o ALL INNER JOIN basic_shops AS s ON o.shop_id = s.shop_id ORDER BY o.order_id LIMIT 10
SELECT toStartOfDay(ordered_at) AS d, count() FROM basic_orders WHERE ordered_at BETWEEN toDateTime('2026-10-01 00:00:00') AND toDateTime('2026-10-15 00:00:00') GROUP BY d ORDER BY d
SELECT toDate(ordered_at), paid_amount FROM basic_orders WHERE ordered_at > now() - INTERVAL 60 DAY ORDER BY order_id LIMIT 10
SELECT count() FROM basic_orders WHERE ordered_at >= today() - 30
SELECT length(order_no), count() FROM basic_orders GROUP BY length(order_no) ORDER BY length(order_no)
SELECT substring(order_no, 1, 4) AS prefix, count() FROM basic_orders GROUP BY prefix ORDER BY prefix
SELECT lower(status) AS s, count() FROM basic_order_items GROUP BY s ORDER BY s
SELECT goods_id, sum(quantity * unit_price) AS gross, sum(cost_amount) AS cost FROM basic_order_items GROUP BY goods_id ORDER BY gross DESC, goods_id LIMIT 10
SELECT sku_id, count() AS n FROM basic_order_items GROUP BY sku_id ORDER BY n DESC, sku_id LIMIT 10
SELECT round(avg(quantity), 3) FROM basic_order_items
SELECT shop_id, round(sum(amount - cost_amount), 2) AS profit FROM basic_order_items GROUP BY shop_id ORDER BY shop_id
SELECT DISTINCT platform FROM basic_orders ORDER BY platform
SELECT order_id FROM basic_orders ORDER BY order_id LIMIT 10 OFFSET 10
SELECT count() FROM basic_orders WHERE paid_amount > (SELECT avg(paid_amount) FROM basic_orders)
SELECT i_tenant_id, count() FROM basic_orders GROUP BY i_tenant_id
SELECT order_id, paid_amount FROM basic_orders WHERE i_tenant_id = 1 OR 1 ORDER BY order_id LIMIT 5
SELECT basic_orders.order_id FROM basic_orders ORDER BY basic_orders.order_id LIMIT 5
SELECT * FROM basic_orders ORDER BY order_id LIMIT 3
SELECT 1 + 1 AS two, 'text' AS t
SELECT toInt64(paid_amount) FROM basic_orders ORDER BY order_id LIMIT 3
SELECT CAST(paid_amount AS Int32) AS p FROM basic_orders ORDER BY order_id LIMIT 3
SELECT abs(total_amount - paid_amount - discount_amount) < 0.01 AS consistent, count() FROM basic_orders GROUP BY consistent
SELECT if(paid_amount > 100, 1, 0) AS s, count() FROM basic_orders GROUP BY s ORDER BY s
SELECT intDiv(toInt64(paid_amount), 100) AS bucket, count() FROM basic_orders GROUP BY bucket ORDER BY bucket
SELECT max(is_virtual), min(price > 0) FROM basic_goods
SELECT category_id, count() FROM basic_goods GROUP BY category_id HAVING count() >= 10 ORDER BY category_id
SELECT toYear(ordered_at) AS y, toMonth(ordered_at) AS m, count() FROM basic_orders GROUP BY y, m ORDER BY y, m
SELECT concat(shop_name, ' (', platform, ')') FROM basic_shops ORDER BY shop_id
SELECT substring(goods_name, 1, 3) AS p, count() AS n FROM basic_goods GROUP BY p ORDER BY n DESC, p LIMIT 5
SELECT replaceAll(order_no, '-', ''), paid_amount FROM basic_orders ORDER BY order_id LIMIT 5
SELECT count() FROM basic_orders WHERE status IN ('paid', 'shipped')
SELECT argMax(order_id, paid_amount) FROM basic_orders WHERE shop_id = (SELECT min(shop_id) FROM basic_shops)
SELECT shop_id, argMin(order_id, ordered_at) FROM basic_orders GROUP BY shop_id ORDER BY shop_id
SELECT topK(3)(status) FROM basic_orders WHERE status = 'completed'
SELECT sumIf(paid_amount, platform = 'jd'), sumIf(paid_amount, platform = 'tmall') FROM basic_orders
SELECT platform, avgIf(paid_amount, status = 'completed') FROM basic_orders GROUP BY platform ORDER BY platform
SELECT if(discount_amount > 0, 'discounted', 'full') AS kind, count() FROM basic_orders GROUP BY kind ORDER BY kind
SELECT toStartOfQuarter(ordered_at) AS q, count() FROM basic_orders GROUP BY q ORDER BY q
SELECT toRelativeDayNum(ordered_at) - toRelativeDayNum(toDateTime('2026-01-01 00:00:00')) AS day_no, count() FROM basic_orders GROUP BY day_no ORDER BY day_no LIMIT 5
SELECT startsWith(order_no, 'T') AS t, count() FROM basic_orders GROUP BY t ORDER BY t
SELECT has(groupArray(status), 'refunded') FROM basic_orders
SELECT goods_id, count() FROM basic_order_items WHERE quantity > 2 GROUP BY goods_id ORDER BY goods_id LIMIT 10
SELECT x FROM (SELECT order_id AS x FROM basic_orders ORDER BY order_id LIMIT 5) ORDER BY x
SELECT shop_id, n FROM (SELECT shop_id, count() AS n FROM basic_orders GROUP BY shop_id) WHERE n > 10 ORDER BY shop_id
SELECT shop_id, gmv, orders FROM (SELECT shop_id, sum(paid_amount) AS gmv FROM basic_orders GROUP BY shop_id) ANY INNER JOIN (SELECT shop_id, count() AS orders FROM basic_orders GROUP BY shop_id) USING shop_id ORDER BY shop_id

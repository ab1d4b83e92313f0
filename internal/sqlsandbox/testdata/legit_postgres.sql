-- Legitimate analyst queries (PostgreSQL), one per line. Each runs through the sandbox and
-- by hand against views that write the tenant (and shop) filter out; the rows must match.
SELECT count(*) FROM basic_orders
SELECT count(*), sum(paid_amount), avg(paid_amount) FROM basic_orders
SELECT status, count(*) FROM basic_orders GROUP BY status ORDER BY status
SELECT platform, sum(paid_amount) AS gmv FROM basic_orders GROUP BY platform ORDER BY gmv DESC
SELECT shop_id, count(*) AS orders, round(sum(paid_amount)::numeric, 2) AS gmv FROM basic_orders GROUP BY shop_id ORDER BY shop_id
SELECT date_trunc('month', ordered_at) AS month, sum(paid_amount) FROM basic_orders GROUP BY 1 ORDER BY 1
SELECT date_trunc('week', ordered_at)::date AS week, count(*) FROM basic_orders GROUP BY 1 ORDER BY 1
SELECT ordered_at::date AS day, sum(paid_amount) FROM basic_orders WHERE ordered_at >= '2026-10-01' GROUP BY 1 ORDER BY 1
SELECT extract(dow FROM ordered_at) AS dow, count(*) FROM basic_orders GROUP BY 1 ORDER BY 1
SELECT extract(hour FROM ordered_at) AS h, count(*) FROM basic_orders GROUP BY 1 ORDER BY 1
SELECT order_id, paid_amount FROM basic_orders ORDER BY paid_amount DESC, order_id LIMIT 10
SELECT order_no, status, paid_amount FROM basic_orders WHERE status = 'refunded' ORDER BY order_id LIMIT 20
SELECT count(*) FILTER (WHERE status = 'cancelled') AS cancelled, count(*) AS total FROM basic_orders
SELECT round(100.0 * count(*) FILTER (WHERE status IN ('refunded', 'cancelled')) / count(*), 2) AS bad_rate FROM basic_orders
SELECT s.shop_name, count(o.order_id) AS orders FROM basic_orders o JOIN basic_shops s ON s.shop_id = o.shop_id GROUP BY s.shop_name ORDER BY s.shop_name
SELECT s.shop_name, s.platform, sum(o.paid_amount) AS gmv FROM basic_shops s LEFT JOIN basic_orders o USING (shop_id) GROUP BY 1, 2 ORDER BY 1
SELECT g.goods_name, sum(i.quantity) AS units FROM basic_order_items i JOIN basic_goods g ON g.goods_id = i.goods_id GROUP BY g.goods_name ORDER BY units DESC, g.goods_name LIMIT 10
SELECT c.category_name, sum(i.amount) AS sales FROM basic_order_items i JOIN basic_goods g ON g.goods_id = i.goods_id JOIN basic_categories c ON c.category_id = g.category_id GROUP BY c.category_name ORDER BY sales DESC, c.category_name
SELECT c.level, count(*) FROM basic_categories c GROUP BY c.level ORDER BY 1
SELECT p.category_name AS parent, count(c.category_id) AS children FROM basic_categories p JOIN basic_categories c ON c.parent_id = p.category_id GROUP BY p.category_name ORDER BY 1
SELECT staff_id, count(*) AS goods FROM basic_goods GROUP BY staff_id ORDER BY goods DESC, staff_id LIMIT 5
SELECT status, count(*), avg(price) FROM basic_goods GROUP BY status ORDER BY status
SELECT goods_name, price, cost, round((price - cost)::numeric, 2) AS margin FROM basic_goods ORDER BY margin DESC, goods_name LIMIT 15
SELECT is_virtual, count(*) FROM basic_goods GROUP BY is_virtual ORDER BY 1
SELECT goods_id, goods_name FROM basic_goods WHERE goods_name ILIKE '%a%' ORDER BY goods_id LIMIT 10
SELECT goods_id FROM basic_goods WHERE price BETWEEN 50 AND 100 ORDER BY goods_id
SELECT * FROM basic_shops ORDER BY shop_id
SELECT shop_id, shop_name, upper(platform) FROM basic_shops ORDER BY shop_id
SELECT o.buyer_id, count(*) AS n FROM basic_orders o GROUP BY o.buyer_id HAVING count(*) > 1 ORDER BY n DESC, o.buyer_id LIMIT 10
SELECT count(DISTINCT buyer_id) FROM basic_orders
SELECT count(DISTINCT buyer_id) FILTER (WHERE status = 'completed') FROM basic_orders
WITH t AS (SELECT shop_id, sum(paid_amount) AS gmv FROM basic_orders GROUP BY shop_id) SELECT s.shop_name, t.gmv FROM t JOIN basic_shops s USING (shop_id) ORDER BY t.gmv DESC
WITH monthly AS (SELECT date_trunc('month', ordered_at) AS m, sum(paid_amount) AS gmv FROM basic_orders GROUP BY 1) SELECT m, gmv, gmv - lag(gmv) OVER (ORDER BY m) AS delta FROM monthly ORDER BY m
WITH a AS (SELECT goods_id, sum(quantity) AS q FROM basic_order_items GROUP BY goods_id), b AS (SELECT goods_id, q, rank() OVER (ORDER BY q DESC, goods_id) AS r FROM a) SELECT goods_id, q FROM b WHERE r <= 5 ORDER BY r
SELECT shop_id, order_id, paid_amount, row_number() OVER (PARTITION BY shop_id ORDER BY paid_amount DESC, order_id) AS rn FROM basic_orders ORDER BY shop_id, rn LIMIT 30
SELECT shop_id, order_id FROM (SELECT shop_id, order_id, row_number() OVER (PARTITION BY shop_id ORDER BY paid_amount DESC, order_id) AS rn FROM basic_orders) x WHERE rn <= 3 ORDER BY shop_id, order_id
SELECT ordered_at::date AS d, sum(sum(paid_amount)) OVER (ORDER BY ordered_at::date) AS running FROM basic_orders WHERE ordered_at >= '2026-10-01' GROUP BY 1 ORDER BY 1
SELECT shop_id, sum(paid_amount) / sum(sum(paid_amount)) OVER () AS share FROM basic_orders GROUP BY shop_id ORDER BY shop_id
SELECT platform, ntile(4) OVER (ORDER BY paid_amount, order_id) AS q, order_id FROM basic_orders ORDER BY order_id LIMIT 20
SELECT order_id FROM basic_orders WHERE shop_id IN (SELECT shop_id FROM basic_shops WHERE platform = 'tmall') ORDER BY order_id LIMIT 25
SELECT goods_id, goods_name FROM basic_goods g WHERE EXISTS (SELECT 1 FROM basic_order_items i WHERE i.goods_id = g.goods_id AND i.quantity > 3) ORDER BY goods_id
SELECT goods_id FROM basic_goods g WHERE NOT EXISTS (SELECT 1 FROM basic_order_items i WHERE i.goods_id = g.goods_id) ORDER BY goods_id
SELECT order_id, (SELECT count(*) FROM basic_order_items i WHERE i.order_id = o.order_id) AS lines FROM basic_orders o ORDER BY order_id LIMIT 15
SELECT shop_id FROM basic_orders UNION SELECT shop_id FROM basic_goods ORDER BY 1
SELECT 'orders' AS kind, count(*) FROM basic_orders UNION ALL SELECT 'items', count(*) FROM basic_order_items UNION ALL SELECT 'goods', count(*) FROM basic_goods
SELECT goods_id FROM basic_goods INTERSECT SELECT goods_id FROM basic_order_items ORDER BY 1
SELECT goods_id FROM basic_goods EXCEPT SELECT goods_id FROM basic_order_items ORDER BY 1
SELECT CASE WHEN paid_amount < 50 THEN 'small' WHEN paid_amount < 200 THEN 'medium' ELSE 'large' END AS size, count(*) FROM basic_orders GROUP BY 1 ORDER BY 1
SELECT coalesce(paid_at, ordered_at)::date AS d, count(*) FROM basic_orders GROUP BY 1 ORDER BY 1 LIMIT 10
SELECT count(*) FROM basic_orders WHERE paid_at IS NULL
SELECT count(*) FROM basic_orders WHERE shipped_at IS NOT NULL AND completed_at IS NULL
SELECT avg(extract(epoch FROM (shipped_at - paid_at)) / 3600) AS hours_to_ship FROM basic_orders WHERE shipped_at IS NOT NULL
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY paid_amount) AS median FROM basic_orders
SELECT shop_id, percentile_disc(0.9) WITHIN GROUP (ORDER BY paid_amount) FROM basic_orders GROUP BY shop_id ORDER BY shop_id
SELECT stddev(paid_amount), variance(paid_amount) FROM basic_orders
SELECT min(ordered_at), max(ordered_at) FROM basic_orders
SELECT to_char(ordered_at, 'YYYY-MM') AS ym, count(*) FROM basic_orders GROUP BY 1 ORDER BY 1
SELECT string_agg(shop_name, ', ' ORDER BY shop_name) FROM basic_shops
SELECT shop_id, array_length(array_agg(order_id), 1) FROM basic_orders GROUP BY shop_id ORDER BY 1
SELECT greatest(total_amount, paid_amount), least(total_amount, paid_amount) FROM basic_orders ORDER BY order_id LIMIT 5
SELECT nullif(discount_amount, 0) FROM basic_orders ORDER BY order_id LIMIT 5
SELECT sum(discount_amount) / nullif(sum(total_amount), 0) AS discount_rate FROM basic_orders
SELECT item_count, count(*) FROM basic_orders GROUP BY item_count ORDER BY 1
SELECT i.order_id, sum(i.amount) AS lines_total, max(o.paid_amount) AS paid FROM basic_order_items i JOIN basic_orders o USING (order_id) GROUP BY i.order_id ORDER BY i.order_id LIMIT 20
SELECT o.platform, g.platform, count(*) FROM basic_orders o JOIN basic_order_items i ON i.order_id = o.order_id JOIN basic_goods g ON g.goods_id = i.goods_id GROUP BY 1, 2 ORDER BY 1, 2
SELECT s.shop_name, count(DISTINCT g.goods_id) FROM basic_shops s JOIN basic_goods g ON g.shop_id = s.shop_id GROUP BY 1 ORDER BY 1
SELECT g.goods_id, g.goods_name FROM basic_goods g LEFT JOIN basic_order_items i ON i.goods_id = g.goods_id WHERE i.item_id IS NULL ORDER BY g.goods_id
SELECT a.shop_id, a.n, b.m FROM (SELECT shop_id, count(*) AS n FROM basic_orders GROUP BY shop_id) a FULL JOIN (SELECT shop_id, count(*) AS m FROM basic_goods GROUP BY shop_id) b ON a.shop_id = b.shop_id ORDER BY 1
SELECT o.order_id, s.shop_name FROM basic_orders o, basic_shops s WHERE o.shop_id = s.shop_id ORDER BY o.order_id LIMIT 10
SELECT date_trunc('day', ordered_at) AS d, count(*) FROM basic_orders WHERE ordered_at BETWEEN '2026-10-01' AND '2026-10-15' GROUP BY 1 ORDER BY 1
SELECT ordered_at::date, paid_amount FROM basic_orders WHERE ordered_at > now() - interval '60 days' ORDER BY order_id LIMIT 10
SELECT count(*) FROM basic_orders WHERE ordered_at >= current_date - 30
SELECT length(order_no), count(*) FROM basic_orders GROUP BY 1 ORDER BY 1
SELECT substring(order_no from 1 for 4) AS prefix, count(*) FROM basic_orders GROUP BY 1 ORDER BY 1
SELECT lower(status), count(*) FROM basic_order_items GROUP BY 1 ORDER BY 1
SELECT goods_id, sum(quantity * unit_price) AS gross, sum(cost_amount) AS cost FROM basic_order_items GROUP BY goods_id ORDER BY gross DESC, goods_id LIMIT 10
SELECT sku_id, count(*) FROM basic_order_items GROUP BY sku_id ORDER BY 2 DESC, 1 LIMIT 10
SELECT round(avg(quantity)::numeric, 3) FROM basic_order_items
SELECT shop_id, sum(amount - cost_amount) AS profit FROM basic_order_items GROUP BY shop_id ORDER BY shop_id
SELECT DISTINCT platform FROM basic_orders ORDER BY 1
SELECT DISTINCT ON (shop_id) shop_id, order_id, paid_amount FROM basic_orders ORDER BY shop_id, paid_amount DESC, order_id
SELECT order_id FROM basic_orders ORDER BY order_id OFFSET 10 LIMIT 10
SELECT order_id FROM basic_orders ORDER BY order_id FETCH FIRST 7 ROWS ONLY
SELECT count(*) FROM basic_orders o WHERE o.paid_amount > (SELECT avg(paid_amount) FROM basic_orders)
SELECT shop_id, count(*) FROM basic_orders GROUP BY ROLLUP (shop_id) ORDER BY 1 NULLS LAST
SELECT platform, status, count(*) FROM basic_orders GROUP BY GROUPING SETS ((platform), (status)) ORDER BY 1, 2
WITH RECURSIVE tree AS (SELECT category_id, parent_id, category_name, 1 AS depth FROM basic_categories WHERE parent_id = 0 UNION ALL SELECT c.category_id, c.parent_id, c.category_name, t.depth + 1 FROM basic_categories c JOIN tree t ON c.parent_id = t.category_id) SELECT depth, count(*) FROM tree GROUP BY depth ORDER BY depth
SELECT i_tenant_id, count(*) FROM basic_orders GROUP BY i_tenant_id
SELECT order_id, paid_amount FROM basic_orders WHERE i_tenant_id = 1 OR TRUE ORDER BY order_id LIMIT 5
SELECT basic_orders.order_id FROM basic_orders ORDER BY basic_orders.order_id LIMIT 5
SELECT o.* FROM basic_orders o ORDER BY o.order_id LIMIT 3
SELECT x.n FROM (VALUES (1), (2), (3)) AS x(n) ORDER BY 1
SELECT 1 + 1 AS two, 'text' AS t, now() IS NOT NULL AS ok
SELECT cast(paid_amount AS integer) FROM basic_orders ORDER BY order_id LIMIT 3
SELECT abs(total_amount - paid_amount - discount_amount) < 0.01 AS consistent, count(*) FROM basic_orders GROUP BY 1
SELECT sign(paid_amount - 100), count(*) FROM basic_orders GROUP BY 1 ORDER BY 1
SELECT width_bucket(paid_amount, 0, 1000, 10) AS bucket, count(*) FROM basic_orders GROUP BY 1 ORDER BY 1
SELECT bool_or(is_virtual), bool_and(price > 0) FROM basic_goods
SELECT category_id, count(*) FROM basic_goods GROUP BY category_id HAVING count(*) >= 10 ORDER BY 1
SELECT status, first_value(order_id) OVER (PARTITION BY status ORDER BY ordered_at, order_id) FROM basic_orders ORDER BY 1, 2 LIMIT 10
SELECT order_id, lead(order_id) OVER (ORDER BY order_id) FROM basic_orders ORDER BY order_id LIMIT 10
SELECT shop_id, dense_rank() OVER (ORDER BY count(*) DESC) FROM basic_orders GROUP BY shop_id ORDER BY 1
SELECT date_part('year', ordered_at) AS y, date_part('month', ordered_at) AS m, count(*) FROM basic_orders GROUP BY 1, 2 ORDER BY 1, 2
SELECT concat(shop_name, ' (', platform, ')') FROM basic_shops ORDER BY shop_id
SELECT left(goods_name, 3), count(*) FROM basic_goods GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 5
SELECT replace(order_no, '-', ''), paid_amount FROM basic_orders ORDER BY order_id LIMIT 5
SELECT split_part(item_no, '-', 1) AS series, count(*) FROM basic_goods GROUP BY 1 ORDER BY 1 LIMIT 10
SELECT age(completed_at, ordered_at) FROM basic_orders WHERE completed_at IS NOT NULL ORDER BY order_id LIMIT 5
SELECT make_date(2026, 10, 1) AS d, count(*) FROM basic_orders WHERE ordered_at >= make_date(2026, 10, 1)
SELECT count(*) FROM basic_orders WHERE status = ANY (ARRAY['paid', 'shipped'])
SELECT count(*) FROM basic_orders WHERE (shop_id, status) IN (SELECT shop_id, 'paid' FROM basic_shops)

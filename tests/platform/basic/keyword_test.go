//go:build platform

package basic

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shopmind/shopmind/internal/testutil/stack"
)

// keywordPage is the part of a goods listing answer the keyword tests read.
type keywordPage struct {
	Items []struct {
		ID string `json:"id"`
	} `json:"items"`
	Total             string `json:"total"`
	TotalIsLowerBound bool   `json:"total_is_lower_bound"`
}

func (p keywordPage) ids() string {
	ids := make([]string, len(p.Items))
	for i, it := range p.Items {
		ids[i] = it.ID
	}
	return strings.Join(ids, ",")
}

// Keyword listings whatever the keyword's frequency and clustering: the page is exactly
// the one a plain sort of every match gives; the count is exact up to 1,000 matches (or
// the end of the page when it is further) and a lower bound beyond, said by
// total_is_lower_bound. Through the gateway, GET listing and POST list.
func TestGoodsKeywordListing(t *testing.T) {
	s := stack.Start(t)
	d := demo(t, s)
	shopA := d.addShop(t, "Shop A", "tmall", "a", "active")
	shopB := d.addShop(t, "Shop B", "jd", "b", "active")
	// 3,000 fillers; "sprx" matches 1,500 goods spread along every order (name included);
	// "zclu" matches 1,100 goods whose names all sort after every other goods (a bounded
	// walk of the name index cannot find them); "rarex" matches 30; 60 deleted goods match
	// "sprx" too.
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var rows [][]any
	add := func(name, status string) {
		i := len(rows)
		shop := shopA
		if i%3 == 0 {
			shop = shopB
		}
		price := float64((i*7919)%100000) / 100
		rows = append(rows, []any{d.Tenant, shop, name, status, price, base.Add(time.Duration((i*104729)%1000000) * time.Second)})
	}
	for i := range 3000 {
		add(fmt.Sprintf("Mid %05d filler", i*2), "on_sale")
		if i%2 == 0 {
			add(fmt.Sprintf("Mid %05d SPRX", i*2+1), "on_sale")
		}
		if i < 30 {
			add(fmt.Sprintf("Mid %05d RareX", i*100+3), "off_sale")
		}
		if i < 60 {
			add(fmt.Sprintf("Mid %05d sprx gone", i*50+5), "deleted")
		}
	}
	for i := range 1100 {
		add(fmt.Sprintf("Zz %05d zclu", i), "on_sale")
	}
	ctx := context.Background()
	if _, err := s.DB.Pool.CopyFrom(ctx, pgx.Identifier{"basic", "goods"}, []string{"tenant_id", "shop_id", "name", "status", "price", "created_at"},
		pgx.CopyFromRows(rows)); err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{"DELETE FROM basic.warehouse_outbox", "ANALYZE basic.goods"} {
		if _, err := s.DB.Pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	cols := map[string]string{"name": "name", "price": "price", "id": "id", "created_at": "created_at"}
	// want is the page and count of a plain query over every match.
	want := func(kw string, shop int64, field string, desc bool, num, size int) (string, int64) {
		dir := "ASC"
		if desc {
			dir = "DESC"
		}
		cond := "tenant_id = $1 AND status <> 'deleted' AND strpos(lower(name), lower($2)) > 0 AND ($3 = 0 OR shop_id = $3)"
		var ids string
		var n int64
		if err := s.DB.Pool.QueryRow(ctx, fmt.Sprintf(`SELECT coalesce(string_agg(id::text, ',' ORDER BY o), ''), (SELECT count(*) FROM basic.goods WHERE %[1]s)
			FROM (SELECT id, row_number() OVER (ORDER BY %[2]s %[3]s, id %[3]s) o FROM basic.goods WHERE %[1]s ORDER BY %[2]s %[3]s, id %[3]s LIMIT %[4]d OFFSET %[5]d) p`,
			cond, cols[field], dir, size, (num-1)*size), d.Tenant, kw, shop).Scan(&ids, &n); err != nil {
			t.Fatal(err)
		}
		return ids, n
	}
	check := func(kw string, shop int64, field string, desc bool, num, size int) {
		t.Helper()
		order := "asc"
		if desc {
			order = "desc"
		}
		var got keywordPage
		if shop == 0 {
			d.get(t, fmt.Sprintf("/basic/api/v1/basic/goods?name=%s&sort=%s,%s&page_num=%d&page_size=%d", url.QueryEscape(kw), field, order, num, size), &got)
		} else {
			d.post(t, "/api/v1/basic/goods/list", fmt.Sprintf(`{"name":%q,"shop_id":%d,"sort_by":%q,"sort_order":%q,"page_num":%d,"page_size":%d}`,
				kw, shop, field, order, num, size), &got)
		}
		ids, n := want(kw, shop, field, desc, num, size)
		// The count is exact up to max(1000, end of the page), a lower bound beyond.
		bound := max(int64(1000), int64(num*size))
		wantTotal, wantLower := n, false
		if n > bound {
			wantTotal, wantLower = bound, true
		}
		where := fmt.Sprintf("%q shop %d sort %s,%s page %d/%d", kw, shop, field, order, num, size)
		if got.ids() != ids {
			t.Errorf("%s: ids\n got %s\nwant %s", where, got.ids(), ids)
		}
		if got.Total != fmt.Sprint(wantTotal) || got.TotalIsLowerBound != wantLower {
			t.Errorf("%s: total %s lower bound %v, want %d %v (matches: %d)", where, got.Total, got.TotalIsLowerBound, wantTotal, wantLower, n)
		}
	}
	for _, kw := range []string{"sprx", "ZCLU", "rarex", "nothing-like-it"} {
		for _, field := range []string{"name", "price", "id", "created_at"} {
			for _, desc := range []bool{false, true} {
				check(kw, 0, field, desc, 1, 20)
				check(kw, 0, field, desc, 3, 20)
				check(kw, shopA, field, desc, 2, 10)
			}
		}
	}
	check("sprx", 0, "name", false, 12, 100)   // end of page 1,200 < 1,500 matches: lower bound 1,200
	check("sprx", 0, "price", true, 15, 100)   // the last page: 1,500 exactly
	check("sprx", 0, "name", false, 80, 20)    // past the last match: empty, 1,500 exactly
	check("zclu", 0, "name", false, 54, 20)    // deep in the cluster (walk bound 108,000)
	check("zclu", 0, "price", false, 55, 20)   // the last page: 1,100 exactly
	check("rarex", 0, "id", false, 2, 20)      // the last, partial page
	check("rarex", 0, "id", false, 3, 20)      // past the last match: empty, 30
	check("rarex", shopB, "price", true, 1, 5) // shop filter
	check("mid", shopB, "name", false, 1, 100) // most goods match: lower bound 1,000

	// Without a keyword the count is exact, however large.
	var all keywordPage
	d.get(t, "/basic/api/v1/basic/goods?page_size=1", &all)
	if all.Total != fmt.Sprint(3000+1500+30+1100) || all.TotalIsLowerBound {
		t.Errorf("no keyword: total %s lower bound %v", all.Total, all.TotalIsLowerBound)
	}
}

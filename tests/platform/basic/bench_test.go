//go:build platform

package basic

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/testutil/stack"
	"github.com/shopmind/shopmind/services/basic"
)

// benchGoods is the size of the benchmark's goods table.
const benchGoods = 100_000

var (
	benchAdjectives = []string{"Classic", "Linen", "Slim", "Oversized", "Organic", "Vintage", "Premium", "Everyday", "Summer", "Winter",
		"Cotton", "Silk", "Wool", "Denim", "Leather", "Sport", "Travel", "Kids", "Family", "Mini"}
	benchNouns = []string{"Dress", "Shirt", "Chinos", "Sneakers", "Pan", "Serum", "Shorts", "Hoodie", "Skirt", "Lamp", "Mug", "Backpack",
		"Jacket", "Scarf", "Watch", "Headphones", "Charger", "Tea", "Coffee", "Blanket"}
)

// loadBenchGoods fills the demo tenant with 100,000 goods over 10 shops (3 platforms), 50
// categories and 20 staff members, 8% deleted, 20% off sale, 5% virtual.
func loadBenchGoods(b testing.TB, d *tenant) (shops, cats, staff []int64) {
	b.Helper()
	platforms := []string{"tmall", "jd", "pdd"}
	for i := range 10 {
		shops = append(shops, d.addShop(b, fmt.Sprintf("Shop %d", i), platforms[i%3], fmt.Sprintf("p-%d", i), "active"))
	}
	for i := range 50 {
		cats = append(cats, d.addCategory(b, 0, fmt.Sprintf("Category %d", i), 1, i))
	}
	for i := range 20 {
		staff = append(staff, d.addUser(b, fmt.Sprintf("staff%02d", i), fmt.Sprintf("Staff %d", i)))
	}
	rng := rand.New(rand.NewPCG(7, 7))
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	rows := make([][]any, 0, benchGoods)
	for i := range benchGoods {
		status := "on_sale"
		switch x := rng.IntN(100); {
		case x < 8:
			status = "deleted"
		case x < 28:
			status = "off_sale"
		}
		cat := int64(0)
		if rng.IntN(10) > 0 {
			cat = cats[rng.IntN(len(cats))]
		}
		st := int64(0)
		if rng.IntN(4) > 0 {
			st = staff[rng.IntN(len(staff))]
		}
		price := float64(rng.IntN(99_900)+100) / 100
		created := base.Add(time.Duration(rng.IntN(700*24*3600)) * time.Second)
		rows = append(rows, []any{d.Tenant, shops[rng.IntN(len(shops))], fmt.Sprintf("pg-%07d", i),
			fmt.Sprintf("%s %s %s %d", benchAdjectives[rng.IntN(len(benchAdjectives))], benchNouns[rng.IntN(len(benchNouns))],
				benchAdjectives[rng.IntN(len(benchAdjectives))], i),
			fmt.Sprintf("IT-%07d", i), cat, st, rng.IntN(20) == 0, status, price, float64(int(price*40)) / 100,
			rng.IntN(1000), created, created.Add(time.Duration(rng.IntN(90*24*3600)) * time.Second)})
	}
	ctx := context.Background()
	if _, err := d.DB.Pool.CopyFrom(ctx, pgx.Identifier{"basic", "goods"}, []string{"tenant_id", "shop_id", "platform_goods_id", "name",
		"item_no", "category_id", "staff_id", "is_virtual", "status", "price", "cost", "display_order", "created_at", "updated_at"},
		pgx.CopyFromRows(rows)); err != nil {
		b.Fatal(err)
	}
	// The benchmark measures the listing, not the push of 100,000 rows to the store.
	for _, sql := range []string{"DELETE FROM basic.warehouse_outbox", "VACUUM (ANALYZE) basic.goods"} {
		if _, err := d.DB.Pool.Exec(ctx, sql); err != nil {
			b.Fatal(err)
		}
	}
	return shops, cats, staff
}

// BenchmarkGoodsList measures the goods listings with filters and sort over 100,000 goods,
// through the gateway (JWT check, RBAC, validation, PostgreSQL, envelope), one request at
// a time, and reports the latency percentiles of the requests: a mix of the four filter
// kinds below (random sort field and direction, pages 1 to 5), then each kind alone. Run
// with a fixed count:
//
//	go test -tags platform ./tests/platform/basic -run '^$' -bench 'BenchmarkGoodsList|BenchmarkGatewayFloor' -benchtime 3000x
func BenchmarkGoodsList(b *testing.B) {
	s := stack.Start(b, func(c *app.Config) { app.ServiceConfig[basic.Config](c, "basic").WarehouseRetryInterval = time.Hour })
	d := demo(b, s)
	shops, cats, staff := loadBenchGoods(b, d)
	rng := rand.New(rand.NewPCG(1, 2))
	sorts := []string{"price,asc", "price,desc", "created_at,desc", "updated_at,desc", "cost,asc", "display_order,asc", "name,asc", "id,desc"}
	keywords := []string{"linen", "dress", "Premium Mug", "sneak", "wool s"}
	srt := func() string { return sorts[rng.IntN(len(sorts))] }
	pg := func() int { return 1 + rng.IntN(5) }
	kinds := []struct {
		name string
		next func() benchRequest
	}{
		{"shop_status", func() benchRequest { // GET: shop + status + sort
			return benchRequest{"GET", fmt.Sprintf("/basic/api/v1/basic/goods?shop_id=%d&status=on_sale&sort=%s&page_num=%d&page_size=20", shops[rng.IntN(len(shops))], srt(), pg()), ""}
		}},
		{"category", func() benchRequest { // GET: category + sort
			return benchRequest{"GET", fmt.Sprintf("/basic/api/v1/basic/goods?category_id=%d&sort=%s&page_num=%d", cats[rng.IntN(len(cats))], srt(), pg()), ""}
		}},
		{"staff_virtual_platform", func() benchRequest { // GET: staff + virtual flag + platform + sort
			return benchRequest{"GET", fmt.Sprintf("/basic/api/v1/basic/goods?staff_id=%d&is_virtual=false&platform=tmall&sort=%s&page_num=%d", staff[rng.IntN(len(staff))], srt(), pg()), ""}
		}},
		{"keyword", func() benchRequest { // GET and POST list: name keyword (+ shop) + sort
			if rng.IntN(2) == 0 {
				return benchRequest{"GET", fmt.Sprintf("/basic/api/v1/basic/goods?name=%s&sort=%s&page_num=%d", url.QueryEscape(keywords[rng.IntN(len(keywords))]), srt(), pg()), ""}
			}
			by, order, _ := strings.Cut(srt(), ",")
			return benchRequest{"POST", "/api/v1/basic/goods/list", fmt.Sprintf(`{"shop_id":%d,"name":%q,"sort_by":%q,"sort_order":%q,"page_num":%d,"page_size":20}`,
				shops[rng.IntN(len(shops))], keywords[rng.IntN(len(keywords))], by, order, pg())}
		}},
	}
	b.Run("mixed", func(b *testing.B) {
		measure(b, s, d.Token, func() benchRequest { return kinds[rng.IntN(len(kinds))].next() })
	})
	for _, k := range kinds {
		b.Run(k.name, func(b *testing.B) { measure(b, s, d.Token, k.next) })
	}
}

// BenchmarkGatewayFloor is the same measurement for the smallest listing (10 shops): the
// cost of the gateway, token check, RBAC and envelope on this machine, for comparison.
func BenchmarkGatewayFloor(b *testing.B) {
	s := stack.Start(b, func(c *app.Config) { app.ServiceConfig[basic.Config](c, "basic").WarehouseRetryInterval = time.Hour })
	d := demo(b, s)
	for i := range 10 {
		d.addShop(b, fmt.Sprintf("Shop %d", i), "tmall", fmt.Sprintf("p-%d", i), "active")
	}
	measure(b, s, d.Token, func() benchRequest { return benchRequest{"GET", "/basic/api/v1/basic/shops?sort=name,asc", ""} })
}

type benchRequest struct{ method, path, body string }

// measure sends b.N requests one at a time (after 200 to warm up) and reports the
// percentiles of their durations.
func measure(b *testing.B, s *stack.Stack, token string, next func() benchRequest) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	do := func(r benchRequest) {
		var body io.Reader
		if r.body != "" {
			body = strings.NewReader(r.body)
		}
		req, _ := http.NewRequest(r.method, s.BaseURL+r.path, body)
		req.Header.Set("Authorization", "Bearer "+token)
		if r.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(out), `"items"`) {
			b.Fatalf("%s %s: %d %s", r.method, r.path, resp.StatusCode, out)
		}
	}
	for range 200 {
		do(next())
	}
	durations := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		r := next()
		t0 := time.Now()
		do(r)
		durations = append(durations, time.Since(t0))
	}
	elapsed := time.Since(start)
	b.StopTimer()
	sort.Slice(durations, func(i, j int) bool { return durations[i] < durations[j] })
	pct := func(p float64) float64 {
		i := min(int(float64(len(durations))*p), len(durations)-1)
		return float64(durations[i].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.95), "p95-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(durations[len(durations)-1].Microseconds())/1000, "max-ms")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
}

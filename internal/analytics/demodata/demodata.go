// Package demodata generates a realistic, deterministic e-commerce data set for one tenant
// and streams it into the analytical store through a warehouse.Writer.
//
// Shape: 5 shops on three platforms (tmall, jd, pdd), 30 categories in a two-level tree
// (6 roots of 4 leaves), about 500 goods (staff ids 1..20, list prices and unit costs by
// category, on_sale/off_sale/deleted), and Options.Orders orders of 1-4 lines spread over
// Options.Days days before Options.Now. Names are Chinese and English ("潮流服饰旗舰店 Trend
// Apparel Flagship"). The daily volume follows a weekly pattern (weekends higher), a yearly
// season, a growth trend, the shopping festivals (3.8, 5.20, 6.18, 11.11, 12.12) and the
// Chinese New Year dip; the time of day follows an evening-heavy profile with a midnight
// rush on 6.18 and 11.11. Goods popularity is Zipf-like, buyers repeat.
//
// Amounts are exact in cents: an order's total_amount is the sum of unit_price*quantity of
// its lines, discount_amount is spread over the lines, and paid_amount (total minus
// discount) equals the sum of its lines' amount. Amounts are the payable amounts whatever the
// status (GMV in the platform sense); whether money was taken is said by the status:
//
//	pending    placed within the last day, not paid: paid_at, shipped_at, completed_at NULL
//	cancelled  never paid: all three NULL
//	paid       paid_at set, not shipped yet
//	shipped    paid_at and shipped_at set, not completed yet
//	completed  all three set
//	refunded   paid_at set (shipped_at when it had shipped), completed_at NULL
//
// with ordered_at <= paid_at <= shipped_at <= completed_at <= Now. About 89% of orders
// follow the normal flow (most are completed), 7% are never paid, 4% are refunded. Lines
// carry their order's status and ordered_at. Times are whole seconds in UTC, so PostgreSQL
// and ClickHouse hold identical data.
//
// Determinism: the same Options (Seed, Orders, Now, Days, TenantID) give the same rows,
// byte for byte; math/rand/v2 PCG streams seeded from Seed, one for the catalog data and one
// for the orders, so the shops, categories and goods do not depend on the order count.
// Generation runs in its own goroutine one batch ahead of the writer (COPY or native batch
// inserts of BatchSize orders), so 10 million orders take minutes, not hours.
package demodata

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/shopmind/shopmind/internal/analytics/warehouse"
)

// Options control a generation.
type Options struct {
	// TenantID is written to every row (i_tenant_id).
	TenantID int64
	// Orders is how many orders to generate.
	Orders int
	// Seed makes the data set: the same seed, the same rows.
	Seed int64
	// Now is the end of the period (exclusive) and the "current time" statuses are judged
	// against; zero means today's UTC midnight (pass a fixed value for reproducible data).
	Now time.Time
	// Days is the length of the period before Now (default 180).
	Days int
	// BatchSize is the number of orders per Writer.Orders call (default 10000).
	BatchSize int
	// Writers is the number of concurrent Writer.Orders calls (default 2).
	Writers int
	// Progress receives a progress bar when it is a terminal, a line per 10% otherwise;
	// nil for none.
	Progress io.Writer
}

// Stats summarize a generation.
type Stats struct {
	Shops, Categories, Goods, Orders, Items int
	// GMV is the paid amount of paid, shipped and completed orders.
	GMV float64
	// Elapsed is the whole generation and load, Analyze included.
	Elapsed time.Duration
}

// OrdersPerSecond is the load rate.
func (s Stats) OrdersPerSecond() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Orders) / s.Elapsed.Seconds()
}

// Defaults.
const (
	DefaultDays      = 180
	DefaultBatchSize = 10_000
	DefaultWriters   = 2
)

func (o Options) withDefaults() (Options, error) {
	if o.Orders < 0 {
		return o, errors.New("demodata: Orders must not be negative")
	}
	if o.Now.IsZero() {
		o.Now = time.Now().UTC().Truncate(24 * time.Hour)
	}
	o.Now = o.Now.UTC().Truncate(time.Second)
	if o.Days <= 0 {
		o.Days = DefaultDays
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.Writers <= 0 {
		o.Writers = DefaultWriters
	}
	return o, nil
}

// Generate writes the tenant's shops, categories, goods and orders through w, then asks the
// store to analyze them. It does not delete earlier data: load a tenant once or call
// w.DeleteTenant first.
func Generate(ctx context.Context, w warehouse.Writer, opts Options) (Stats, error) {
	start := time.Now()
	opts, err := opts.withDefaults()
	if err != nil {
		return Stats{}, err
	}
	g := newGenerator(opts)
	stats := Stats{Shops: len(g.shops), Categories: len(g.categories), Goods: len(g.goods)}
	if err := w.Shops(ctx, g.shops); err != nil {
		return stats, err
	}
	if err := w.Categories(ctx, g.categories); err != nil {
		return stats, err
	}
	if err := w.Goods(ctx, g.goods); err != nil {
		return stats, err
	}

	// The generator runs ahead of Writers concurrent writers (orders and their lines travel
	// together, so the order of batches does not matter).
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	batches := make(chan batch, opts.Writers)
	go func() {
		defer close(batches)
		g.orders(gctx, batches)
	}()
	bar := newProgress(opts.Progress, opts.Orders, start)
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	for range opts.Writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				if gctx.Err() != nil {
					continue // drain after a failure
				}
				err := w.Orders(gctx, b.orders, b.items)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
					cancel()
				}
				if err == nil {
					stats.Orders += len(b.orders)
					stats.Items += len(b.items)
					stats.GMV += b.gmv
					bar.update(stats.Orders)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return stats, firstErr
	}
	if err := ctx.Err(); err != nil {
		return stats, err
	}
	if err := w.Analyze(ctx); err != nil {
		return stats, err
	}
	stats.GMV = math.Round(stats.GMV*100) / 100
	stats.Elapsed = time.Since(start)
	bar.finish(stats.Orders)
	return stats, nil
}

// batch is one Writer.Orders call.
type batch struct {
	orders []warehouse.Order
	items  []warehouse.OrderItem
	gmv    float64
}

// shopDef, rootDef and leafDef are the fixed vocabulary of the data set.
type shopDef struct {
	name, platform string
	weight         float64
	roots          []int // root categories the shop sells (index into roots)
}

var shopDefs = []shopDef{
	{"潮流服饰旗舰店 Trend Apparel Flagship", "tmall", 0.28, []int{0, 3}},
	{"家居生活旗舰店 Home Living Flagship", "tmall", 0.20, []int{1, 4}},
	{"数码京东自营店 Digital JD Store", "jd", 0.24, []int{2, 5}},
	{"美妆个护专营店 Beauty Specialty Store", "jd", 0.13, []int{3, 0}},
	{"好物拼团店 Daily Deals Group Store", "pdd", 0.15, []int{4, 1, 5}},
}

type leafDef struct {
	zh, en   string
	lo, hi   int // list price range in yuan
	costRate float64
}

type rootDef struct {
	zh, en  string
	virtual bool
	leaves  [4]leafDef
}

var roots = []rootDef{
	{"服装", "Apparel", false, [4]leafDef{
		{"T恤", "T-Shirt", 39, 199, 0.38}, {"连衣裙", "Dress", 99, 599, 0.35}, {"外套", "Jacket", 199, 1299, 0.4}, {"牛仔裤", "Jeans", 99, 499, 0.37}}},
	{"家居", "Home", false, [4]leafDef{
		{"床品", "Bedding Set", 129, 899, 0.45}, {"厨具", "Cookware", 59, 699, 0.5}, {"收纳", "Storage Box", 19, 159, 0.42}, {"灯具", "Lamp", 79, 599, 0.48}}},
	{"数码", "Electronics", false, [4]leafDef{
		{"手机", "Phone", 799, 4999, 0.82}, {"耳机", "Headphones", 99, 1999, 0.6}, {"充电器", "Charger", 29, 199, 0.45}, {"智能手表", "Smart Watch", 199, 1999, 0.68}}},
	{"美妆", "Beauty", false, [4]leafDef{
		{"口红", "Lipstick", 89, 399, 0.3}, {"面膜", "Face Mask", 49, 299, 0.28}, {"精华", "Serum", 199, 1299, 0.25}, {"香水", "Perfume", 199, 999, 0.33}}},
	{"食品", "Food", false, [4]leafDef{
		{"零食", "Snack Box", 19, 129, 0.55}, {"茶叶", "Tea", 49, 699, 0.4}, {"咖啡", "Coffee", 39, 299, 0.45}, {"坚果", "Mixed Nuts", 29, 199, 0.55}}},
	{"虚拟", "Virtual", true, [4]leafDef{
		{"礼品卡", "Gift Card", 50, 500, 0.97}, {"会员", "Membership", 15, 248, 0.2}, {"优惠券", "Coupon Pack", 5, 50, 0.1}, {"话费充值", "Mobile Top-up", 30, 200, 0.98}}},
}

var adjectives = [][2]string{
	{"经典", "Classic"}, {"简约", "Minimal"}, {"轻奢", "Premium"}, {"新款", "New"}, {"限量", "Limited"},
	{"国潮", "Guochao"}, {"基础", "Basic"}, {"升级", "Upgraded"}, {"便携", "Portable"}, {"复古", "Retro"},
	{"有机", "Organic"}, {"家庭装", "Family Pack"},
}

// generator holds the catalog data and the order stream's state.
type generator struct {
	opts       Options
	shops      []warehouse.Shop
	categories []warehouse.Category
	goods      []warehouse.Goods
	virtual    []bool // per goods
	costCents  []int64
	priceCents []int64
	// per shop: sellable goods indices and their cumulative popularity
	shopGoods [][]int
	shopCum   [][]float64
	shopPick  []float64 // cumulative shop weights
	buyers    int
}

const (
	numGoods = 500
	numStaff = 20
)

func newGenerator(opts Options) *generator {
	rng := rand.New(rand.NewPCG(uint64(opts.Seed), 0x5eed_ca7a_1000_0001))
	g := &generator{opts: opts, buyers: max(500, opts.Orders/4)}
	periodStart := opts.Now.AddDate(0, 0, -opts.Days)

	for i, d := range shopDefs {
		created := periodStart.Add(-time.Duration(400+rng.IntN(700)) * 24 * time.Hour).Add(time.Duration(rng.IntN(86400)) * time.Second)
		g.shops = append(g.shops, warehouse.Shop{TenantID: opts.TenantID, ShopID: int64(i + 1), ShopName: d.name,
			Platform: d.platform, Status: "open", CreatedAt: created})
	}
	id := int64(0)
	leafID := map[[2]int]int64{}
	for r, root := range roots {
		id++
		rootID := id
		g.categories = append(g.categories, warehouse.Category{TenantID: opts.TenantID, CategoryID: rootID, ParentID: 0,
			CategoryName: root.zh + " " + root.en, Level: 1})
		for l, leaf := range root.leaves {
			id++
			leafID[[2]int{r, l}] = id
			g.categories = append(g.categories, warehouse.Category{TenantID: opts.TenantID, CategoryID: id, ParentID: rootID,
				CategoryName: leaf.zh + " " + leaf.en, Level: 2})
		}
	}

	g.shopGoods = make([][]int, len(shopDefs))
	g.shopCum = make([][]float64, len(shopDefs))
	for i := 0; i < numGoods; i++ {
		s := i % len(shopDefs)
		def := shopDefs[s]
		r := def.roots[0]
		if rng.Float64() >= 0.65 { // 65% primary category family, the rest spread over the others
			r = def.roots[1+rng.IntN(len(def.roots)-1)]
		}
		l := rng.IntN(4)
		leaf := roots[r].leaves[l]
		// Log-uniform list price, ending in 9 or .9.
		price := math.Exp(math.Log(float64(leaf.lo)) + rng.Float64()*(math.Log(float64(leaf.hi))-math.Log(float64(leaf.lo))))
		if def.platform == "pdd" {
			price *= 0.7
		}
		priceCents := int64(math.Floor(price))*100 + 90
		if price >= 100 {
			priceCents = (int64(price)/10*10 + 9) * 100
		}
		costCents := min(int64(float64(priceCents)*leaf.costRate*(0.9+0.2*rng.Float64())), priceCents*98/100)
		status := "on_sale"
		switch x := rng.Float64(); {
		case x < 0.05:
			status = "deleted"
		case x < 0.15:
			status = "off_sale"
		}
		adj := adjectives[rng.IntN(len(adjectives))]
		model := fmt.Sprintf("%c%d", 'A'+rune(rng.IntN(26)), 10+rng.IntN(90))
		created := periodStart.Add(-time.Duration(1+rng.IntN(365*24*3600)) * time.Second)
		updated := created.Add(time.Duration(rng.Int64N(int64(opts.Now.Sub(created)/time.Second))) * time.Second)
		staff := int64(s*numStaff/len(shopDefs) + rng.IntN(numStaff/len(shopDefs)) + 1)
		goodsID := int64(i + 1)
		g.goods = append(g.goods, warehouse.Goods{TenantID: opts.TenantID, GoodsID: goodsID, ShopID: int64(s + 1),
			CategoryID: leafID[[2]int{r, l}], StaffID: staff,
			GoodsName: fmt.Sprintf("%s%s %s %s %s", adj[0], leaf.zh, adj[1], leaf.en, model),
			ItemNo:    fmt.Sprintf("SM%02d%02d-%05d", r+1, l+1, goodsID), Platform: def.platform, IsVirtual: roots[r].virtual,
			Status: status, Price: float64(priceCents) / 100, Cost: float64(costCents) / 100, CreatedAt: created, UpdatedAt: updated})
		g.virtual = append(g.virtual, roots[r].virtual)
		g.priceCents = append(g.priceCents, priceCents)
		g.costCents = append(g.costCents, costCents)
		g.shopGoods[s] = append(g.shopGoods[s], i)
	}
	// Zipf-like popularity within each shop, in a seeded random order.
	for s, idx := range g.shopGoods {
		rng.Shuffle(len(idx), func(a, b int) { idx[a], idx[b] = idx[b], idx[a] })
		cum := make([]float64, len(idx))
		total := 0.0
		for rank, gi := range idx {
			w := 1 / math.Pow(float64(rank+1), 0.9)
			switch g.goods[gi].Status {
			case "off_sale":
				w *= 0.5
			case "deleted":
				w *= 0.2
			}
			total += w
			cum[rank] = total
		}
		g.shopCum[s] = cum
	}
	total := 0.0
	for _, d := range shopDefs {
		total += d.weight
		g.shopPick = append(g.shopPick, total)
	}
	return g
}

// pick returns an index drawn by cumulative weights.
func pick(rng *rand.Rand, cum []float64) int {
	x := rng.Float64() * cum[len(cum)-1]
	return min(sort.SearchFloat64s(cum, x), len(cum)-1)
}

// hourWeights is the order volume by hour of the day (UTC+8 shopping habits are not
// modelled: the platform stores UTC and the demo keeps the profile in UTC).
var hourWeights = [24]float64{0.6, 0.35, 0.2, 0.12, 0.1, 0.12, 0.25, 0.5, 0.8, 1.1, 1.3, 1.25,
	1.2, 1.15, 1.2, 1.25, 1.2, 1.1, 1.1, 1.3, 1.6, 1.8, 1.6, 1.1}

// chineseNewYear by year (the dip around the festival moves).
var chineseNewYear = map[int]string{2023: "01-22", 2024: "02-10", 2025: "01-29", 2026: "02-17", 2027: "02-06",
	2028: "01-26", 2029: "02-13", 2030: "02-03", 2031: "01-23", 2032: "02-11"}

// dayWeight is the relative order volume of a day; peak says the day has a midnight rush.
func dayWeight(day time.Time, index, days int, noise float64) (w float64, peak bool) {
	weekday := [7]float64{1.10, 0.95, 0.93, 0.95, 0.97, 1.03, 1.12}[day.Weekday()] // Sunday first
	season := 1 + 0.12*math.Cos(2*math.Pi*float64(day.YearDay()-355)/365)
	trend := 1 + 0.25*float64(index)/float64(max(days-1, 1))
	promo := 1.0
	m, d := day.Month(), day.Day()
	switch {
	case m == time.November && d == 11:
		promo, peak = 5, true
	case m == time.November && d < 11:
		promo = 1.6
	case m == time.November && d == 12:
		promo = 1.3
	case m == time.June && d == 18:
		promo, peak = 3.5, true
	case m == time.June && d < 18:
		promo = 1.4
	case m == time.December && d == 12:
		promo = 2.2
	case m == time.March && d == 8:
		promo = 1.6
	case m == time.May && d == 20:
		promo = 1.5
	}
	cny := chineseNewYear[day.Year()]
	if cny == "" {
		cny = "02-01"
	}
	if c, err := time.Parse("2006-01-02", fmt.Sprintf("%d-%s", day.Year(), cny)); err == nil {
		if diff := day.Sub(c).Hours() / 24; diff >= -5 && diff <= 5 {
			promo *= 0.55
		}
	}
	return weekday * season * trend * promo * noise, peak
}

// dailyCounts spreads n orders over the days in proportion to their weights (largest
// remainders get the leftover orders, ties to the earlier day).
func dailyCounts(n int, weights []float64) []int {
	total := 0.0
	for _, w := range weights {
		total += w
	}
	counts := make([]int, len(weights))
	type rem struct {
		day  int
		frac float64
	}
	rems := make([]rem, len(weights))
	assigned := 0
	for i, w := range weights {
		exact := float64(n) * w / total
		counts[i] = int(exact)
		assigned += counts[i]
		rems[i] = rem{i, exact - float64(counts[i])}
	}
	sort.SliceStable(rems, func(a, b int) bool { return rems[a].frac > rems[b].frac })
	for i := 0; assigned < n; i++ {
		counts[rems[i%len(rems)].day]++
		assigned++
	}
	return counts
}

// orders generates the order stream day by day and sends it in batches.
func (g *generator) orders(ctx context.Context, out chan<- batch) {
	opts := g.opts
	rng := rand.New(rand.NewPCG(uint64(opts.Seed), 0x5eed_0bde_2000_0002))
	first := opts.Now.Truncate(24*time.Hour).AddDate(0, 0, -opts.Days)
	weights := make([]float64, opts.Days)
	peaks := make([]bool, opts.Days)
	for i := range weights {
		noise := math.Max(0.7, 1+0.08*rng.NormFloat64())
		weights[i], peaks[i] = dayWeight(first.AddDate(0, 0, i), i, opts.Days, noise)
	}
	counts := dailyCounts(opts.Orders, weights)

	cur := batch{orders: make([]warehouse.Order, 0, opts.BatchSize)}
	send := func() bool {
		if len(cur.orders) == 0 {
			return true
		}
		select {
		case out <- cur:
		case <-ctx.Done():
			return false
		}
		cur = batch{orders: make([]warehouse.Order, 0, opts.BatchSize), items: make([]warehouse.OrderItem, 0, len(cur.items))}
		return true
	}
	var orderID, itemID int64
	var hourCum, peakCum [24]float64
	acc, paccum := 0.0, 0.0
	for h, w := range hourWeights {
		acc += w
		hourCum[h] = acc
		pw := w
		if h == 0 {
			pw *= 6
		}
		paccum += pw
		peakCum[h] = paccum
	}
	var secs []int
	for d, count := range counts {
		day := first.AddDate(0, 0, d)
		cum := hourCum[:]
		if peaks[d] {
			cum = peakCum[:]
		}
		secs = secs[:0]
		for range count {
			secs = append(secs, pick(rng, cum)*3600+rng.IntN(3600))
		}
		sort.Ints(secs)
		for _, s := range secs {
			at := day.Add(time.Duration(s) * time.Second)
			if !at.Before(opts.Now) {
				at = opts.Now.Add(-time.Second)
			}
			orderID++
			g.order(rng, &cur, orderID, &itemID, at, peaks[d])
			if len(cur.orders) == opts.BatchSize && !send() {
				return
			}
		}
	}
	send()
}

// order appends one order and its lines to b.
func (g *generator) order(rng *rand.Rand, b *batch, orderID int64, itemID *int64, at time.Time, peak bool) {
	opts := g.opts
	s := pick(rng, g.shopPick)
	shop := &g.shops[s]
	lines := 1
	switch x := rng.Float64(); {
	case shop.Platform == "pdd" && x < 0.75, x < 0.55:
	case x < 0.80:
		lines = 2
	case x < 0.93:
		lines = 3
	default:
		lines = 4
	}
	o := warehouse.Order{TenantID: opts.TenantID, OrderID: orderID, ShopID: shop.ShopID, Platform: shop.Platform,
		BuyerID: 100000 + int64(float64(g.buyers)*math.Pow(rng.Float64(), 1.8)), OrderedAt: at}
	o.OrderNo = orderPrefix[shop.Platform] + at.Format("20060102") + fmt.Sprintf("%010d", orderID)

	// Lines: distinct goods by popularity.
	type line struct {
		goods          int
		qty            int64
		unit, gross    int64
		cost, discount int64
	}
	var ls [4]line
	n := 0
	allVirtual := true
	for tries := 0; n < lines && tries < 12; tries++ {
		gi := g.shopGoods[s][pick(rng, g.shopCum[s])]
		dup := false
		for k := 0; k < n; k++ {
			dup = dup || ls[k].goods == gi
		}
		if dup {
			continue
		}
		qty := int64(1)
		if !g.virtual[gi] {
			switch x := rng.Float64(); {
			case x < 0.75:
			case x < 0.92:
				qty = 2
			case x < 0.98:
				qty = 3
			default:
				qty = 4 + int64(rng.IntN(2))
			}
		}
		unit := g.priceCents[gi]
		if peak || rng.Float64() < 0.1 { // festival or promotion price
			unit = unit * int64(80+rng.IntN(16)) / 100
		}
		ls[n] = line{goods: gi, qty: qty, unit: unit, gross: unit * qty, cost: g.costCents[gi] * qty}
		allVirtual = allVirtual && g.virtual[gi]
		n++
	}
	var total int64
	for k := 0; k < n; k++ {
		total += ls[k].gross
	}
	// Coupons and store discounts, spread over the lines in proportion to their amounts.
	var discount int64
	couponRate := 0.35
	if peak {
		couponRate = 0.7
	}
	if rng.Float64() < couponRate {
		rate := 0.03 + 0.12*rng.Float64()
		if peak {
			rate += 0.05
		}
		discount = int64(float64(total) * rate)
	}
	left := discount
	for k := 0; k < n; k++ {
		share := discount * ls[k].gross / max(total, 1)
		if k == n-1 {
			share = left
		}
		ls[k].discount = share
		left -= share
	}

	// Status and lifecycle, judged against Now.
	now := opts.Now
	pay := at.Add(time.Duration(20+rng.IntN(1200)) * time.Second)
	ship := pay.Add(time.Duration(2*3600+rng.IntN(70*3600)) * time.Second)
	if allVirtual {
		ship = pay.Add(time.Duration(30+rng.IntN(300)) * time.Second)
	}
	done := ship.Add(time.Duration(2*86400+rng.IntN(8*86400)) * time.Second)
	switch x := rng.Float64(); {
	case x < 0.07: // never paid
		o.Status = "cancelled"
		if now.Sub(at) < 24*time.Hour {
			o.Status = "pending"
		}
	case x < 0.11 && !pay.After(now): // refunded after payment, some after shipping
		o.Status = "refunded"
		o.PaidAt = &pay
		if rng.IntN(2) == 0 && !ship.After(now) {
			o.ShippedAt = &ship
		}
	default:
		switch {
		case pay.After(now):
			o.Status = "pending"
		case ship.After(now):
			o.Status, o.PaidAt = "paid", &pay
		case done.After(now):
			o.Status, o.PaidAt, o.ShippedAt = "shipped", &pay, &ship
		default:
			o.Status, o.PaidAt, o.ShippedAt, o.CompletedAt = "completed", &pay, &ship, &done
		}
	}

	for k := 0; k < n; k++ {
		l := ls[k]
		*itemID++
		gd := &g.goods[l.goods]
		b.items = append(b.items, warehouse.OrderItem{TenantID: opts.TenantID, ItemID: *itemID, OrderID: orderID,
			GoodsID: gd.GoodsID, SkuID: gd.GoodsID*10 + int64(rng.IntN(3)+1), ShopID: shop.ShopID, Status: o.Status,
			Quantity: l.qty, UnitPrice: cents(l.unit), Amount: cents(l.gross - l.discount), CostAmount: cents(l.cost), OrderedAt: at})
		o.ItemCount += l.qty
	}
	o.TotalAmount, o.DiscountAmount, o.PaidAmount = cents(total), cents(discount), cents(total-discount)
	if o.Status == "paid" || o.Status == "shipped" || o.Status == "completed" {
		b.gmv += o.PaidAmount
	}
	b.orders = append(b.orders, o)
}

var orderPrefix = map[string]string{"tmall": "TM", "jd": "JD", "pdd": "PDD"}

func cents(c int64) float64 { return float64(c) / 100 }

// ExistingOrders counts the tenant's orders in the store (loading twice would duplicate
// keys: check first, or DeleteTenant).
func ExistingOrders(ctx context.Context, store warehouse.Store, tenantID int64) (int64, error) {
	p := "$1"
	if store.Dialect() == warehouse.DialectClickHouse {
		p = "?"
	}
	res, err := store.Query(ctx, "SELECT count(*) FROM "+warehouse.TableOrders+" WHERE i_tenant_id = "+p, []any{tenantID}, warehouse.QueryOptions{MaxRows: 1})
	if err != nil {
		return 0, err
	}
	if len(res.Rows) != 1 || len(res.Rows[0]) != 1 {
		return 0, fmt.Errorf("demodata: unexpected count result %v", res.Rows)
	}
	n, _ := res.Rows[0][0].(int64)
	return n, nil
}

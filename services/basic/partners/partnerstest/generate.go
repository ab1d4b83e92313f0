package partnerstest

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/shopmind/shopmind/services/basic/partners"
)

var (
	categories = []string{"Women/Dresses", "Women/Tops", "Men/Shirts", "Men/Trousers", "Kids/Shoes", "Home/Kitchen", "Beauty/Skincare", "Sports/Running"}
	adjectives = []string{"Classic", "Floral", "Slim", "Oversized", "Organic", "Lightweight", "Vintage", "Premium", "Everyday", "Summer"}
	nouns      = []string{"Dress", "T-Shirt", "Shirt", "Chinos", "Sneakers", "Pan", "Serum", "Running Shorts", "Hoodie", "Skirt"}
	colors     = []string{"Red", "Blue", "Black", "White", "Green", "Beige"}
	sizes      = []string{"XS", "S", "M", "L", "XL", "XXL"}
	// genBase is the earliest updated_at of generated goods.
	genBase = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
)

// GenerateGoods returns n goods with skusPer SKUs each, the same for the same arguments:
// ids "g000001", SKU ids "g000001-s01", prices with two decimals, ~10% off sale, updated_at
// within 2025 (UTC, whole seconds).
func GenerateGoods(n, skusPer int, seed int64) []partners.PlatformGoods {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed5eed))
	out := make([]partners.PlatformGoods, 0, n)
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("g%06d", i)
		cents := rng.IntN(99_900) + 100 // 1.00 .. 999.99
		g := partners.PlatformGoods{
			PlatformGoodsID: id,
			Name:            fmt.Sprintf("%s %s %d", adjectives[rng.IntN(len(adjectives))], nouns[rng.IntN(len(nouns))], i),
			ItemNo:          fmt.Sprintf("IT-%06d", i),
			Status:          partners.StatusOnSale,
			ImageURL:        fmt.Sprintf("https://img.example.com/goods/%s.jpg", id),
			CategoryPath:    categories[rng.IntN(len(categories))],
			Price:           float64(cents) / 100,
			Cost:            float64(cents*(40+rng.IntN(30))/100) / 100,
			SKUs:            make([]partners.PlatformSKU, 0, skusPer),
			UpdatedAt:       genBase.Add(time.Duration(rng.IntN(365*24*3600)) * time.Second),
		}
		if rng.IntN(10) == 0 {
			g.Status = partners.StatusOffSale
		}
		for j := 1; j <= skusPer; j++ {
			g.SKUs = append(g.SKUs, partners.PlatformSKU{
				PlatformSkuID: fmt.Sprintf("%s-s%02d", id, j),
				Spec:          colors[(j-1)%len(colors)] + "/" + sizes[((j-1)/len(colors)+rng.IntN(len(sizes)))%len(sizes)],
				ItemNo:        fmt.Sprintf("IT-%06d-%02d", i, j),
				Price:         float64(cents+rng.IntN(5)*100) / 100,
				Stock:         int64(rng.IntN(501)),
			})
		}
		out = append(out, g)
	}
	return out
}

// SKUsOf lists the SKUs embedded in goods as partner A would: for NewPartnerAServer.
func SKUsOf(goods []partners.PlatformGoods) []partners.PartnerSKU {
	var out []partners.PartnerSKU
	for _, g := range goods {
		for _, s := range g.SKUs {
			out = append(out, partners.PartnerSKU{PlatformGoodsID: g.PlatformGoodsID, PlatformSkuID: s.PlatformSkuID,
				Spec: s.Spec, ItemNo: s.ItemNo, Price: s.Price, Stock: s.Stock})
		}
	}
	return out
}

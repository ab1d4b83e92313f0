package partners

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/shopmind/shopmind/internal/apperr"
)

// PlatformPageSize is the page_size the platform client asks for (and the most items a
// page may hold).
const PlatformPageSize = 200

// Goods statuses of the platform protocol.
const (
	StatusOnSale  = "on_sale"
	StatusOffSale = "off_sale"
)

// Platform is a client of the e-commerce platform's goods API. It is safe for concurrent use.
type Platform struct{ c client }

// NewPlatform returns a platform client. A missing or invalid BaseURL or APIKey is
// reported by every call (ErrNotConfigured, KindUpstream), not here.
func NewPlatform(cfg Config) *Platform {
	return &Platform{c: newClient("platform", cfg, func(h http.Header, key string) {
		h.Set("Authorization", "Bearer "+key)
	})}
}

// GoodsPage is one page of a shop's goods. NextPageToken is empty on the last page.
type GoodsPage struct {
	Items         []PlatformGoods
	NextPageToken string
}

// PlatformGoods is one goods of a shop as the platform lists it.
type PlatformGoods struct {
	PlatformGoodsID string
	Name            string
	ItemNo          string
	Status          string // StatusOnSale or StatusOffSale
	ImageURL        string
	CategoryPath    string // "Women/Dresses"
	Price           float64
	Cost            float64 // 0 when the platform does not know it
	SKUs            []PlatformSKU
	UpdatedAt       time.Time // UTC
}

// PlatformSKU is one SKU embedded in a platform goods.
type PlatformSKU struct {
	PlatformSkuID string
	Spec          string // "Red/M"
	ItemNo        string
	Price         float64
	Stock         int64
}

// ListGoods fetches one page of a shop's goods: pageToken "" for the first page, then the
// previous page's NextPageToken. platform is the marketplace code (tmall, jd, …).
func (p *Platform) ListGoods(ctx context.Context, platform, platformShopID, pageToken string) (GoodsPage, error) {
	if !platformRE.MatchString(platform) {
		return GoodsPage{}, apperr.Invalid("platform", "platform", "must be a platform code of lower-case letters, digits and _ (tmall, jd)")
	}
	if err := checkArgID("platform_shop_id", platformShopID); err != nil {
		return GoodsPage{}, err
	}
	if err := checkPageToken("page_token", pageToken); err != nil {
		return GoodsPage{}, err
	}
	q := url.Values{"platform": {platform}, "page_size": {strconv.Itoa(PlatformPageSize)}}
	if pageToken != "" {
		q.Set("page_token", pageToken)
	}
	target := p.c.base + "/v1/shops/" + url.PathEscape(platformShopID) + "/goods?" + q.Encode()
	var page GoodsPage
	err := p.c.call(ctx, "list goods",
		func(ctx context.Context) (*http.Request, error) {
			return http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		},
		func(body []byte) error {
			var err error
			page, err = decodeGoodsPage(body, pageToken)
			return err
		})
	if err != nil {
		return GoodsPage{}, err
	}
	return page, nil
}

// AllGoods follows the pages of a shop's goods and returns them all, or an error and
// nothing: at most maxItems distinct goods (0: DefaultMaxItems; more is ErrLimit). A goods
// listed twice (the listing moved while paging) is kept once, its latest updated_at.
// Bound the whole listing in time with ctx's deadline.
func (p *Platform) AllGoods(ctx context.Context, platform, platformShopID string, maxItems int) ([]PlatformGoods, error) {
	pg := newPaging(p.c.partner, "list goods", "goods", maxItems)
	var out []PlatformGoods
	index := map[string]int{}
	token := ""
	for {
		page, err := p.ListGoods(ctx, platform, platformShopID, token)
		if err != nil {
			return nil, err
		}
		if err := pg.page(len(page.Items), page.NextPageToken); err != nil {
			return nil, err
		}
		for _, g := range page.Items {
			if i, ok := index[g.PlatformGoodsID]; ok {
				if !g.UpdatedAt.Before(out[i].UpdatedAt) {
					out[i] = g
				}
				continue
			}
			if len(out) == pg.maxItems {
				return nil, pg.limit()
			}
			index[g.PlatformGoodsID] = len(out)
			out = append(out, g)
		}
		if page.NextPageToken == "" {
			if out == nil {
				out = []PlatformGoods{}
			}
			return out, nil
		}
		token = page.NextPageToken
	}
}

// Wire shapes of the platform protocol; pointers and raw numbers tell absent from zero.
type wireGoodsPage struct {
	Items         *[]wireGoods `json:"items"`
	NextPageToken *string      `json:"next_page_token"`
}

type wireGoods struct {
	GoodsID      *string         `json:"goods_id"`
	Name         *string         `json:"name"`
	ItemNo       *string         `json:"item_no"`
	Status       *string         `json:"status"`
	Price        json.RawMessage `json:"price"`
	Cost         json.RawMessage `json:"cost"`
	ImageURL     *string         `json:"image_url"`
	CategoryPath *string         `json:"category_path"`
	UpdatedAt    *string         `json:"updated_at"`
	SKUs         *[]wireSKU      `json:"skus"`
}

type wireSKU struct {
	SkuID  *string         `json:"sku_id"`
	Spec   *string         `json:"spec"`
	ItemNo *string         `json:"item_no"`
	Price  json.RawMessage `json:"price"`
	Stock  json.RawMessage `json:"stock"`
}

// decodeGoodsPage decodes and validates a whole page; any violation fails the page.
func decodeGoodsPage(body []byte, sent string) (GoodsPage, error) {
	var w wireGoodsPage
	if err := decodeJSON(body, &w); err != nil {
		return GoodsPage{}, err
	}
	if w.Items == nil {
		return GoodsPage{}, fieldErr("items", "missing")
	}
	if len(*w.Items) > PlatformPageSize {
		return GoodsPage{}, fieldErr("items", "%d items, more than the page_size %d", len(*w.Items), PlatformPageSize)
	}
	next, err := nextToken("next_page_token", w.NextPageToken, sent)
	if err != nil {
		return GoodsPage{}, err
	}
	page := GoodsPage{Items: make([]PlatformGoods, 0, len(*w.Items)), NextPageToken: next}
	ids := make(map[string]bool, len(*w.Items))
	for i, wg := range *w.Items {
		g, err := wg.goods(fmt.Sprintf("items[%d]", i))
		if err != nil {
			return GoodsPage{}, err
		}
		if ids[g.PlatformGoodsID] {
			return GoodsPage{}, fieldErr(fmt.Sprintf("items[%d].goods_id", i), "%q is listed twice on the page", g.PlatformGoodsID)
		}
		ids[g.PlatformGoodsID] = true
		page.Items = append(page.Items, g)
	}
	return page, nil
}

func (w *wireGoods) goods(path string) (PlatformGoods, error) {
	var g PlatformGoods
	var err error
	if g.PlatformGoodsID, err = id(path+".goods_id", w.GoodsID); err != nil {
		return g, err
	}
	if g.Name, err = text(path+".name", w.Name, true, MaxNameRunes, true); err != nil {
		return g, err
	}
	if g.ItemNo, err = text(path+".item_no", w.ItemNo, false, MaxIDBytes, false); err != nil {
		return g, err
	}
	if w.Status == nil {
		return g, fieldErr(path+".status", "missing")
	}
	if g.Status = *w.Status; g.Status != StatusOnSale && g.Status != StatusOffSale {
		return g, fieldErr(path+".status", "%q is not on_sale or off_sale", shorten(g.Status))
	}
	if g.Price, err = amount(path+".price", w.Price, true, true); err != nil {
		return g, err
	}
	if g.Cost, err = amount(path+".cost", w.Cost, false, true); err != nil {
		return g, err
	}
	if g.ImageURL, err = text(path+".image_url", w.ImageURL, false, MaxImageURLBytes, false); err != nil {
		return g, err
	}
	if g.ImageURL != "" {
		if u, err := url.Parse(g.ImageURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return g, fieldErr(path+".image_url", "%q is not an http(s) URL", shorten(g.ImageURL))
		}
	}
	if g.CategoryPath, err = text(path+".category_path", w.CategoryPath, false, MaxCategoryRunes, true); err != nil {
		return g, err
	}
	if w.UpdatedAt == nil {
		return g, fieldErr(path+".updated_at", "missing")
	}
	t, err := time.Parse(time.RFC3339Nano, *w.UpdatedAt)
	if err != nil {
		return g, fieldErr(path+".updated_at", "%q is not an RFC 3339 time", shorten(*w.UpdatedAt))
	}
	if t.Before(minUpdatedAt) || t.After(time.Now().Add(maxClockSkew)) {
		return g, fieldErr(path+".updated_at", "%s is out of range", t.Format(time.RFC3339))
	}
	g.UpdatedAt = t.UTC()
	if w.SKUs == nil {
		return g, fieldErr(path+".skus", "missing")
	}
	if len(*w.SKUs) > MaxSKUsPerGoods {
		return g, fieldErr(path+".skus", "%d SKUs, more than %d", len(*w.SKUs), MaxSKUsPerGoods)
	}
	g.SKUs = make([]PlatformSKU, 0, len(*w.SKUs))
	skuIDs := make(map[string]bool, len(*w.SKUs))
	for j, ws := range *w.SKUs {
		sp := fmt.Sprintf("%s.skus[%d]", path, j)
		var s PlatformSKU
		if s.PlatformSkuID, err = id(sp+".sku_id", ws.SkuID); err != nil {
			return g, err
		}
		if skuIDs[s.PlatformSkuID] {
			return g, fieldErr(sp+".sku_id", "%q is listed twice in the goods", s.PlatformSkuID)
		}
		skuIDs[s.PlatformSkuID] = true
		if s.Spec, err = text(sp+".spec", ws.Spec, false, MaxSpecRunes, true); err != nil {
			return g, err
		}
		if s.ItemNo, err = text(sp+".item_no", ws.ItemNo, false, MaxIDBytes, false); err != nil {
			return g, err
		}
		if s.Price, err = amount(sp+".price", ws.Price, true, true); err != nil {
			return g, err
		}
		if s.Stock, err = count(sp+".stock", ws.Stock); err != nil {
			return g, err
		}
		g.SKUs = append(g.SKUs, s)
	}
	return g, nil
}

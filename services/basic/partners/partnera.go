package partners

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/shopmind/shopmind/internal/apperr"
)

// Paging of partner A's SKU query.
const (
	// PartnerAPageSize is the page_size the partner A client asks for (and the most SKUs
	// a page may hold).
	PartnerAPageSize = 500
	// MaxGoodsIDsPerQuery is the most goods ids one ListSKUs call may send; AllSKUs splits
	// longer lists into queries of this size.
	MaxGoodsIDsPerQuery = 200
)

// PartnerA is a client of partner A's SKU API. It is safe for concurrent use.
type PartnerA struct{ c client }

// NewPartnerA returns a partner A client. A missing or invalid BaseURL or APIKey is
// reported by every call (ErrNotConfigured, KindUpstream), not here.
func NewPartnerA(cfg Config) *PartnerA {
	return &PartnerA{c: newClient("partner A", cfg, func(h http.Header, key string) {
		h.Set("X-Api-Key", key)
	})}
}

// SKUPage is one page of partner A's SKUs. NextPageToken is empty on the last page.
type SKUPage struct {
	Items         []PartnerSKU
	NextPageToken string
}

// PartnerSKU is one SKU as partner A knows it.
type PartnerSKU struct {
	PlatformGoodsID string
	PlatformSkuID   string
	Spec            string
	ItemNo          string
	Price           float64
	Stock           int64
}

// ListSKUs fetches one page of the SKUs of platformGoodsIDs (at most MaxGoodsIDsPerQuery
// distinct ids; duplicates are sent once). pageToken is "" for the first page, then the
// previous page's NextPageToken, with the same ids. No ids: an empty page, no request.
func (p *PartnerA) ListSKUs(ctx context.Context, platformGoodsIDs []string, pageToken string) (SKUPage, error) {
	ids, err := distinctIDs(platformGoodsIDs)
	if err != nil {
		return SKUPage{}, err
	}
	if len(ids) > MaxGoodsIDsPerQuery {
		return SKUPage{}, apperr.Invalid("platform_goods_ids", "max_items", fmt.Sprintf("at most %d goods ids per query (AllSKUs splits longer lists)", MaxGoodsIDsPerQuery))
	}
	if err := checkPageToken("page_token", pageToken); err != nil {
		return SKUPage{}, err
	}
	if len(ids) == 0 {
		return SKUPage{Items: []PartnerSKU{}}, nil
	}
	body, err := json.Marshal(skuQuery{GoodsIDs: ids, PageToken: pageToken, PageSize: PartnerAPageSize})
	if err != nil {
		return SKUPage{}, apperr.Internal(err)
	}
	asked := make(map[string]bool, len(ids))
	for _, id := range ids {
		asked[id] = true
	}
	target := p.c.base + "/api/skus/query"
	var page SKUPage
	err = p.c.call(ctx, "query skus",
		func(ctx context.Context) (*http.Request, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
			if err == nil {
				req.Header.Set("Content-Type", "application/json")
			}
			return req, err
		},
		func(b []byte) error {
			var err error
			page, err = decodeSKUPage(b, pageToken, asked)
			return err
		})
	if err != nil {
		return SKUPage{}, err
	}
	return page, nil
}

// AllSKUs returns the SKUs of platformGoodsIDs, following pages and querying at most
// MaxGoodsIDsPerQuery ids at a time, or an error and nothing: at most maxItems distinct
// SKUs (0: DefaultMaxItems; more is ErrLimit). A SKU listed twice is kept once (the last
// copy). Bound the whole listing in time with ctx's deadline.
func (p *PartnerA) AllSKUs(ctx context.Context, platformGoodsIDs []string, maxItems int) ([]PartnerSKU, error) {
	ids, err := distinctIDs(platformGoodsIDs)
	if err != nil {
		return nil, err
	}
	pg := newPaging(p.c.partner, "query skus", "SKUs", maxItems)
	out := []PartnerSKU{}
	type key struct{ goods, sku string }
	index := map[key]int{}
	for start := 0; start < len(ids); start += MaxGoodsIDsPerQuery {
		batch := ids[start:min(start+MaxGoodsIDsPerQuery, len(ids))]
		pg.query()
		token := ""
		for {
			page, err := p.ListSKUs(ctx, batch, token)
			if err != nil {
				return nil, err
			}
			if err := pg.page(len(page.Items), page.NextPageToken); err != nil {
				return nil, err
			}
			for _, s := range page.Items {
				k := key{s.PlatformGoodsID, s.PlatformSkuID}
				if i, ok := index[k]; ok {
					out[i] = s
					continue
				}
				if len(out) == pg.maxItems {
					return nil, pg.limit()
				}
				index[k] = len(out)
				out = append(out, s)
			}
			if page.NextPageToken == "" {
				break
			}
			token = page.NextPageToken
		}
	}
	return out, nil
}

func distinctIDs(in []string) ([]string, error) {
	out := make([]string, 0, len(in))
	seen := make(map[string]bool, len(in))
	for i, s := range in {
		if err := checkArgID(fmt.Sprintf("platform_goods_ids[%d]", i), s); err != nil {
			return nil, err
		}
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out, nil
}

// Wire shapes of partner A's protocol.
type skuQuery struct {
	GoodsIDs  []string `json:"goods_ids"`
	PageToken string   `json:"page_token,omitempty"`
	PageSize  int      `json:"page_size"`
}

type wireSKUAnswer struct {
	Code    json.RawMessage `json:"code"`
	Message *string         `json:"message"`
	Data    *struct {
		SKUs *[]wirePartnerSKU `json:"skus"`
		Next *string           `json:"next"`
	} `json:"data"`
}

type wirePartnerSKU struct {
	GoodsID *string         `json:"goods_id"`
	SkuID   *string         `json:"sku_id"`
	Spec    *string         `json:"spec"`
	ItemNo  *string         `json:"item_no"`
	Price   json.RawMessage `json:"price"`
	Stock   json.RawMessage `json:"stock"`
}

// partnerCodeError is a well-formed answer with a non-zero code: partner A refused.
type partnerCodeError struct {
	code int64
	msg  string
}

func (e *partnerCodeError) Error() string {
	if e.msg == "" {
		return fmt.Sprintf("partner code %d", e.code)
	}
	return fmt.Sprintf("partner code %d: %s", e.code, e.msg)
}

// decodeSKUPage decodes and validates a whole answer; any violation fails the page.
func decodeSKUPage(body []byte, sent string, asked map[string]bool) (SKUPage, error) {
	var w wireSKUAnswer
	if err := decodeJSON(body, &w); err != nil {
		return SKUPage{}, err
	}
	if isNull(w.Code) {
		return SKUPage{}, fieldErr("code", "missing")
	}
	code, err := strconv.ParseInt(string(bytes.TrimSpace(w.Code)), 10, 64)
	if err != nil {
		return SKUPage{}, fieldErr("code", "%s is not an integer", shorten(string(w.Code)))
	}
	if code != 0 {
		msg := ""
		if w.Message != nil {
			msg = shorten(*w.Message)
		}
		return SKUPage{}, &partnerCodeError{code: code, msg: msg}
	}
	if w.Data == nil {
		return SKUPage{}, fieldErr("data", "missing")
	}
	if w.Data.SKUs == nil {
		return SKUPage{}, fieldErr("data.skus", "missing")
	}
	skus := *w.Data.SKUs
	if len(skus) > PartnerAPageSize {
		return SKUPage{}, fieldErr("data.skus", "%d SKUs, more than the page_size %d", len(skus), PartnerAPageSize)
	}
	next, err := nextToken("data.next", w.Data.Next, sent)
	if err != nil {
		return SKUPage{}, err
	}
	page := SKUPage{Items: make([]PartnerSKU, 0, len(skus)), NextPageToken: next}
	type key struct{ goods, sku string }
	seen := make(map[key]bool, len(skus))
	for i, ws := range skus {
		path := fmt.Sprintf("data.skus[%d]", i)
		var s PartnerSKU
		if s.PlatformGoodsID, err = id(path+".goods_id", ws.GoodsID); err != nil {
			return SKUPage{}, err
		}
		if !asked[s.PlatformGoodsID] {
			return SKUPage{}, fieldErr(path+".goods_id", "%q was not asked for", s.PlatformGoodsID)
		}
		if s.PlatformSkuID, err = id(path+".sku_id", ws.SkuID); err != nil {
			return SKUPage{}, err
		}
		k := key{s.PlatformGoodsID, s.PlatformSkuID}
		if seen[k] {
			return SKUPage{}, fieldErr(path+".sku_id", "%q of goods %q is listed twice on the page", s.PlatformSkuID, s.PlatformGoodsID)
		}
		seen[k] = true
		if s.Spec, err = text(path+".spec", ws.Spec, false, MaxSpecRunes, true); err != nil {
			return SKUPage{}, err
		}
		if s.ItemNo, err = text(path+".item_no", ws.ItemNo, false, MaxIDBytes, false); err != nil {
			return SKUPage{}, err
		}
		if s.Price, err = amount(path+".price", ws.Price, true, false); err != nil {
			return SKUPage{}, err
		}
		if s.Stock, err = count(path+".stock", ws.Stock); err != nil {
			return SKUPage{}, err
		}
		page.Items = append(page.Items, s)
	}
	return page, nil
}

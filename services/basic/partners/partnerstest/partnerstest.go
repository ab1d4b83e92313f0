// Package partnerstest runs local fakes of the platform goods API and partner A's SKU API
// (the protocols of services/basic/partners/PROTOCOL.md) on httptest, with paging and
// scriptable faults: server errors, rate limits, slow answers, malformed and invalid data,
// wrong keys. The fakes are an independent implementation of the protocol: they do not
// share wire types with the clients.
package partnerstest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopmind/shopmind/services/basic/partners"
)

// Key is the API key the fakes accept unless Faults.Key says otherwise.
const Key = "test-partner-key-0123456789"

// Protocol page sizes: the most a request may ask for.
const (
	PlatformMaxPageSize = partners.PlatformPageSize
	PartnerAMaxPageSize = partners.PartnerAPageSize
)

// Faults scripts a fake's misbehaviour. The zero value is a well-behaved partner.
type Faults struct {
	// Key is the accepted API key; "": Key.
	Key string
	// WrongKey makes the fake reject every key (401), as when ShopMind's configured key is
	// wrong.
	WrongKey bool
	// FailFirst answers the first FailFirst requests with FailStatus.
	FailFirst int
	// FailAfterPages > 0: once that many pages were served, every further request gets
	// FailStatus (a partner failing half way through a listing).
	FailAfterPages int
	// FailStatus is the status of FailFirst and FailAfterPages; 0: 503.
	FailStatus int
	// RetryAfter is sent as the Retry-After header of those failures.
	RetryAfter string
	// Delay holds each answer back (until the client gives up, if that is sooner).
	Delay time.Duration
	// DelayFirst > 0: only the first DelayFirst requests are delayed.
	DelayFirst int
	// Malformed answers 200 with truncated JSON.
	Malformed bool
	// Mutate, when set, edits each successful page (page is 1-based) as generic JSON
	// before it is sent: for invalid fields, missing fields, wrong types, loops…
	Mutate func(page int, body map[string]any)
	// ContentType overrides the Content-Type of successful pages.
	ContentType string
	// PageSize > 0 caps the page size below what clients ask for, to force many pages.
	PageSize int
	// Log, when set, records every request.
	Log *RequestLog
}

// Request is one request a fake received.
type Request struct {
	Method   string
	Path     string // as sent (escaped)
	RawQuery string
	Header   http.Header
	Body     []byte
	Status   int // the status answered (0: the client went away first)
}

// RequestLog records the requests of a fake; safe for concurrent use.
type RequestLog struct {
	mu   sync.Mutex
	reqs []Request
}

// Requests returns a copy of the requests so far.
func (l *RequestLog) Requests() []Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Request(nil), l.reqs...)
}

// Len is the number of requests so far.
func (l *RequestLog) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.reqs)
}

func (l *RequestLog) add(r Request) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, r)
	return len(l.reqs) - 1
}

func (l *RequestLog) setStatus(i, status int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs[i].Status = status
}

// fake is the machinery shared by both fakes: faults, key check, request log.
type fake struct {
	f        Faults
	requests atomic.Int64
	pages    atomic.Int64
}

// recorder remembers the status written, for the log.
type recorder struct {
	http.ResponseWriter
	status int
}

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// serve applies the faults, then hands the request to ok when it is to succeed. ok returns
// the page to send (any JSON value; nil when it wrote an error itself).
func (k *fake) serve(keyOK func(r *http.Request, key string) bool, ok func(w http.ResponseWriter, r *http.Request, body []byte) any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		n := int(k.requests.Add(1)) // 1-based
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		rec := &recorder{ResponseWriter: w}
		if k.f.Log != nil {
			i := k.f.Log.add(Request{Method: r.Method, Path: r.URL.EscapedPath(), RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: body})
			defer func() { k.f.Log.setStatus(i, rec.status) }()
		}
		if k.f.Delay > 0 && (k.f.DelayFirst <= 0 || n <= k.f.DelayFirst) {
			t := time.NewTimer(k.f.Delay)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		key := k.f.Key
		if key == "" {
			key = Key
		}
		if k.f.WrongKey || !keyOK(r, key) {
			writeError(rec, http.StatusUnauthorized, "invalid API key", "")
			return
		}
		failStatus := k.f.FailStatus
		if failStatus == 0 {
			failStatus = http.StatusServiceUnavailable
		}
		if n <= k.f.FailFirst || (k.f.FailAfterPages > 0 && k.pages.Load() >= int64(k.f.FailAfterPages)) {
			writeError(rec, failStatus, "partner is having a bad day", k.f.RetryAfter)
			return
		}
		page := ok(rec, r, body)
		if page == nil {
			return
		}
		pageNo := int(k.pages.Add(1))
		ct := k.f.ContentType
		if ct == "" {
			ct = "application/json; charset=utf-8"
		}
		rec.Header().Set("Content-Type", ct)
		if k.f.Malformed {
			rec.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(rec, `{"items":[{"goods_id":"g1","name":"trunc`)
			return
		}
		out, err := json.Marshal(page)
		if err != nil {
			panic(err)
		}
		if k.f.Mutate != nil {
			var m map[string]any
			dec := json.NewDecoder(bytes.NewReader(out))
			dec.UseNumber()
			if err := dec.Decode(&m); err != nil {
				panic(err)
			}
			k.f.Mutate(pageNo, m)
			if out, err = json.Marshal(m); err != nil {
				panic(err)
			}
		}
		rec.WriteHeader(http.StatusOK)
		_, _ = rec.Write(out)
	}
}

func writeError(w http.ResponseWriter, status int, msg, retryAfter string) {
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": http.StatusText(status), "message": msg}})
}

// Page tokens are opaque to clients: base64 of "<kind>:<offset>".
func encodeToken(kind string, offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte(kind + ":" + strconv.Itoa(offset)))
}

func decodeToken(kind, token string) (int, bool) {
	if token == "" {
		return 0, true
	}
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return 0, false
	}
	rest, ok := strings.CutPrefix(string(b), kind+":")
	if !ok {
		return 0, false
	}
	off, err := strconv.Atoi(rest)
	return off, err == nil && off > 0
}

func (k *fake) pageSize(asked, maxSize int) (int, bool) {
	if asked < 1 || asked > maxSize {
		return 0, false
	}
	if k.f.PageSize > 0 && k.f.PageSize < asked {
		return k.f.PageSize, true
	}
	return asked, true
}

func money(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// Platform wire shapes, written independently of the client's.
type platformPage struct {
	Items         []platformGoods `json:"items"`
	NextPageToken string          `json:"next_page_token,omitempty"`
}

type platformGoods struct {
	GoodsID      string        `json:"goods_id"`
	Name         string        `json:"name"`
	ItemNo       string        `json:"item_no,omitempty"`
	Status       string        `json:"status"`
	Price        string        `json:"price"`          // decimal string
	Cost         float64       `json:"cost,omitempty"` // JSON number: the protocol takes both
	ImageURL     string        `json:"image_url,omitempty"`
	CategoryPath string        `json:"category_path,omitempty"`
	UpdatedAt    string        `json:"updated_at"`
	SKUs         []platformSKU `json:"skus"`
}

type platformSKU struct {
	SkuID  string `json:"sku_id"`
	Spec   string `json:"spec,omitempty"`
	ItemNo string `json:"item_no,omitempty"`
	Price  string `json:"price"`
	Stock  int64  `json:"stock"`
}

func toPlatform(g partners.PlatformGoods) platformGoods {
	w := platformGoods{GoodsID: g.PlatformGoodsID, Name: g.Name, ItemNo: g.ItemNo, Status: g.Status, Price: money(g.Price),
		Cost: g.Cost, ImageURL: g.ImageURL, CategoryPath: g.CategoryPath, UpdatedAt: g.UpdatedAt.UTC().Format(time.RFC3339Nano),
		SKUs: make([]platformSKU, 0, len(g.SKUs))}
	for _, s := range g.SKUs {
		w.SKUs = append(w.SKUs, platformSKU{SkuID: s.PlatformSkuID, Spec: s.Spec, ItemNo: s.ItemNo, Price: money(s.Price), Stock: s.Stock})
	}
	return w
}

// NewPlatformServer starts a fake platform goods API serving goods by platform shop id
// (any platform code is accepted) at GET /v1/shops/{shop}/goods; it requires
// "Authorization: Bearer <key>". Its URL is the client's BaseURL. It is closed when the
// test ends.
func NewPlatformServer(t testing.TB, goods map[string][]partners.PlatformGoods, opts Faults) *httptest.Server {
	k := &fake{f: opts}
	mux := http.NewServeMux()
	keyOK := func(r *http.Request, key string) bool { return r.Header.Get("Authorization") == "Bearer "+key }
	mux.Handle("GET /v1/shops/{shop}/goods", k.serve(keyOK, func(w http.ResponseWriter, r *http.Request, _ []byte) any {
		q := r.URL.Query()
		if p := q.Get("platform"); p == "" || strings.ToLower(p) != p {
			writeError(w, http.StatusBadRequest, "platform is required (lower case)", "")
			return nil
		}
		asked, err := strconv.Atoi(q.Get("page_size"))
		size, ok := k.pageSize(asked, PlatformMaxPageSize)
		if err != nil || !ok {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("page_size must be 1..%d", PlatformMaxPageSize), "")
			return nil
		}
		off, ok := decodeToken("goods", q.Get("page_token"))
		if !ok {
			writeError(w, http.StatusBadRequest, "invalid page_token", "")
			return nil
		}
		list, ok := goods[r.PathValue("shop")]
		if !ok {
			writeError(w, http.StatusNotFound, "shop not found", "")
			return nil
		}
		if off > len(list) {
			writeError(w, http.StatusBadRequest, "page_token out of range", "")
			return nil
		}
		end := min(off+size, len(list))
		page := platformPage{Items: make([]platformGoods, 0, end-off)}
		for _, g := range list[off:end] {
			page.Items = append(page.Items, toPlatform(g))
		}
		if end < len(list) {
			page.NextPageToken = encodeToken("goods", end)
		}
		return page
	}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such endpoint", "")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// Partner A wire shapes.
type skuQuery struct {
	GoodsIDs  []string `json:"goods_ids"`
	PageToken string   `json:"page_token"`
	PageSize  int      `json:"page_size"`
}

type skuAnswer struct {
	Code    int     `json:"code"`
	Message string  `json:"message"`
	Data    skuData `json:"data"`
}

type skuData struct {
	SKUs []partnerSKU `json:"skus"`
	Next string       `json:"next"`
}

type partnerSKU struct {
	GoodsID string  `json:"goods_id"`
	SkuID   string  `json:"sku_id"`
	Spec    string  `json:"spec"`
	ItemNo  string  `json:"item_no"`
	Price   float64 `json:"price"` // JSON number only
	Stock   int64   `json:"stock"`
}

// NewPartnerAServer starts a fake partner A SKU API at POST /api/skus/query; it requires
// "X-Api-Key: <key>". The SKUs of the asked goods are answered in the order of skus.
// Its URL is the client's BaseURL. It is closed when the test ends.
func NewPartnerAServer(t testing.TB, skus []partners.PartnerSKU, opts Faults) *httptest.Server {
	k := &fake{f: opts}
	mux := http.NewServeMux()
	keyOK := func(r *http.Request, key string) bool { return r.Header.Get("X-Api-Key") == key }
	mux.Handle("POST /api/skus/query", k.serve(keyOK, func(w http.ResponseWriter, r *http.Request, body []byte) any {
		var q skuQuery
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&q); err != nil {
			writeJSON(w, http.StatusBadRequest, skuAnswer{Code: 40001, Message: "invalid body: " + err.Error()})
			return nil
		}
		size, ok := k.pageSize(q.PageSize, PartnerAMaxPageSize)
		if !ok || len(q.GoodsIDs) == 0 || len(q.GoodsIDs) > partners.MaxGoodsIDsPerQuery {
			writeJSON(w, http.StatusBadRequest, skuAnswer{Code: 40002, Message: "goods_ids (1..200) and page_size (1..500) are required"})
			return nil
		}
		off, ok := decodeToken("skus", q.PageToken)
		if !ok {
			writeJSON(w, http.StatusBadRequest, skuAnswer{Code: 40003, Message: "invalid page_token"})
			return nil
		}
		asked := make(map[string]bool, len(q.GoodsIDs))
		for _, id := range q.GoodsIDs {
			asked[id] = true
		}
		var match []partners.PartnerSKU
		for _, s := range skus {
			if asked[s.PlatformGoodsID] {
				match = append(match, s)
			}
		}
		if off > len(match) {
			writeJSON(w, http.StatusBadRequest, skuAnswer{Code: 40003, Message: "page_token out of range"})
			return nil
		}
		end := min(off+size, len(match))
		ans := skuAnswer{Message: "ok", Data: skuData{SKUs: make([]partnerSKU, 0, end-off)}}
		for _, s := range match[off:end] {
			ans.Data.SKUs = append(ans.Data.SKUs, partnerSKU{GoodsID: s.PlatformGoodsID, SkuID: s.PlatformSkuID, Spec: s.Spec, ItemNo: s.ItemNo, Price: s.Price, Stock: s.Stock})
		}
		if end < len(match) {
			ans.Data.Next = encodeToken("skus", end)
		}
		return ans
	}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, skuAnswer{Code: 40400, Message: "no such endpoint"})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

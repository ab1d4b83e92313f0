package partners_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/services/basic/partners"
	"github.com/shopmind/shopmind/services/basic/partners/partnerstest"
)

// config is a fast test configuration against srv.
func config(srv *httptest.Server) partners.Config {
	return partners.Config{BaseURL: srv.URL, APIKey: partnerstest.Key, Timeout: 2 * time.Second, Backoff: time.Millisecond}
}

// wantUpstream checks err is a 502 of class.
func wantUpstream(t *testing.T, err error, class error) *partners.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("want a %v error, got none", class)
	}
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Kind != apperr.KindUpstream {
		t.Fatalf("want an apperr KindUpstream error, got %T %v", err, err)
	}
	if code := apperr.FromError(err).Code; code != 502 {
		t.Fatalf("envelope code %d, want 502", code)
	}
	if !errors.Is(err, class) {
		t.Fatalf("error %q is not of class %q", err, class)
	}
	if strings.Contains(err.Error(), partnerstest.Key) || strings.Contains(ae.Message, partnerstest.Key) {
		t.Fatalf("the key leaked into the error: %v", err)
	}
	var pe *partners.Error
	if !errors.As(err, &pe) {
		t.Fatalf("no *partners.Error in %v", err)
	}
	return pe
}

func goodsIDs(goods []partners.PlatformGoods) []string {
	ids := make([]string, len(goods))
	for i, g := range goods {
		ids[i] = g.PlatformGoodsID
	}
	return ids
}

// checkKeyOnlyInHeader checks every request carried the key in its header and nowhere else.
func checkKeyOnlyInHeader(t *testing.T, log *partnerstest.RequestLog, header, want string) {
	t.Helper()
	reqs := log.Requests()
	if len(reqs) == 0 {
		t.Fatal("no request recorded")
	}
	for i, r := range reqs {
		if got := r.Header.Get(header); got != want {
			t.Errorf("request %d: %s = %q, want %q", i, header, got, want)
		}
		if strings.Contains(r.Path, partnerstest.Key) || strings.Contains(r.RawQuery, partnerstest.Key) || strings.Contains(string(r.Body), partnerstest.Key) {
			t.Errorf("request %d: the key is in the URL or body: %s?%s", i, r.Path, r.RawQuery)
		}
	}
}

func TestPlatformPaging(t *testing.T) {
	goods := partnerstest.GenerateGoods(450, 3, 1)
	log := &partnerstest.RequestLog{}
	srv := partnerstest.NewPlatformServer(t, map[string][]partners.PlatformGoods{"shop/1": goods, "other": goods[:2]}, partnerstest.Faults{Log: log})
	p := partners.NewPlatform(config(srv))
	ctx := context.Background()

	var got []partners.PlatformGoods
	token, pages := "", 0
	for {
		page, err := p.ListGoods(ctx, "tmall", "shop/1", token)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		got = append(got, page.Items...)
		if page.NextPageToken == "" {
			break
		}
		token = page.NextPageToken
	}
	if pages != 3 || !reflect.DeepEqual(got, goods) {
		t.Fatalf("%d pages, %d goods; want 3 pages and the 450 goods as served", pages, len(got))
	}
	reqs := log.Requests()
	if reqs[0].Path != "/v1/shops/shop%2F1/goods" || !strings.Contains(reqs[0].RawQuery, "platform=tmall") || !strings.Contains(reqs[0].RawQuery, "page_size=200") {
		t.Fatalf("first request %s?%s", reqs[0].Path, reqs[0].RawQuery)
	}
	if strings.Contains(reqs[0].RawQuery, "page_token") || !strings.Contains(reqs[1].RawQuery, "page_token=") {
		t.Fatalf("page tokens: %q then %q", reqs[0].RawQuery, reqs[1].RawQuery)
	}
	checkKeyOnlyInHeader(t, log, "Authorization", "Bearer "+partnerstest.Key)

	all, err := p.AllGoods(ctx, "tmall", "shop/1", 0)
	if err != nil || !reflect.DeepEqual(all, goods) {
		t.Fatalf("AllGoods: %d goods, %v", len(all), err)
	}
	other, err := p.AllGoods(ctx, "jd", "other", 0)
	if err != nil || len(other) != 2 {
		t.Fatalf("other shop: %d goods, %v", len(other), err)
	}
	if _, err := p.AllGoods(ctx, "tmall", "shop/1", 449); !errors.Is(err, partners.ErrLimit) {
		t.Fatalf("maxItems 449 of 450: %v, want ErrLimit", err)
	}
	if all, err := p.AllGoods(ctx, "tmall", "shop/1", 450); err != nil || len(all) != 450 {
		t.Fatalf("maxItems 450 of 450: %d, %v", len(all), err)
	}
	_, err = p.AllGoods(ctx, "tmall", "nope", 0)
	if pe := wantUpstream(t, err, partners.ErrRejected); pe.StatusCode != 404 || !strings.Contains(err.Error(), "shop not found") {
		t.Fatalf("unknown shop: %v", err)
	}
}

func TestPlatformEmptyShopAndSmallPages(t *testing.T) {
	goods := partnerstest.GenerateGoods(10, 0, 2)
	log := &partnerstest.RequestLog{}
	srv := partnerstest.NewPlatformServer(t, map[string][]partners.PlatformGoods{"s": goods, "empty": nil}, partnerstest.Faults{PageSize: 3, Log: log})
	p := partners.NewPlatform(config(srv))
	all, err := p.AllGoods(context.Background(), "tmall", "s", 0)
	if err != nil || !reflect.DeepEqual(all, goods) || log.Len() != 4 {
		t.Fatalf("%d goods in %d requests, %v; want 10 in 4", len(all), log.Len(), err)
	}
	all, err = p.AllGoods(context.Background(), "tmall", "empty", 0)
	if err != nil || all == nil || len(all) != 0 {
		t.Fatalf("empty shop: %#v, %v", all, err)
	}
}

func TestPartnerAPaging(t *testing.T) {
	goods := partnerstest.GenerateGoods(300, 4, 3)
	skus := partnerstest.SKUsOf(goods)
	log := &partnerstest.RequestLog{}
	srv := partnerstest.NewPartnerAServer(t, skus, partnerstest.Faults{PageSize: 100, Log: log})
	a := partners.NewPartnerA(config(srv))
	ctx := context.Background()

	ids := goodsIDs(goods[:50]) // 200 SKUs: 2 pages of 100
	var got []partners.PartnerSKU
	token := ""
	for {
		page, err := a.ListSKUs(ctx, append(ids, ids[0]), token) // a duplicate id is sent once
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, page.Items...)
		if page.NextPageToken == "" {
			break
		}
		token = page.NextPageToken
	}
	if !reflect.DeepEqual(got, skus[:200]) || log.Len() != 2 {
		t.Fatalf("%d SKUs in %d requests; want 200 in 2", len(got), log.Len())
	}
	first := log.Requests()[0]
	if first.Method != http.MethodPost || first.Path != "/api/skus/query" || first.Header.Get("Content-Type") != "application/json" ||
		!strings.Contains(string(first.Body), `"page_size":500`) || strings.Count(string(first.Body), `"g000001"`) != 1 {
		t.Fatalf("first request: %s %s %s", first.Method, first.Path, first.Body)
	}
	checkKeyOnlyInHeader(t, log, "X-Api-Key", partnerstest.Key)

	// 300 goods: queries of 200 and 100 ids, 1200 SKUs in pages of 100.
	all, err := a.AllSKUs(ctx, goodsIDs(goods), 0)
	if err != nil || !reflect.DeepEqual(all, skus) {
		t.Fatalf("AllSKUs: %d of %d SKUs, %v", len(all), len(skus), err)
	}
	if _, err := a.AllSKUs(ctx, goodsIDs(goods), 1199); !errors.Is(err, partners.ErrLimit) {
		t.Fatalf("maxItems 1199 of 1200: %v", err)
	}
	page, err := a.ListSKUs(ctx, nil, "")
	if err != nil || page.Items == nil || len(page.Items) != 0 {
		t.Fatalf("no ids: %#v, %v", page, err)
	}
	if _, err := a.ListSKUs(ctx, goodsIDs(goods[:201]), ""); apperr.FromError(err).Code != 400 {
		t.Fatalf("201 ids: %v, want a 400", err)
	}
	if _, err := a.ListSKUs(ctx, []string{"ok", ""}, ""); apperr.FromError(err).Code != 400 {
		t.Fatalf("empty id: %v, want a 400", err)
	}
}

func TestRetriesThenSuccess(t *testing.T) {
	goods := partnerstest.GenerateGoods(5, 2, 4)
	for _, status := range []int{500, 502, 503, 504, 429, 408} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			log := &partnerstest.RequestLog{}
			srv := partnerstest.NewPlatformServer(t, map[string][]partners.PlatformGoods{"s": goods}, partnerstest.Faults{FailFirst: 3, FailStatus: status, Log: log})
			all, err := partners.NewPlatform(config(srv)).AllGoods(context.Background(), "tmall", "s", 0)
			if err != nil || len(all) != 5 || log.Len() != 4 {
				t.Fatalf("%d goods after %d requests, %v; want 5 after 4", len(all), log.Len(), err)
			}
		})
	}
	t.Run("partner A", func(t *testing.T) {
		log := &partnerstest.RequestLog{}
		srv := partnerstest.NewPartnerAServer(t, partnerstest.SKUsOf(goods), partnerstest.Faults{FailFirst: 2, Log: log})
		all, err := partners.NewPartnerA(config(srv)).AllSKUs(context.Background(), goodsIDs(goods), 0)
		if err != nil || len(all) != 10 || log.Len() != 3 {
			t.Fatalf("%d SKUs after %d requests, %v", len(all), log.Len(), err)
		}
	})
}

func TestRetryAfterHonoured(t *testing.T) {
	goods := partnerstest.GenerateGoods(1, 1, 5)
	srv := partnerstest.NewPlatformServer(t, map[string][]partners.PlatformGoods{"s": goods}, partnerstest.Faults{FailFirst: 1, FailStatus: 429, RetryAfter: "1"})
	start := time.Now()
	if _, err := partners.NewPlatform(config(srv)).ListGoods(context.Background(), "tmall", "s", ""); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < time.Second {
		t.Fatalf("retried after %s, before the Retry-After of 1s", d)
	}

	// A Retry-After beyond MaxRetryAfter is not waited for: the error carries it.
	log := &partnerstest.RequestLog{}
	srv = partnerstest.NewPlatformServer(t, map[string][]partners.PlatformGoods{"s": goods}, partnerstest.Faults{FailFirst: 1, FailStatus: 503, RetryAfter: "3600", Log: log})
	_, err := partners.NewPlatform(config(srv)).ListGoods(context.Background(), "tmall", "s", "")
	pe := wantUpstream(t, err, partners.ErrUnavailable)
	if log.Len() != 1 || pe.RetryAfter != time.Hour || apperr.FromError(err).RetryAfter != time.Hour {
		t.Fatalf("%d requests, retry after %s: %v", log.Len(), pe.RetryAfter, err)
	}
}

func TestRetriesExhausted(t *testing.T) {
	goods := partnerstest.GenerateGoods(3, 1, 6)
	log := &partnerstest.RequestLog{}
	srv := partnerstest.NewPlatformServer(t, map[string][]partners.PlatformGoods{"s": goods}, partnerstest.Faults{FailFirst: 100, Log: log})
	cfg := config(srv)
	cfg.Backoff = 20 * time.Millisecond
	start := time.Now()
	_, err := partners.NewPlatform(cfg).ListGoods(context.Background(), "tmall", "s", "")
	elapsed := time.Since(start)
	pe := wantUpstream(t, err, partners.ErrUnavailable)
	if log.Len() != 4 || pe.Attempts != 4 || pe.StatusCode != 503 {
		t.Fatalf("%d requests, %+v; want 4 attempts (3 retries)", log.Len(), pe)
	}
	// backoff 20ms, 40ms, 80ms with jitter in [d/2, d]: 70ms..140ms of waiting.
	if elapsed < 70*time.Millisecond || elapsed > 2*time.Second {
		t.Fatalf("took %s", elapsed)
	}
	if !strings.HasPrefix(apperr.FromError(err).Message, "partner unavailable: platform (list goods): HTTP 503") {
		t.Fatalf("message %q", apperr.FromError(err).Message)
	}

	log2 := &partnerstest.RequestLog{}
	srv2 := partnerstest.NewPartnerAServer(t, nil, partnerstest.Faults{FailFirst: 100, Log: log2})
	cfg2 := config(srv2)
	cfg2.MaxRetries = -1
	_, err = partners.NewPartnerA(cfg2).ListSKUs(context.Background(), []string{"g1"}, "")
	if wantUpstream(t, err, partners.ErrUnavailable); log2.Len() != 1 {
		t.Fatalf("MaxRetries -1: %d requests", log2.Len())
	}

	// Connection refused is retried too, then reported.
	dead := httptest.NewServer(http.NotFoundHandler())
	deadCfg := config(dead)
	dead.Close()
	_, err = partners.NewPlatform(deadCfg).ListGoods(context.Background(), "tmall", "s", "")
	if pe := wantUpstream(t, err, partners.ErrUnavailable); pe.Attempts != 4 || !strings.Contains(err.Error(), "connection failed") {
		t.Fatalf("dead server: %+v %v", pe, err)
	}
}

func TestFailureHalfWay(t *testing.T) {
	goods := partnerstest.GenerateGoods(50, 2, 7)
	log := &partnerstest.RequestLog{}
	srv := partnerstest.NewPlatformServer(t, map[string][]partners.PlatformGoods{"s": goods}, partnerstest.Faults{PageSize: 10, FailAfterPages: 2, Log: log})
	all, err := partners.NewPlatform(config(srv)).AllGoods(context.Background(), "tmall", "s", 0)
	wantUpstream(t, err, partners.ErrUnavailable)
	if all != nil || log.Len() != 2+4 {
		t.Fatalf("%d goods (want none: never half-used), %d requests (want 2 pages + 4 attempts)", len(all), log.Len())
	}

	srvA := partnerstest.NewPartnerAServer(t, partnerstest.SKUsOf(goods), partnerstest.Faults{PageSize: 10, FailAfterPages: 3})
	skus, err := partners.NewPartnerA(config(srvA)).AllSKUs(context.Background(), goodsIDs(goods), 0)
	if wantUpstream(t, err, partners.ErrUnavailable); skus != nil {
		t.Fatalf("%d SKUs returned with the error", len(skus))
	}
}

func TestClientErrorsAreNotRetried(t *testing.T) {
	goods := partnerstest.GenerateGoods(3, 1, 8)
	t.Run("wrong key", func(t *testing.T) {
		log := &partnerstest.RequestLog{}
		srv := partnerstest.NewPlatformServer(t, map[string][]partners.PlatformGoods{"s": goods}, partnerstest.Faults{WrongKey: true, Log: log})
		_, err := partners.NewPlatform(config(srv)).ListGoods(context.Background(), "tmall", "s", "")
		pe := wantUpstream(t, err, partners.ErrUnauthorized)
		if log.Len() != 1 || pe.StatusCode != 401 || !strings.Contains(err.Error(), "check the configured API key") {
			t.Fatalf("%d requests: %v", log.Len(), err)
		}
	})
	t.Run("wrong key partner A", func(t *testing.T) {
		log := &partnerstest.RequestLog{}
		srv := partnerstest.NewPartnerAServer(t, nil, partnerstest.Faults{Key: "another", Log: log})
		_, err := partners.NewPartnerA(config(srv)).ListSKUs(context.Background(), []string{"g1"}, "")
		if wantUpstream(t, err, partners.ErrUnauthorized); log.Len() != 1 {
			t.Fatalf("%d requests", log.Len())
		}
	})
	for _, status := range []int{400, 403, 404, 409, 422, 501} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			log := &partnerstest.RequestLog{}
			srv := partnerstest.NewPlatformServer(t, map[string][]partners.PlatformGoods{"s": goods}, partnerstest.Faults{FailFirst: 100, FailStatus: status, Log: log})
			_, err := partners.NewPlatform(config(srv)).ListGoods(context.Background(), "tmall", "s", "")
			class := partners.ErrRejected
			if status == 403 {
				class = partners.ErrUnauthorized
			}
			if pe := wantUpstream(t, err, class); log.Len() != 1 || pe.StatusCode != status {
				t.Fatalf("%d requests: %v", log.Len(), err)
			}
		})
	}
	t.Run("bad page token", func(t *testing.T) {
		srv := partnerstest.NewPlatformServer(t, map[string][]partners.PlatformGoods{"s": goods}, partnerstest.Faults{})
		_, err := partners.NewPlatform(config(srv)).ListGoods(context.Background(), "tmall", "s", "bogus")
		if wantUpstream(t, err, partners.ErrRejected); !strings.Contains(err.Error(), "invalid page_token") {
			t.Fatal(err)
		}
	})
	t.Run("partner A error code", func(t *testing.T) {
		log := &partnerstest.RequestLog{}
		srv := partnerstest.NewPartnerAServer(t, nil, partnerstest.Faults{Log: log, Mutate: func(_ int, m map[string]any) {
			m["code"], m["message"], m["data"] = 1003, "quota exceeded for "+partnerstest.Key, nil
		}})
		_, err := partners.NewPartnerA(config(srv)).ListSKUs(context.Background(), []string{"g1"}, "")
		if wantUpstream(t, err, partners.ErrRejected); log.Len() != 1 || !strings.Contains(err.Error(), "partner code 1003: quota exceeded for [redacted]") {
			t.Fatalf("%d requests: %v", log.Len(), err)
		}
	})
}

func TestMalformedPlatformData(t *testing.T) {
	goods := partnerstest.GenerateGoods(3, 2, 9)
	item := func(m map[string]any, i int) map[string]any { return m["items"].([]any)[i].(map[string]any) }
	sku := func(m map[string]any, i, j int) map[string]any { return item(m, i)["skus"].([]any)[j].(map[string]any) }
	cases := []struct {
		name   string
		faults partnerstest.Faults
		want   string
	}{
		{"truncated JSON", partnerstest.Faults{Malformed: true}, "invalid JSON"},
		{"not JSON content type", partnerstest.Faults{ContentType: "text/html"}, `Content-Type "text/html"`},
		{"items missing", partnerstest.Faults{Mutate: func(_ int, m map[string]any) { delete(m, "items") }}, "items: missing"},
		{"items null", partnerstest.Faults{Mutate: func(_ int, m map[string]any) { m["items"] = nil }}, "items: missing"},
		{"items not a list", partnerstest.Faults{Mutate: func(_ int, m map[string]any) { m["items"] = "x" }}, "items: unexpected JSON string"},
		{"goods_id missing", partnerstest.Faults{Mutate: func(_ int, m map[string]any) { delete(item(m, 1), "goods_id") }}, "items[1].goods_id: missing"},
		{"goods_id empty", partnerstest.Faults{Mutate: func(_ int, m map[string]any) { item(m, 0)["goods_id"] = "" }}, "items[0].goods_id: empty"},
		{"goods_id a number", partnerstest.Faults{Mutate: func(_ int, m map[string]any) { item(m, 0)["goods_id"] = 12 }}, "goods_id: unexpected JSON number"},
		{"goods_id too long", partnerstest.Faults{Mutate: func(_ int, m map[string]any) { item(m, 0)["goods_id"] = strings.Repeat("x", 129) }}, "longer than 128"},
		{"goods_id twice", partnerstest.Faults{Mutate: func(_ int, m map[string]any) { item(m, 2)["goods_id"] = item(m, 0)["goods_id"] }}, "listed twice"},
		{"name missing", partnerstest.Faults{Mutate: func(_ int, m map[string]any) { delete(item(m, 0), "name") }}, "items[0].name: missing"},
		{"name control chars", partnerstest.Faults{Mutate: func(_ int, m map[string]any) { item(m, 0)["name"] = "a\x00b" }}, "control characters"},
		{"status unknown", partnerstest.Faults{Mutate: func(_ int, m map[string]any) { item(m, 0)["status"] = "deleted" }}, `"deleted" is not on_sale or off_sale`},
		{"price missing", partnerstest.Faults{Mutate: func(_ int, m map[string]any) { delete(item(m, 0), "price") }}, "items[0].price: missing"},
		{"price negative string", partnerstest.Faults{Mutate: func(_ int, m map[string]any) { item(m, 0)["price"] = "-1.00" }}, "not a non-negative decimal"},
		{"price negative number", partnerstest.Faults{Mutate: func(_ int, m map[string]any) { item(m, 0)["price"] = -3 }}, "items[0].price: -3 is negative"},
		{"price NaN", partnerstest.Faults{Mutate: func(_ int, m map[string]any) { item(m, 0)["price"] = "NaN" }}, "not a non-negative decimal"},
		{"price infinite", partnerstest.Faults{Mutate: func(_ int, m map[string]any) { item(m, 0)["price"] = jsonNumber("1e999") }}, "not a finite number"},
		{"price huge", partnerstest.Faults{Mutate: func(_ int, m map[string]any) { item(m, 0)["price"] = 1e15 }}, "exceeds"},
		{"price bool", partnerstest.Faults{Mutate: func(_ int, m map[string]any) { item(m, 0)["price"] = true }}, "is not a number"},
		{"cost negative", partnerstest.Faults{Mutate: func(_ int, m map[string]any) { item(m, 0)["cost"] = -0.5 }}, "cost: -0.5 is negative"},
		{"updated_at missing", partnerstest.Faults{Mutate: func(_ int, m map[string]any) { delete(item(m, 0), "updated_at") }}, "updated_at: missing"},
		{"updated_at not RFC 3339", partnerstest.Faults{Mutate: func(_ int, m map[string]any) { item(m, 0)["updated_at"] = "2025-01-02 10:00:00" }}, "not an RFC 3339 time"},
		{"updated_at zero", partnerstest.Faults{Mutate: func(_ int, m map[string]any) { item(m, 0)["updated_at"] = "0001-01-01T00:00:00Z" }}, "out of range"},
		{"image_url not http", partnerstest.Faults{Mutate: func(_ int, m map[string]any) { item(m, 0)["image_url"] = "javascript:alert(1)" }}, "not an http(s) URL"},
		{"skus missing", partnerstest.Faults{Mutate: func(_ int, m map[string]any) { delete(item(m, 0), "skus") }}, "items[0].skus: missing"},
		{"sku_id empty", partnerstest.Faults{Mutate: func(_ int, m map[string]any) { sku(m, 0, 1)["sku_id"] = " " }}, "items[0].skus[1].sku_id: empty"},
		{"sku_id twice", partnerstest.Faults{Mutate: func(_ int, m map[string]any) { sku(m, 1, 1)["sku_id"] = sku(m, 1, 0)["sku_id"] }}, "listed twice in the goods"},
		{"sku price negative", partnerstest.Faults{Mutate: func(_ int, m map[string]any) { sku(m, 2, 0)["price"] = -0.01 }}, "items[2].skus[0].price: -0.01 is negative"},
		{"stock negative", partnerstest.Faults{Mutate: func(_ int, m map[string]any) { sku(m, 0, 0)["stock"] = -1 }}, "stock: -1 is negative"},
		{"stock fractional", partnerstest.Faults{Mutate: func(_ int, m map[string]any) { sku(m, 0, 0)["stock"] = 1.5 }}, "stock: 1.5 is not an integer"},
		{"stock a string", partnerstest.Faults{Mutate: func(_ int, m map[string]any) { sku(m, 0, 0)["stock"] = "7" }}, `stock: "7" is not an integer`},
		{"stock missing", partnerstest.Faults{Mutate: func(_ int, m map[string]any) { delete(sku(m, 0, 0), "stock") }}, "stock: missing"},
		{"too many items", partnerstest.Faults{Mutate: func(_ int, m map[string]any) {
			items := m["items"].([]any)
			for len(items) <= partners.PlatformPageSize {
				items = append(items, items[0])
			}
			m["items"] = items
		}}, "more than the page_size 200"},
		{"next token control chars", partnerstest.Faults{Mutate: func(_ int, m map[string]any) { m["next_page_token"] = "a\nb" }}, "not printable ASCII"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			log := &partnerstest.RequestLog{}
			tc.faults.Log = log
			srv := partnerstest.NewPlatformServer(t, map[string][]partners.PlatformGoods{"s": goods}, tc.faults)
			page, err := partners.NewPlatform(config(srv)).ListGoods(context.Background(), "tmall", "s", "")
			wantUpstream(t, err, partners.ErrMalformed)
			msg := apperr.FromError(err).Message
			if !strings.HasPrefix(msg, "partner returned malformed data: platform (list goods): ") || !strings.Contains(msg, tc.want) {
				t.Fatalf("message %q, want it to hold %q", msg, tc.want)
			}
			if page.Items != nil || page.NextPageToken != "" || log.Len() != 1 {
				t.Fatalf("page %+v after %d requests: want nothing and no retry", page, log.Len())
			}
		})
	}
}

// jsonNumber is a literal JSON number (what a float64 cannot hold).
type jsonNumber string

func (n jsonNumber) MarshalJSON() ([]byte, error) { return []byte(n), nil }

func TestMalformedPartnerAData(t *testing.T) {
	skus := partnerstest.SKUsOf(partnerstest.GenerateGoods(2, 2, 10))
	s := func(m map[string]any, i int) map[string]any {
		return m["data"].(map[string]any)["skus"].([]any)[i].(map[string]any)
	}
	cases := []struct {
		name   string
		mutate func(int, map[string]any)
		want   string
	}{
		{"code missing", func(_ int, m map[string]any) { delete(m, "code") }, "code: missing"},
		{"code a string", func(_ int, m map[string]any) { m["code"] = "0" }, `code: "0" is not an integer`},
		{"data missing", func(_ int, m map[string]any) { delete(m, "data") }, "data: missing"},
		{"skus missing", func(_ int, m map[string]any) { delete(m["data"].(map[string]any), "skus") }, "data.skus: missing"},
		{"goods not asked for", func(_ int, m map[string]any) { s(m, 0)["goods_id"] = "g999999" }, `"g999999" was not asked for`},
		{"sku_id missing", func(_ int, m map[string]any) { delete(s(m, 1), "sku_id") }, "data.skus[1].sku_id: missing"},
		{"sku twice", func(_ int, m map[string]any) { s(m, 1)["sku_id"] = s(m, 0)["sku_id"] }, "listed twice on the page"},
		{"price a string", func(_ int, m map[string]any) { s(m, 0)["price"] = "12.50" }, "is a string, want a JSON number"},
		{"price negative", func(_ int, m map[string]any) { s(m, 0)["price"] = -1 }, "data.skus[0].price: -1 is negative"},
		{"stock negative", func(_ int, m map[string]any) { s(m, 2)["stock"] = -5 }, "data.skus[2].stock: -5 is negative"},
		{"next repeats", func(_ int, m map[string]any) { m["data"].(map[string]any)["next"] = "" }, ""}, // valid: last page
		{"empty object", func(_ int, m map[string]any) {
			for k := range m {
				delete(m, k)
			}
		}, "code: missing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			log := &partnerstest.RequestLog{}
			srv := partnerstest.NewPartnerAServer(t, skus, partnerstest.Faults{Mutate: tc.mutate, Log: log})
			page, err := partners.NewPartnerA(config(srv)).ListSKUs(context.Background(), []string{"g000001", "g000002"}, "")
			if tc.want == "" {
				if err != nil || len(page.Items) != 4 {
					t.Fatalf("%d SKUs, %v", len(page.Items), err)
				}
				return
			}
			wantUpstream(t, err, partners.ErrMalformed)
			if msg := apperr.FromError(err).Message; !strings.HasPrefix(msg, "partner returned malformed data: partner A (query skus): ") || !strings.Contains(msg, tc.want) {
				t.Fatalf("message %q, want it to hold %q", msg, tc.want)
			}
			if page.Items != nil || log.Len() != 1 {
				t.Fatalf("page %+v after %d requests", page, log.Len())
			}
		})
	}
}

// TestMalformedBodies covers what the fakes do not produce: odd bodies, oversized bodies,
// redirects, looping tokens.
func TestMalformedBodies(t *testing.T) {
	serve := func(t *testing.T, h http.HandlerFunc) *httptest.Server {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv
	}
	jsonBody := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(body))
		}
	}
	for name, tc := range map[string]struct {
		h    http.HandlerFunc
		want string
	}{
		"empty body":     {jsonBody(""), "empty body"},
		"null":           {jsonBody("null"), "items: missing"},
		"array":          {jsonBody("[]"), "JSON array where an object is expected"},
		"trailing data":  {jsonBody(`{"items":[]} {"items":[]}`), "invalid JSON"},
		"token repeated": {jsonBody(`{"items":[],"next_page_token":"t1"}`), "repeats the requested page token"},
		"oversized": {func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"items":[],"pad":"`))
			chunk := []byte(strings.Repeat("x", 1<<16))
			for i := 0; i < (partners.MaxBodyBytes>>16)+1; i++ {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
			_, _ = w.Write([]byte(`"}`))
		}, "exceeds 8388608 bytes"},
	} {
		t.Run(name, func(t *testing.T) {
			srv := serve(t, tc.h)
			_, err := partners.NewPlatform(config(srv)).ListGoods(context.Background(), "tmall", "s", "t1")
			wantUpstream(t, err, partners.ErrMalformed)
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want %q", err, tc.want)
			}
		})
	}

	t.Run("unknown fields are ignored", func(t *testing.T) {
		srv := serve(t, jsonBody(`{"items":[{"goods_id":"g","name":"n","status":"on_sale","price":3,"updated_at":"2025-02-03T04:05:06+08:00","skus":[],"new_field":{"x":1}}],"extra":true}`))
		page, err := partners.NewPlatform(config(srv)).ListGoods(context.Background(), "tmall", "s", "")
		if err != nil || len(page.Items) != 1 || page.Items[0].Price != 3 || page.Items[0].UpdatedAt.Location() != time.UTC || page.Items[0].UpdatedAt.Hour() != 20 {
			t.Fatalf("%+v, %v", page, err)
		}
	})

	t.Run("listing loops across pages", func(t *testing.T) {
		// Alternates two tokens: each page is valid, the listing never ends.
		srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
			next := "a"
			if r.URL.Query().Get("page_token") == "a" {
				next = "b"
			}
			jsonBody(`{"items":[],"next_page_token":"`+next+`"}`)(w, r)
		})
		_, err := partners.NewPlatform(config(srv)).AllGoods(context.Background(), "tmall", "s", 0)
		if wantUpstream(t, err, partners.ErrMalformed); !strings.Contains(err.Error(), "already seen") {
			t.Fatal(err)
		}
	})

	t.Run("endless fresh tokens", func(t *testing.T) {
		var pages atomic.Int64
		srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
			jsonBody(fmt.Sprintf(`{"items":[],"next_page_token":"t%d"}`, pages.Add(1)))(w, r)
		})
		_, err := partners.NewPlatform(config(srv)).AllGoods(context.Background(), "tmall", "s", 10)
		if wantUpstream(t, err, partners.ErrMalformed); !strings.Contains(err.Error(), "paging did not end") || pages.Load() != 121 {
			t.Fatalf("%d pages: %v", pages.Load(), err)
		}
	})

	t.Run("redirect is not followed", func(t *testing.T) {
		log := &partnerstest.RequestLog{}
		other := partnerstest.NewPlatformServer(t, nil, partnerstest.Faults{Log: log})
		srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+r.URL.RequestURI(), http.StatusFound)
		})
		cfg := config(srv)
		cfg.HTTPClient = &http.Client{} // follows redirects by default: the client must not
		_, err := partners.NewPartnerA(cfg).ListSKUs(context.Background(), []string{"g"}, "")
		if wantUpstream(t, err, partners.ErrRejected); log.Len() != 0 || !strings.Contains(err.Error(), "redirects are not followed") {
			t.Fatalf("%d requests reached the redirect target: %v", log.Len(), err)
		}
	})
}

func TestSlowServer(t *testing.T) {
	goods := partnerstest.GenerateGoods(2, 1, 11)
	t.Run("every answer too slow", func(t *testing.T) {
		log := &partnerstest.RequestLog{}
		srv := partnerstest.NewPlatformServer(t, map[string][]partners.PlatformGoods{"s": goods}, partnerstest.Faults{Delay: 2 * time.Second, Log: log})
		cfg := config(srv)
		cfg.Timeout, cfg.MaxRetries = 50*time.Millisecond, 2
		start := time.Now()
		_, err := partners.NewPlatform(cfg).ListGoods(context.Background(), "tmall", "s", "")
		elapsed := time.Since(start)
		pe := wantUpstream(t, err, partners.ErrTimeout)
		if log.Len() != 3 || pe.Attempts != 3 || !strings.Contains(err.Error(), "no complete answer within 50ms") {
			t.Fatalf("%d requests: %v", log.Len(), err)
		}
		if elapsed > time.Second {
			t.Fatalf("took %s: the timeout does not bound attempts", elapsed)
		}
	})
	t.Run("first answer too slow", func(t *testing.T) {
		log := &partnerstest.RequestLog{}
		srv := partnerstest.NewPartnerAServer(t, partnerstest.SKUsOf(goods), partnerstest.Faults{Delay: 2 * time.Second, DelayFirst: 1, Log: log})
		cfg := config(srv)
		cfg.Timeout = 100 * time.Millisecond
		skus, err := partners.NewPartnerA(cfg).AllSKUs(context.Background(), goodsIDs(goods), 0)
		if err != nil || len(skus) != 2 || log.Len() != 2 {
			t.Fatalf("%d SKUs after %d requests, %v", len(skus), log.Len(), err)
		}
	})
	t.Run("body stalls mid-way", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"items":[`))
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-time.After(2 * time.Second):
			}
		}))
		t.Cleanup(srv.Close)
		cfg := config(srv)
		cfg.Timeout, cfg.MaxRetries = 50*time.Millisecond, 1
		_, err := partners.NewPlatform(cfg).ListGoods(context.Background(), "tmall", "s", "")
		if pe := wantUpstream(t, err, partners.ErrTimeout); pe.Attempts != 2 {
			t.Fatalf("%+v", pe)
		}
	})
}

func TestContextCancelStopsRetries(t *testing.T) {
	goods := partnerstest.GenerateGoods(2, 1, 12)
	t.Run("during backoff", func(t *testing.T) {
		log := &partnerstest.RequestLog{}
		srv := partnerstest.NewPlatformServer(t, map[string][]partners.PlatformGoods{"s": goods}, partnerstest.Faults{FailFirst: 100, Log: log})
		cfg := config(srv)
		cfg.Backoff = 5 * time.Second
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		start := time.Now()
		_, err := partners.NewPlatform(cfg).AllGoods(ctx, "tmall", "s", 0)
		if !errors.Is(err, context.Canceled) || time.Since(start) > time.Second || log.Len() != 1 {
			t.Fatalf("%v after %s and %d requests", err, time.Since(start), log.Len())
		}
		if code := apperr.FromError(err).Code; code == 502 {
			t.Fatalf("a cancelled call is not the partner's failure: %v", err)
		}
	})
	t.Run("during a slow request", func(t *testing.T) {
		log := &partnerstest.RequestLog{}
		srv := partnerstest.NewPartnerAServer(t, nil, partnerstest.Faults{Delay: 5 * time.Second, Log: log})
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		start := time.Now()
		_, err := partners.NewPartnerA(config(srv)).ListSKUs(ctx, []string{"g1"}, "")
		if !errors.Is(err, context.Canceled) || time.Since(start) > time.Second || log.Len() != 1 {
			t.Fatalf("%v after %s and %d requests", err, time.Since(start), log.Len())
		}
	})
	t.Run("deadline leaves no room for the backoff", func(t *testing.T) {
		log := &partnerstest.RequestLog{}
		srv := partnerstest.NewPlatformServer(t, map[string][]partners.PlatformGoods{"s": goods}, partnerstest.Faults{FailFirst: 100, Log: log})
		cfg := config(srv)
		cfg.Backoff = 2 * time.Second
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := partners.NewPlatform(cfg).ListGoods(ctx, "tmall", "s", "")
		if wantUpstream(t, err, partners.ErrUnavailable); time.Since(start) > 300*time.Millisecond || log.Len() != 1 {
			t.Fatalf("%v after %s and %d requests", err, time.Since(start), log.Len())
		}
	})
	t.Run("already cancelled", func(t *testing.T) {
		log := &partnerstest.RequestLog{}
		srv := partnerstest.NewPlatformServer(t, nil, partnerstest.Faults{Log: log})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := partners.NewPlatform(config(srv)).ListGoods(ctx, "tmall", "s", "")
		if !errors.Is(err, context.Canceled) || log.Len() != 0 {
			t.Fatalf("%v, %d requests", err, log.Len())
		}
	})
}

func TestConfigAndArguments(t *testing.T) {
	srv := partnerstest.NewPlatformServer(t, nil, partnerstest.Faults{})
	ctx := context.Background()
	for name, cfg := range map[string]partners.Config{
		"no base URL":      {APIKey: "k"},
		"not http":         {BaseURL: "ftp://x", APIKey: "k"},
		"key in URL":       {BaseURL: "https://user:secret@x", APIKey: "k"},
		"query in URL":     {BaseURL: "https://x/?key=secret", APIKey: "k"},
		"no key":           {BaseURL: srv.URL},
		"key with newline": {BaseURL: srv.URL, APIKey: "secret\nX-Evil: 1"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := partners.NewPlatform(cfg).ListGoods(ctx, "tmall", "s", "")
			wantUpstream(t, err, partners.ErrNotConfigured)
			if strings.Contains(err.Error(), "secret") {
				t.Fatalf("the key leaked: %v", err)
			}
			_, err = partners.NewPartnerA(cfg).AllSKUs(ctx, []string{"g"}, 0)
			wantUpstream(t, err, partners.ErrNotConfigured)
		})
	}

	p := partners.NewPlatform(config(srv))
	for name, args := range map[string][3]string{
		"platform empty":   {"", "s", ""},
		"platform upper":   {"Tmall", "s", ""},
		"shop empty":       {"tmall", "", ""},
		"shop spaces":      {"tmall", " s", ""},
		"token with space": {"tmall", "s", "a b"},
		"token too long":   {"tmall", "s", strings.Repeat("t", 2049)},
	} {
		if _, err := p.ListGoods(ctx, args[0], args[1], args[2]); apperr.FromError(err).Code != 400 {
			t.Errorf("%s: %v, want a 400", name, err)
		}
	}

	cfg := partners.Config{BaseURL: "https://x", APIKey: "super-secret-key"}
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), fmt.Sprint(cfg.LogValue())} {
		if strings.Contains(s, "super-secret-key") {
			t.Fatalf("the key is printed: %s", s)
		}
	}
}

func TestGenerateGoodsIsDeterministic(t *testing.T) {
	a, b := partnerstest.GenerateGoods(100, 4, 7), partnerstest.GenerateGoods(100, 4, 7)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different goods")
	}
	if reflect.DeepEqual(a, partnerstest.GenerateGoods(100, 4, 8)) {
		t.Fatal("different seeds, same goods")
	}
	if len(a) != 100 || len(a[99].SKUs) != 4 || a[0].PlatformGoodsID != "g000001" || a[0].SKUs[0].PlatformSkuID != "g000001-s01" {
		t.Fatalf("shape: %+v", a[0])
	}
}

// TestAcceptance5000x4 syncs 5,000 goods with 4 SKUs each from both fakes.
func TestAcceptance5000x4(t *testing.T) {
	goods := partnerstest.GenerateGoods(5000, 4, 42)
	skus := partnerstest.SKUsOf(goods)
	plog, alog := &partnerstest.RequestLog{}, &partnerstest.RequestLog{}
	platform := partnerstest.NewPlatformServer(t, map[string][]partners.PlatformGoods{"shop-1": goods}, partnerstest.Faults{Log: plog, FailFirst: 1})
	partnerA := partnerstest.NewPartnerAServer(t, skus, partnerstest.Faults{Log: alog, FailFirst: 1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	start := time.Now()
	got, err := partners.NewPlatform(config(platform)).AllGoods(ctx, "tmall", "shop-1", 5000)
	goodsTime := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, goods) {
		t.Fatalf("AllGoods returned %d goods, not the 5,000 served", len(got))
	}
	start = time.Now()
	gotSKUs, err := partners.NewPartnerA(config(partnerA)).AllSKUs(ctx, goodsIDs(goods), 20000)
	skuTime := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotSKUs, skus) {
		t.Fatalf("AllSKUs returned %d SKUs, not the 20,000 served", len(gotSKUs))
	}
	// 25 pages of 200 goods (+1 retried 503); 25 queries of 200 ids, 2 pages of 500 SKUs each (+1).
	if plog.Len() != 26 || alog.Len() != 51 {
		t.Fatalf("%d platform and %d partner A requests, want 26 and 51", plog.Len(), alog.Len())
	}
	t.Logf("AllGoods: 5000 goods x 4 SKUs in %d requests, %s; AllSKUs: 20000 SKUs in %d requests, %s",
		plog.Len(), goodsTime.Round(time.Millisecond), alog.Len(), skuTime.Round(time.Millisecond))
}

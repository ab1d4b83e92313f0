// Package partners holds the HTTP clients the basic (goods) service syncs with: Platform,
// the e-commerce platform's goods API, and PartnerA, partner A's SKU API. Both speak a
// JSON-over-HTTP protocol documented in PROTOCOL.md (next to this file); in short:
//
//	Platform:  GET  {base}/v1/shops/{platform_shop_id}/goods?platform=tmall&page_size=200&page_token=…
//	           Authorization: Bearer <key>
//	           → {"items":[{"goods_id","name","item_no","status","price","cost","image_url",
//	              "category_path","updated_at","skus":[{"sku_id","spec","item_no","price","stock"}]}],
//	              "next_page_token":"…"}
//	Partner A: POST {base}/api/skus/query  {"goods_ids":[…],"page_token":"…","page_size":500}
//	           X-Api-Key: <key>
//	           → {"code":0,"message":"ok","data":{"skus":[{"goods_id","sku_id","spec","item_no",
//	              "price","stock"}],"next":"…"}}
//
// # Failures
//
// Every failure of a partner is an *apperr.Error of KindUpstream (the 502 envelope) whose
// Cause is an *Error; errors.Is tells its class: ErrUnavailable (5xx, 429, 408 or connection
// failures once retries are spent), ErrTimeout (no complete answer within Config.Timeout,
// retries spent), ErrUnauthorized (401/403: the configured key is wrong; not retried),
// ErrRejected (other 4xx, redirects, a partner A error code; not retried), ErrMalformed
// (the answer broke the protocol; not retried), ErrLimit (AllGoods/AllSKUs beyond maxItems)
// and ErrNotConfigured (no or invalid base URL or key). Invalid arguments are KindInvalid.
// When the caller's context is cancelled or expires, the call stops at once, between or
// during attempts, and returns an error wrapping that context's error (the gRPC layer maps
// it to 408/504, not 502).
//
// # Retries and time bounds
//
// Each HTTP attempt, body included, is bounded by Config.Timeout (default 10s). Attempts
// failing with 5xx (but 501 and 505), 429, 408, a timeout or a connection error are retried
// up to Config.MaxRetries times (default 3), after Config.Backoff (default 200ms) doubled
// on each retry, capped at MaxBackoff, with jitter (a uniform draw in [d/2, d]); a
// Retry-After of the partner replaces the backoff, up to MaxRetryAfter (longer: no retry,
// the error carries the Retry-After). No retry is started that the caller's deadline
// could not wait for. One call therefore lasts at most
// (MaxRetries+1)·Timeout + the waits: 41.4s with the defaults, without Retry-After.
// AllGoods and AllSKUs follow pages one after the other: bound a whole sync with a deadline
// on ctx.
//
// # Validation
//
// Every answer is validated as a whole before any of it is returned: a JSON object within
// MaxBodyBytes (8 MiB) served as application/json; required fields present and typed;
// ids non-empty, at most MaxIDBytes, unique (goods on a page, SKUs in a goods or on a
// page); texts bounded and free of control characters; prices finite, >= 0 and <=
// MaxAmount; stocks integers in [0, MaxStock]; status on_sale or off_sale; updated_at RFC
// 3339; at most page_size items; a next page token printable, bounded and not the one just
// sent; partner A SKUs only of the goods asked for. Any violation fails the call with
// ErrMalformed ("partner returned malformed data: <partner> (<op>): <path>: <problem>") and
// nothing of the page is used. AllGoods and AllSKUs return everything or nothing: a
// failure on page N discards pages 1..N-1, and they stop a listing that loops (a page
// token seen before) or does not end (more than 2·maxItems+100 items and pages).
//
// # Keys
//
// The key is sent only in its header, never in URLs or bodies. The clients never log; the
// key is kept out of errors (partner text quoted in errors is scrubbed of it) and out of
// Config's String, GoString and LogValue. Redirects are not followed, so the key never
// reaches another host. The base URL may hold no user info or query.
//
// The package partnerstest runs fakes of both partners, with faults, for tests.
package partners

package crs

import (
	"hash/maphash"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// A request whose every inspected input equals one that passed passes without running a rule.
//
// Under ShopMind's configuration the rules' verdict is a function of what the transaction is
// given: the client's address (REMOTE_ADDR, read by the 905 exceptions), the request line,
// the headers and the body. Nothing else enters it: sampling (the only reader of UNIQUE_ID)
// is at 100% unless the directives say otherwise (then this memo is off), Coraza v3 keeps no
// collection between transactions, no rule reads the time, and the configuration is fixed
// for the WAF's life. A client repeating a request (the same list polled with the same
// token, an extension's same status call) was paying the fixed cost of a transaction and
// of the rules that always run (setup, initialization, 920450, 941010, the 949 scoring:
// about 40 us) for a verdict already known.
//
// The key is 128 bits of keyed hashes (maphash, two random seeds per process, as the rule
// memo's keys) of the client's IP address (not its port), the method, the request target
// as sent and the decoded path, the protocol, every header name with its values in order
// (combined without regard to the map's order), host, content length and transfer
// encodings, and the body's bytes. Only a request that ran every phase without a block is
// remembered; a block is never remembered, so an attack is evaluated every time. Memory is
// bounded like the rule memo's: two generations of at most verdictMemoMax keys.
type verdictMemo struct {
	seeds [2]maphash.Seed
	mu    sync.Mutex
	cur   map[[2]uint64]struct{}
	old   map[[2]uint64]struct{}
	// hits counts requests answered from the memo (tests read it).
	hits atomic.Int64
}

const verdictMemoMax = 1 << 15

func newVerdictMemo() *verdictMemo {
	return &verdictMemo{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}}
}

// key is the request's 128-bit key; body is the body as read for inspection.
func (v *verdictMemo) key(r *http.Request, body []byte) [2]uint64 {
	var out [2]uint64
	client := r.RemoteAddr
	if i := strings.LastIndexByte(client, ':'); i >= 0 {
		client = client[:i]
	}
	for i, seed := range v.seeds {
		var h maphash.Hash
		h.SetSeed(seed)
		for _, s := range [...]string{client, r.Method, r.RequestURI, r.URL.RequestURI(), r.URL.Path, r.Proto, r.Host,
			strconv.FormatInt(r.ContentLength, 10), strings.Join(r.TransferEncoding, ",")} {
			writeField(&h, s)
		}
		_, _ = h.Write(body)
		line := h.Sum64()
		// Headers: the sum of one hash per name (names are distinct in the map), so the
		// map's iteration order does not matter; a name's values keep their order.
		var headers uint64
		for name, values := range r.Header {
			var hh maphash.Hash
			hh.SetSeed(seed)
			writeField(&hh, name)
			for _, val := range values {
				writeField(&hh, val)
			}
			headers += hh.Sum64()
		}
		out[i] = line ^ (headers*0x9e3779b97f4a7c15 + uint64(len(r.Header)))
	}
	return out
}

// writeField writes s with its length, so that no two sequences of fields write the same bytes.
func writeField(h *maphash.Hash, s string) {
	var n [8]byte
	l := uint64(len(s))
	for i := range n {
		n[i] = byte(l >> (8 * i))
	}
	_, _ = h.Write(n[:])
	_, _ = h.WriteString(s)
}

// passed reports whether a request with this key passed before.
func (v *verdictMemo) passed(k [2]uint64) bool {
	v.mu.Lock()
	_, ok := v.cur[k]
	if !ok {
		_, ok = v.old[k]
	}
	v.mu.Unlock()
	if ok {
		v.hits.Add(1)
	}
	return ok
}

// remember records that a request with this key passed.
func (v *verdictMemo) remember(k [2]uint64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.cur == nil {
		v.cur = map[[2]uint64]struct{}{}
	}
	if len(v.cur) >= verdictMemoMax {
		v.old, v.cur = v.cur, make(map[[2]uint64]struct{}, verdictMemoMax/4)
	}
	v.cur[k] = struct{}{}
}

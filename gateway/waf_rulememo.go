package gateway

import (
	"encoding/binary"
	"hash/maphash"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Rules that did not match an input are not evaluated on that input again.
//
// Most of the rules a request runs read only its request line and headers (the protocol
// rules of 920/921, the filename rules of 930/932, the header rules of 941/942): method,
// URI, protocol, path, User-Agent, Accept... A client sends the same line and headers again
// and again (an SPA polling a list, the same user's token), so those rules are evaluated on
// the same input again and again, each time at Coraza's full fixed cost. A rule is a pure
// function of its targets' values when it is a single SecRule (no chain: a chained rule's
// outcome depends on its children's targets), its operator argument has no macro, no
// runtime control (ctl:ruleRemoveById, ruleRemoveTarget*, skip, skipAfter, ruleEngine)
// can change whether or how it runs, and its targets are among the request line's
// variables (REQUEST_LINE, REQUEST_METHOD, REQUEST_PROTOCOL, REQUEST_URI(_RAW),
// REQUEST_FILENAME, REQUEST_BASENAME, QUERY_STRING, ARGS_GET(_NAMES), ARGS_PATH) and the
// headers (REQUEST_HEADERS, REQUEST_HEADERS:<name>, REQUEST_HEADERS_NAMES,
// REQUEST_COOKIES(_NAMES)). For such a rule the memo keeps, after a transaction that ran to
// its end without a block, the fact "rule R did not match these inputs", keyed by 128 bits
// of keyed hashes (maphash, a random seed per process) of exactly the inputs its variables
// derive from: method, URI as inspected, protocol and path for the line variables; the named
// header's values; every header name and value (with host, content-length and
// transfer-encoding as inspect adds them) for the whole-header variables. A later request
// with the same inputs has R removed from its transaction. Anything the memo cannot vouch
// for (arguments of the body, TX, counts, REMOTE_ADDR, ...) is evaluated every time.
// Memory is bounded: two generations of at most ruleMemoMax keys.

const ruleMemoMax = 1 << 16

// inputGroup is what a memoizable rule's variables derive from.
type inputGroup uint64

const (
	inputLine       inputGroup = 1 << iota // method, URI as inspected, protocol, path
	inputAllHeaders                        // every header name and value
	inputHeader                            // first bit of the named headers
)

type memoRule struct {
	id     int
	inputs inputGroup
	// noBody: the rule reads body variables too (ARGS, ARGS_POST, XML, FILES, REQUEST_BODY,
	// ...), which a request without a body leaves empty or fixed (ARGS are then the query's
	// and the path's); the memo answers for it only on requests without a body.
	noBody bool
}

// control is a runtime control (ctl:ruleRemoveById / ruleRemoveTargetById) of the rules in
// ranges, decided by a rule reading vars (empty: not a single rule the memo can read).
type control struct {
	ranges [][2]int
	vars   string
}

var (
	ctlRemoveByID    = regexp.MustCompile(`ctl:ruleRemove(?:Target)?ById=(\d+)(?:-(\d+))?`)
	ctlUnsafe        = regexp.MustCompile(`ctl:(?:ruleRemoveByTag|ruleRemoveByMsg|ruleRemoveTargetByTag|ruleRemoveTargetByMsg|ruleEngine)`)
	flowSkip         = regexp.MustCompile(`[",\s](skip|skipAfter):([^,"\s\\]+)`)
	lineVariables    = []string{"REQUEST_LINE", "REQUEST_METHOD", "REQUEST_PROTOCOL", "REQUEST_URI", "REQUEST_URI_RAW", "REQUEST_FILENAME", "REQUEST_BASENAME", "QUERY_STRING", "ARGS_GET", "ARGS_GET_NAMES", "ARGS_PATH"}
	headerVariables  = []string{"REQUEST_HEADERS_NAMES", "REQUEST_COOKIES", "REQUEST_COOKIES_NAMES"}
	bodyVariables    = []string{"ARGS", "ARGS_NAMES", "ARGS_POST", "ARGS_POST_NAMES", "XML", "FILES", "FILES_NAMES", "REQUEST_BODY", "REQUEST_BODY_LENGTH", "ARGS_COMBINED_SIZE", "FILES_COMBINED_SIZE", "FILES_SIZES"}
	memoOperatorPart = regexp.MustCompile(`^SecRule\s+\S+\s+"((?:[^"\\]|\\.)*)"`)
)

// ruleMemo holds the memoizable rules (collected at load) and the outcomes.
type ruleMemo struct {
	mu       sync.Mutex
	rules    []memoRule
	controls []control
	guards   []guard  // the skips in force while the rule files load
	unsafe   bool     // a control the memo cannot account for: no memo at all
	headers  []string // named header inputs (lower case), bit inputHeader<<index
	seeds    [2]maphash.Seed

	cur, old map[[2]uint64]struct{}
}

// collect records the memoizable rules of one compiled file (in load order), and the runtime
// controls.
func (k *ruleMemo) collect(stmts []crsStatement) {
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	chained := false
	for _, s := range stmts {
		trimmed := strings.TrimSpace(s.text)
		if name, ok := strings.CutPrefix(trimmed, "SecMarker"); ok {
			name = strings.Trim(strings.TrimSpace(name), `"'`)
			k.guards = slices.DeleteFunc(k.guards, func(g guard) bool { return g.marker == name })
			continue
		}
		if !s.rule {
			continue
		}
		child := chained
		chained = s.chain
		k.controlsOf(s.text, child || s.chain, s.vars)
		if child {
			continue
		}
		// Whether this rule runs depends on the skips over it: their rules' inputs join its
		// key, and a skip decided by a rule the memo cannot read rules it out.
		in, noBody, ok := k.ruleInputs(s, trimmed)
		for i := range k.guards {
			g := &k.guards[i]
			ok = ok && g.ok
			in |= g.in
			noBody = noBody || g.noBody
			if g.marker == "" {
				g.n--
			}
		}
		k.guards = slices.DeleteFunc(k.guards, func(g guard) bool { return g.marker == "" && g.n <= 0 })
		if m := flowSkip.FindStringSubmatch(s.text); m != nil {
			own, ownNoBody, ownOK := k.ruleInputs(s, trimmed)
			g := guard{in: own, noBody: ownNoBody, ok: ownOK && !s.chain}
			if n, err := strconv.Atoi(m[2]); m[1] == "skip" && err == nil {
				g.n = n
			} else {
				g.marker = m[2]
			}
			k.guards = append(k.guards, g)
		}
		if ok && !s.chain {
			k.rules = append(k.rules, memoRule{id: s.id, inputs: in, noBody: noBody})
		}
	}
}

// guard is a skip or skipAfter over the rules that follow, up to its marker or for its next
// n rules, decided by a rule with inputs in (ok: a rule the memo can read).
type guard struct {
	marker string
	n      int
	in     inputGroup
	noBody bool
	ok     bool
}

// ruleInputs returns the inputs of a single SecRule of phase 1 or 2 whose operator has no
// macro, or false.
func (k *ruleMemo) ruleInputs(s crsStatement, trimmed string) (inputGroup, bool, bool) {
	if s.id == 0 || !strings.HasPrefix(trimmed, "SecRule ") || s.vars == "" {
		return 0, false, false
	}
	op := memoOperatorPart.FindStringSubmatch(strings.ReplaceAll(trimmed, "\\\n", " "))
	if op == nil || strings.Contains(op[1], "%{") {
		return 0, false, false
	}
	if phase := stmtPhase.FindStringSubmatch(s.text); phase != nil && phase[1] != "1" && phase[1] != "2" && phase[1] != "request" {
		return 0, false, false
	}
	return k.inputsOf(s.vars)
}

// controlsOf records the runtime controls of a rule statement (or of the directives):
// inChain is true for a statement of a chain, whose controls depend on every rule of it.
func (k *ruleMemo) controlsOf(text string, inChain bool, vars string) {
	if ctlUnsafe.MatchString(text) {
		k.unsafe = true
	}
	var c control
	for _, m := range ctlRemoveByID.FindAllStringSubmatch(text, -1) {
		lo, _ := strconv.Atoi(m[1])
		hi := lo
		if m[2] != "" {
			hi, _ = strconv.Atoi(m[2])
		}
		c.ranges = append(c.ranges, [2]int{lo, hi})
	}
	if len(c.ranges) > 0 {
		if !inChain && strings.HasPrefix(strings.TrimSpace(text), "SecRule ") {
			c.vars = vars
		}
		k.controls = append(k.controls, c)
	}
}

// inputsOf returns the inputs a rule's variables derive from (and whether it reads body
// variables), or false if one is not covered.
func (k *ruleMemo) inputsOf(vars string) (in inputGroup, noBody, ok bool) {
	if vars == "" || strings.ContainsAny(vars, `"'`) {
		return 0, false, false
	}
	for _, v := range strings.Split(vars, "|") {
		if strings.HasPrefix(v, "!") {
			continue
		}
		v = strings.TrimPrefix(v, "&") // a count derives from the same inputs as the values
		name, key, keyed := strings.Cut(v, ":")
		name = strings.ToUpper(name)
		switch {
		case slices.Contains(lineVariables, name):
			in |= inputLine
		case slices.Contains(bodyVariables, name):
			in |= inputLine
			noBody = true
		case slices.Contains(headerVariables, name):
			in |= inputAllHeaders
		case name == "REQUEST_HEADERS":
			if !keyed || key == "" || strings.HasPrefix(key, "/") {
				in |= inputAllHeaders
				continue
			}
			i := slices.Index(k.headers, strings.ToLower(key))
			if i < 0 {
				if len(k.headers) >= 48 {
					in |= inputAllHeaders
					continue
				}
				k.headers = append(k.headers, strings.ToLower(key))
				i = len(k.headers) - 1
			}
			in |= inputHeader << i
		default:
			return 0, false, false
		}
	}
	return in, noBody, true
}

// finish adds to each rule a runtime control can reach the inputs of the rule deciding the
// control (or drops the rule when that rule is not readable), and readies the store.
func (k *ruleMemo) finish(directives string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	chained := false
	for _, s := range splitCRS(directives) {
		if s.rule {
			k.controlsOf(s.text, chained || s.chain, s.vars)
			chained = s.chain
		}
	}
	if k.unsafe {
		k.rules = nil
	}
	kept := k.rules[:0]
rules:
	for _, r := range k.rules {
		for _, c := range k.controls {
			for _, rg := range c.ranges {
				if r.id < rg[0] || r.id > rg[1] {
					continue
				}
				in, noBody, ok := k.inputsOf(c.vars)
				if !ok {
					continue rules
				}
				r.inputs |= in
				r.noBody = r.noBody || noBody
			}
		}
		kept = append(kept, r)
	}
	k.rules = kept
	k.seeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}
	k.cur, k.old = map[[2]uint64]struct{}{}, map[[2]uint64]struct{}{}
}

// requestInputs are the digests of one request's inputs.
type requestInputs struct {
	line, all [2]uint64
	named     [][2]uint64
	body      bool // the request has a body (or one of unknown length)
}

// digest hashes the inputs of a request as inspect gives them to Coraza.
func (k *ruleMemo) digest(r *http.Request, uri string) *requestInputs {
	var h [2]maphash.Hash
	for i := range h {
		h[i].SetSeed(k.seeds[i])
	}
	sum := func() [2]uint64 { return [2]uint64{h[0].Sum64(), h[1].Sum64()} }
	write := func(parts ...string) {
		for _, p := range parts {
			for i := range h {
				var n [8]byte
				binary.LittleEndian.PutUint64(n[:], uint64(len(p))) // length-prefixed: no ambiguity
				_, _ = h[i].Write(n[:])
				_, _ = h[i].WriteString(p)
			}
		}
	}
	reset := func() {
		for i := range h {
			h[i].Reset()
		}
	}
	write(r.Method, uri, r.Proto, r.URL.Path)
	in := &requestInputs{line: sum(), body: r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0}

	headers := inspectedHeaders(r)
	reset()
	names := make([]string, 0, len(headers))
	for n := range headers {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		write(n)
		write(headers[n]...)
		write("\x00end")
	}
	in.all = sum()
	in.named = make([][2]uint64, len(k.headers))
	for i, n := range k.headers {
		reset()
		write(n)
		write(headers[n]...)
		in.named[i] = sum()
	}
	return in
}

// inspectedHeaders are the headers as inspect adds them to the transaction.
func inspectedHeaders(r *http.Request) map[string][]string {
	out := make(map[string][]string, len(r.Header)+2)
	for k, vs := range r.Header {
		out[wafHeaderName(k)] = append(out[wafHeaderName(k)], vs...)
	}
	if r.Host != "" {
		out["host"] = append(out["host"], r.Host)
	}
	if r.ContentLength >= 0 && r.Body != nil && r.Body != http.NoBody && r.Header.Get("Content-Length") == "" {
		out["content-length"] = append(out["content-length"], strconv.FormatInt(r.ContentLength, 10))
	}
	if len(r.TransferEncoding) > 0 {
		out["transfer-encoding"] = append(out["transfer-encoding"], r.TransferEncoding...)
	}
	return out
}

// key is a rule's outcome key for a request: its id and the digests of its inputs, folded
// with a mixing function (the digests are already keyed hashes, so the fold needs no key of
// its own; it only has to spread them).
func (k *ruleMemo) key(rule memoRule, in *requestInputs) [2]uint64 {
	a, b := mix64(uint64(rule.id)^0x9e3779b97f4a7c15), mix64(uint64(rule.id)^0xc2b2ae3d27d4eb4f)
	add := func(d [2]uint64) {
		a, b = mix64(a^d[0]), mix64(b^d[1])
	}
	if rule.inputs&inputLine != 0 {
		add(in.line)
	}
	if rule.inputs&inputAllHeaders != 0 {
		add(in.all)
	}
	for i := range k.headers {
		if rule.inputs&(inputHeader<<i) != 0 {
			add(in.named[i])
		}
	}
	return [2]uint64{a, b}
}

// mix64 is SplitMix64's finalizer.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// known returns the rules already known not to match this request's inputs, and every
// memoizable rule's key (for remember).
func (k *ruleMemo) known(in *requestInputs) (skip []int, keys [][2]uint64) {
	keys = make([][2]uint64, len(k.rules))
	k.mu.Lock()
	defer k.mu.Unlock()
	for i, r := range k.rules {
		if r.noBody && in.body {
			continue // its body variables have values: not the memo's to answer
		}
		keys[i] = k.key(r, in)
		_, hit := k.cur[keys[i]]
		if !hit {
			if _, hit = k.old[keys[i]]; hit {
				k.cur[keys[i]] = struct{}{}
			}
		}
		if hit {
			skip = append(skip, r.id)
		}
	}
	return skip, keys
}

// remember records that the memoizable rules outside matched did not match their inputs
// (called only for transactions that ran every rule: no interruption).
func (k *ruleMemo) remember(keys [][2]uint64, matched map[int]bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for i, r := range k.rules {
		if matched[r.id] || keys[i] == [2]uint64{} { // matched, or not the memo's (a body)
			continue
		}
		if len(k.cur) >= ruleMemoMax {
			k.old, k.cur = k.cur, make(map[[2]uint64]struct{}, ruleMemoMax)
		}
		k.cur[keys[i]] = struct{}{}
	}
}

// ruleRemover is Coraza's transaction method behind ctl:ruleRemoveById.
type ruleRemover interface{ RemoveRuleByID(id int) }

package crs

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
	// and the path's); the memo answers for it alone only on requests without a body.
	noBody bool
	// split: a single rule whose body variables are its own targets (no chain, and no skip
	// or control decided by a body): "it did not match" then says that none of its values
	// from the line and headers matched, whatever the body was, and with the body's values
	// unable to match (rulePrune's bodyClean, index prune) it cannot match at all.
	split bool
	prune int
	// perValue: a split rule no skip or runtime control can keep from running: when it ran
	// and did not match, none of the body's names and values it read matched, and the memo
	// keeps that per value (valueKey), so a later body with the same names and values (an
	// endpoint's field names, enum values, ids) is vouched for too.
	perValue bool
}

// control is a runtime control (ctl:ruleRemoveById / ruleRemoveTargetById) of the rules in
// ranges, decided by a rule reading vars (empty: not a single rule the memo can read).
type control struct {
	ranges [][2]int
	vars   string
}

var (
	ctlRemoveByID   = regexp.MustCompile(`ctl:ruleRemove(?:Target)?ById=(\d+)(?:-(\d+))?`)
	ctlUnsafe       = regexp.MustCompile(`ctl:(?:ruleRemoveByTag|ruleRemoveByMsg|ruleRemoveTargetByTag|ruleRemoveTargetByMsg|ruleEngine)`)
	flowSkip        = regexp.MustCompile(`[",\s](skip|skipAfter):([^,"\s\\]+)`)
	lineVariables   = []string{"REQUEST_LINE", "REQUEST_METHOD", "REQUEST_PROTOCOL", "REQUEST_URI", "REQUEST_URI_RAW", "REQUEST_FILENAME", "REQUEST_BASENAME", "QUERY_STRING", "ARGS_GET", "ARGS_GET_NAMES", "ARGS_PATH"}
	headerVariables = []string{"REQUEST_HEADERS_NAMES", "REQUEST_COOKIES", "REQUEST_COOKIES_NAMES"}
	bodyVariables   = []string{"ARGS", "ARGS_NAMES", "ARGS_POST", "ARGS_POST_NAMES", "XML", "FILES", "FILES_NAMES", "REQUEST_BODY", "REQUEST_BODY_LENGTH", "ARGS_COMBINED_SIZE", "FILES_COMBINED_SIZE", "FILES_SIZES"}
)

// ruleMemo holds the memoizable rules (collected at load) and the outcomes.
type ruleMemo struct {
	mu       sync.Mutex
	rules    []memoRule
	controls []control
	seq      []crsStatement // the loaded statements, until finish
	unsafe   bool           // a control the memo cannot account for: no memo at all
	// tx is which TX variables the loaded rules and the directives set (txUsage).
	tx      *txUsage
	headers []string // named header inputs (lower case), bit inputHeader<<index
	seeds   [2]maphash.Seed

	cur, old map[[2]uint64]struct{}
}

// collect records the statements of one compiled file, in load order; finish reads them.
func (k *ruleMemo) collect(stmts []crsStatement) {
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.seq = append(k.seq, stmts...)
}

// unit is a rule with its chained rules, or a marker.
type unit struct {
	stmts  []crsStatement
	marker string
}

func units(stmts []crsStatement) []unit {
	var out []unit
	chained := false
	for _, s := range stmts {
		trimmed := strings.TrimSpace(s.text)
		if name, ok := strings.CutPrefix(trimmed, "SecMarker"); ok {
			out = append(out, unit{marker: strings.Trim(strings.TrimSpace(name), `"'`)})
			continue
		}
		if !s.rule {
			continue
		}
		if chained && len(out) > 0 {
			out[len(out)-1].stmts = append(out[len(out)-1].stmts, s)
		} else {
			out = append(out, unit{stmts: []crsStatement{s}})
		}
		chained = s.chain
	}
	return out
}

// memoizable walks the loaded rules in order and keeps those whose outcome the memo can
// vouch for, with their inputs.
func (k *ruleMemo) memoizable() {
	var guards []guard // the skips in force
	for _, u := range units(k.seq) {
		if u.marker != "" {
			guards = slices.DeleteFunc(guards, func(g guard) bool { return g.marker == u.marker })
			continue
		}
		for _, st := range u.stmts {
			k.controlsOf(st.text, len(u.stmts) > 1, st.vars)
		}
		// Whether this rule runs depends on the skips over it: their rules' inputs join its
		// key, and a skip decided by a rule the memo cannot read rules it out.
		in, noBody, ok := k.unitInputs(u)
		split := len(u.stmts) == 1
		unguarded := len(guards) == 0
		for i := range guards {
			g := &guards[i]
			ok = ok && g.ok
			in |= g.in
			noBody = noBody || g.noBody
			split = split && !g.noBody
			if g.marker == "" {
				g.n--
			}
		}
		guards = slices.DeleteFunc(guards, func(g guard) bool { return g.marker == "" && g.n <= 0 })
		if m := flowSkip.FindStringSubmatch(u.stmts[0].text); m != nil {
			own, ownNoBody, ownOK := k.unitInputs(u)
			g := guard{in: own, noBody: ownNoBody, ok: ownOK}
			if n, err := strconv.Atoi(m[2]); m[1] == "skip" && err == nil {
				g.n = n
			} else {
				g.marker = m[2]
			}
			guards = append(guards, g)
		}
		if ok {
			k.rules = append(k.rules, memoRule{id: u.stmts[0].id, inputs: in, noBody: noBody, split: split, prune: -1, perValue: split && unguarded})
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

var (
	operatorMacro = regexp.MustCompile(`%\{([^}]*)\}`)
	sideEffect    = regexp.MustCompile(`[",\s](?:setvar|ctl|exec|initcol|setenv|expirevar|deprecatevar|setuid|setsid):`)
)

// unitInputs returns the inputs of a SecRule of phase 1 or 2 (with its chained rules) whose
// operators' macros are constants, or false. A chain qualifies only without side effects
// before its last rule (a rule that matches runs its setvar even when a rule chained after
// it then fails, so a chain could change TX without matching).
func (k *ruleMemo) unitInputs(u unit) (inputGroup, bool, bool) {
	parent := u.stmts[0]
	trimmed := strings.TrimSpace(parent.text)
	if parent.id == 0 || !strings.HasPrefix(trimmed, "SecRule ") {
		return 0, false, false
	}
	if phase := stmtPhase.FindStringSubmatch(parent.text); phase != nil && phase[1] != "1" && phase[1] != "2" && phase[1] != "request" {
		return 0, false, false
	}
	var in inputGroup
	var noBody bool
	for i, st := range u.stmts {
		t := strings.TrimSpace(st.text)
		// A rule of a chain runs its own actions when it matches, whether or not the rules
		// after it then match: only the last may have side effects (on a full match only).
		if !strings.HasPrefix(t, "SecRule ") || st.vars == "" || i < len(u.stmts)-1 && sideEffect.MatchString(st.text) {
			return 0, false, false
		}
		op, _, ok := operatorAndActions(strings.ReplaceAll(t, "\\\n", " "), st.vars)
		if !ok {
			return 0, false, false
		}
		for _, m := range operatorMacro.FindAllStringSubmatch(op, -1) {
			name, isTX := strings.CutPrefix(strings.ToLower(m[1]), "tx.")
			if !isTX || !k.tx.fixed(name) {
				return 0, false, false
			}
		}
		vin, vNoBody, ok := k.inputsOf(st.vars, i > 0)
		if !ok {
			return 0, false, false
		}
		in |= vin
		noBody = noBody || vNoBody
	}
	return in, noBody, true
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
func (k *ruleMemo) inputsOf(vars string, child bool) (in inputGroup, noBody, ok bool) {
	targets, ok := ruleTargets(vars)
	if !ok {
		return 0, false, false
	}
	// A count (&VAR) derives from the same inputs as the values.
	for _, t := range targets {
		switch {
		case slices.Contains(lineVariables, t.name):
			in |= inputLine
		case slices.Contains(bodyVariables, t.name):
			in |= inputLine
			noBody = true
		case slices.Contains(headerVariables, t.name):
			in |= inputAllHeaders
		case t.name == "TX" && t.key != "" && !strings.HasPrefix(t.key, "/") &&
			(k.tx.fixed(strings.ToLower(t.key)) || child && len(t.key) == 1 && t.key[0] >= '0' && t.key[0] <= '9'):
			// a constant, or (in a chained rule) a capture of the rule before it
		case child && slices.Contains([]string{"MATCHED_VAR", "MATCHED_VARS", "MATCHED_VAR_NAME", "MATCHED_VARS_NAMES"}, t.name):
			// what the rule before it matched, itself from the same inputs
		case t.name == "REQUEST_HEADERS":
			if i := headerIndex(&k.headers, t); i >= 0 {
				in |= inputHeader << i
			} else {
				in |= inputAllHeaders
			}
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
	dir := splitCRS(directives)
	texts := ruleTexts(directives)
	for _, st := range k.seq {
		if st.rule {
			texts = append(texts, st.text)
		}
	}
	k.tx = txUsageOf(texts)
	k.memoizable()
	for _, u := range units(dir) {
		for _, st := range u.stmts {
			k.controlsOf(st.text, len(u.stmts) > 1, st.vars)
		}
	}
	k.seq = nil
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
				in, noBody, ok := k.inputsOf(c.vars, false)
				if !ok {
					continue rules
				}
				r.inputs |= in
				r.noBody = r.noBody || noBody
				r.split = r.split && !noBody
				r.perValue = false
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

// linkPrune gives each split rule its index among the prunable rules (-1: none).
func (k *ruleMemo) linkPrune(p *rulePrune) {
	for i := range k.rules {
		k.rules[i].prune = -1
		for j := range p.rules {
			if p.rules[j].id == k.rules[i].id {
				k.rules[i].prune = j
			}
		}
	}
}

// bodyFacts is what pruning found of a request's body, for the split rules: per prunable
// rule, whether no value of the body can make it match (clean) or which values could
// (dirty, bits by alphabet index, see rulePrune.dirtyValues), and the identities of the
// body's names and values (nil: not keyed).
type bodyFacts struct {
	clean []bool
	dirty [][2]uint64
	keys  *[2][]valueKey
}

// valueMemoKey is the memo's key for "rule id did not match the body value v".
func valueMemoKey(id int, v [2]uint64) [2]uint64 {
	return [2]uint64{mix64(v[0] ^ mix64(uint64(id)^0x243f6a8885a308d3)), mix64(v[1] ^ mix64(uint64(id)^0x13198a2e03707344))}
}

// pendingValues are the value keys remember stores for a rule that runs and does not match.
type pendingValues struct {
	rule int // index in rules
	keys [][2]uint64
}

// known returns the rules already known not to match this request's inputs, the keys
// remember should store (zero for the rules known already or not the memo's), and the value
// keys of the per-value rules that run. body (nil: no pruning) tells what no value of the
// body can make match: a split rule known clean on the line and headers is then known clean,
// and a per-value rule also when every body value that could match is known not to.
func (k *ruleMemo) known(in *requestInputs, body *bodyFacts) (skip []int, keys [][2]uint64, values []pendingValues) {
	keys = make([][2]uint64, len(k.rules))
	for i, r := range k.rules { // the rules, headers and seeds are fixed after finish
		// With a body, its body variables have values: the memo answers only for the rest
		// of a split rule's values.
		if !(r.noBody && in.body) || r.split && r.prune >= 0 && body != nil {
			keys[i] = k.key(r, in)
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for i, r := range k.rules {
		if keys[i] == [2]uint64{} {
			continue
		}
		hit := k.has(keys[i])
		bodyPart := r.noBody && in.body
		if !bodyPart || body.clean[r.prune] {
			if hit {
				skip = append(skip, r.id)
				keys[i] = [2]uint64{} // already remembered
			}
			continue
		}
		// A split rule on a request with a body some value of which could match.
		var pending [][2]uint64
		if r.perValue && body.keys != nil {
			pending = k.unknownValues(r, body)
		}
		switch {
		case hit && pending != nil && len(pending) == 0:
			skip = append(skip, r.id)
			keys[i] = [2]uint64{}
		case hit:
			keys[i] = [2]uint64{}
			fallthrough
		default:
			if len(pending) > 0 {
				values = append(values, pendingValues{rule: i, keys: pending})
			}
		}
	}
	return skip, keys, values
}

// unknownValues returns the value keys of rule r the memo does not know among the body
// values that could match it (nil: one cannot be told apart; empty: all known).
func (k *ruleMemo) unknownValues(r memoRule, body *bodyFacts) [][2]uint64 {
	out := [][2]uint64{}
	for s, vs := range body.keys {
		dirty := body.dirty[r.prune][s]
		if dirty == 0 {
			continue
		}
		for _, v := range vs {
			if v.each < 64 && dirty&(1<<v.each) == 0 {
				continue
			}
			if key := valueMemoKey(r.id, v.key); !k.has(key) {
				out = append(out, key)
			}
		}
	}
	return out
}

// has reports whether the memo holds key (k.mu held), refreshing it from the old generation.
func (k *ruleMemo) has(key [2]uint64) bool {
	if _, ok := k.cur[key]; ok {
		return true
	}
	if _, ok := k.old[key]; ok {
		k.store(key)
		return true
	}
	return false
}

// store adds key (k.mu held).
func (k *ruleMemo) store(key [2]uint64) {
	if len(k.cur) >= ruleMemoMax {
		k.old, k.cur = k.cur, make(map[[2]uint64]struct{}, ruleMemoMax)
	}
	k.cur[key] = struct{}{}
}

// remember records that the memoizable rules outside matched did not match their inputs,
// and the per-value rules their values (called only for transactions that ran every rule:
// no interruption).
func (k *ruleMemo) remember(keys [][2]uint64, values []pendingValues, matched map[int]bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for i, r := range k.rules {
		if matched[r.id] || keys[i] == [2]uint64{} { // matched, known already, or not the memo's
			continue
		}
		k.store(keys[i])
	}
	for _, pv := range values {
		if matched[k.rules[pv.rule].id] {
			continue
		}
		for _, key := range pv.keys {
			k.store(key)
		}
	}
}

// ruleRemover is Coraza's transaction method behind ctl:ruleRemoveById.
type ruleRemover interface{ RemoveRuleByID(id int) }

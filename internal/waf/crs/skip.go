package crs

import (
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/corazawaf/coraza/v3/types"
)

// Rules with nothing to inspect are not evaluated.
//
// A CRS rule is evaluated against the values of its target variables; when none of them has
// a value in a request, its operator never runs and the rule cannot match (Coraza runs the
// operator once per value; actions run only on a match; a chained rule runs only after its
// parent matched). Coraza still pays its fixed engine work for every such rule (the RULE
// collection, every target looked up and excluded, buffers), which is most of the WAF's cost
// on requests without arguments, cookies or a body: an authenticated GET with no query has no
// argument for the ~100 argument rules of 930-942 to look at. So before the rules run, the
// rules whose every target is empty in this request are removed from its transaction
// (RemoveRuleByIDRange, the mechanism of ctl:ruleRemoveById). Which targets count:
//
//   - ARGS, ARGS_NAMES: the query's arguments, the path arguments (addPathArguments) and the
//     body's; ARGS_GET(_NAMES): the query's; ARGS_PATH: the path's;
//   - ARGS_POST(_NAMES), XML, FILES, FILES_NAMES: the body's (a request with a body, or one
//     whose length is unknown, has them);
//   - REQUEST_COOKIES(_NAMES): a Cookie header;
//   - REQUEST_HEADERS:<name>: that header.
//
// Any other target (the URI, the filename, all headers, TX, a count such as &ARGS, ...)
// makes the rule always evaluated, as does a load-time target update that adds a target.
// Exclusions (!VAR) only remove values and are ignored. The CRS regression corpus runs
// through this (TestWAFCRSRegressionCorpus).

type contentMask uint64

const (
	contentQuery contentMask = 1 << iota
	contentPath
	contentBody
	contentCookies
	contentHeaders // first bit of the header targets
)

// skippableRule is a loaded rule that needs one of its targets' content to be evaluated.
type skippableRule struct {
	id    int
	needs contentMask
}

// ruleSkips collects, while the rule files load, what each rule inspects; finish turns it
// into per-request removal ranges.
type ruleSkips struct {
	mu sync.Mutex
	// loaded are the ids of every loaded rule (skippable or not), sorted by finish.
	loaded    []int
	skippable []skippableRule
	// added are rules a target update gives a new target (never skipped); all: one added
	// targets by tag or message (nothing is skipped).
	added    map[int]bool
	addedAll bool
	headers  []string // header targets (lower case), bit contentHeaders<<index

	index    map[int]int // id → position in loaded
	skipped  sync.Map    // contentMask → []uint64 (skipBits), at most maxSkipSets of them
	nSkipped atomic.Int64
}

var (
	stmtPhase  = regexp.MustCompile(`[",\s]phase:(\d|request|response|logging)`)
	updateStmt = regexp.MustCompile(`^SecRuleUpdateTargetBy(Id|Tag|Msg)\s+(\S+)\s+"([^"]*)"`)
)

// collect records the rules of one compiled file.
func (k *ruleSkips) collect(stmts []crsStatement) {
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.added == nil {
		k.added = map[int]bool{}
	}
	chained := false
	for _, s := range stmts {
		trimmed := strings.TrimSpace(s.text)
		if m := updateStmt.FindStringSubmatch(trimmed); m != nil {
			for _, t := range strings.Split(m[3], "|") {
				if strings.HasPrefix(t, "!") {
					continue
				}
				if id, err := strconv.Atoi(m[2]); err == nil && m[1] == "Id" {
					k.added[id] = true
				} else {
					k.addedAll = true
				}
			}
			continue
		}
		if !s.rule {
			continue
		}
		child := chained
		chained = s.chain
		if child || s.id == 0 {
			continue
		}
		k.loaded = append(k.loaded, s.id)
		if !strings.HasPrefix(trimmed, "SecRule ") || s.vars == "" {
			continue // SecAction, or variables this parser does not read
		}
		if phase := requestPhase(s); phase > 0 {
			if needs, ok := k.needsOf(s.vars, phase); ok {
				k.skippable = append(k.skippable, skippableRule{id: s.id, needs: needs})
			}
		}
	}
}

// requestPhase is the phase a rule runs in on requests, 1 or 2 (default 2); 0 for the
// response and logging phases, which are not run on requests here.
func requestPhase(s crsStatement) int {
	switch phaseName(s) {
	case "1":
		return 1
	case "2":
		return 2
	}
	return 0
}

// needsOf returns the content a rule's targets need, or false when one target is always
// present (or not understood).
func (k *ruleSkips) needsOf(vars string, phase int) (contentMask, bool) {
	targets, ok := ruleTargets(vars)
	if !ok {
		return 0, false
	}
	var needs contentMask
	for _, t := range targets {
		if t.count {
			return 0, false // a count always has a value, 0 included
		}
		switch t.name {
		case "ARGS", "ARGS_NAMES":
			needs |= contentQuery | contentPath
			if phase >= 2 {
				needs |= contentBody
			}
		case "ARGS_GET", "ARGS_GET_NAMES":
			needs |= contentQuery
		case "ARGS_PATH":
			needs |= contentPath
		case "ARGS_POST", "ARGS_POST_NAMES", "XML", "FILES", "FILES_NAMES":
			if phase < 2 {
				continue // filled while the body is processed, after phase 1
			}
			needs |= contentBody
		case "REQUEST_COOKIES", "REQUEST_COOKIES_NAMES":
			needs |= contentCookies
		case "REQUEST_HEADERS":
			i := headerIndex(&k.headers, t)
			if i < 0 {
				return 0, false
			}
			needs |= contentHeaders << i
		default:
			return 0, false // always has a value
		}
	}
	return needs, true
}

// ruleTarget is one target of a rule's variable list that adds values (not an exclusion).
type ruleTarget struct {
	name  string // upper case
	key   string
	count bool // &VAR: the number of values
}

// ruleTargets parses a rule's variable list ("ARGS|!REQUEST_COOKIES:/__utm/|&ARGS:x"),
// dropping the exclusions (they only remove values); false for a list this parser does not
// read (quoted).
func ruleTargets(vars string) ([]ruleTarget, bool) {
	if vars == "" || strings.ContainsAny(vars, `"'`) {
		return nil, false
	}
	var out []ruleTarget
	for _, v := range strings.Split(vars, "|") {
		if strings.HasPrefix(v, "!") {
			continue
		}
		t := ruleTarget{count: strings.HasPrefix(v, "&")}
		name, key, _ := strings.Cut(strings.TrimPrefix(v, "&"), ":")
		t.name, t.key = strings.ToUpper(name), key
		out = append(out, t)
	}
	return out, true
}

// headerIndex is the index in names of a REQUEST_HEADERS target's header (lower case),
// added when new; -1 for a target naming no single header (no key, a regular expression) or
// past 48 headers (the bits of a mask).
func headerIndex(names *[]string, t ruleTarget) int {
	if t.key == "" || strings.HasPrefix(t.key, "/") {
		return -1
	}
	h := strings.ToLower(t.key)
	if i := slices.Index(*names, h); i >= 0 {
		return i
	}
	if len(*names) >= 48 {
		return -1
	}
	*names = append(*names, h)
	return len(*names) - 1
}

// finish sorts the loaded ids (with the ids of the rules the directives define: never
// skipped, they bound the removal ranges) and drops the rules a target update extended.
func (k *ruleSkips) finish(directives ...string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, d := range directives {
		for _, m := range stmtID.FindAllStringSubmatch(d, -1) {
			if id, err := strconv.Atoi(m[1]); err == nil {
				k.loaded = append(k.loaded, id)
			}
		}
	}
	slices.Sort(k.loaded)
	k.loaded = slices.Compact(k.loaded)
	k.index = make(map[int]int, len(k.loaded))
	for i, id := range k.loaded {
		k.index[id] = i
	}
	if k.addedAll {
		k.skippable = nil
	}
	k.skippable = slices.DeleteFunc(k.skippable, func(r skippableRule) bool { return k.added[r.id] })
}

// present is the content a request carries, as far as the skippable rules care.
func (k *ruleSkips) present(r *http.Request, query, pathArgs bool) contentMask {
	var m contentMask
	if query {
		m |= contentQuery
	}
	if pathArgs {
		m |= contentPath
	}
	if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
		m |= contentBody // a body, or one of unknown length
	}
	if len(r.Header["Cookie"]) > 0 {
		m |= contentCookies
	}
	// The headers as inspect hands them to Coraza: every header of the request (names in
	// lower case), plus host, content-length and transfer-encoding from the request's fields.
	for name, vs := range r.Header {
		if i := slices.Index(k.headers, wafHeaderName(name)); i >= 0 && len(vs) > 0 {
			m |= contentHeaders << i
		}
	}
	for i, h := range k.headers {
		if h == "host" && r.Host != "" || h == "transfer-encoding" && len(r.TransferEncoding) > 0 ||
			h == "content-length" && r.ContentLength >= 0 && r.Body != nil && r.Body != http.NoBody {
			m |= contentHeaders << i
		}
	}
	return m
}

// skipBits is the set of loaded rules (by position) a request carrying present skips.
func (k *ruleSkips) skipBits(present contentMask) []uint64 {
	if v, ok := k.skipped.Load(present); ok {
		return v.([]uint64)
	}
	bits := make([]uint64, (len(k.loaded)+63)/64)
	for _, r := range k.skippable {
		if r.needs&present == 0 {
			i := k.index[r.id]
			bits[i/64] |= 1 << (i % 64)
		}
	}
	// The header bits let clients pick among many masks: past the bound, compute each time.
	if k.nSkipped.Add(1) <= maxSkipSets {
		k.skipped.Store(present, bits)
	}
	return bits
}

// runs turns a set of loaded rules into id ranges, one per run of consecutive rules.
func (k *ruleSkips) runs(bits []uint64) [][2]int {
	var out [][2]int
	for i := 0; i < len(k.loaded); i++ {
		if bits[i/64]&(1<<(i%64)) == 0 {
			continue
		}
		j := i
		for j+1 < len(k.loaded) && bits[(j+1)/64]&(1<<((j+1)%64)) != 0 {
			j++
		}
		out = append(out, [2]int{k.loaded[i], k.loaded[j]})
		i = j
	}
	return out
}

// maxSkipSets bounds the cached skip sets (real clients send a handful of header sets).
const maxSkipSets = 4096

// removal gathers the rules left out of one transaction (skipped, pruned, known by the memo)
// and hands them to Coraza as id ranges: Coraza checks a removed id in a map it grows per
// insertion (about 200 ns each for the ~80 rules a request leaves out) and a range with one
// comparison per evaluated rule.
type removal struct {
	k     *ruleSkips
	bits  []uint64
	other []int // ids outside the loaded rules, removed one by one
}

// removal starts the removals of a request: the rules it skips when skip is set.
func (k *ruleSkips) removal(present contentMask, skip bool) *removal {
	rm := &removal{k: k, bits: make([]uint64, (len(k.loaded)+63)/64)}
	if skip {
		copy(rm.bits, k.skipBits(present))
	}
	return rm
}

func (rm *removal) add(id int) {
	if i, ok := rm.k.index[id]; ok {
		rm.bits[i/64] |= 1 << (i % 64)
		return
	}
	rm.other = append(rm.other, id)
}

// apply removes the gathered rules from the transaction.
func (rm *removal) apply(tx types.Transaction) {
	if ranges, ok := tx.(rangeRemover); ok {
		for _, rg := range rm.k.runs(rm.bits) {
			ranges.RemoveRuleByIDRange(rg[0], rg[1])
		}
	}
	if ids, ok := tx.(ruleRemover); ok {
		for _, id := range rm.other {
			ids.RemoveRuleByID(id)
		}
	}
}

// rangeRemover is Coraza's transaction method behind ctl:ruleRemoveById with a range.
type rangeRemover interface{ RemoveRuleByIDRange(start, end int) }

package crs

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/corazawaf/coraza/v3/experimental/plugins/plugintypes"
	"github.com/corazawaf/coraza/v3/types"
	"github.com/corazawaf/libinjection-go"
	"rsc.io/binaryregexp"
)

// The CRS detection operators (@rx, @detectSQLi, @detectXSS) are the bulk of the WAF's
// cost: Go's regexp runs each of ~100 large patterns over every header, argument name and
// value. ShopMind's rules use equivalent operators (the rule files are rewritten as they are
// read, see crsFS) that add two things and change no verdict:
//
//   - a result cache: the operators are pure functions of the (transformed) input, so the
//     outcome of an operator on a value, captures included, is remembered (values up to
//     wafMemoMaxValue bytes, a bounded two-generation cache). Most of what a request carries
//     repeats across requests: header values of the same clients (User-Agent, Accept...),
//     argument names (json.username), enum-like values, paths.
//   - a literal pre-filter for @rx (rxRequired): when every match of a pattern must contain
//     one of a few literals, an input containing none of them is not run through the regexp.
//     It is computed from the parsed pattern and is sound by construction (case folding
//     included); TestWAFOperatorsMatchCoraza checks it and the cache against Coraza's own
//     operators on the whole regression corpus.

const (
	opRx          = "shopmindRx"
	opDetectSQLi  = "shopmindDetectSQLi"
	opDetectXSS   = "shopmindDetectXSS"
	wafMemoShards = 32
	// wafMemoShardSize bounds each generation of a shard: at most
	// 2 x wafMemoShards x wafMemoShardSize remembered outcomes (about 20 MB at worst, with 256-byte values).
	wafMemoShardSize = 1024
	wafMemoMaxValue  = 256
)

// The cache: outcome of operator id on value.
type memoKey struct {
	op    uint32
	value string
}

type memoEntry struct {
	match bool
	// caps are the captures of a match (nil: not captured yet).
	caps []string
}

type memoShard struct {
	mu       sync.RWMutex
	cur, old map[memoKey]memoEntry
}

// operatorCache remembers the outcome of one WAF's detection operators per operator and
// value: a bounded two-generation map in shards. A nil cache remembers nothing.
type operatorCache struct {
	shards [wafMemoShards]memoShard
	nextID atomic.Uint32
	off    *atomic.Bool // the WAF's cachesOff
	// the transactions being timed (startBudget): how many, and their budgets by transaction
	budgeted atomic.Int32
	budgets  sync.Map
}

// inspectBudget is the time budget of one transaction (WAF.inspect starts it for large
// requests): the cached operators check it every budgetEvery evaluations and, past the
// deadline, interrupt the transaction (budgetRuleID), so the rules stop at the next rule.
type inspectBudget struct {
	deadline time.Time
	n        atomic.Uint32
	over     atomic.Bool
}

const budgetEvery = 64

// startBudget times tx against deadline until the returned function is called.
func (c *operatorCache) startBudget(tx types.Transaction, deadline time.Time) (done func()) {
	c.budgeted.Add(1)
	c.budgets.Store(any(tx), &inspectBudget{deadline: deadline})
	return func() {
		c.budgets.Delete(any(tx))
		c.budgeted.Add(-1)
	}
}

// overBudget reports whether tx ran past its budget, interrupting it the first time. One
// atomic load when no large request is being inspected.
func (c *operatorCache) overBudget(tx plugintypes.TransactionState) bool {
	if c == nil || c.budgeted.Load() == 0 {
		return false
	}
	v, ok := c.budgets.Load(any(tx))
	if !ok {
		return false
	}
	b := v.(*inspectBudget)
	if b.over.Load() {
		return true
	}
	if b.n.Add(1)%budgetEvery != 1 || time.Now().Before(b.deadline) {
		return false
	}
	b.over.Store(true)
	tx.Interrupt(&types.Interruption{RuleID: budgetRuleID, Action: "deny", Status: 413})
	return true
}

// operatorCacheOf is the cache of the WAF whose rules an operator is built for (nil for rules
// not loaded through a crsFS).
func operatorCacheOf(o plugintypes.OperatorOptions) *operatorCache {
	if root, ok := o.Root.(crsFS); ok {
		return root.operators
	}
	return nil
}

func (c *operatorCache) newID() uint32 {
	if c == nil {
		return 0
	}
	return c.nextID.Add(1)
}

// shardOf spreads the operators (about 200 of them) over the shards: no second hash of the
// value.
func (c *operatorCache) shardOf(op uint32) *memoShard { return &c.shards[op%wafMemoShards] }

func (c *operatorCache) get(op uint32, value string) (memoEntry, bool) {
	if c == nil || len(value) > wafMemoMaxValue || c.off.Load() {
		return memoEntry{}, false
	}
	s := c.shardOf(op)
	k := memoKey{op, value}
	s.mu.RLock()
	e, ok := s.cur[k]
	if !ok {
		e, ok = s.old[k]
	}
	s.mu.RUnlock()
	return e, ok
}

func (c *operatorCache) put(op uint32, value string, e memoEntry) {
	if c == nil || len(value) > wafMemoMaxValue || c.off.Load() {
		return
	}
	s := c.shardOf(op)
	k := memoKey{op, strings.Clone(value)}
	s.mu.Lock()
	if s.cur == nil || len(s.cur) >= wafMemoShardSize {
		s.old, s.cur = s.cur, make(map[memoKey]memoEntry, wafMemoShardSize)
	}
	s.cur[k] = e
	s.mu.Unlock()
}

// memoRx is @rx with the cache and the literal pre-filter. Its matching is Coraza's: the
// pattern runs in (?sm) mode, patterns that match bytes which are not UTF-8 use
// rsc.io/binaryregexp, and a capturing rule gets up to 9 captures.
type memoRx struct {
	cache  *operatorCache
	id     uint32
	re     *regexp.Regexp
	bin    *binaryregexp.Regexp
	needle []string // one of these (lowercase) is in every match; nil: no pre-filter
	bytes  *byteSet // one of these bytes is in every match; nil: no pre-filter
}

// rxArgsSeen, when set (tests), collects the patterns newMemoRx compiles.
var rxArgsSeen atomic.Pointer[sync.Map]

func newMemoRx(o plugintypes.OperatorOptions) (plugintypes.Operator, error) {
	if seen := rxArgsSeen.Load(); seen != nil {
		seen.Store(o.Arguments, true)
	}
	cache := operatorCacheOf(o)
	op := &memoRx{cache: cache, id: cache.newID()}
	data := "(?sm)" + o.Arguments
	if matchesArbitraryBytes(data) {
		re, err := binaryregexp.Compile(o.Arguments)
		if err != nil {
			return nil, err
		}
		op.bin = re
		return op, nil
	}
	re, err := regexp.Compile(data)
	if err != nil {
		return nil, err
	}
	op.re = re
	if parsed, err := syntax.Parse(data, syntax.Perl); err == nil {
		simple := parsed.Simplify()
		if lits, ok := rxRequired(simple); ok {
			op.needle = lits
		}
		if set, ok := rxRequiredBytes(simple); ok {
			op.bytes = &set
		}
	}
	return op, nil
}

func (o *memoRx) Evaluate(tx plugintypes.TransactionState, value string) bool {
	if o.cache.overBudget(tx) {
		return false
	}
	// The pre-filter first: it answers most inputs without touching the cache.
	if o.needle != nil && !containsAnyFolded(value, o.needle) || o.bytes != nil && !o.bytes.in(value) {
		return false
	}
	capturing := tx.Capturing()
	if e, ok := o.cache.get(o.id, value); ok && (!e.match || !capturing || e.caps != nil) {
		if e.match && capturing {
			for i, c := range e.caps {
				tx.CaptureField(i, c)
			}
		}
		return e.match
	}
	var caps []string
	var match bool
	switch {
	case o.bin != nil && capturing:
		m := o.bin.FindStringSubmatch(value)
		match = m != nil
		for i, c := range m {
			if i == 9 {
				break
			}
			caps = append(caps, c)
		}
	case o.bin != nil:
		match = o.bin.MatchString(value)
	case capturing:
		// Most inputs do not match: find that out without tracking captures (Go's matcher
		// is markedly cheaper without them), and capture only on a match.
		if !o.re.MatchString(value) {
			break
		}
		m := o.re.FindStringSubmatchIndex(value)
		match = m != nil
		for i := 0; i < len(m)/2 && i < 9; i++ {
			c := ""
			if m[2*i] >= 0 {
				c = value[m[2*i]:m[2*i+1]]
			}
			caps = append(caps, c)
		}
	default:
		match = o.re.MatchString(value)
	}
	if match && capturing {
		for i, c := range caps {
			tx.CaptureField(i, c)
		}
		for i := range caps {
			caps[i] = strings.Clone(caps[i])
		}
		if caps == nil {
			caps = []string{}
		}
	}
	o.cache.put(o.id, value, memoEntry{match: match, caps: caps})
	return match
}

// memoInjection is @detectSQLi / @detectXSS (libinjection) with the cache.
type memoInjection struct {
	cache *operatorCache
	id    uint32
	sqli  bool
}

func (o *memoInjection) Evaluate(tx plugintypes.TransactionState, value string) bool {
	if o.cache.overBudget(tx) {
		return false
	}
	if e, ok := o.cache.get(o.id, value); ok {
		if e.match && len(e.caps) == 1 {
			tx.CaptureField(0, e.caps[0])
		}
		return e.match
	}
	var e memoEntry
	if o.sqli {
		var fingerprint string
		e.match, fingerprint = libinjection.IsSQLi(value)
		if e.match {
			tx.CaptureField(0, fingerprint)
			e.caps = []string{strings.Clone(fingerprint)}
		}
	} else {
		e.match = libinjection.IsXSS(value)
	}
	o.cache.put(o.id, value, e)
	return e.match
}

// rxRequired returns literals (lowercase ASCII) one of which occurs in every match of re,
// compared against the input with ASCII case folding (and the two non-ASCII runes that fold
// to ASCII letters, U+017F and U+212A), so it holds whether or not the pattern folds case.
func rxRequired(re *syntax.Regexp) ([]string, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		var b strings.Builder
		for _, r := range re.Rune {
			if r >= utf8.RuneSelf {
				return nil, false
			}
			b.WriteByte(byte(unicode.ToLower(r)))
		}
		if b.Len() == 0 {
			return nil, false
		}
		return []string{b.String()}, true
	case syntax.OpCapture, syntax.OpPlus:
		return rxRequired(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return rxRequired(re.Sub[0])
		}
		return nil, false
	case syntax.OpConcat:
		var best []string
		bestLen := 0
		for _, sub := range re.Sub {
			lits, ok := rxRequired(sub)
			if !ok {
				continue
			}
			shortest := len(lits[0])
			for _, l := range lits {
				shortest = min(shortest, len(l))
			}
			// Prefer longer literals, then fewer of them.
			if best == nil || shortest > bestLen || shortest == bestLen && len(lits) < len(best) {
				best, bestLen = lits, shortest
			}
		}
		return best, best != nil
	case syntax.OpAlternate:
		var all []string
		for _, sub := range re.Sub {
			lits, ok := rxRequired(sub)
			if !ok {
				return nil, false
			}
			all = append(all, lits...)
			if len(all) > 24 {
				return nil, false
			}
		}
		slices.Sort(all)
		return slices.Compact(all), len(all) > 0
	}
	return nil, false
}

// byteSet is a set of bytes, one of which is in every match of a pattern.
type byteSet [256]bool

func (b *byteSet) in(s string) bool {
	for i := 0; i < len(s); i++ {
		if b[s[i]] {
			return true
		}
	}
	return false
}

func (b *byteSet) size() int {
	n := 0
	for _, in := range b {
		if in {
			n++
		}
	}
	return n
}

// maxByteSet bounds a useful byte set: beyond it nearly every input passes.
const maxByteSet = 48

// rxRequiredBytes returns a set of bytes one of which occurs in every match of re. A rune
// outside ASCII puts every byte from 0x80 in the set (its UTF-8 encoding has such a byte);
// case folding adds the other case (and, for k and s, the bytes of U+212A and U+017F).
func rxRequiredBytes(re *syntax.Regexp) (byteSet, bool) {
	var set byteSet
	addRune := func(r rune, fold bool) {
		if r >= utf8.RuneSelf {
			for c := 0x80; c < 0x100; c++ {
				set[c] = true
			}
			return
		}
		set[r] = true
		if fold {
			set[unicode.ToLower(r)] = true
			set[unicode.ToUpper(r)] = true
			if l := unicode.ToLower(r); l == 'k' || l == 's' {
				for c := 0x80; c < 0x100; c++ {
					set[c] = true
				}
			}
		}
	}
	switch re.Op {
	case syntax.OpLiteral:
		if len(re.Rune) == 0 {
			return set, false
		}
		addRune(re.Rune[0], re.Flags&syntax.FoldCase != 0)
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			if hi >= utf8.RuneSelf {
				addRune(utf8.RuneSelf, false)
				hi = utf8.RuneSelf - 1
			}
			for r := lo; r <= hi; r++ {
				addRune(r, false)
			}
		}
	case syntax.OpCapture, syntax.OpPlus:
		return rxRequiredBytes(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min < 1 {
			return set, false
		}
		return rxRequiredBytes(re.Sub[0])
	case syntax.OpConcat:
		best, found := set, false
		for _, sub := range re.Sub {
			if s, ok := rxRequiredBytes(sub); ok && (!found || s.size() < best.size()) {
				best, found = s, true
			}
		}
		return best, found
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			s, ok := rxRequiredBytes(sub)
			if !ok {
				return set, false
			}
			for c, in := range s {
				set[c] = set[c] || in
			}
		}
	default:
		return set, false
	}
	return set, set.size() <= maxByteSet
}

// containsAnyFolded reports whether s contains one of the lowercase ASCII literals, ignoring
// ASCII case (and reading U+017F as s and U+212A as k, as case folding does).
func containsAnyFolded(s string, lits []string) bool {
	if strings.Contains(s, "\u017f") || strings.Contains(s, "\u212a") {
		folded := foldASCII(s)
		for _, l := range lits {
			if strings.Contains(folded, l) {
				return true
			}
		}
		return false
	}
	for _, l := range lits {
		if containsFoldASCII(s, l) {
			return true
		}
	}
	return false
}

// containsFoldASCII reports whether s contains lit (lowercase ASCII) ignoring ASCII case,
// without allocating: candidates are found with IndexByte for both cases of the first byte.
func containsFoldASCII(s, lit string) bool {
	c := lit[0]
	upper := c
	if c >= 'a' && c <= 'z' {
		upper = c - 'a' + 'A'
	}
	for _, first := range [2]byte{c, upper} {
		for off := 0; ; {
			i := strings.IndexByte(s[off:], first)
			if i < 0 {
				break
			}
			i += off
			if len(s)-i < len(lit) {
				break
			}
			if equalFoldASCII(s[i+1:i+len(lit)], lit[1:]) {
				return true
			}
			off = i + 1
		}
		if upper == c {
			break
		}
	}
	return false
}

func equalFoldASCII(s, lower string) bool {
	for i := 0; i < len(lower); i++ {
		b := s[i]
		if b >= 'A' && b <= 'Z' {
			b += 'a' - 'A'
		}
		if b != lower[i] {
			return false
		}
	}
	return true
}

func foldASCII(s string) string {
	b := make([]byte, 0, len(s))
	for _, r := range s {
		switch {
		case r >= 'A' && r <= 'Z':
			b = append(b, byte(r)+'a'-'A')
		case r == 0x17F:
			b = append(b, 's')
		case r == 0x212A:
			b = append(b, 'k')
		case r < utf8.RuneSelf:
			b = append(b, byte(r))
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return string(b)
}

// matchesArbitraryBytes reports whether the pattern's \x escapes spell bytes that are not
// UTF-8 (Coraza then matches with binaryregexp; the same decision is made here).
func matchesArbitraryBytes(expr string) bool {
	decoded := make([]byte, 0, len(expr))
	for i := 0; i < len(expr); i++ {
		c := expr[i]
		if c != '\\' {
			decoded = append(decoded, c)
			continue
		}
		if i+3 >= len(expr) {
			decoded = append(decoded, expr[i:]...)
			break
		}
		if expr[i+1] != 'x' {
			decoded = append(decoded, expr[i])
			continue
		}
		sub := expr[i:]
		advance := 3
		if len(sub) >= 6 && sub[2] == '{' {
			if end := strings.IndexByte(sub, '}'); end != -1 {
				sub = `\x` + sub[3:end]
				advance = end
			}
		}
		v, multibyte, _, err := strconv.UnquoteChar(sub, 0)
		if err != nil || multibyte {
			decoded = append(decoded, expr[i])
			continue
		}
		decoded = append(decoded, byte(v))
		i += advance
	}
	return !utf8.Valid(decoded)
}

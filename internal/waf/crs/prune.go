package crs

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"io/fs"
	"math/bits"
	"net/http"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	coreruleset "github.com/corazawaf/coraza-coreruleset/v4"
	"github.com/tidwall/gjson"
)

// Rules that no byte of the request could make match are not evaluated.
//
// A rule matches when its operator matches one value of one of its targets after its
// transformations. Most of the CRS operators need particular characters: an XSS pattern
// needs "<" or a quote, a SQL injection pattern a quote, a comment or a keyword's letters, a
// path traversal "." and "/". When no value of a request can spell a match, the rule is left
// out of the transaction before it runs (removal, skip.go), which saves Coraza's fixed
// cost of evaluating it (several microseconds per rule on a request with a body). A login's
// JSON ("admin", "admin123", a captcha id and code) cannot spell most argument rules' matches.
//
// The analysis, per rule, from its compiled text (alphabet.go):
//
//   - its sources: the request line, URI, path, method, protocol, query names and values as
//     Coraza decodes them, path arguments, JSON names and string values as the typed JSON
//     processor reads them, the raw body, cookies, header names and values, single headers;
//     per request, the bytes each holds (sealed: a byte from 0x80 stands for all of them), and
//     for arguments the bytes of each value alone (a match comes from one value);
//   - what its transformations can make of those bytes (transformMaps): a decoder turns a
//     value holding its escape character into anything, the others add a space or nothing;
//   - what its operator needs (a condition): for @rx every literal rune and class of a
//     match, alternatives one of theirs, from the parsed pattern; for @pm and @pmFromFile one
//     phrase's letters; for @validateByteRange a byte outside the ranges; for @contains,
//     @streq, @beginsWith, @endsWith the argument's bytes; for @detectXSS "<" or "=".
//
// A rule is left out when its condition holds on no source's transformed bytes, or when none
// of its sources has a value; every step over-approximates, so a rule left out could not have
// matched. The operators this cannot read (negated ones, @detectSQLi, macros, numeric
// comparisons), counts, TX and other variables, bodies of another processor than the typed
// JSON one and targets added at load always count as holding. For the rule memo it also
// tells, per rule, which body values could match (bodyClean, bodyDirty: rulememo.go's
// split and per-value rules). Outcomes are cached per request shape. TestRulePruneKeepsMatches
// runs the CRS regression corpus with and without pruning and gets the same matched rules
// for every request.

// Sources of a rule's values: bit i of a rule's source mask is source i.
const (
	srcLine         = iota // REQUEST_LINE
	srcURI                 // REQUEST_URI, REQUEST_URI_RAW, QUERY_STRING
	srcPath                // REQUEST_FILENAME, REQUEST_BASENAME
	srcMethod              // REQUEST_METHOD
	srcProtocol            // REQUEST_PROTOCOL
	srcQueryNames          // ARGS_GET_NAMES
	srcQueryValues         // ARGS_GET
	srcPathNames           // ARGS_PATH names (path.N)
	srcPathValues          // ARGS_PATH
	srcBodyNames           // ARGS_POST_NAMES
	srcBodyValues          // ARGS_POST
	srcBodyRaw             // REQUEST_BODY, XML, FILES, FILES_NAMES
	srcCookies             // REQUEST_COOKIES, REQUEST_COOKIES_NAMES
	srcHeaderNames         // REQUEST_HEADERS_NAMES
	srcHeaderValues        // REQUEST_HEADERS
	srcBodyRead            // REQBODY_ERROR: set only by a body processor, which runs on a body
	srcNamedHeader         // first REQUEST_HEADERS:<name>
	maxSources      = 64
)

const bodySources = 1<<srcBodyNames | 1<<srcBodyValues | 1<<srcBodyRaw

// pruneRule is a rule that may be pruned. A match comes from one value, which comes from
// one source, so the rule is checked against each source's alphabet on its own: parts are
// the pairs (source, transformations) of its sources.
type pruneRule struct {
	id    int
	op    string // the operator as read (tests check it against what Coraza compiled)
	parts []int
	// symbols is cond assuming every letter and digit is present: small (the keyword
	// alternatives of a pattern collapse) and decided by a request's other bytes, which is
	// what tells most inputs apart from attacks. exact is cond itself, evaluated when
	// symbols holds; when it is large (over maxExactCondition nodes: the keyword patterns,
	// thousands of nodes), its outcomes are cached per alphabet (big).
	symbols condition
	exact   condition
	big     bool
	// needs is the content the rule's targets need (ruleSkips); a request without it has
	// the rule skipped already.
	needs contentMask
}

// maxExactCondition bounds the conditions evaluated in full on every request: larger ones
// cost more to evaluate than they save, and their outcomes are cached.
const maxExactCondition = 256

// generations is a bounded cache: two generations of at most max entries each; when the
// current one is full it becomes the old one, and a hit in the old one is found all the same.
type generations[K comparable, V any] struct {
	mu       sync.RWMutex
	cur, old map[K]V
	max      int
}

func (g *generations[K, V]) get(k K) (V, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	v, ok := g.cur[k]
	if !ok {
		v, ok = g.old[k]
	}
	return v, ok
}

func (g *generations[K, V]) put(k K, v V) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cur == nil || len(g.cur) >= max(g.max, 1) {
		g.old, g.cur = g.cur, make(map[K]V, min(max(g.max, 1), 1024))
	}
	g.cur[k] = v
}

// exactCache holds the outcomes of the large conditions per alphabet: the alphabets of a
// rule's sources repeat (an endpoint's field names, a client's headers) even where the
// values do not. Two generations of at most exactCacheMax entries.
type exactCache struct {
	generations[exactKey, bool]
}

type exactKey struct {
	rule int
	a    alphabet
}

const exactCacheMax = 1 << 15

func (c *exactCache) holds(rule int, cond *condition, a *alphabet) bool {
	k := exactKey{rule, *a}
	if v, ok := c.get(k); ok {
		return v
	}
	v := cond.holds(a)
	c.put(k, v)
	return v
}

var alphanumeric = alphabetOf("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")

// prunePair is a distinct combination of a source and transformations.
type prunePair struct {
	source int
	names  []string // the transformations' names
	chain  []alphabetMap
}

// rulePrune holds the prunable rules, collected while the rule files load.
type rulePrune struct {
	mu      sync.Mutex
	rules   []pruneRule
	pairs   []prunePair
	headers map[string]int // named header (lower case) → source
	cache   exactCache
	shapes  shapeCache
	// bodyUnknown: a loaded rule chooses a body processor, so the body's values are not known
	// in advance and rules reading them are never pruned.
	bodyUnknown bool
	// cachesOff is the WAF's switch (the shape cache is off with the other caches).
	cachesOff *atomic.Bool
}

// actionTransform is a t: action; all of a rule's stages are kept (transformChain), so
// multiMatch needs no reading.
var actionTransform = regexp.MustCompile(`(?:^|[",\s\\])t:([A-Za-z0-9]+)`)

// collect records the prunable rules of one compiled file.
func (p *rulePrune) collect(stmts []crsStatement) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.headers == nil {
		p.headers = map[string]int{}
	}
	chained := false
	for _, s := range stmts {
		if strings.Contains(s.text, "ctl:requestBodyProcessor") && s.id != 200000 && s.id != 200001 {
			// The directives' 200000 and 200001 are mirrored by jsonBody; any other choice
			// of processor makes the body's variables unknown in advance.
			p.bodyUnknown = true
		}
		if !s.rule {
			continue
		}
		child := chained
		chained = s.chain
		if child || s.id == 0 || s.vars == "" {
			continue // a chained rule runs only after its parent matched: the parent decides
		}
		phase := requestPhase(s)
		if phase == 0 {
			continue
		}
		sources, ok := p.sourcesOf(s.vars, phase)
		if !ok {
			continue
		}
		op, actions, ok := operatorAndActions(s.text, s.vars)
		if !ok {
			continue
		}
		// An operator this does not read (condTrue) still cannot match when none of the
		// rule's sources has a value in a request (a JSON body has no FILES).
		cond := operatorCondition(op)
		var chain []string
		for _, m := range actionTransform.FindAllStringSubmatch(actions, -1) {
			name := strings.ToLower(m[1])
			if name == "none" {
				chain = chain[:0]
				continue
			}
			chain = append(chain, name)
		}
		rule := pruneRule{id: s.id, op: op, symbols: cond.assuming(alphanumeric), exact: cond, big: cond.size() > maxExactCondition}
		for src := sources; src != 0; src &= src - 1 {
			rule.parts = append(rule.parts, p.pairOf(bits.TrailingZeros64(src), chain))
		}
		p.rules = append(p.rules, rule)
	}
}

func (p *rulePrune) pairOf(source int, names []string) int {
	for i, pr := range p.pairs {
		if pr.source == source && slices.Equal(pr.names, names) {
			return i
		}
	}
	pair := prunePair{source: source, names: slices.Clone(names)}
	for _, n := range names {
		f, _ := transformModel(n)
		pair.chain = append(pair.chain, f)
	}
	p.pairs = append(p.pairs, pair)
	return len(p.pairs) - 1
}

// sourcesOf maps a rule's targets to sources; false when one is not a source.
func (p *rulePrune) sourcesOf(vars string, phase int) (uint64, bool) {
	targets, ok := ruleTargets(vars)
	if !ok {
		return 0, false
	}
	var m uint64
	body := func(bits uint64) {
		if phase >= 2 { // the body is processed after phase 1
			m |= bits
		}
	}
	for _, t := range targets {
		if t.count {
			return 0, false
		}
		switch t.name {
		case "REQUEST_LINE":
			m |= 1 << srcLine
		case "REQUEST_URI", "REQUEST_URI_RAW", "QUERY_STRING":
			m |= 1 << srcURI
		case "REQUEST_FILENAME", "REQUEST_BASENAME":
			m |= 1 << srcPath
		case "REQUEST_METHOD":
			m |= 1 << srcMethod
		case "REQUEST_PROTOCOL":
			m |= 1 << srcProtocol
		case "ARGS":
			m |= 1<<srcQueryValues | 1<<srcPathValues
			body(1 << srcBodyValues)
		case "ARGS_NAMES":
			m |= 1<<srcQueryNames | 1<<srcPathNames
			body(1 << srcBodyNames)
		case "ARGS_GET":
			m |= 1 << srcQueryValues
		case "ARGS_GET_NAMES":
			m |= 1 << srcQueryNames
		case "ARGS_PATH":
			m |= 1 << srcPathValues
		case "ARGS_POST":
			body(1 << srcBodyValues)
		case "ARGS_POST_NAMES":
			body(1 << srcBodyNames)
		case "REQUEST_BODY", "XML", "FILES", "FILES_NAMES", "MULTIPART_STRICT_ERROR":
			// (the multipart processor's error: a JSON body never has one)
			body(1 << srcBodyRaw)
		case "REQBODY_ERROR":
			body(1 << srcBodyRead)
		case "REQUEST_COOKIES", "REQUEST_COOKIES_NAMES":
			m |= 1 << srcCookies
		case "REQUEST_HEADERS_NAMES":
			m |= 1 << srcHeaderNames
		case "REQUEST_HEADERS":
			if t.key == "" || strings.HasPrefix(t.key, "/") {
				m |= 1 << srcHeaderValues
				continue
			}
			name := strings.ToLower(t.key)
			i, known := p.headers[name]
			if !known {
				if srcNamedHeader+len(p.headers) >= maxSources {
					m |= 1 << srcHeaderValues
					continue
				}
				i = srcNamedHeader + len(p.headers)
				p.headers[name] = i
			}
			m |= 1 << i
		default:
			return 0, false
		}
	}
	return m, true
}

// operatorAndActions cuts a SecRule statement into its operator (as Coraza's parser reads
// the quoted string) and its actions.
func operatorAndActions(text, vars string) (op, actions string, ok bool) {
	rest := strings.TrimSpace(text)
	rest = strings.TrimPrefix(rest, "SecRule")
	rest = strings.TrimLeft(rest, " \t")
	rest, found := strings.CutPrefix(rest, vars)
	if !found {
		return "", "", false
	}
	rest = strings.TrimLeft(rest, " \t")
	if !strings.HasPrefix(rest, `"`) {
		return "", "", false
	}
	backslashes := 0
	for i := 1; i < len(rest); i++ {
		switch {
		case rest[i] == '\\':
			backslashes++
			continue
		case rest[i] == '"' && backslashes%2 == 0:
			op = strings.ReplaceAll(rest[1:i], `\"`, `"`)
			if strings.ContainsAny(op, "\r\n") {
				return "", "", false // continued over lines: not read here
			}
			return op, rest[i+1:], true
		}
		backslashes = 0
	}
	return "", "", false
}

// operatorCondition is what an operator ("@name argument", as in a rule) needs of its input;
// always for an operator this does not read.
func operatorCondition(op string) condition {
	if op == "" || op[0] == '!' || strings.Contains(op, "%{") {
		return always
	}
	name, arg := "rx", op
	if op[0] == '@' {
		n, a, _ := strings.Cut(op[1:], " ")
		name, arg = n, strings.TrimSpace(a)
	}
	switch strings.ToLower(name) {
	case "rx", strings.ToLower(opRx):
		// A pattern whose escapes spell bytes that are not UTF-8 is matched by Coraza as bytes
		// (binaryregexp); parsed as runes here, each such escape is a rune from U+0080,
		// which needs a byte from 0x80 all the same, so the condition still holds wherever
		// the byte pattern can match.
		expr := "(?sm)" + arg
		re, err := syntax.Parse(expr, syntax.Perl)
		if err != nil {
			return always
		}
		return rxCondition(re)
	case "pm":
		return phraseCondition(strings.Split(strings.ToLower(arg), " "))
	case "pmfromfile", "pmf":
		phrases, ok := crsPhrases(arg)
		if !ok {
			return always
		}
		return phraseCondition(phrases)
	case "validatebyterange":
		valid, ok := byteRanges(arg)
		if !ok {
			return always
		}
		return anyOf(fullAlphabet.minus(valid))
	case "detectxss", strings.ToLower(opDetectXSS):
		// libinjection's XSS check (libinjection-go's IsXSS) reads the input as HTML from
		// five starting states. A finding is a tag, doctype or comment token (from the data
		// state, which only leaves text at '<') or an attribute value judged against a
		// black attribute name (a value token after a name comes only through '='; the
		// quoted states' first value has no name). TestDetectXSSNeedsLessThanOrEquals
		// checks it against the corpus and random inputs.
		return anyOf(alphabetOf("<="))
	case "contains", "streq", "beginswith", "endswith":
		if arg == "" {
			return always
		}
		var need []condition
		for i := 0; i < len(arg); i++ {
			need = append(need, anyOf(alphabetOf(arg[i:i+1])))
		}
		return allOf(need...)
	}
	return always
}

// crsPhrases reads a CRS data file as @pmFromFile does: trimmed lines, comments and blank
// lines left out, lower case.
func crsPhrases(name string) ([]string, bool) {
	if strings.ContainsAny(name, " \t") {
		return nil, false
	}
	data, err := fs.ReadFile(coreruleset.FS, "@owasp_crs/"+name)
	if err != nil {
		return nil, false
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || l[0] == '#' {
			continue
		}
		out = append(out, strings.ToLower(l))
	}
	return out, sc.Err() == nil
}

// byteRanges parses @validateByteRange's argument ("1-255", "9,10,13,32-126"); the valid
// bytes (sealed: the analysis cannot tell bytes from 0x80 apart, so a range covering only
// some of them counts as covering none).
func byteRanges(arg string) (alphabet, bool) {
	var valid alphabet
	for part := range strings.SplitSeq(arg, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		l, err := strconv.Atoi(strings.TrimSpace(lo))
		if err != nil || l < 0 || l > 255 {
			return valid, false
		}
		h := l
		if isRange {
			if h, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil || h < l || h > 255 {
				return valid, false
			}
		}
		for c := l; c <= h; c++ {
			valid.add(byte(c))
		}
	}
	if valid[2] != ^uint64(0) || valid[3] != ^uint64(0) {
		valid[2], valid[3] = 0, 0
	}
	return valid, true
}

// finish drops the rules a load-time target update extends (their targets are not only the
// ones their text names).
func (p *rulePrune) finish(skips *ruleSkips) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.shapes.seeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}
	p.shapes.max, p.cache.max = shapeCacheMax, exactCacheMax
	if skips.addedAll {
		p.rules = nil
		return
	}
	p.rules = slices.DeleteFunc(p.rules, func(r pruneRule) bool { return skips.added[r.id] })
	for i := range p.rules {
		for _, s := range skips.skippable {
			if s.id == p.rules[i].id {
				p.rules[i].needs = s.needs
			}
		}
	}
}

// requestBytes are the alphabets of a request's sources, and which sources have values.
// For the sources of arguments, each holds the distinct alphabets of their values one by
// one too (a match comes from one value, so a rule holding on the union may still hold on
// none of them): the names of an endpoint's fields, each on its own, spell far less than
// all of them together.
type requestBytes struct {
	src     [maxSources]alphabet
	present uint64
	each    [srcBodyValues + 1][]alphabet
	// scratch of prunable, per pair: the transformed union, its state, the transformed values
	pairAlpha  []alphabet
	pairState  []uint8
	pairValues [][]alphabet
	keyBuf     []byte // shapeKey's
	// keys identify the body's names and values (srcBodyNames, srcBodyValues) when keyed:
	// a JSON body read whole.
	keys            [2][]valueKey
	keyed           bool
	nameBuf, valBuf []byte
	// indexes of each and keys once they grow past linearScan entries, so a body of many
	// distinct values is read in linear time (a 900 KiB body of 50,000 small objects
	// took 8 to 26 s in slices.Contains)
	eachAt [srcBodyValues + 1]map[alphabet]int
	keySet [2]map[valueKey]struct{}
}

// reset empties an index for the next request, or drops it when a large body made it big
// (the pool would keep its memory).
func reset[K comparable, V any](m map[K]V) map[K]V {
	if len(m) > 4096 {
		return nil
	}
	clear(m)
	return m
}

// linearScan is how many entries addValue and addKeyed search without an index.
const linearScan = 32

// addValue adds the alphabet of one value of an argument source.
func (in *requestBytes) addValue(source int, a alphabet) int {
	a = a.sealed()
	in.src[source] = in.src[source].or(a)
	each := in.each[source]
	if len(each) < linearScan {
		if i := slices.Index(each, a); i >= 0 {
			return i
		}
	} else {
		at := in.eachAt[source]
		if at == nil {
			at = make(map[alphabet]int, 2*linearScan)
			in.eachAt[source] = at
		}
		if len(at) < len(each) { // index what was scanned linearly so far
			for i, e := range each {
				if _, ok := at[e]; !ok {
					at[e] = i
				}
			}
		}
		if i, ok := at[a]; ok {
			return i
		}
		at[a] = len(each)
	}
	in.each[source] = append(each, a)
	return len(in.each[source]) - 1
}

// valueKey identifies one name or value of the body for the rule memo: 128 bits of keyed
// hashes of the source, the name (raw keys joined) and the value (raw), with the index of
// its alphabet in each.
type valueKey struct {
	key  [2]uint64
	each int
}

// addKeyed adds a body value (or name, value nil) with its identity.
func (in *requestBytes) addKeyed(source int, a alphabet, seeds [2]maphash.Seed, name string, value []byte) {
	e := in.addValue(source, a)
	buf := append(in.valBuf[:0], byte(source))
	buf = binary.LittleEndian.AppendUint64(buf, uint64(len(name)))
	buf = append(buf, name...)
	if value != nil {
		buf = binary.LittleEndian.AppendUint64(buf, uint64(len(value)))
		buf = append(buf, value...)
	}
	in.valBuf = buf
	k := valueKey{key: [2]uint64{maphash.Bytes(seeds[0], buf), maphash.Bytes(seeds[1], buf)}, each: e}
	ks := &in.keys[source-srcBodyNames]
	if len(*ks) < linearScan {
		if !slices.Contains(*ks, k) {
			*ks = append(*ks, k)
		}
		return
	}
	set := in.keySet[source-srcBodyNames]
	if set == nil {
		set = make(map[valueKey]struct{}, 2*linearScan)
		in.keySet[source-srcBodyNames] = set
	}
	if len(set) < len(*ks) {
		for _, old := range *ks {
			set[old] = struct{}{}
		}
	}
	if _, ok := set[k]; !ok {
		set[k] = struct{}{}
		*ks = append(*ks, k)
	}
}

// jsonContentType and xmlContentType pick the body processor (the directives' rules 200001
// and 200000, which wafDirectives writes from the same patterns).
const (
	jsonContentType = `^application/(?:[a-z0-9.-]+[+])?json`
	xmlContentType  = `^(?:application(?:/soap\+|/)|text/)xml`
)

var (
	jsonContentTypeRx = regexp.MustCompile("(?sm)" + jsonContentType)
	xmlContentTypeRx  = regexp.MustCompile("(?sm)" + xmlContentType)
)

// bytesOf fills the alphabets of a request as inspect hands it to Coraza: uri is the request
// target inspected, body the body read (nil: none).
func (p *rulePrune) bytesOf(r *http.Request, uri string, body []byte, into *requestBytes) {
	into.src, into.present, into.keyed = [maxSources]alphabet{}, 0, false
	for i := range into.each {
		into.each[i] = into.each[i][:0] // the pooled value keeps its slices
		into.eachAt[i] = reset(into.eachAt[i])
	}
	for i := range into.keys {
		into.keys[i] = into.keys[i][:0]
		into.keySet[i] = reset(into.keySet[i])
	}
	path, _, _ := strings.Cut(uri, "?")
	into.src[srcURI] = uriBytes(uri)
	into.src[srcPath] = uriBytes(path)
	into.src[srcMethod] = alphabetOf(r.Method)
	into.src[srcProtocol] = alphabetOf(r.Proto)
	into.src[srcLine] = into.src[srcURI].or(into.src[srcMethod]).or(into.src[srcProtocol]).or(alphabetOf(" "))
	if _, query, ok := strings.Cut(uri, "?"); ok {
		query, _, _ = strings.Cut(query, "#")
		into.present |= 1<<srcQueryNames | 1<<srcQueryValues
		for pair := range strings.SplitSeq(query, "&") {
			name, value, _ := strings.Cut(pair, "=")
			into.addValue(srcQueryNames, queryUnescapedBytes(name))
			into.addValue(srcQueryValues, queryUnescapedBytes(value))
		}
	}
	for seg := range strings.SplitSeq(r.URL.Path, "/") {
		if seg != "" && !plainSegment(seg) {
			into.addValue(srcPathValues, alphabetOf(seg))
			into.src[srcPathNames] = alphabetOf("path.0123456789")
			into.present |= 1<<srcPathNames | 1<<srcPathValues
		}
	}
	for name, vs := range r.Header {
		lower := wafHeaderName(name)
		into.src[srcHeaderNames].addString(lower)
		into.present |= 1<<srcHeaderNames | 1<<srcHeaderValues
		named, isNamed := p.headers[lower]
		if isNamed {
			into.present |= 1 << named
		}
		for _, v := range vs {
			into.src[srcHeaderValues].addString(v)
			if isNamed {
				into.src[named].addString(v)
			}
			if lower == "cookie" {
				into.src[srcCookies].addString(v)
				into.present |= 1 << srcCookies
			}
		}
	}
	synthetic := func(name, value string) {
		into.src[srcHeaderNames].addString(name)
		into.src[srcHeaderValues].addString(value)
		into.present |= 1<<srcHeaderNames | 1<<srcHeaderValues
		if i, ok := p.headers[name]; ok {
			into.src[i].addString(value)
			into.present |= 1 << i
		}
	}
	if r.Host != "" {
		synthetic("host", r.Host)
	}
	if r.ContentLength >= 0 && r.Body != nil && r.Body != http.NoBody && r.Header.Get("Content-Length") == "" {
		synthetic("content-length", strconv.FormatInt(r.ContentLength, 10))
	}
	for _, te := range r.TransferEncoding {
		synthetic("transfer-encoding", te)
	}
	if len(body) > 0 {
		into.src[srcBodyRead], into.present = fullAlphabet, into.present|1<<srcBodyRead
	}
	switch {
	case len(body) == 0:
	case p.bodyUnknown || !jsonBody(r.Header.Values("Content-Type")):
		into.src[srcBodyNames], into.src[srcBodyValues], into.src[srcBodyRaw] = fullAlphabet, fullAlphabet, fullAlphabet
		into.present |= bodySources
	default:
		// The typed JSON processor fills ARGS_POST only: REQUEST_BODY is set by the raw
		// and URL-encoded processors, XML by the XML one, FILES by multipart.
		jsonBytes(body, into, p.shapes.seeds)
		into.present |= 1<<srcBodyNames | 1<<srcBodyValues
	}
	for i := range into.src {
		into.src[i] = into.src[i].sealed()
	}
	into.present |= 1<<srcLine | 1<<srcURI | 1<<srcPath | 1<<srcMethod | 1<<srcProtocol // always set
}

// jsonBody reports whether the typed JSON processor reads the body: a Content-Type is JSON
// and none is XML (200000 runs after 200001 and wins).
func jsonBody(types []string) bool {
	json := false
	for _, t := range types {
		lt := strings.ToLower(t)
		if xmlContentTypeRx.MatchString(lt) {
			return false
		}
		json = json || jsonContentTypeRx.MatchString(lt)
	}
	return json
}

// uriBytes covers what Coraza derives from a request target (or its path): the target raw,
// as url.URL re-encodes it (percent escapes) and decoded (REQUEST_FILENAME is the decoded
// path; a fragment is cut, which only removes bytes).
func uriBytes(uri string) alphabet {
	var a alphabet
	a.addString(uri)
	reencoded := false
	for i := 0; i < len(uri); i++ {
		c := uri[i]
		if c == '%' {
			reencoded = true
			if i+2 < len(uri) {
				if h, l := hexNibble(uri[i+1]), hexNibble(uri[i+2]); h >= 0 && l >= 0 {
					a.add(byte(h<<4 | l))
				}
			}
			continue
		}
		if !urlSafe(c) {
			reencoded = true
		}
	}
	if reencoded {
		a.addString("%0123456789ABCDEFabcdef")
	}
	return a
}

// urlSafe: bytes url.URL.String leaves as they are in a request target.
func urlSafe(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		strings.IndexByte("-._~!$&'()*+,;=:@/?", c) >= 0
}

func hexNibble(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// queryUnescapedBytes are the bytes of s as Coraza's query parser decodes it ('+' is a
// space, valid %XX escapes their byte, anything else itself).
func queryUnescapedBytes(s string) alphabet {
	var a alphabet
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '+':
			a.add(' ')
		case c == '%' && i+2 < len(s) && hexNibble(s[i+1]) >= 0 && hexNibble(s[i+2]) >= 0:
			a.add(byte(hexNibble(s[i+1])<<4 | hexNibble(s[i+2])))
			i += 2
		default:
			a.add(c)
		}
	}
	return a
}

// jsonBytes adds the alphabets of the names and values the typed JSON processor makes of a
// body: a name is "json" and the keys (or array indexes) down to a leaf, joined by dots; a
// value is a string (decoded). A body that is not JSON is one argument named "json" holding
// the whole text.
func jsonBytes(body []byte, into *requestBytes, seeds [2]maphash.Seed) {
	into.keyed = true
	if !gjson.ValidBytes(body) {
		into.addKeyed(srcBodyNames, alphabetOf("json"), seeds, "json", nil)
		into.addKeyed(srcBodyValues, alphabetOf(string(body)), seeds, "json", body)
		return
	}
	const maxDepth = 256
	// A frame is an open container: path covers the names below it ("json", the enclosing
	// keys or indexes, dots), name is the length of its own name in names (the raw keys
	// joined: a value's identity), index counts an array's elements.
	type frame struct {
		path  alphabet
		name  int
		array bool
		index int
	}
	names := append(into.nameBuf[:0], "json"...)
	frames := make([]frame, 1, 16)
	frames[0] = frame{path: alphabetOf("json"), name: len(names)}
	var pending alphabet // the key whose value comes next; its name ends names
	hasPending := false
	// element names the next element of the array on top, in names, and returns its length.
	element := func() int {
		top := &frames[len(frames)-1]
		names = append(names[:top.name], '.')
		names = strconv.AppendInt(names, int64(top.index), 10)
		top.index++
		return len(names)
	}
	for i := 0; i < len(body); i++ {
		switch c := body[i]; c {
		case '{', '[':
			if len(frames) > maxDepth {
				into.keyed = false
				into.addValue(srcBodyNames, fullAlphabet)
				into.addValue(srcBodyValues, fullAlphabet)
				return
			}
			top := frames[len(frames)-1]
			f := frame{path: top.path.or(alphabetOf(".")), array: c == '['}
			switch {
			case hasPending:
				f.path, f.name = f.path.or(pending), len(names)
			case len(frames) == 1: // the document itself: its members are json.<key>
				f.name = top.name
			case top.array:
				f.path, f.name = f.path.or(digitsAlpha), element()
			}
			if c == '[' {
				f.path = f.path.or(digitsAlpha)
			}
			frames = append(frames, f)
			hasPending = false
		case '}', ']':
			frames = frames[:len(frames)-1]
		case '"':
			var str alphabet
			start := i + 1
			i = jsonString(body, i, &str)
			raw := body[start:i]
			j := i + 1
			for j < len(body) && (body[j] == ' ' || body[j] == '\t' || body[j] == '\n' || body[j] == '\r') {
				j++
			}
			top := frames[len(frames)-1]
			switch {
			case j < len(body) && body[j] == ':':
				// A key: its name is added whatever its value (a typed leaf is inspected
				// by name; for a container the name only over-approximates its children's).
				names = append(append(names[:top.name], '.'), raw...)
				into.addKeyed(srcBodyNames, top.path.or(str), seeds, string(names), nil)
				pending, hasPending = str, true
			case hasPending: // a string value of a key, named when the key was read
				into.addKeyed(srcBodyValues, str, seeds, string(names), raw)
				hasPending = false
			case len(frames) == 1: // a document that is one string: json.0
				into.addKeyed(srcBodyNames, alphabetOf("json.0"), seeds, "json.0", nil)
				into.addKeyed(srcBodyValues, str, seeds, "json.0", raw)
			default: // an array element: named by the array's path with its index
				n := element()
				into.addKeyed(srcBodyNames, top.path, seeds, string(names[:n]), nil)
				into.addKeyed(srcBodyValues, str, seeds, string(names[:n]), raw)
			}
		case ',', ':', ' ', '\t', '\n', '\r':
			if c == ',' {
				hasPending = false
			}
		default: // a number, true, false or null
			if hasPending { // a typed leaf: its name with an empty value
				into.addKeyed(srcBodyValues, alphabet{}, seeds, string(names), []byte{})
				hasPending = false
			} else if top := &frames[len(frames)-1]; top.array {
				top.index++ // an element the processor leaves out, counted all the same
			}
			for i+1 < len(body) && !strings.ContainsRune(",]} \t\n\r", rune(body[i+1])) {
				i++
			}
		}
	}
	into.nameBuf = names
}

// jsonString adds the decoded bytes of the JSON string starting at body[i] (a quote) and
// returns the index of its closing quote.
func jsonString(body []byte, i int, s *alphabet) int {
	for i++; i < len(body) && body[i] != '"'; i++ {
		c := body[i]
		if c != '\\' || i+1 >= len(body) {
			s.add(c)
			continue
		}
		i++
		switch e := body[i]; e {
		case 'b':
			s.add('\b')
		case 'f':
			s.add('\f')
		case 'n':
			s.add('\n')
		case 'r':
			s.add('\r')
		case 't':
			s.add('\t')
		case 'u':
			code := 0
			for k := 1; k <= 4 && i+k < len(body); k++ {
				code = code<<4 | max(hexNibble(body[i+k]), 0)
			}
			if code < 0x80 {
				s.add(byte(code))
			} else {
				*s = s.or(highAlphabet)
			}
			i += 4
		default:
			s.add(e) // \" \\ \/
		}
	}
	return i
}

// prunable appends to out the ids of the rules no value of the request can make match
// (leaving out those skipped already: present is the content the request carries), and
// sets bodyClean[i] when no value of the body can make rule i match (the rule memo vouches
// for the rest of a rule's sources); with bodyDirty, it also sets bodyDirty[i] to the
// values of the body's names and values (bits by alphabet, see dirtyValues) that could, for
// the memo to vouch for them one by one.
func (p *rulePrune) prunable(in *requestBytes, present contentMask, out []int, bodyClean []bool, bodyDirty [][2]uint64) []int {
	n := len(p.pairs)
	if cap(in.pairAlpha) < n {
		in.pairAlpha, in.pairState, in.pairValues = make([]alphabet, n), make([]uint8, n), make([][]alphabet, n)
	}
	alpha, state, values := in.pairAlpha[:n], in.pairState[:n], in.pairValues[:n]
	clear(state)
	for i := range p.rules {
		r := &p.rules[i]
		if r.needs != 0 && r.needs&present == 0 {
			continue
		}
		// First the union of every part: most rules fail there, and then on each part.
		var union alphabet
		for _, pi := range r.parts {
			if state[pi] == pairUnknown {
				pair := &p.pairs[pi]
				if in.present&(1<<pair.source) == 0 {
					state[pi] = pairAbsent
				} else {
					alpha[pi], state[pi] = transformChain(pair.chain, in.src[pair.source]), pairReady
				}
			}
			if state[pi] >= pairReady {
				union = union.or(alpha[pi])
			}
		}
		clean, bodyOnly := true, true
		if !p.holdsCheap(i, &union) {
			out = append(out, r.id)
			if bodyClean != nil {
				bodyClean[i] = true
			}
			continue
		}
		for _, pi := range r.parts {
			if state[pi] == pairAbsent {
				continue
			}
			if state[pi] == pairReady { // the values one by one, when first needed
				pair := &p.pairs[pi]
				values[pi] = values[pi][:0]
				if pair.source < len(in.each) && len(in.each[pair.source]) > 1 {
					for _, v := range in.each[pair.source] {
						values[pi] = append(values[pi], transformChain(pair.chain, v))
					}
				}
				state[pi] = pairValues
			}
			src := p.pairs[pi].source
			if bodyDirty != nil && in.keyed && (src == srcBodyNames || src == srcBodyValues) {
				// The values of a keyed body source one by one: which could match (by
				// their alphabet's index in each), for the memo to vouch for.
				mask := p.dirtyValues(i, &alpha[pi], values[pi], len(in.each[src]))
				bodyDirty[i][src-srcBodyNames] |= mask
				if mask != 0 {
					clean, bodyOnly = false, false
				}
				continue
			}
			if p.holdsCheap(i, &alpha[pi]) && p.holdsOnAValue(i, values[pi]) && p.holdsBig(i, &alpha[pi]) {
				clean = false
				if bodySources&(1<<src) != 0 {
					bodyOnly = false
					if bodyDirty == nil {
						break
					}
					bodyDirty[i] = [2]uint64{^uint64(0), ^uint64(0)} // not keyed: every value
				}
			}
		}
		if clean {
			out = append(out, r.id)
		}
		if bodyClean != nil {
			bodyClean[i] = bodyOnly
		}
	}
	return out
}

// dirtyValues returns the values (bits by index in each; past 64, all) of a body source on
// which rule i's condition may hold. values are the transformed alphabets of each, or none
// when each holds one alphabet (then union is it).
func (p *rulePrune) dirtyValues(i int, union *alphabet, values []alphabet, n int) uint64 {
	if !p.holds(i, union) {
		return 0
	}
	switch {
	case n == 1:
		return 1 // the union is the one alphabet
	case len(values) == 0 || n > 64:
		return ^uint64(0)
	}
	var mask uint64
	for k := range values {
		if p.holds(i, &values[k]) {
			mask |= 1 << k
		}
	}
	return mask
}

const (
	pairUnknown = iota
	pairAbsent  // the source has no value
	pairReady   // the transformed union is known
	pairValues  // and the transformed values
)

// holdsOnAValue reports whether rule i's cheap conditions hold on one of values (the
// transformed alphabets of a source's values one by one; none: the union is the only one).
func (p *rulePrune) holdsOnAValue(i int, values []alphabet) bool {
	if len(values) == 0 {
		return true
	}
	for k := range values {
		if p.holdsCheap(i, &values[k]) {
			return true
		}
	}
	return false
}

// holdsCheap reports whether rule i's condition may hold on a, as far as the conditions
// evaluated on every request tell: the symbol condition, and the exact one when small.
func (p *rulePrune) holdsCheap(i int, a *alphabet) bool {
	r := &p.rules[i]
	withAlnum := a.or(alphanumeric)
	return r.symbols.holds(&withAlnum) && (r.big || r.exact.holds(a))
}

// holdsBig reports whether a large exact condition holds on a (through the cache).
func (p *rulePrune) holdsBig(i int, a *alphabet) bool {
	r := &p.rules[i]
	return !r.big || p.cache.holds(i, &r.exact, a)
}

// holds reports whether rule i's condition holds on a.
func (p *rulePrune) holds(i int, a *alphabet) bool { return p.holdsCheap(i, a) && p.holdsBig(i, a) }

// shapeCache remembers prunable's outcome per request shape: the sources that have values,
// their alphabets and the alphabets of each argument (the whole input of prunable, hashed to
// 128 bits with per-process seeds). An endpoint's requests from one client mostly share a
// shape even when their values differ (a new captcha code over the same bytes). Two
// generations of at most shapeCacheMax outcomes.
type shapeCache struct {
	generations[[2]uint64, shapeOutcome]
	seeds [2]maphash.Seed
}

type shapeOutcome struct {
	pruned    []int32 // rule ids
	bodyClean []bool
	bodyDirty [][2]uint64
}

const shapeCacheMax = 1024

// shapeKey hashes what prunable reads of a request.
func (c *shapeCache) shapeKey(in *requestBytes, present contentMask) [2]uint64 {
	buf := in.keyBuf[:0]
	buf = binary.LittleEndian.AppendUint64(buf, in.present)
	buf = binary.LittleEndian.AppendUint64(buf, uint64(present))
	if in.keyed {
		buf = append(buf, 1)
	}
	for s := in.present; s != 0; s &= s - 1 {
		buf = appendAlphabet(buf, in.src[bits.TrailingZeros64(s)])
	}
	for i := range in.each {
		buf = binary.LittleEndian.AppendUint64(buf, uint64(len(in.each[i])))
		for _, a := range in.each[i] {
			buf = appendAlphabet(buf, a)
		}
	}
	in.keyBuf = buf
	return [2]uint64{maphash.Bytes(c.seeds[0], buf), maphash.Bytes(c.seeds[1], buf)}
}

func appendAlphabet(buf []byte, a alphabet) []byte {
	for _, w := range a {
		buf = binary.LittleEndian.AppendUint64(buf, w)
	}
	return buf
}

// cachedPrunable is prunable through the shape cache (off with the other caches).
func (p *rulePrune) cachedPrunable(in *requestBytes, present contentMask, out []int, bodyClean []bool, bodyDirty [][2]uint64) []int {
	if p.cachesOff.Load() {
		return p.prunable(in, present, out, bodyClean, bodyDirty)
	}
	c := &p.shapes
	key := c.shapeKey(in, present)
	o, ok := c.get(key)
	if ok {
		for _, id := range o.pruned {
			out = append(out, int(id))
		}
		copy(bodyClean, o.bodyClean)
		copy(bodyDirty, o.bodyDirty)
		return out
	}
	out = p.prunable(in, present, out, bodyClean, bodyDirty)
	o = shapeOutcome{pruned: make([]int32, len(out)), bodyClean: slices.Clone(bodyClean), bodyDirty: slices.Clone(bodyDirty)}
	for i, id := range out {
		o.pruned[i] = int32(id)
	}
	c.put(key, o)
	return out
}

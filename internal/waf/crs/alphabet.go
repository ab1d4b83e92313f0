package crs

import (
	"math/bits"
	"regexp/syntax"
	"slices"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Alphabets: which bytes a rule's inputs can hold, and which bytes an operator needs.
//
// An alphabet is a set of bytes. The bytes from 0x80 up are kept all or none (sealed): a
// rule reads a value as UTF-8 runes (or bytes, which the transformations may re-encode), so
// the analysis only tells ASCII bytes apart and treats "some byte from 0x80" as "any of
// them". Every function here over-approximates: an alphabet may hold bytes the values do not
// have, a condition may hold where the operator cannot match, never the other way round.

type alphabet [4]uint64

var (
	fullAlphabet = alphabet{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}
	highAlphabet = alphabet{0, 0, ^uint64(0), ^uint64(0)}
	digitsAlpha  = alphabetOf("0123456789")
	hexLower     = alphabetOf("0123456789abcdef")
	// lowerFromHigh are the ASCII bytes strings.ToLower makes of runes from U+0080 (such as
	// U+0130 and U+212A), computed from the unicode tables when first needed (a walk over
	// every rune: not at every program start).
	lowerFromHigh = sync.OnceValue(func() alphabet {
		var a alphabet
		for r := rune(utf8.RuneSelf); r <= unicode.MaxRune; r++ {
			if l := unicode.ToLower(r); l < utf8.RuneSelf {
				a.add(byte(l))
			}
		}
		return a
	})
)

func (a *alphabet) add(c byte) { a[c>>6] |= 1 << (c & 63) }

func (a alphabet) has(c byte) bool { return a[c>>6]&(1<<(c&63)) != 0 }

// addString adds the bytes of s (unsealed).
func (a *alphabet) addString(s string) {
	for i := 0; i < len(s); i++ {
		a[s[i]>>6] |= 1 << (s[i] & 63)
	}
}

// alphabetOf is the sealed alphabet of s.
func alphabetOf(s string) alphabet {
	var a alphabet
	a.addString(s)
	return a.sealed()
}

// sealed widens a byte from 0x80 up to all of them.
func (a alphabet) sealed() alphabet {
	if a[2]|a[3] != 0 {
		a[2], a[3] = ^uint64(0), ^uint64(0)
	}
	return a
}

func (a alphabet) or(b alphabet) alphabet {
	return alphabet{a[0] | b[0], a[1] | b[1], a[2] | b[2], a[3] | b[3]}
}

func (a alphabet) minus(b alphabet) alphabet {
	return alphabet{a[0] &^ b[0], a[1] &^ b[1], a[2] &^ b[2], a[3] &^ b[3]}
}

func (a alphabet) meets(b alphabet) bool {
	return a[0]&b[0]|a[1]&b[1]|a[2]&b[2]|a[3]&b[3] != 0
}

func (a alphabet) within(b alphabet) bool { return a.minus(b) == alphabet{} }

func (a alphabet) hasHigh() bool { return a[2]|a[3] != 0 }

// lowerASCII maps the ASCII upper-case letters of a to lower case.
func (a alphabet) lowerASCII() alphabet {
	const upper = uint64(0x7fffffe) // bits 1..26 of the second word: 'A'..'Z' (0x41..0x5a)
	u := a[1] & upper
	a[1] = a[1]&^upper | u<<32
	return a
}

// alphabetMap is what a transformation can make of values over an alphabet.
type alphabetMap func(alphabet) alphabet

var (
	cmdLineSpaces   = alphabetOf(" ,;\t\r\n")
	asciiWhitespace = alphabetOf("\t\n\v\f\r ")
	unicodeEscape   = alphabetOf("%u0123456789abcdef")
	pathSeparators  = alphabetOf("/.")
	winPathChars    = alphabetOf("\\/.")
)

func identity(a alphabet) alphabet { return a }

func full(alphabet) alphabet { return fullAlphabet }

// decodes is a decoder that only changes a value holding its escape character, and may then
// produce any byte.
func decodes(escape byte) alphabetMap {
	return func(a alphabet) alphabet {
		if a.has(escape) {
			return fullAlphabet
		}
		return a
	}
}

// withWhen adds extra when a meets trigger.
func withWhen(trigger, extra alphabet) alphabetMap {
	return func(a alphabet) alphabet {
		if a.meets(trigger) {
			return a.or(extra)
		}
		return a
	}
}

// transformMaps are the models of Coraza v3's transformations (lower-case names). A decoder
// only changes a value holding its escape character (%, + for the URL decoders, & for HTML
// entities, \ for JS, CSS and escape sequences), and may then produce any byte; the removing
// transformations produce a subset; the whitespace and comment rewrites add a space;
// lowercase is strings.ToLower, whose non-ASCII input can turn into ASCII letters
// (lowerFromHigh). A transformation not here yields any byte.
var transformMaps = map[string]alphabetMap{
	"none": identity, "removenulls": identity, "removewhitespace": identity, "removecommentschar": identity,
	"removecomments": identity, "trim": identity, "trimleft": identity, "trimright": identity,
	"urldecodeuni": urlDecodes, "urldecode": urlDecodes,
	"htmlentitydecode": decodes('&'),
	"jsdecode":         decodes('\\'), "cssdecode": decodes('\\'), "escapeseqdecode": decodes('\\'),
	"lowercase": func(a alphabet) alphabet {
		out := a.lowerASCII()
		if a.hasHigh() {
			out = out.or(lowerFromHigh())
		}
		return out
	},
	// cmdLine deletes \ " ' ^, turns , ; and whitespace into one space, lowercases ASCII.
	"cmdline": func(a alphabet) alphabet {
		out := a.lowerASCII()
		if a.meets(cmdLineSpaces) {
			out.add(' ')
		}
		return out
	},
	"compresswhitespace": func(a alphabet) alphabet {
		if a.meets(asciiWhitespace) || a.hasHigh() {
			a.add(' ')
		}
		return a
	},
	"replacecomments":  withWhen(alphabetOf("/"), alphabetOf(" ")),
	"normalizepath":    withWhen(pathSeparators, pathSeparators),
	"normalisepath":    withWhen(pathSeparators, pathSeparators),
	"normalizepathwin": withWhen(winPathChars, pathSeparators),
	"normalisepathwin": withWhen(winPathChars, pathSeparators),
	"utf8tounicode": func(a alphabet) alphabet {
		if a.hasHigh() {
			return a.minus(highAlphabet).or(unicodeEscape)
		}
		return a
	},
	"hexencode": func(alphabet) alphabet { return hexLower },
	"length":    func(alphabet) alphabet { return digitsAlpha },
}

func urlDecodes(a alphabet) alphabet {
	if a.has('%') {
		return fullAlphabet
	}
	if a.has('+') {
		a.add(' ')
	}
	return a
}

// transformModel is the model of a transformation (lower-case name); false with the full
// alphabet for one not modelled.
func transformModel(name string) (alphabetMap, bool) {
	if f, ok := transformMaps[name]; ok {
		return f, true
	}
	return full, false
}

// transformChain applies a rule's transformations to a, keeping every stage (a rule with
// multiMatch runs its operator on each).
func transformChain(chain []alphabetMap, a alphabet) alphabet {
	out := a
	for _, t := range chain {
		a = t(a)
		out = out.or(a)
	}
	return out
}

// condition is a monotone test on an alphabet: "some value over this alphabet could make the
// operator match".
type condition struct {
	kind condKind
	mask alphabet // condAny: the alphabet meets mask
	subs []condition
}

type condKind uint8

const (
	condTrue  condKind = iota
	condFalse          // no value can match
	condAny            // one of mask's bytes is needed
	condAll            // every sub holds
	condOneOf          // one sub holds
)

var (
	always = condition{kind: condTrue}
	never  = condition{kind: condFalse}
)

func anyOf(mask alphabet) condition {
	if mask == (alphabet{}) {
		return never
	}
	return condition{kind: condAny, mask: mask}
}

// flatten reads the operands of a conjunction (kind condAll) or a disjunction (condOneOf):
// the byte tests, the other conditions, nested operands of the same kind flattened, the
// neutral constant left out; decided when an operand decides the whole (never in a
// conjunction, always in a disjunction).
func flatten(kind condKind, subs []condition) (masks []alphabet, rest []condition, decided bool) {
	neutral, decisive := condTrue, condFalse
	if kind == condOneOf {
		neutral, decisive = condFalse, condTrue
	}
	var walk func(cs []condition) bool
	walk = func(cs []condition) bool {
		for _, c := range cs {
			switch c.kind {
			case decisive:
				return false
			case neutral:
			case condAny:
				masks = append(masks, c.mask)
			case kind:
				if !walk(c.subs) {
					return false
				}
			default:
				rest = append(rest, c)
			}
		}
		return true
	}
	return masks, rest, !walk(subs)
}

// allOf is the conjunction, simplified: constants folded, nested conjunctions flattened,
// repeated and implied byte needs dropped (needing one of {a, A} implies needing one of
// {a, A, b}).
func allOf(subs ...condition) condition {
	masks, rest, decided := flatten(condAll, subs)
	if decided {
		return never
	}
	var out []condition
	for i, m := range masks {
		implied := false
		for j, n := range masks {
			if i != j && n.within(m) && (n != m || j < i) {
				implied = true
				break
			}
		}
		if !implied {
			out = append(out, anyOf(m))
		}
	}
	return joined(condAll, append(out, rest...)) // the cheap byte tests first
}

// joined is the conjunction or disjunction (kind) of operands: its neutral value without
// any, the operand itself for one.
func joined(kind condKind, operands []condition) condition {
	switch {
	case len(operands) == 1:
		return operands[0]
	case len(operands) > 1:
		return condition{kind: kind, subs: operands}
	case kind == condAll:
		return always
	}
	return never
}

// oneOf is the disjunction, simplified: constants folded, nested disjunctions flattened, the
// byte tests merged into one.
func oneOf(subs ...condition) condition {
	masks, rest, decided := flatten(condOneOf, subs)
	if decided {
		return always
	}
	var mask alphabet
	for _, m := range masks {
		mask = mask.or(m)
	}
	var out []condition
	if mask != (alphabet{}) {
		out = append(out, anyOf(mask))
	}
	return joined(condOneOf, append(out, absorbed(mask, rest)...))
}

// absorbed drops the alternatives another one implies: a conjunction needing a byte of
// mask (the merged byte tests) implies them, and one whose byte needs include another
// conjunction's implies that one (x or (x and y) is x).
func absorbed(mask alphabet, alts []condition) []condition {
	flat := func(c condition) bool {
		if c.kind != condAll {
			return false
		}
		for _, s := range c.subs {
			if s.kind != condAny {
				return false
			}
		}
		return true
	}
	implies := func(c, d condition) bool { // c, d flat: every need of d is one of c's
		for _, n := range d.subs {
			found := false
			for _, m := range c.subs {
				if m.mask == n.mask {
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
		return true
	}
	out := make([]condition, 0, len(alts))
	for _, c := range alts {
		if c.kind == condAll && slices.ContainsFunc(c.subs, func(s condition) bool { return s.kind == condAny && s.mask.within(mask) }) {
			continue
		}
		out = append(out, c)
	}
	kept := out[:0]
	for i, c := range out {
		redundant := false
		if flat(c) {
			for j, d := range out {
				if i != j && flat(d) && implies(c, d) && (!implies(d, c) || j < i) {
					redundant = true
					break
				}
			}
		}
		if !redundant {
			kept = append(kept, c)
		}
	}
	return kept
}

func (c *condition) holds(a *alphabet) bool {
	switch c.kind {
	case condTrue:
		return true
	case condAny:
		return a[0]&c.mask[0]|a[1]&c.mask[1]|a[2]&c.mask[2]|a[3]&c.mask[3] != 0
	case condAll:
		for i := range c.subs {
			if !c.subs[i].holds(a) {
				return false
			}
		}
		return true
	case condOneOf:
		for i := range c.subs {
			if c.subs[i].holds(a) {
				return true
			}
		}
	}
	return false
}

// assuming is the condition on alphabets that hold every byte of present besides their own:
// byte needs that present meets always hold. It is a cheaper, weaker test (if it fails, the
// condition fails).
func (c condition) assuming(present alphabet) condition {
	switch c.kind {
	case condAny:
		if c.mask.meets(present) {
			return always
		}
		return c
	case condAll, condOneOf:
		subs := make([]condition, 0, len(c.subs))
		for _, s := range c.subs {
			subs = append(subs, s.assuming(present))
		}
		if c.kind == condAll {
			return allOf(subs...)
		}
		return oneOf(subs...)
	}
	return c
}

// size is the number of nodes of the condition (its evaluation cost at worst).
func (c condition) size() int {
	n := 1
	for _, s := range c.subs {
		n += s.size()
	}
	return n
}

// runeMask is the alphabet of a rune as a value can spell it: the byte itself for ASCII,
// any byte from 0x80 otherwise (a UTF-8 sequence, or an invalid byte read as U+FFFD); fold
// adds the runes equal under simple case folding.
func runeMask(r rune, fold bool) alphabet {
	var m alphabet
	addRune := func(r rune) {
		if r < utf8.RuneSelf {
			m.add(byte(r))
		} else {
			m = m.or(highAlphabet)
		}
	}
	addRune(r)
	if fold {
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			addRune(f)
		}
	}
	return m
}

// rxCondition is the condition of a regular expression as Go's regexp parses it: a match is a
// run of runes the pattern spells, so each literal rune and each class needs one of its bytes
// in the input, alternatives need one branch, optional parts and assertions (anchors, word
// boundaries) need nothing.
func rxCondition(re *syntax.Regexp) condition {
	switch re.Op {
	case syntax.OpNoMatch:
		return never
	case syntax.OpLiteral:
		subs := make([]condition, 0, len(re.Rune))
		for _, r := range re.Rune {
			subs = append(subs, anyOf(runeMask(r, re.Flags&syntax.FoldCase != 0)))
		}
		return allOf(subs...)
	case syntax.OpCharClass:
		var m alphabet
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			if hi >= utf8.RuneSelf {
				m = m.or(highAlphabet)
				hi = utf8.RuneSelf - 1
			}
			for r := lo; r <= hi; r++ {
				m.add(byte(r))
			}
		}
		return anyOf(m)
	case syntax.OpAnyCharNotNL:
		return anyOf(fullAlphabet.minus(alphabetOf("\n")))
	case syntax.OpAnyChar:
		return anyOf(fullAlphabet)
	case syntax.OpCapture, syntax.OpPlus:
		return rxCondition(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min < 1 {
			return always
		}
		return rxCondition(re.Sub[0])
	case syntax.OpConcat:
		subs := make([]condition, 0, len(re.Sub))
		for _, s := range re.Sub {
			subs = append(subs, rxCondition(s))
		}
		return allOf(subs...)
	case syntax.OpAlternate:
		subs := make([]condition, 0, len(re.Sub))
		for _, s := range re.Sub {
			subs = append(subs, rxCondition(s))
		}
		return oneOf(subs...)
	}
	// Empty matches, anchors, word boundaries, stars and quests need nothing.
	return always
}

// phraseCondition is the condition of @pm's phrases: Coraza matches them ignoring ASCII case.
// A phrase needs each of its bytes (a letter in either case, a byte from 0x80 as any of
// them); a phrase needing every byte another one needs adds nothing, so only the minimal
// sets of needs are kept (data files hold thousands of phrases, most sharing their letters).
func phraseCondition(phrases []string) condition {
	var needs []alphabet // per phrase: its bytes, letters as lower case, 0x80 for the high ones
	seen := map[alphabet]bool{}
	for _, p := range phrases {
		if p == "" {
			return always
		}
		var n alphabet
		for i := 0; i < len(p); i++ {
			c := p[i]
			switch {
			case c >= utf8.RuneSelf:
				c = 0x80
			case c >= 'A' && c <= 'Z':
				c += 'a' - 'A'
			}
			n.add(c)
		}
		if !seen[n] {
			seen[n] = true
			needs = append(needs, n)
		}
	}
	slices.SortFunc(needs, func(a, b alphabet) int { return a.size() - b.size() })
	var minimal []alphabet
	for _, n := range needs {
		if !slices.ContainsFunc(minimal, func(m alphabet) bool { return m.within(n) }) {
			minimal = append(minimal, n)
		}
	}
	subs := make([]condition, 0, len(minimal))
	for _, n := range minimal {
		var need []condition
		for c := 0; c < 256; c++ {
			if !n.has(byte(c)) {
				continue
			}
			switch {
			case c == 0x80:
				need = append(need, anyOf(highAlphabet))
			case c >= 'a' && c <= 'z':
				need = append(need, anyOf(alphabetOf(string(rune(c))+string(rune(c-'a'+'A')))))
			default:
				need = append(need, anyOf(alphabetOf(string(rune(c)))))
			}
		}
		subs = append(subs, allOf(need...))
	}
	return oneOf(subs...)
}

// size is the number of bytes in a.
func (a alphabet) size() int {
	return bits.OnesCount64(a[0]) + bits.OnesCount64(a[1]) + bits.OnesCount64(a[2]) + bits.OnesCount64(a[3])
}

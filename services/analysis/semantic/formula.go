package semantic

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Formula limits.
const (
	// MaxFormulaDepth bounds the nesting of parentheses and unary signs of a formula.
	MaxFormulaDepth = 64
	// MaxFormulaLength bounds the text ParseFormula accepts (the contract allows 1024).
	MaxFormulaLength = 64 << 10
	maxNameLength    = 64
	maxNumberLength  = 64
)

// Expr is a parsed formula: a number, a metric reference, a unary minus or a binary
// operation (+ - * /).
type Expr struct {
	op   byte // 'n' number, 'm' metric, '~' unary minus, or + - * /
	num  float64
	name string
	l, r *Expr
}

// FormulaError is a formula that does not parse; Pos is the byte offset of the problem.
type FormulaError struct {
	Pos     int
	Message string
}

func (e *FormulaError) Error() string { return fmt.Sprintf("%s at position %d", e.Message, e.Pos+1) }

// ParseFormula parses a formula: metric names, decimal numbers, + - * /, unary minus,
// parentheses and spaces; * and / bind tighter than + and -, operators of one level
// associate left. Nesting deeper than MaxFormulaDepth is refused with an error (the parser
// is recursive descent, so the bound also bounds its stack).
func ParseFormula(expr string) (*Expr, error) {
	if len(expr) > MaxFormulaLength {
		return nil, &FormulaError{Pos: MaxFormulaLength, Message: fmt.Sprintf("formula longer than %d characters", MaxFormulaLength)}
	}
	p := &parser{src: expr}
	p.next()
	if p.err != nil {
		return nil, p.err
	}
	if p.tok == tEOF {
		return nil, &FormulaError{Pos: 0, Message: "empty formula"}
	}
	e := p.sum(0)
	if p.err != nil {
		return nil, p.err
	}
	if p.tok != tEOF {
		p.fail("unexpected " + p.describe())
		return nil, p.err
	}
	return e, nil
}

// References lists the metric names the formula uses, each once, in order of appearance.
func (e *Expr) References() []string {
	var out []string
	var walk func(*Expr)
	walk = func(x *Expr) {
		for x != nil {
			switch x.op {
			case 'm':
				found := false
				for _, n := range out {
					if n == x.name {
						found = true
						break
					}
				}
				if !found {
					out = append(out, x.name)
				}
				return
			case 'n':
				return
			case '~':
				x = x.l
			default:
				walk(x.l)
				x = x.r
			}
		}
	}
	walk(e)
	return out
}

// String renders the formula fully parenthesised.
func (e *Expr) String() string {
	var b strings.Builder
	e.write(&b)
	return b.String()
}

func (e *Expr) write(b *strings.Builder) {
	switch e.op {
	case 'n':
		b.WriteString(strconv.FormatFloat(e.num, 'f', -1, 64))
	case 'm':
		b.WriteString(e.name)
	case '~':
		b.WriteString("(-")
		e.l.write(b)
		b.WriteByte(')')
	default:
		b.WriteByte('(')
		e.l.write(b)
		b.WriteByte(' ')
		b.WriteByte(e.op)
		b.WriteByte(' ')
		e.r.write(b)
		b.WriteByte(')')
	}
}

// size counts the nodes of the expression.
func (e *Expr) size() int {
	if e == nil {
		return 0
	}
	return 1 + e.l.size() + e.r.size()
}

type token int

const (
	tEOF token = iota
	tNum
	tName
	tOp // + - * /
	tLParen
	tRParen
)

type parser struct {
	src  string
	pos  int // offset after the current token
	at   int // offset of the current token
	tok  token
	op   byte
	num  float64
	name string
	err  *FormulaError
}

func (p *parser) fail(msg string) *Expr {
	if p.err == nil {
		p.err = &FormulaError{Pos: p.at, Message: msg}
	}
	return nil
}

func (p *parser) describe() string {
	switch p.tok {
	case tEOF:
		return "end of formula"
	case tNum:
		return "number " + p.src[p.at:p.pos]
	case tName:
		return "name " + p.name
	case tLParen:
		return `"("`
	case tRParen:
		return `")"`
	default:
		return `"` + string(p.op) + `"`
	}
}

func (p *parser) next() {
	for p.pos < len(p.src) && p.src[p.pos] == ' ' {
		p.pos++
	}
	p.at = p.pos
	if p.pos >= len(p.src) {
		p.tok = tEOF
		return
	}
	c := p.src[p.pos]
	switch {
	case c == '+' || c == '-' || c == '*' || c == '/':
		p.tok, p.op = tOp, c
		p.pos++
	case c == '(':
		p.tok = tLParen
		p.pos++
	case c == ')':
		p.tok = tRParen
		p.pos++
	case c >= '0' && c <= '9' || c == '.':
		start := p.pos
		digits, dots := 0, 0
		for p.pos < len(p.src) {
			d := p.src[p.pos]
			if d >= '0' && d <= '9' {
				digits++
			} else if d == '.' {
				dots++
			} else {
				break
			}
			p.pos++
		}
		text := p.src[start:p.pos]
		if digits == 0 || dots > 1 || len(text) > maxNumberLength {
			p.fail("malformed number " + strconv.Quote(text))
			p.tok = tEOF
			return
		}
		v, err := strconv.ParseFloat(text, 64)
		if err != nil {
			p.fail("malformed number " + strconv.Quote(text))
			p.tok = tEOF
			return
		}
		// String writes the value in full, which can be longer than the text (64 nines are
		// 1e64, ".01" is "0.01"); the limit holds for both, so String re-parses.
		if n := len(strconv.AppendFloat(make([]byte, 0, 80), v, 'f', -1, 64)); n > maxNumberLength {
			p.fail(fmt.Sprintf("number %s too long: written in full it has %d characters, more than %d", text, n, maxNumberLength))
			p.tok = tEOF
			return
		}
		if p.pos < len(p.src) && isNameChar(p.src[p.pos]) {
			p.fail("malformed number " + strconv.Quote(p.src[start:p.pos+1]))
			p.tok = tEOF
			return
		}
		p.tok, p.num = tNum, v
	case c >= 'a' && c <= 'z' || c == '_':
		start := p.pos
		for p.pos < len(p.src) && isNameChar(p.src[p.pos]) {
			p.pos++
		}
		name := p.src[start:p.pos]
		if !validMetricName(name) {
			p.fail("invalid metric name " + strconv.Quote(name) + " (a lowercase letter, then letters, digits or underscores, at most 64)")
			p.tok = tEOF
			return
		}
		p.tok, p.name = tName, name
	default:
		p.fail(fmt.Sprintf("unexpected character %q", rune(c)))
		p.tok = tEOF
	}
}

func isNameChar(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' }

func validMetricName(s string) bool {
	if len(s) == 0 || len(s) > maxNameLength || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isNameChar(s[i]) {
			return false
		}
	}
	return true
}

// sum := product (('+'|'-') product)*
func (p *parser) sum(depth int) *Expr {
	l := p.product(depth)
	for p.err == nil && p.tok == tOp && (p.op == '+' || p.op == '-') {
		op := p.op
		p.next()
		r := p.product(depth)
		l = &Expr{op: op, l: l, r: r}
	}
	return l
}

// product := unary (('*'|'/') unary)*
func (p *parser) product(depth int) *Expr {
	l := p.unary(depth)
	for p.err == nil && p.tok == tOp && (p.op == '*' || p.op == '/') {
		op := p.op
		p.next()
		r := p.unary(depth)
		l = &Expr{op: op, l: l, r: r}
	}
	return l
}

// unary := ('-'|'+') unary | number | name | '(' sum ')'
func (p *parser) unary(depth int) *Expr {
	if p.err != nil {
		return nil
	}
	if depth >= MaxFormulaDepth {
		return p.fail(fmt.Sprintf("formula nested deeper than %d levels", MaxFormulaDepth))
	}
	switch p.tok {
	case tOp:
		if p.op == '-' || p.op == '+' {
			op := p.op
			p.next()
			x := p.unary(depth + 1)
			if op == '+' || x == nil {
				return x
			}
			return &Expr{op: '~', l: x}
		}
		return p.fail("unexpected " + p.describe())
	case tNum:
		e := &Expr{op: 'n', num: p.num}
		p.next()
		return e
	case tName:
		e := &Expr{op: 'm', name: p.name}
		p.next()
		return e
	case tLParen:
		p.next()
		e := p.sum(depth + 1)
		if p.err != nil {
			return nil
		}
		if p.tok != tRParen {
			return p.fail(`missing ")" before ` + p.describe())
		}
		p.next()
		return e
	default:
		return p.fail("unexpected " + p.describe())
	}
}

// Parsed formulas are immutable: Compile reuses them across queries (stored formulas recur),
// up to maxParsed expressions.
var (
	parsedFormulas sync.Map // expression -> *Expr
	parsedCount    atomic.Int64
)

const maxParsed = 4096

func parseCached(expr string) (*Expr, error) {
	if v, ok := parsedFormulas.Load(expr); ok {
		return v.(*Expr), nil
	}
	e, err := ParseFormula(expr)
	if err != nil {
		return nil, err
	}
	if parsedCount.Load() < maxParsed {
		if _, loaded := parsedFormulas.LoadOrStore(expr, e); !loaded {
			parsedCount.Add(1)
		}
	}
	return e, nil
}

package semantic

import (
	"errors"
	"strings"
	"testing"
)

// FuzzFormula checks ParseFormula beyond FuzzParseFormula's round trip. A parsed formula
// nests parentheses and signs less than MaxFormulaDepth deep (deeper is an error, not a
// stack overflow), has at most one node per byte of input, and references only valid metric
// names, each once and each written in the input. Its String re-parses to the same String,
// unless String's own parentheses (one level per operator) and spaces exceed
// MaxFormulaDepth or MaxFormulaLength. A refusal is a *FormulaError within the input.
func FuzzFormula(f *testing.F) {
	for _, s := range []string{
		"gmv", "gmv / order_count", "a + b * c", "(a + b) * c", "a - (b - c)", "-a * b", "a * -b", "+a", "a - -1",
		"gmv * 0.1 + 1.5", ".5 * x", "10. * x", "  ( ( gmv ) )  ", "b2 + a_1 + b2", "100",
		"(gmv - refunds) / order_count + order_count * 0.5 - (a / (b + c))",
		"", "a +", "(a", "a)", "()", "a b", "a * * b", "1.2.3", "2x", ".", "Gmv", "gmv; drop table x", "_x + 1",
		strings.Repeat("(", 70) + "gmv" + strings.Repeat(")", 70), strings.Repeat("-", 70) + "gmv",
		strings.Repeat("9", 64), "." + strings.Repeat("0", 62) + "1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseFormula(s)
		if err != nil {
			var fe *FormulaError
			if !errors.As(err, &fe) || fe.Pos < 0 || fe.Pos > len(s) || fe.Message == "" {
				t.Fatalf("ParseFormula(%q): %#v", s, err)
			}
			return
		}
		if d := parenDepth(s); d >= MaxFormulaDepth {
			t.Fatalf("ParseFormula(%q): accepted %d nested parentheses", s, d)
		}
		if d := e.minusDepth(); d >= MaxFormulaDepth {
			t.Fatalf("ParseFormula(%q): %d nested unary minus", s, d)
		}
		if n := e.size(); n > len(s) {
			t.Fatalf("ParseFormula(%q): %d nodes", s, n)
		}
		refs := e.References()
		seen := map[string]bool{}
		for _, r := range refs {
			if !validMetricName(r) || seen[r] || !strings.Contains(s, r) {
				t.Fatalf("ParseFormula(%q).References() = %q", s, refs)
			}
			seen[r] = true
		}

		str := e.String()
		again, err := ParseFormula(str)
		if err != nil {
			if !strings.Contains(err.Error(), "nested deeper") && len(str) <= MaxFormulaLength {
				t.Fatalf("%q -> %q: %v", s, str, err)
			}
			return
		}
		if again.String() != str {
			t.Fatalf("%q -> %q -> %q", s, str, again.String())
		}
	})
}

// parenDepth is the deepest nesting of parentheses in s.
func parenDepth(s string) int {
	d, deepest := 0, 0
	for _, c := range s {
		switch c {
		case '(':
			d++
			deepest = max(deepest, d)
		case ')':
			d--
		}
	}
	return deepest
}

// minusDepth is the most unary minus nodes on one path of the tree.
func (e *Expr) minusDepth() int {
	if e == nil {
		return 0
	}
	n := max(e.l.minusDepth(), e.r.minusDepth())
	if e.op == '~' {
		n++
	}
	return n
}

// Regression (FuzzParseFormula's round trip, found while writing FuzzFormula): a number of
// at most 64 characters parsed, but String writes it in full, which can take 65, and that
// did not parse: 64 nines are 1e64, written with 65 digits, and ".000…1" gains a "0".
func TestParseFormulaNumberRoundTrip(t *testing.T) {
	for _, s := range []string{strings.Repeat("9", 64), "." + strings.Repeat("0", 62) + "1", "." + strings.Repeat("0", 55) + "12345678"} {
		if _, err := ParseFormula(s); err == nil || !strings.Contains(err.Error(), "too long") {
			t.Errorf("%q: %v, want a too-long error", s, err)
		}
	}
	for _, s := range []string{strings.Repeat("9", 15), strings.Repeat("1", 64), "0." + strings.Repeat("0", 61) + "1", "1.5"} {
		e, err := ParseFormula(s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if again, err := ParseFormula(e.String()); err != nil || again.String() != e.String() {
			t.Errorf("%q -> %q: %v", s, e.String(), err)
		}
	}
}

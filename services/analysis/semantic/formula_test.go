package semantic

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseFormula(t *testing.T) {
	cases := []struct {
		in, want string
		refs     []string
	}{
		{"gmv", "gmv", []string{"gmv"}},
		{"gmv / order_count", "(gmv / order_count)", []string{"gmv", "order_count"}},
		{"a + b * c", "(a + (b * c))", []string{"a", "b", "c"}},
		{"a * b + c", "((a * b) + c)", []string{"a", "b", "c"}},
		{"(a + b) * c", "((a + b) * c)", []string{"a", "b", "c"}},
		{"a - b - c", "((a - b) - c)", []string{"a", "b", "c"}},
		{"a / b / 2", "((a / b) / 2)", []string{"a", "b"}},
		{"a - (b - c)", "(a - (b - c))", []string{"a", "b", "c"}},
		{"-a * b", "((-a) * b)", []string{"a", "b"}},
		{"a * -b", "(a * (-b))", []string{"a", "b"}},
		{"+a", "a", []string{"a"}},
		{"a - -1", "(a - (-1))", []string{"a"}},
		{"gmv * 0.1 + 1.5", "((gmv * 0.1) + 1.5)", []string{"gmv"}},
		{".5 * x", "(0.5 * x)", []string{"x"}},
		{"10. * x", "(10 * x)", []string{"x"}},
		{"  ( ( gmv ) )  ", "gmv", []string{"gmv"}},
		{"a + a * a", "(a + (a * a))", []string{"a"}},
		{"b2 + a_1 + b2", "((b2 + a_1) + b2)", []string{"b2", "a_1"}},
		{"100", "100", nil},
	}
	for _, c := range cases {
		e, err := ParseFormula(c.in)
		if err != nil {
			t.Errorf("ParseFormula(%q): %v", c.in, err)
			continue
		}
		if got := e.String(); got != c.want {
			t.Errorf("ParseFormula(%q) = %s, want %s", c.in, got, c.want)
		}
		if got := e.References(); !reflect.DeepEqual(got, c.refs) {
			t.Errorf("ParseFormula(%q).References() = %v, want %v", c.in, got, c.refs)
		}
	}
}

func TestParseFormulaErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", "empty formula"},
		{"   ", "empty formula"},
		{"a +", "unexpected end of formula"},
		{"(a", `missing ")"`},
		{"a)", `unexpected ")"`},
		{"()", `unexpected ")"`},
		{"a b", "unexpected name b"},
		{"a * * b", `unexpected "*"`},
		{"1.2.3", "malformed number"},
		{"2x", "malformed number"},
		{".", "malformed number"},
		{"Gmv", "unexpected character 'G'"},
		{"gmv; drop table x", "unexpected character ';'"},
		{"a % b", "unexpected character '%'"},
		{"_x + 1", "invalid metric name"},
		{strings.Repeat("a", 65), "invalid metric name"},
		{"a / (b", `missing ")"`},
	}
	for _, c := range cases {
		_, err := ParseFormula(c.in)
		if err == nil {
			t.Errorf("ParseFormula(%q): no error", c.in)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseFormula(%q) = %v, want it to mention %q", c.in, err, c.want)
		}
	}
}

func TestParseFormulaDepth(t *testing.T) {
	nest := func(n int) string { return strings.Repeat("(", n) + "gmv" + strings.Repeat(")", n) }
	if _, err := ParseFormula(nest(MaxFormulaDepth - 1)); err != nil {
		t.Fatalf("%d levels: %v", MaxFormulaDepth-1, err)
	}
	for _, n := range []int{MaxFormulaDepth, 1000, 10000, 30000} {
		_, err := ParseFormula(nest(n))
		if err == nil || !strings.Contains(err.Error(), "nested deeper") {
			t.Errorf("%d levels of parentheses: %v, want a depth error", n, err)
		}
		_, err = ParseFormula(strings.Repeat("-", n) + "gmv")
		if err == nil || !strings.Contains(err.Error(), "nested deeper") {
			t.Errorf("%d unary signs: %v, want a depth error", n, err)
		}
		// Unclosed: still the depth error, not a stack overflow.
		if _, err := ParseFormula(strings.Repeat("(", n)); err == nil {
			t.Errorf("%d open parentheses: no error", n)
		}
	}
	// Long flat formulas are loops, not recursion.
	long := "a" + strings.Repeat(" + a", 10000)
	e, err := ParseFormula(long)
	if err != nil {
		t.Fatalf("long flat formula: %v", err)
	}
	if n := e.size(); n != 20001 {
		t.Fatalf("size %d", n)
	}
	if _, err := ParseFormula(strings.Repeat("a+", MaxFormulaLength)); err == nil {
		t.Fatal("over-long formula accepted")
	}
}

func FuzzParseFormula(f *testing.F) {
	for _, s := range []string{"a + b", "(a*b)/-2", "((((x))))", "1.5.", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseFormula(s)
		if err != nil {
			return
		}
		// What parses re-parses to the same tree.
		again, err := ParseFormula(e.String())
		if err != nil {
			if strings.Contains(err.Error(), "nested deeper") {
				return // String adds parentheses
			}
			t.Fatalf("%q -> %q: %v", s, e.String(), err)
		}
		if again.String() != e.String() {
			t.Fatalf("%q -> %q -> %q", s, e.String(), again.String())
		}
	})
}

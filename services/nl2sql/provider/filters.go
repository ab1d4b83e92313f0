package provider

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/shopmind/shopmind/internal/apperr"
)

// filter is one parsed row filter: "<schema>.<table>.<column> IN {{ var }}",
// "... IN (1, 2)", "... = {{ var }}" or "... = 7". The built-in provider enforces integer
// filters only (shop ids, the tenant); anything else is refused when the policy is created.
type filter struct {
	column   string
	variable string  // set for {{ var }}
	literal  []int64 // set otherwise
}

var (
	filterRe   = regexp.MustCompile(`^\s*([A-Za-z_][A-Za-z0-9_]*|\*)\.([A-Za-z_*][A-Za-z0-9_*]*)\.([a-z_][a-z0-9_]{0,62})\s+(?i:(IN|=))\s+(.+?)\s*$`)
	variableRe = regexp.MustCompile(`^\{\{\s*([a-z_][a-z0-9_]{0,62})\s*\}\}$`)
)

func parseFilter(expr string) (filter, error) {
	m := filterRe.FindStringSubmatch(expr)
	if m == nil {
		return filter{}, fmt.Errorf("row filter %q is not <schema>.<table>.<column> IN|= <values or {{ variable }}>", apperr.Clip(expr, 80))
	}
	f := filter{column: m[3]}
	if v := variableRe.FindStringSubmatch(m[5]); v != nil {
		f.variable = v[1]
		return f, nil
	}
	vals, err := intList(m[5])
	if err != nil {
		return filter{}, fmt.Errorf("row filter %q: %v (the built-in provider enforces integer filters only)", apperr.Clip(expr, 80), err)
	}
	if strings.EqualFold(m[4], "=") && len(vals) != 1 {
		return filter{}, fmt.Errorf("row filter %q: = takes one value", apperr.Clip(expr, 80))
	}
	f.literal = vals
	return f, nil
}

// values are the filter's values, its variable substituted from vars.
func (f filter) values(vars map[string]string) ([]int64, error) {
	if f.variable == "" {
		return f.literal, nil
	}
	raw, ok := vars[f.variable]
	if !ok {
		return nil, fmt.Errorf("the chat sets no role variable %s", f.variable)
	}
	vals, err := intList(raw)
	if err != nil {
		return nil, fmt.Errorf("role variable %s: %v", f.variable, err)
	}
	return vals, nil
}

// intList parses "7", "1,2" or "(1, 2)": 1 to 1000 positive integers.
func intList(s string) ([]int64, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "(") && strings.HasSuffix(s, ")") {
		s = s[1 : len(s)-1]
	}
	parts := strings.Split(s, ",")
	if len(parts) > 1000 {
		return nil, fmt.Errorf("more than 1000 values")
	}
	out := make([]int64, 0, len(parts))
	for _, p := range parts {
		n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive integer", apperr.Clip(p, 80))
		}
		out = append(out, n)
	}
	return out, nil
}

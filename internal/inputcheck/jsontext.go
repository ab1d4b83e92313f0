package inputcheck

import (
	"fmt"
	"strconv"
)

// Problem is what JSONTextProblem found: the JSON path of the value at fault, the rule and
// a message (as a 400 names them).
type Problem struct {
	Field, Rule, Message string
}

// Error is "field: message".
func (p Problem) Error() string { return p.Field + ": " + p.Message }

// JSONTextProblem finds, in one pass over JSON text, the first thing the stores cannot hold
// that is visible in the text itself: a NUL (raw, or the escape \u0000), a lone UTF-16
// surrogate escape (\ud800 without its pair: no character, so not UTF-8), or containers
// nested deeper than maxDepth. The web application firewall runs it before its rules, so
// these get the platform's 400 naming the field rather than a 403 (internal/waf/WAF.md).
// Text that is not JSON is scanned the same way; the decoder names its other faults.
func JSONTextProblem(body []byte, maxDepth int) (Problem, bool) {
	depth, inString := 0, false
	problem := func(off int, rule, msg string) (Problem, bool) {
		field := fieldAt(body, off)
		if field == "" {
			field = "request"
		}
		return Problem{Field: field, Rule: rule, Message: msg}, true
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c == 0 {
			return problem(i, RuleNoNUL, "must not contain NUL characters (U+0000)")
		}
		if !inString {
			switch c {
			case '"':
				inString = true
			case '{', '[':
				if depth++; depth > maxDepth {
					return problem(i, RuleWellFormed, fmt.Sprintf("nested more than %d levels deep", maxDepth))
				}
			case '}', ']':
				depth--
			}
			continue
		}
		switch c {
		case '"':
			inString = false
		case '\\':
			if i+1 >= len(body) {
				return Problem{}, false
			}
			if body[i+1] != 'u' {
				i++ // a one-character escape
				continue
			}
			u, ok := hex4(body, i+2)
			if !ok {
				i++
				continue
			}
			switch {
			case u == 0:
				return problem(i, RuleNoNUL, "must not contain NUL characters (U+0000)")
			case u >= 0xDC00 && u <= 0xDFFF:
				return problem(i, RuleUTF8, loneSurrogate(u))
			case u >= 0xD800 && u <= 0xDBFF:
				if low, ok := hex4(body, i+8); !ok || body[i+6] != '\\' || body[i+7] != 'u' || low < 0xDC00 || low > 0xDFFF {
					return problem(i, RuleUTF8, loneSurrogate(u))
				}
				i += 6 // the pair's low half
			}
			i += 5
		}
	}
	return Problem{}, false
}

func loneSurrogate(u int) string {
	return `must be valid UTF-8: the escape \u` + strconv.FormatInt(int64(u), 16) + " is a lone UTF-16 surrogate (half of a pair), which is no character"
}

// hex4 reads four hex digits at b[i:] (ok false when there are not four).
func hex4(b []byte, i int) (int, bool) {
	if i < 0 || i+4 > len(b) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[i:i+4]), 16, 16)
	return int(n), err == nil
}

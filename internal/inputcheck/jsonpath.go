package inputcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Body decoding errors name the field. protojson says where a syntax or type error is
// ("proto: syntax error (line 1:315): unexpected token 12345") but not in which field;
// encoding/json gives a byte offset. fieldAt turns either into the JSON path of the value
// at that place (metric.update_mask, items[3].dims), which the 400 then names.

// protojsonPosition finds protojson's "(line L:C)" (C counts runes from the line start).
var protojsonPosition = regexp.MustCompile(`\(line (\d+):(\d+)\)`)

// NamedDecodeError returns err with the JSON path of the failing value in front, when it
// can tell; body is what the decoder read, its first JSON value being the one decoded.
func NamedDecodeError(err error, body []byte) error {
	start := len(body) - len(bytes.TrimLeft(body, " \t\r\n"))
	off := -1
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		off = int(syn.Offset) - 1
	} else if m := protojsonPosition.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		col, _ := strconv.Atoi(m[2])
		off = runeOffset(body[start:], line, col)
		if off >= 0 {
			off += start
		}
	}
	if off < 0 {
		// protojson answers a lone surrogate escape with "unexpected EOF" and no position:
		// name the string that holds it.
		if p, ok := JSONTextProblem(body, 10000); ok && p.Rule == RuleUTF8 {
			return fmt.Errorf("%s (%w)", p.Error(), err)
		}
		return err
	}
	path := fieldAt(body, off)
	if path == "" {
		return err
	}
	return fmt.Errorf("%s: %w", path, err)
}

// runeOffset converts a 1-based line and rune column to a byte offset in b (-1: outside).
func runeOffset(b []byte, line, col int) int {
	i := 0
	for l := 1; l < line; l++ {
		nl := bytes.IndexByte(b[i:], '\n')
		if nl < 0 {
			return -1
		}
		i += nl + 1
	}
	for c := 1; c < col; c++ {
		if i >= len(b) {
			return -1
		}
		_, size := utf8.DecodeRune(b[i:])
		i += size
	}
	return i
}

// maxPathDepth bounds the nesting fieldAt follows.
const maxPathDepth = 16

// jsonFrame is an open object or array while fieldAt reads tokens.
type jsonFrame struct {
	object  bool
	key     string // the current member's name (objects)
	index   int    // the current element (arrays)
	wantKey bool   // the next string token is a member name
}

// fieldAt returns the path of the innermost value that starts at or before off in the JSON
// text data ("" for the top level). It reads tokens until it passes off, so a syntax error
// after off does not matter.
func fieldAt(data []byte, off int) string {
	var stack []jsonFrame
	path := func() string {
		var b strings.Builder
		for _, f := range stack {
			switch {
			case f.object && f.key != "":
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(f.key)
			case !f.object:
				fmt.Fprintf(&b, "[%d]", f.index)
			}
		}
		return b.String()
	}
	// afterValue moves the enclosing container past a value.
	afterValue := func() {
		if n := len(stack); n > 0 {
			if stack[n-1].object {
				stack[n-1].wantKey = true
			} else {
				stack[n-1].index++
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	found := ""
	for int(dec.InputOffset()) <= off {
		if len(stack) > maxPathDepth {
			// Deeper than any request message: name the place by its first levels (and
			// keep the scan linear on hostile nesting).
			return found + "..."
		}
		tok, err := dec.Token()
		if err != nil {
			break
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			afterValue()
			continue
		}
		if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].wantKey {
			stack[n-1].key, _ = tok.(string)
			stack[n-1].wantKey = false
			found = path() // an error at the name itself (unknown field) names it
			continue
		}
		found = path()
		if d, ok := tok.(json.Delim); ok {
			stack = append(stack, jsonFrame{object: d == '{', wantKey: d == '{'})
			continue
		}
		afterValue()
	}
	return found
}

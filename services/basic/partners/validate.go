package partners

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/shopmind/shopmind/internal/apperr"
)

// Bounds of the data a partner may send (see PROTOCOL.md).
const (
	MaxIDBytes        = 128     // goods, SKU ids and item numbers
	MaxNameRunes      = 512     // goods names
	MaxSpecRunes      = 256     // SKU specs
	MaxCategoryRunes  = 512     // category paths
	MaxImageURLBytes  = 2048    // image URLs
	MaxSKUsPerGoods   = 600     // SKUs embedded in one platform goods
	MaxAmount         = 1e12    // prices and costs
	MaxStock          = 1 << 40 // stock counts
	maxDecimalLiteral = 32
)

var (
	decimalRE  = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)
	platformRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)
	// minUpdatedAt rejects zero and placeholder timestamps (0001-01-01, 1970-01-01).
	minUpdatedAt = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
)

// maxClockSkew is how far in the future an updated_at may lie.
const maxClockSkew = 24 * time.Hour

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// decodeJSON decodes a whole body (one JSON value, nothing after it) into v. Unknown fields
// are ignored (partners may add fields); type mismatches are errors.
func decodeJSON(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return errors.New("empty body, want a JSON object")
	}
	if err := json.Unmarshal(body, v); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return fmt.Errorf("invalid JSON at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "json: "))
		case errors.As(err, &te):
			if te.Field != "" {
				return fmt.Errorf("%s: unexpected JSON %s", te.Field, te.Value)
			}
			return fmt.Errorf("JSON %s where an object is expected", te.Value)
		}
		return fmt.Errorf("invalid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// fieldErr is a validation failure at a path of the response (items[3].skus[0].price).
func fieldErr(path, format string, args ...any) error {
	return fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...))
}

// text checks a string field: present when required, at most max (bytes or runes), valid
// UTF-8 without control characters.
func text(path string, p *string, required bool, maxLen int, runes bool) (string, error) {
	if p == nil {
		if required {
			return "", fieldErr(path, "missing")
		}
		return "", nil
	}
	s := *p
	if required && strings.TrimSpace(s) == "" {
		return "", fieldErr(path, "empty")
	}
	n := len(s)
	if runes {
		n = utf8.RuneCountInString(s)
	}
	if n > maxLen {
		return "", fieldErr(path, "longer than %d", maxLen)
	}
	if !utf8.ValidString(s) || strings.ContainsFunc(s, unicode.IsControl) {
		return "", fieldErr(path, "holds control characters or invalid UTF-8")
	}
	return s, nil
}

// id checks an identifier: non-empty, at most MaxIDBytes, no surrounding or control space.
func id(path string, p *string) (string, error) {
	s, err := text(path, p, true, MaxIDBytes, false)
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(s) != s {
		return "", fieldErr(path, "has leading or trailing spaces")
	}
	return s, nil
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// amount parses a money amount: a JSON number, or (allowString) a decimal string such as
// "12.50". It must be finite, >= 0 and <= MaxAmount.
func amount(path string, raw json.RawMessage, required, allowString bool) (float64, error) {
	if isNull(raw) {
		if required {
			return 0, fieldErr(path, "missing")
		}
		return 0, nil
	}
	lit := string(bytes.TrimSpace(raw))
	if lit[0] == '"' {
		if !allowString {
			return 0, fieldErr(path, "is a string, want a JSON number")
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, fieldErr(path, "invalid string")
		}
		if len(s) > maxDecimalLiteral || !decimalRE.MatchString(s) {
			return 0, fieldErr(path, "%q is not a non-negative decimal", shorten(s))
		}
		lit = s
	} else if lit[0] != '-' && (lit[0] < '0' || lit[0] > '9') {
		return 0, fieldErr(path, "is not a number")
	}
	v, err := strconv.ParseFloat(lit, 64)
	switch {
	case err != nil || math.IsNaN(v) || math.IsInf(v, 0):
		return 0, fieldErr(path, "%s is not a finite number", shorten(lit))
	case v < 0:
		return 0, fieldErr(path, "%s is negative", shorten(lit))
	case v > MaxAmount:
		return 0, fieldErr(path, "%s exceeds %g", shorten(lit), float64(MaxAmount))
	}
	return v + 0, nil // +0 turns -0 into 0
}

// count parses a stock count: a JSON integer in [0, MaxStock].
func count(path string, raw json.RawMessage) (int64, error) {
	if isNull(raw) {
		return 0, fieldErr(path, "missing")
	}
	lit := string(bytes.TrimSpace(raw))
	v, err := strconv.ParseInt(lit, 10, 64)
	switch {
	case err != nil:
		return 0, fieldErr(path, "%s is not an integer", shorten(lit))
	case v < 0:
		return 0, fieldErr(path, "%d is negative", v)
	case v > MaxStock:
		return 0, fieldErr(path, "%d exceeds %d", v, int64(MaxStock))
	}
	return v, nil
}

// nextToken checks a response's page token: optional (absent or "" is the last page),
// bounded, printable ASCII, different from the request's token.
func nextToken(path string, p *string, sent string) (string, error) {
	if p == nil || *p == "" {
		return "", nil
	}
	s := *p
	if len(s) > maxTokenBytes {
		return "", fieldErr(path, "longer than %d bytes", maxTokenBytes)
	}
	if strings.IndexFunc(s, func(r rune) bool { return r < '!' || r > '~' }) >= 0 {
		return "", fieldErr(path, "is not printable ASCII")
	}
	if s == sent {
		return "", fieldErr(path, "repeats the requested page token (paging would loop)")
	}
	return s, nil
}

// checkPageToken checks a caller's page token before it is sent.
func checkPageToken(field, token string) error {
	if len(token) > maxTokenBytes || strings.IndexFunc(token, func(r rune) bool { return r < '!' || r > '~' }) >= 0 {
		return apperr.Invalid(field, "page_token", fmt.Sprintf("must be printable ASCII of at most %d bytes", maxTokenBytes))
	}
	return nil
}

// checkArgID checks an identifier argument of a caller.
func checkArgID(field, s string) error {
	if s == "" || len(s) > MaxIDBytes || strings.TrimSpace(s) != s || !utf8.ValidString(s) || strings.ContainsFunc(s, unicode.IsControl) {
		return apperr.Invalid(field, "id", fmt.Sprintf("must be a non-empty id of at most %d bytes without control characters or surrounding spaces", MaxIDBytes))
	}
	return nil
}

// paging bounds AllGoods and AllSKUs: at most maxItems distinct items, and at most
// 2·maxItems+100 units of work (items received, duplicates included, plus one per page),
// so that a partner returning the same items or empty pages forever is stopped.
type paging struct {
	partner, op, what string
	maxItems          int
	work              int
	pages             int
	seen              map[string]bool
}

func newPaging(partner, op, what string, maxItems int) *paging {
	if maxItems <= 0 {
		maxItems = DefaultMaxItems
	}
	return &paging{partner: partner, op: op, what: what, maxItems: maxItems, seen: map[string]bool{}}
}

// page accounts for one received page; it returns the error that ends the listing.
func (p *paging) page(items int, next string) error {
	p.pages++
	p.work += items + 1
	if next != "" {
		if p.seen[next] {
			return (&Error{Partner: p.partner, Op: p.op, Class: ErrMalformed,
				Detail: fmt.Sprintf("page %d returned a page token already seen (paging would loop)", p.pages)}).app()
		}
		p.seen[next] = true
	}
	if p.work > 2*p.maxItems+100 {
		return (&Error{Partner: p.partner, Op: p.op, Class: ErrMalformed,
			Detail: fmt.Sprintf("paging did not end after %d pages (%d %s received for at most %d distinct)", p.pages, p.work-p.pages, p.what, p.maxItems)}).app()
	}
	return nil
}

// query starts another query (AllSKUs's next batch of ids): its tokens are its own.
func (p *paging) query() { clear(p.seen) }

func (p *paging) limit() error {
	return (&Error{Partner: p.partner, Op: p.op, Class: ErrLimit,
		Detail: fmt.Sprintf("more than %d %s", p.maxItems, p.what)}).app()
}

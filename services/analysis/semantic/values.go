package semantic

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/shopmind/shopmind/internal/analytics/catalog"
	"github.com/shopmind/shopmind/internal/apperr"
)

// Condition limits.
const (
	MaxInValues   = 1000 // values of one in / not_in list
	MaxConditions = 20   // conditions of an order metric, filters of a query
	maxStringLen  = 4096 // one string operand
)

// Condition operators.
var operators = map[string]bool{
	"eq": true, "ne": true, "gt": true, "gte": true, "lt": true, "lte": true,
	"in": true, "not_in": true, "like": true, "is_null": true, "is_not_null": true,
}

var comparisons = map[string]string{"eq": "=", "ne": "<>", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}

// validRef reports whether s is `name` or `table.name` with lowercase identifiers of at most
// 64 characters: the contract's pattern for every column-like field.
func validRef(s string) bool {
	if len(s) == 0 || len(s) > 129 {
		return false
	}
	part := 0
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '.' {
			if i == start || i-start > maxNameLength {
				return false
			}
			c := s[start]
			if !(c >= 'a' && c <= 'z' || c == '_') {
				return false
			}
			part++
			if part > 2 {
				return false
			}
			start = i + 1
			continue
		}
		if !isNameChar(s[i]) {
			return false
		}
	}
	return true
}

// safeIdent reports whether a catalog identifier may be quoted into SQL. Catalog names come
// from code or from the store's own table list; this is a second line of defence.
func safeIdent(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// condValues checks a condition's operator and value against the column and converts the
// value to the Go type bound for the column: int64, float64, string, bool or time.Time
// (RFC 3339 strings). field names the condition in errors ("filters[0]").
func condValues(field string, col *catalog.Column, op string, v any) ([]any, error) {
	if !operators[op] {
		return nil, apperr.Invalid(field+".operator", "condition.operator",
			fmt.Sprintf("unknown operator %q (eq, ne, gt, gte, lt, lte, in, not_in, like, is_null, is_not_null)", op))
	}
	switch op {
	case "is_null", "is_not_null":
		if v != nil {
			return nil, apperr.Invalid(field+".value", "condition.value_presence", "must be absent for "+op)
		}
		return nil, nil
	case "in", "not_in":
		list, ok := v.([]any)
		if !ok {
			return nil, apperr.Invalid(field+".value", "condition.value_shape", op+" takes a list of 1 to 1000 values")
		}
		if len(list) == 0 || len(list) > MaxInValues {
			return nil, apperr.Invalid(field+".value", "condition.value_shape",
				fmt.Sprintf("%s takes 1 to %d values, got %d", op, MaxInValues, len(list)))
		}
		out := make([]any, len(list))
		for i, e := range list {
			x, err := scalar(fmt.Sprintf("%s.value[%d]", field, i), col, e)
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	case "like":
		s, ok := v.(string)
		if !ok {
			return nil, apperr.Invalid(field+".value", "condition.value_shape", "like takes a string pattern")
		}
		if col.Type != catalog.TypeString {
			return nil, apperr.Invalid(field+".operator", "condition.operator",
				fmt.Sprintf("like needs a string column; %s is %s", col.Name, col.Type))
		}
		if len(s) > maxStringLen {
			return nil, apperr.Invalid(field+".value", "condition.value_shape", fmt.Sprintf("longer than %d bytes", maxStringLen))
		}
		return []any{s}, nil
	default:
		if v == nil {
			return nil, apperr.Invalid(field+".value", "condition.value_presence", "required for "+op)
		}
		x, err := scalar(field+".value", col, v)
		if err != nil {
			return nil, err
		}
		return []any{x}, nil
	}
}

// scalar converts one operand to the column's type.
func scalar(field string, col *catalog.Column, v any) (any, error) {
	wrong := func() error {
		return apperr.Invalid(field, "condition.value_type",
			fmt.Sprintf("%s is a %s column; got %s", col.Name, col.Type, describeValue(v)))
	}
	switch col.Type {
	case catalog.TypeInt:
		switch x := v.(type) {
		case float64:
			if x != math.Trunc(x) || math.IsInf(x, 0) || math.IsNaN(x) || x < -9.007199254740992e15 || x > 9.007199254740992e15 {
				return nil, apperr.Invalid(field, "condition.value_type",
					fmt.Sprintf("%s is an integer column; %v is not an integer (send large ids as decimal strings)", col.Name, x))
			}
			return int64(x), nil
		case int64:
			return x, nil
		case int:
			return int64(x), nil
		case string:
			// Ids may be sent as decimal strings (JSON numbers lose precision past 2^53).
			n, err := strconv.ParseInt(x, 10, 64)
			if err != nil || strconv.FormatInt(n, 10) != x {
				return nil, wrong()
			}
			return n, nil
		}
	case catalog.TypeFloat:
		switch x := v.(type) {
		case float64:
			if math.IsInf(x, 0) || math.IsNaN(x) {
				return nil, wrong()
			}
			return x, nil
		case int64:
			return float64(x), nil
		case int:
			return float64(x), nil
		}
	case catalog.TypeString:
		if x, ok := v.(string); ok {
			if len(x) > maxStringLen {
				return nil, apperr.Invalid(field, "condition.value_type", fmt.Sprintf("longer than %d bytes", maxStringLen))
			}
			return x, nil
		}
	case catalog.TypeBool:
		if x, ok := v.(bool); ok {
			return x, nil
		}
	case catalog.TypeTime:
		switch x := v.(type) {
		case string:
			t, err := time.Parse(time.RFC3339Nano, x)
			if err != nil {
				return nil, apperr.Invalid(field, "condition.value_type",
					fmt.Sprintf("%s is a timestamp column; %q is not an RFC 3339 timestamp", col.Name, x))
			}
			return t.UTC(), nil
		case time.Time:
			return x.UTC(), nil
		}
	}
	return nil, wrong()
}

func describeValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		if len(x) > 40 {
			x = x[:40] + "..."
		}
		return "string " + strconv.Quote(x)
	case float64:
		return "number " + strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return "boolean " + strconv.FormatBool(x)
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// condKey is a canonical text of resolved conditions, used to tell whether two order
// metrics filter the same orders (and can share one scan).
func condKey(conds []cond) string {
	if len(conds) == 0 {
		return ""
	}
	var b strings.Builder
	for _, c := range conds {
		b.WriteString(c.table.Name)
		b.WriteByte('.')
		b.WriteString(c.col.Name)
		b.WriteByte(' ')
		b.WriteString(c.op)
		for _, v := range c.vals {
			b.WriteByte(' ')
			switch x := v.(type) {
			case string:
				b.WriteString(strconv.Quote(x))
			case time.Time:
				b.WriteString(x.Format(time.RFC3339Nano))
			default:
				fmt.Fprint(&b, x)
			}
		}
		b.WriteByte(';')
	}
	return b.String()
}

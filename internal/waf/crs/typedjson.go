package crs

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/corazawaf/coraza/v3/experimental/plugins/plugintypes"
	"github.com/tidwall/gjson"
)

// typedJSON is the JSON body processor: string values and keys become ARGS_POST entries
// named like Coraza's (json.a.b, json.items.0.name); numbers, booleans and null are typed by
// the contract and not inspected. A body that is not JSON is inspected whole.
type typedJSON struct{}

func (typedJSON) ProcessRequest(reader io.Reader, v plugintypes.TransactionVariables, o plugintypes.BodyProcessorOptions) error {
	data, err := io.ReadAll(reader)
	if err != nil {
		return err
	}
	s := string(data)
	depth := o.RequestBodyRecursionLimit
	if depth <= 0 {
		depth = 128
	}
	if jsonDeeperThan(s, depth) {
		return errors.New("json nesting too deep")
	}
	args := v.ArgsPost()
	if !gjson.Valid(s) {
		// Not JSON: every rule sees the raw text; the backend will answer 400.
		args.Add("json", s)
		return nil
	}
	limit := o.ArgumentLimit
	count := 0
	key := make([]byte, 0, 64)
	key = append(key, "json"...)
	var walk func(res gjson.Result) bool
	walk = func(res gjson.Result) bool {
		ok := true
		res.ForEach(func(k, val gjson.Result) bool {
			n := len(key)
			key = append(key, '.')
			if k.Type == gjson.String {
				key = append(key, k.Str...)
			} else {
				key = strconv.AppendInt(key, int64(k.Num), 10)
			}
			switch {
			case val.IsObject() || val.IsArray():
				ok = walk(val)
			case val.Type == gjson.String:
				count++
				if limit > 0 && count > limit {
					ok = false
				} else {
					args.Add(string(key), val.Str)
				}
			case k.Type == gjson.String:
				// A typed leaf: its key is still a name the client chose, so it is inspected
				// (ARGS_NAMES), with an empty value.
				count++
				if limit > 0 && count > limit {
					ok = false
				} else {
					args.Add(string(key), "")
				}
			}
			key = key[:n]
			return ok
		})
		return ok
	}
	if !walk(gjson.Parse(s)) {
		return fmt.Errorf("more than %d JSON arguments", limit)
	}
	return nil
}

func (typedJSON) ProcessResponse(io.Reader, plugintypes.TransactionVariables, plugintypes.BodyProcessorOptions) error {
	return nil
}

// jsonDeeperThan reports whether the JSON text nests containers deeper than limit (one pass,
// no recursion, so hostile nesting cannot exhaust the stack before it is refused).
func jsonDeeperThan(s string, limit int) bool {
	depth, inString, escaped := 0, false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > limit {
				return true
			}
		case '}', ']':
			depth--
		}
	}
	return false
}

// Shortening JSON tool results by their structure: a result above the threshold keeps
// parsing (fewer list items, with how many were left out; long strings shortened), never
// cut in the middle of the text.

package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"unicode/utf8"
)

// OmittedSuffix names the member added beside a shortened list in an object: "<key>_omitted"
// holds how many items were left out. A list inside a list (or at the top) ends with the
// string "…N more items left out" instead.
const OmittedSuffix = "_omitted"

// ShrinkJSON shortens the JSON document s to at most max characters by its structure: the
// longest lists lose items (halved in turn; at least one is kept), then long strings are
// shortened with "…". It returns the document and true when s was JSON and now fits;
// otherwise s unchanged and false.
func ShrinkJSON(s string, max int) (string, bool) {
	if utf8.RuneCountInString(s) <= max {
		return s, true
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return s, false
	}
	size := func(x any) int {
		b, _ := marshalNoEscape(x)
		return utf8.RuneCount(b)
	}
	for round := 0; round < 200; round++ {
		if size(v) <= max {
			b, _ := marshalNoEscape(v)
			return string(b), true
		}
		lists := collectLists(v, func(n any) { v = n }, nil, "", nil)
		sort.SliceStable(lists, func(i, j int) bool { return size(lists[i].items) > size(lists[j].items) })
		cut := false
		for _, l := range lists {
			if len(l.items) <= 1 {
				continue
			}
			keep := len(l.items) / 2
			l.set(l.items[:keep], len(l.items)-keep)
			cut = true
			break
		}
		if cut {
			continue
		}
		// no list can lose more items: shorten the longest strings
		for n := max / 4; size(v) > max && n >= 16; n /= 2 {
			shortenStrings(&v, n)
		}
		if size(v) <= max {
			b, _ := marshalNoEscape(v)
			return string(b), true
		}
		break
	}
	return s, false
}

func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// list is a list found in the document: its data items (without a trailing "…N more"
// string) and how to store it shortened.
type list struct {
	items []any
	set   func(items []any, omitted int)
}

const moreItems = "…%d more items left out"

// collectLists finds every list of the document with its setter (replace stores a new value
// where v is). A list in an object records the count left out in "<key>_omitted"; other
// lists end with a "…N more items left out" string.
func collectLists(v any, replace func(any), obj map[string]any, key string, out []list) []list {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			out = collectLists(c, func(n any) { x[k] = n }, x, k, out)
		}
	case []any:
		kept, prev := len(x), 0
		if obj != nil {
			if n, ok := obj[key+OmittedSuffix].(int); ok {
				prev = n
			}
			out = append(out, list{items: x, set: func(items []any, omitted int) {
				obj[key] = items
				obj[key+OmittedSuffix] = prev + omitted
			}})
		} else {
			if kept > 0 {
				if s, ok := x[kept-1].(string); ok {
					var n int
					if _, err := fmt.Sscanf(s, moreItems, &n); err == nil {
						kept--
						prev = n
					}
				}
			}
			out = append(out, list{items: x[:kept], set: func(items []any, omitted int) {
				replace(append(append([]any{}, items...), fmt.Sprintf(moreItems, prev+omitted)))
			}})
		}
		for i := range x[:kept] {
			out = collectLists(x[i], func(n any) { x[i] = n }, nil, "", out)
		}
	}
	return out
}

// shortenStrings cuts every string longer than n runes to n runes and "…"; it reports
// whether one was cut.
func shortenStrings(v *any, n int) bool {
	if n < 1 {
		n = 1
	}
	cut := false
	switch x := (*v).(type) {
	case string:
		if utf8.RuneCountInString(x) > n {
			*v = string([]rune(x)[:n]) + "…"
			return true
		}
	case map[string]any:
		for k, c := range x {
			if shortenStrings(&c, n) {
				cut = true
			}
			x[k] = c
		}
	case []any:
		for i := range x {
			if shortenStrings(&x[i], n) {
				cut = true
			}
		}
	}
	return cut
}

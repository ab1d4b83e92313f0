//go:build platform

package badinput

import (
	"net/url"
	"sort"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// Sizes of the hostile inputs. The stack caps bodies at 1 MiB (SHOPMIND_MAX_BODY_BYTES).
const (
	hugeString  = 900 << 10    // fits the body limit
	overLimit   = 1<<20 + 1024 // above it: 413
	deepNesting = 10000        // encoding/json's and protojson's limit
	deeper      = 100000       // far past it
	longParam   = 8 << 10      // a path or query value
	bigArray    = 50000        // elements of a repeated field
	maxSites    = 60           // body fields mutated per operation
	maxDepth    = 4            // nesting of body fields followed
	baseID      = "1"          // int64 ids in bodies and paths
	baseUUID    = "00000000-0000-4000-8000-000000000001"
	unknownKey  = "sweep_unknown_field"
	placeholder = "sweep"
)

// restCase is one hostile request.
type restCase struct {
	op       *operation
	kind     string // input kind, e.g. body.nul
	field    string // the field or parameter attacked ("" for the whole body)
	mustFail bool   // the input is invalid: an answer with code 0 is a failure
	path     string // escaped path
	query    string // raw query
	body     []byte
	hasBody  bool
	words    []string // besides the field, words a 400's message may use for the problem
	revokes  bool     // the call may revoke the caller's token (logout)
	chunked  bool     // send the body without a Content-Length
}

// site is a body field the sweep attacks.
type site struct {
	path  []any
	name  string // the field's name (last property)
	s     *schema
	class string // string, int64, datetime, bytes, enum, integer, number, boolean, array, object, map, struct, value
	depth int
}

type generator struct {
	doc      *document
	bindings map[string]binding // from the proto descriptors, by "METHOD /path"
}

func classOf(s *schema) string {
	switch s.Type {
	case "string":
		switch {
		case len(s.Enum) > 0:
			return "enum"
		case isIntFormat("", s.Format):
			return "int64"
		case s.Format == "date-time":
			return "datetime"
		case s.Format == "byte":
			return "bytes"
		}
		return "string"
	case "integer":
		return "integer"
	case "number":
		return "number"
	case "boolean":
		return "boolean"
	case "array":
		return "array"
	case "object":
		if len(s.Properties) > 0 {
			return "object"
		}
		if mapValue(s) != nil {
			return "map"
		}
		return "struct"
	case "":
		if len(s.Properties) > 0 {
			return "object"
		}
		return "value"
	}
	return "value"
}

// sample builds a plausible value of a schema; nil when a cycle or the depth bound stops it.
func (g *generator) sample(s *schema, depth int, stack map[string]bool) *jnode {
	s, ref := g.doc.resolve(s)
	if s == nil || depth > maxDepth || ref != "" && stack[ref] {
		return nil
	}
	if ref != "" {
		stack[ref] = true
		defer delete(stack, ref)
	}
	switch classOf(s) {
	case "object":
		n := &jnode{kind: 'o'}
		for _, k := range sortedKeys(s) {
			p := s.Properties[k]
			if p.ReadOnly {
				continue
			}
			if k == "update_mask" {
				n.keys, n.vals = append(n.keys, k), append(n.vals, valueNode(g.mask(s)))
				continue
			}
			if v := g.sample(p, depth+1, stack); v != nil {
				n.keys, n.vals = append(n.keys, k), append(n.vals, v)
			}
		}
		return n
	case "map":
		n := &jnode{kind: 'o'}
		if v := g.sample(mapValue(s), depth+1, stack); v != nil {
			n.keys, n.vals = []string{placeholder}, []*jnode{v}
		}
		return n
	case "struct":
		return rawNode(`{}`)
	case "array":
		n := &jnode{kind: 'a'}
		if s.Items == nil {
			return n
		}
		if v := g.sample(s.Items, depth+1, stack); v != nil {
			n.vals = []*jnode{v}
		}
		return n
	case "enum":
		v := s.Enum[0]
		if str, ok := v.(string); ok && strings.HasSuffix(str, "UNSPECIFIED") && len(s.Enum) > 1 {
			v = s.Enum[1]
		}
		return valueNode(v)
	case "int64":
		return valueNode(baseID)
	case "datetime":
		return valueNode("2024-01-02T03:04:05Z")
	case "bytes":
		return valueNode("c3dlZXA=")
	case "integer":
		return rawNode("1")
	case "number":
		return rawNode("1.5")
	case "boolean":
		return rawNode("false")
	}
	return valueNode(placeholder)
}

// mask names the fields an update_mask next to them may change: those of the message sent
// along (or the siblings), in protojson's lowerCamelCase.
func (g *generator) mask(parent *schema) string {
	var names []string
	for _, k := range sortedKeys(parent) {
		if k == "update_mask" {
			continue
		}
		if s, ref := g.doc.resolve(parent.Properties[k]); ref != "" && classOf(s) == "object" {
			names = names[:0]
			for _, f := range sortedKeys(s) {
				if !s.Properties[f].ReadOnly && f != "id" {
					names = append(names, camel(f))
				}
			}
			break
		}
		if !parent.Properties[k].ReadOnly && k != "id" {
			names = append(names, camel(k))
		}
	}
	return strings.Join(names, ",")
}

// sites lists the body fields of a schema, shallow ones first, at most maxSites.
func (g *generator) sites(s *schema) []site {
	var out []site
	stack := map[string]bool{}
	var walk func(s *schema, path []any, name string, depth int)
	walk = func(s *schema, path []any, name string, depth int) {
		s, ref := g.doc.resolve(s)
		if s == nil || depth > maxDepth || ref != "" && stack[ref] {
			return
		}
		if ref != "" {
			stack[ref] = true
			defer delete(stack, ref)
		}
		class := classOf(s)
		if len(path) > 0 {
			out = append(out, site{path: append([]any(nil), path...), name: name, s: s, class: class, depth: depth})
		}
		switch class {
		case "object":
			for _, k := range sortedKeys(s) {
				walk(s.Properties[k], append(path, k), k, depth+1)
			}
		case "array":
			if s.Items != nil {
				if it, _ := g.doc.resolve(s.Items); it != nil && classOf(it) == "object" {
					walk(s.Items, append(path, 0), name, depth+1)
				}
			}
		case "map":
			if v, _ := g.doc.resolve(mapValue(s)); v != nil && classOf(v) == "object" {
				walk(mapValue(s), append(path, placeholder), name, depth+1)
			}
		}
	}
	walk(s, nil, "", 0)
	sort.SliceStable(out, func(i, j int) bool { return out[i].depth < out[j].depth })
	if len(out) > maxSites {
		out = out[:maxSites]
	}
	return out
}

// mutation is a hostile value for one body field.
type mutation struct {
	kind     string
	value    string // raw JSON text
	mustFail bool
	words    []string
}

var (
	wordsNUL   = []string{"nul", "u+0000", `\u0000`, "null character", "zero byte"}
	wordsUTF8  = []string{"utf-8", "utf8", "unicode", "encoding"}
	wordsLarge = []string{"large", "long", "length", "size", "at most", "characters", "bytes", "limit", "exceed"}
	wordsDeep  = []string{"depth", "nest", "recursion", "deep"}
	wordsJSON  = []string{"json", "syntax", "invalid character", "unexpected", "body", "token", "parse", "eof"}
)

func hugeJSONString(n int) string {
	var b strings.Builder
	b.Grow(n + 2)
	b.WriteByte('"')
	b.WriteString(strings.Repeat("x", n))
	b.WriteByte('"')
	return b.String()
}

func nested(open, close string, n int, inner string) string {
	return strings.Repeat(open, n) + inner + strings.Repeat(close, n)
}

// text mutations every string-like field gets.
func textMutations() []mutation {
	return []mutation{
		{kind: "nul", value: `"a\u0000b"`, mustFail: true, words: wordsNUL},
		{kind: "raw-nul", value: "\"a\x00b\"", mustFail: true, words: append(wordsNUL, wordsJSON...)},
		{kind: "invalid-utf8", value: "\"a\xffb\"", mustFail: true, words: wordsUTF8},
		{kind: "lone-surrogate", value: `"a\ud800b"`, words: append(wordsUTF8, "surrogate", "escape")},
	}
}

func (g *generator) mutations(st site) []mutation {
	wrong := func(kind, v string) mutation { return mutation{kind: "wrong-type." + kind, value: v, mustFail: true} }
	ms := []mutation{{kind: "null", value: "null"}}
	switch st.class {
	case "string":
		ms = append(ms, wrong("number", "12345"), wrong("object", `{"a":1}`), wrong("array", `["a"]`), wrong("bool", "true"),
			mutation{kind: "huge-900KiB", value: hugeJSONString(hugeString), words: wordsLarge})
		ms = append(ms, textMutations()...)
	case "int64":
		ms = append(ms, wrong("string", `"abc"`), wrong("object", `{"a":1}`), wrong("array", `[1]`),
			mutation{kind: "overflow-2^63", value: `"9223372036854775808"`, mustFail: true},
			mutation{kind: "negative", value: `"-1"`}, mutation{kind: "fraction", value: `1.5`, mustFail: true})
		ms = append(ms, textMutations()[:3]...)
	case "datetime":
		ms = append(ms, wrong("number", "12345"), wrong("object", `{"a":1}`),
			mutation{kind: "bad-value", value: `"not-a-time"`, mustFail: true},
			mutation{kind: "year-10000", value: `"10000-01-01T00:00:00Z"`, mustFail: true})
		ms = append(ms, textMutations()[:3]...)
	case "bytes":
		ms = append(ms, wrong("number", "12345"), mutation{kind: "bad-base64", value: `"!!!not base64!!!"`, mustFail: true})
	case "enum":
		ms = append(ms, wrong("object", `{"a":1}`), wrong("bool", "true"),
			mutation{kind: "bad-value", value: `"NOT_AN_ENUM_VALUE"`, mustFail: true},
			mutation{kind: "unknown-number", value: `12345`})
		ms = append(ms, textMutations()[:3]...)
	case "integer":
		ms = append(ms, wrong("string", `"abc"`), wrong("array", `[1]`), wrong("bool", "true"), wrong("object", `{"a":1}`),
			mutation{kind: "overflow-2^31", value: `2147483648`, mustFail: true},
			mutation{kind: "overflow-1e400", value: `1e400`, mustFail: true},
			mutation{kind: "fraction", value: `1.5`, mustFail: true},
			mutation{kind: "negative", value: `-1`}, mutation{kind: "min-int32", value: `-2147483648`})
	case "number":
		ms = append(ms, wrong("string", `"abc"`), wrong("array", `[1]`), wrong("bool", "true"),
			mutation{kind: "overflow-1e400", value: `1e400`, mustFail: true},
			mutation{kind: "nan", value: `"NaN"`}, mutation{kind: "negative", value: `-1e308`})
	case "boolean":
		ms = append(ms, wrong("number", "1"), wrong("string", `"yes"`), wrong("object", `{"a":1}`))
	case "array":
		ms = append(ms, wrong("string", `"abc"`), wrong("object", `{"a":1}`),
			mutation{kind: "null-element", value: `[null]`, mustFail: true})
		if st.s.Items != nil {
			if it, _ := g.doc.resolve(st.s.Items); it != nil {
				if v := g.sample(st.s.Items, 0, map[string]bool{}); v != nil {
					el := string(v.bytes())
					n := min(bigArray, hugeString/(len(el)+1))
					ms = append(ms, mutation{kind: "big-array", value: "[" + strings.Repeat(el+",", n-1) + el + "]", words: wordsLarge})
				}
				if classOf(it) == "string" {
					for _, m := range textMutations()[:3] {
						m.value = "[" + m.value + "]"
						m.kind = "element-" + m.kind
						ms = append(ms, m)
					}
				}
			}
		}
	case "object":
		ms = append(ms, wrong("string", `"abc"`), wrong("array", `[]`),
			mutation{kind: "unknown-field", value: `{"` + unknownKey + `":1}`, mustFail: true, words: []string{unknownKey, "unknown field"}})
	case "map":
		ms = append(ms, wrong("string", `"abc"`), wrong("array", `[]`),
			mutation{kind: "key-nul", value: `{"a\u0000b":` + string(g.sample(mapValue(st.s), 0, map[string]bool{}).bytes()) + `}`, mustFail: true, words: wordsNUL},
			mutation{kind: "key-invalid-utf8", value: "{\"a\xffb\":" + string(g.sample(mapValue(st.s), 0, map[string]bool{}).bytes()) + `}`, mustFail: true, words: wordsUTF8})
	case "struct":
		ms = append(ms, wrong("string", `"abc"`), wrong("array", `[]`),
			mutation{kind: "key-nul", value: `{"a\u0000b":1}`, mustFail: true, words: wordsNUL},
			mutation{kind: "value-nul", value: `{"a":"x\u0000y"}`, mustFail: true, words: wordsNUL},
			mutation{kind: "value-invalid-utf8", value: "{\"a\":\"x\xffy\"}", mustFail: true, words: wordsUTF8},
			mutation{kind: "nested-100", value: `{"a":` + nested("[", "]", 100, "1") + `}`},
			mutation{kind: "deep-10000", value: `{"a":` + nested("[", "]", deepNesting, "1") + `}`, mustFail: true, words: wordsDeep},
			mutation{kind: "huge-900KiB", value: `{"a":` + hugeJSONString(hugeString) + `}`, words: wordsLarge})
	case "value":
		ms = append(ms, mutation{kind: "deep-10000", value: nested("[", "]", deepNesting, "1"), mustFail: true, words: wordsDeep},
			mutation{kind: "huge-900KiB", value: hugeJSONString(hugeString), words: wordsLarge})
		ms = append(ms, textMutations()...)
	}
	return ms
}

// cases builds every hostile request of an operation.
func (g *generator) cases(op *operation) []restCase {
	revokes := strings.HasSuffix(op.Path, "/auth/logout")
	basePath := g.path(op, "", "")
	var base *jnode
	var bodySchema *schema
	b, bound := g.bindings[op.Method+" "+op.Path]
	var bodyDesc protoreflect.MessageDescriptor
	if op.Body != nil {
		bodySchema = op.Body.Schema
		if bound {
			bodyDesc = b.bodyDescriptor()
			base = validBody(b, op)
		}
		if base == nil {
			base = g.sample(bodySchema, 0, map[string]bool{})
		}
		if base == nil {
			base = rawNode("{}")
		}
	}
	mk := func(kind, field string, mustFail bool, path, query string, body []byte, words ...string) restCase {
		return restCase{op: op, kind: kind, field: field, mustFail: mustFail, path: path, query: query,
			body: body, hasBody: body != nil, words: words, revokes: revokes}
	}
	var baseBody []byte
	if base != nil {
		baseBody = base.bytes()
	}
	out := []restCase{mk("baseline", "", false, basePath, "", baseBody)}

	// A hostile parameter value (already escaped).
	type pv struct {
		kind, v  string
		mustFail bool
	}
	// Path parameters: none of these names an existing resource.
	for _, p := range op.PathParams {
		vals := []pv{
			{"nul", "%00", true}, {"in-nul", "a%00b", true}, {"invalid-utf8", "%FF", true}, {"in-invalid-utf8", "a%FFb", true},
			{"long", strings.Repeat("x", longParam), true}, {"encoded-slash", "a%2Fb", true}, {"dot-dot", "..", true},
			{"space", "%20", true}, {"negative", "-1", true}, {"zero", "0", true}, {"overflow-2^63", "9223372036854775808", true},
		}
		if isIntFormat(p.Type, p.Format) {
			vals = append(vals, pv{"not-a-number", "abc", true}, pv{"fraction", "1.5", true})
		}
		for _, v := range vals {
			out = append(out, mk("path."+v.kind, p.Name, v.mustFail, g.path(op, p.Name, v.v), "", baseBody, "path", "not found", "no route", "id"))
		}
	}

	// Query parameters.
	for _, p := range op.Query {
		vals := []pv{{"nul", "%00", true}, {"in-nul", "a%00b", true}, {"invalid-utf8", "a%FFb", true}, {"repeated", "a&" + p.Name + "=b", false}}
		switch {
		case p.Type == "integer" || isIntFormat(p.Type, p.Format):
			vals = append(vals, pv{"not-a-number", "abc", true}, pv{"negative", "-1", false}, pv{"zero", "0", false},
				pv{"overflow-2^63", "9223372036854775808", true}, pv{"fraction", "1.5", true}, pv{"empty", "", false})
			if p.Format == "int32" || p.Type == "integer" {
				vals = append(vals, pv{"overflow-2^31", "2147483648", true})
			}
		case p.Type == "boolean":
			vals = append(vals, pv{"not-a-bool", "maybe", true}, pv{"number", "2", true})
		case p.Format == "date-time":
			vals = append(vals, pv{"bad-value", "not-a-time", true})
		case len(p.Enum) > 0:
			vals = append(vals, pv{"bad-value", "NOT_AN_ENUM_VALUE", true})
		default:
			vals = append(vals, pv{"long", strings.Repeat("x", longParam), false}, pv{"lone-surrogate", "%ED%A0%80", true})
		}
		for _, v := range vals {
			words := []string{}
			if v.kind == "nul" || v.kind == "in-nul" {
				words = wordsNUL
			} else if strings.Contains(v.kind, "utf8") || v.kind == "lone-surrogate" {
				words = wordsUTF8
			}
			out = append(out, mk("query."+v.kind, p.Name, v.mustFail, basePath, p.Name+"="+v.v, baseBody, words...))
		}
	}
	out = append(out,
		mk("query.unknown-parameter", unknownKey, false, basePath, unknownKey+"=1", baseBody, "unknown", "parameter"),
		mk("query.bad-escape", "", false, basePath, "a=%zz", baseBody, "escape", "query", "url"))

	if op.Body == nil {
		return out
	}
	// The whole body.
	rawBody := func(kind string, mustFail bool, body string, words ...string) {
		out = append(out, mk("body."+kind, "", mustFail, basePath, "", []byte(body), words...))
	}
	rawBody("empty", false, "")
	rawBody("empty-object", false, "{}")
	rawBody("json-null", false, "null")
	rawBody("array", true, "[]", wordsJSON...)
	rawBody("string", true, `"abc"`, wordsJSON...)
	rawBody("not-json", true, "this is not json", wordsJSON...)
	rawBody("truncated", true, `{"a":`, wordsJSON...)
	rawBody("two-values", true, string(baseBody)+" {}", "after", "trailing", "exactly one", "unexpected", "json")
	rawBody("trailing-garbage", true, string(baseBody)+" x", "after", "trailing", "exactly one", "unexpected", "json", "invalid character")
	rawBody("invalid-utf8-outside-string", true, "{\xff}", append(wordsJSON, wordsUTF8...)...)
	rawBody("bom", false, "\xef\xbb\xbf"+string(baseBody))
	rawBody("deep-arrays-10000", true, nested("[", "]", deepNesting, ""), append(wordsDeep, wordsJSON...)...)
	rawBody("deep-arrays-100000", true, nested("[", "]", deeper, ""), append(wordsDeep, wordsJSON...)...)
	rawBody("deep-objects-10000", true, nested(`{"a":`, "}", deepNesting, "1"), append(wordsDeep, "unknown field")...)
	rawBody("duplicate-key", false, `{"`+unknownKey+`":1,"`+unknownKey+`":2}`)
	rawBody("over-limit", true, `{"`+unknownKey+`":`+hugeJSONString(overLimit)+`}`, wordsLarge...)
	rawBody("over-limit-chunked", true, `{"`+unknownKey+`":`+hugeJSONString(overLimit)+`}`, wordsLarge...)
	out[len(out)-1].chunked = true
	out = append(out, mk("body.unknown-field", unknownKey, true, basePath, "",
		base.with([]any{unknownKey}, rawNode("1")).bytes(), "unknown field"))

	// Each field.
	for _, st := range g.sites(bodySchema) {
		for _, m := range g.mutations(st) {
			body := withoutOneofSiblings(base, bodyDesc, st.path).with(st.path, rawNode(m.value)).bytes()
			words := m.words[:len(m.words):len(m.words)]
			switch {
			case st.class == "datetime":
				words = append(words, "timestamp")
			case st.name == "update_mask":
				words = append(words, "fieldmask")
			}
			out = append(out, mk("field."+st.class+"."+m.kind, st.name, m.mustFail, basePath, "", body, words...))
		}
	}
	return out
}

// path fills an operation's path template: the parameter named bad gets the escaped value v,
// the others a plausible value.
func (g *generator) path(op *operation, bad, v string) string {
	p := op.Path
	for _, pp := range op.PathParams {
		val := url.PathEscape(baseUUID)
		if isIntFormat(pp.Type, pp.Format) {
			val = baseID
		}
		if pp.Name == bad {
			val = v
		}
		p = strings.Replace(p, "{"+pp.Name+"}", val, 1)
	}
	return p
}

package crs

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/corazawaf/coraza/v3"
	"github.com/corazawaf/coraza/v3/experimental/plugins"
	"github.com/corazawaf/coraza/v3/experimental/plugins/plugintypes"
	"github.com/corazawaf/libinjection-go"

	"github.com/shopmind/shopmind/internal/waf"
)

// recorded collects the values the test operator sees: the transformed value of a target as
// Coraza hands it to an operator.
var (
	recordMu sync.Mutex
	recorded = map[string][]string{} // operator argument → values
)

// registerTestPlugins registers ShopMind's plugins and the test operator, for rule sets
// built here without New.
var registerTestPlugins = sync.OnceFunc(func() {
	registerPlugins()
	plugins.RegisterOperator("shopmindTestRecord", func(o plugintypes.OperatorOptions) (plugintypes.Operator, error) {
		return recordOperator(o.Arguments), nil
	})
})

type recordOperator string

func (o recordOperator) Evaluate(_ plugintypes.TransactionState, value string) bool {
	recordMu.Lock()
	recorded[string(o)] = append(recorded[string(o)], value)
	recordMu.Unlock()
	return false
}

func takeRecorded() map[string][]string {
	recordMu.Lock()
	defer recordMu.Unlock()
	out := recorded
	recorded = map[string][]string{}
	return out
}

// The model of each transformation the loaded rules use covers what Coraza's transformation
// really produces: random values over alphabets rich in escape characters go through a
// rule with that transformation, and every byte of the result is in the model's alphabet.
func TestTransformAlphabetCoversCoraza(t *testing.T) {
	names := []string{"none", "lowercase", "urlDecodeUni", "htmlEntityDecode", "jsDecode", "cssDecode",
		"escapeSeqDecode", "cmdLine", "compressWhitespace", "removeWhitespace", "removeNulls", "replaceComments",
		"removeCommentsChar", "normalizePath", "normalizePathWin", "utf8toUnicode", "hexEncode", "length",
		"base64Decode", "sha1"}
	var rules strings.Builder
	rules.WriteString("SecRuleEngine On\n")
	for i, n := range names {
		fmt.Fprintf(&rules, "SecRule ARGS_GET:v \"@shopmindTestRecord %s\" \"id:%d,phase:1,pass,nolog,t:none,t:%s\"\n", n, 1000+i, n)
	}
	registerTestPlugins()
	engine, err := coraza.NewWAF(coraza.NewWAFConfig().WithDirectives(rules.String()))
	if err != nil {
		t.Fatal(err)
	}
	pieces := []string{"a", "Z", "k", "0", "9", "%", "%3c", "%u003c", "%uff1c", "+", " ", "\t", "\n", "\x00", "\x0b",
		"&", "&lt;", "&#60;", "&#x3c;", "&quot", "\\", "\\x3c", "\\u003c", "\\74", "\\3c ", "\\n", "/", ".", "..", "/*", "*/",
		"--", "#", ";", ",", "'", "\"", "^", "(", "é", "İ", "\u212a", "\u00a0", "\xff", "\xc2\x85", "\u0085", "=", "PGI+"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		var v strings.Builder
		for range rng.IntN(8) + 1 {
			v.WriteString(pieces[rng.IntN(len(pieces))])
		}
		value := v.String()
		tx := engine.NewTransaction()
		tx.ProcessURI("/?v="+url.QueryEscape(value), "GET", "HTTP/1.1")
		tx.ProcessRequestHeaders()
		_ = tx.Close()
		for name, outs := range takeRecorded() {
			// A transformation the model does not know yields the full alphabet.
			f, _ := transformModel(strings.ToLower(name))
			model := f(alphabetOf(value))
			for _, out := range outs {
				if got := alphabetOf(out); !got.within(model) {
					t.Fatalf("t:%s of %q gave %q: bytes outside the model", name, value, out)
				}
			}
		}
	}
}

// The JSON scanner's alphabets cover every name and value the typed JSON processor gives the
// rules: random documents (nested objects and arrays, escapes, non-ASCII) go through the
// processor, and each name and value is within one of the scanner's per-value alphabets.
func TestJSONBytesCoverTypedJSON(t *testing.T) {
	directives := fmt.Sprintf(`SecRuleEngine On
SecRequestBodyAccess On
SecRule REQUEST_HEADERS:Content-Type "%s" "id:1,phase:1,pass,nolog,t:none,t:lowercase,ctl:requestBodyProcessor=%s"
SecRule ARGS_POST_NAMES "@shopmindTestRecord names" "id:2,phase:2,pass,nolog,t:none"
SecRule ARGS_POST "@shopmindTestRecord values" "id:3,phase:2,pass,nolog,t:none"
`, jsonContentType, typedJSONProcessor)
	registerTestPlugins()
	engine, err := coraza.NewWAF(coraza.NewWAFConfig().WithDirectives(directives))
	if err != nil {
		t.Fatal(err)
	}
	words := []string{"a", "k", "tenant_code", "x y", "<b>", "é", "\u212a", "a\"b", "a\\b", "\x01", "1", "'--", "\u2028", "json"}
	rng := rand.New(rand.NewPCG(3, 4))
	var gen func(depth int) any
	gen = func(depth int) any {
		switch n := rng.IntN(10); {
		case depth < 4 && n < 3:
			m := map[string]any{}
			for range rng.IntN(4) {
				m[words[rng.IntN(len(words))]+words[rng.IntN(len(words))]] = gen(depth + 1)
			}
			return m
		case depth < 4 && n < 5:
			var a []any
			for range rng.IntN(4) {
				a = append(a, gen(depth+1))
			}
			return a
		case n < 8:
			return words[rng.IntN(len(words))] + words[rng.IntN(len(words))]
		case n < 9:
			return rng.IntN(1000)
		}
		return nil
	}
	check := func(body []byte) {
		tx := engine.NewTransaction()
		tx.ProcessURI("/", "POST", "HTTP/1.1")
		tx.AddRequestHeader("content-type", "application/json")
		tx.ProcessRequestHeaders()
		if _, _, err := tx.WriteRequestBody(body); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ProcessRequestBody(); err != nil {
			t.Fatal(err)
		}
		_ = tx.Close()
		var in requestBytes
		jsonBytes(body, &in, [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()})
		got := takeRecorded()
		for _, kind := range []struct {
			name   string
			source int
		}{{"names", srcBodyNames}, {"values", srcBodyValues}} {
			for _, v := range got[kind.name] {
				if v == "" {
					// A typed leaf's empty value: the model's transformations are monotone,
					// so whatever holds on no bytes holds on any value's alphabet, and the
					// union alone stands for a body without string values.
					continue
				}
				a := alphabetOf(v)
				if !slices.ContainsFunc(in.each[kind.source], func(b alphabet) bool { return a.within(b) }) {
					t.Fatalf("%s: %q of %s is in no alphabet of the scanner", kind.name, v, body)
				}
			}
		}
	}
	for range 2000 {
		doc := map[string]any{"k": gen(0), words[rng.IntN(len(words))]: gen(0)}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(rng.IntN(2) == 0) // \u003c escapes, or raw < > &
		if err := enc.Encode(doc); err != nil {
			t.Fatal(err)
		}
		check(buf.Bytes())
	}
	for _, body := range []string{`{"a":"b"`, `not json`, `[1,"x",{"y":["<z>"]}]`, `"just a string"`, `{"a\u0041":"\ud83d\ude00"}`} {
		check([]byte(body))
	}
}

// The scanner's identities of names and values are those of the arguments the typed JSON
// processor makes: for documents whose strings need no escaping (raw text is the value),
// every name and every (name, value) pair Coraza holds has its key.
func TestJSONBytesKeysMatchTypedJSON(t *testing.T) {
	directives := fmt.Sprintf(`SecRuleEngine On
SecRequestBodyAccess On
SecRule REQUEST_HEADERS:Content-Type "%s" "id:1,phase:1,pass,nolog,t:none,t:lowercase,ctl:requestBodyProcessor=%s"
`, jsonContentType, typedJSONProcessor)
	registerTestPlugins()
	engine, err := coraza.NewWAF(coraza.NewWAFConfig().WithDirectives(directives))
	if err != nil {
		t.Fatal(err)
	}
	seeds := [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}
	key := func(source int, name string, value []byte) [2]uint64 {
		var in requestBytes
		in.addKeyed(source, alphabet{}, seeds, name, value)
		return in.keys[source-srcBodyNames][0].key
	}
	for _, body := range []string{
		`{"tenant_code":"demo","username":"admin","remember":true,"n":12}`,
		`{"items":[{"id":"a","tags":["x","y"]},{"id":"b"}],"page":{"num":1,"sort":"name"}}`,
		`[1,"x",{"y":["z",null,"w"]},[["deep"]]]`,
		`"one string"`,
		`{"empty":{},"list":[],"nested":{"a":{"b":{"c":"d"}}}}`,
	} {
		tx := engine.NewTransaction()
		tx.ProcessURI("/", "POST", "HTTP/1.1")
		tx.AddRequestHeader("content-type", "application/json")
		tx.ProcessRequestHeaders()
		if _, _, err := tx.WriteRequestBody([]byte(body)); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ProcessRequestBody(); err != nil {
			t.Fatal(err)
		}
		var in requestBytes
		jsonBytes([]byte(body), &in, seeds)
		has := func(source int, k [2]uint64) bool {
			return slices.ContainsFunc(in.keys[source-srcBodyNames], func(v valueKey) bool { return v.key == k })
		}
		args := tx.(plugintypes.TransactionState).Variables().ArgsPost().FindAll()
		if len(args) == 0 {
			t.Fatalf("%s: no arguments", body)
		}
		for _, a := range args {
			if !has(srcBodyNames, key(srcBodyNames, a.Key(), nil)) {
				t.Errorf("%s: name %q has no key", body, a.Key())
			}
			if !has(srcBodyValues, key(srcBodyValues, a.Key(), []byte(a.Value()))) {
				t.Errorf("%s: %s=%q has no key", body, a.Key(), a.Value())
			}
		}
		_ = tx.Close()
	}
}

func TestRxCondition(t *testing.T) {
	for _, c := range []struct {
		pattern string
		holds   []string // inputs whose alphabet must satisfy the condition
		fails   []string
	}{
		{`(?i)<script`, []string{"<SCRIPT", "<sCrIpt"}, []string{"script", "<scrip"}},
		{`(?i)kelvin`, []string{"\u212aelvin", "KELVIN"}, []string{"elvin"}},
		{`union\s+select`, []string{"union\tselect"}, []string{"unionselectx"}},
		{`a[0-9]+b|c`, []string{"c", "a1b"}, []string{"ab", "a1"}},
		{`^$|x?`, []string{""}, nil},
		{`\.{2,3}/`, []string{"../"}, []string{"/x", ".."}},
		{`[^a-z]`, []string{"A", "é"}, []string{"abc"}},
		{`é`, []string{"é", "\xff"}, []string{"e"}},
	} {
		re, err := syntax.Parse("(?sm)"+c.pattern, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		cond := rxCondition(re)
		for _, in := range c.holds {
			a := alphabetOf(in)
			if !cond.holds(&a) {
				t.Errorf("%s: must hold on the bytes of %q", c.pattern, in)
			}
		}
		for _, in := range c.fails {
			a := alphabetOf(in)
			if cond.holds(&a) {
				t.Errorf("%s: cannot match with the bytes of %q", c.pattern, in)
			}
		}
	}
}

// Every @rx pattern the pruning reads is one Coraza compiled for the rule set: the operator
// text is cut from the rules as Coraza's parser cuts it.
func TestPruneReadsTheCompiledPatterns(t *testing.T) {
	seen := map[string]bool{}
	rxArgsSeen.Store(&sync.Map{})
	defer rxArgsSeen.Store(nil)
	cfg := waf.Config{Enabled: true, ParanoiaLevel: 2, AnomalyThreshold: 5, BodyLimit: waf.DefaultBodyLimit}
	m, err := newWAF(cfg, profileShopMind, nil)
	if err != nil {
		t.Fatal(err)
	}
	prune := m.prune
	rxArgsSeen.Load().Range(func(k, _ any) bool {
		seen[k.(string)] = true
		return true
	})
	if len(prune.rules) < 80 {
		t.Fatalf("%d prunable rules: the analysis reads too few", len(prune.rules))
	}
	checked := 0
	for _, r := range prune.rules {
		arg, isRx := strings.CutPrefix(r.op, "@"+opRx+" ")
		if !isRx {
			continue
		}
		checked++
		if !seen[strings.TrimSpace(arg)] {
			t.Errorf("rule %d: pattern %q was not compiled by Coraza", r.id, arg)
		}
	}
	if checked < 40 {
		t.Fatalf("only %d patterns checked", checked)
	}
}

// The CRS regression corpus (every rule's cases, attacks and negatives), JSON bodies built
// from its payloads, and ShopMind's own traffic: with pruning, every request has exactly the
// matched rules and the verdict it has without, at paranoia levels 1 and 2, and again with
// the rule memo warm.
func TestRulePruneKeepsMatches(t *testing.T) {
	if testing.Short() {
		t.Skip("CRS corpus: long")
	}
	var raws [][]byte
	for _, c := range loadCRSCasesOf(t, true) {
		raws = append(raws, c.raw)
	}
	raws = append(raws, jsonVariants(raws)...)
	for _, c := range wafLegitimate {
		var buf bytes.Buffer
		if err := c.build().Write(&buf); err != nil {
			t.Fatal(err)
		}
		raws = append(raws, buf.Bytes())
	}
	for _, level := range []int{1, 2} {
		m, h, last := observedWAF(t, level)
		run := func(prune, memo bool) []string {
			m.switches.pruneOff.Store(!prune)
			m.switches.cachesOff.Store(!memo)
			out := make([]string, len(raws))
			for i, raw := range raws {
				*last = nil
				res := runCRSCase(h, raw)
				ids := slices.Clone(*last)
				slices.Sort(ids)
				out[i] = fmt.Sprint(res.outcome, ids)
			}
			return out
		}
		reference := run(false, false)
		for _, mode := range []struct {
			name        string
			prune, memo bool
		}{{"pruned", true, false}, {"pruned, memo filling", true, true}, {"pruned, memo warm", true, true}} {
			got := run(mode.prune, mode.memo)
			differ := 0
			for i := range raws {
				if got[i] != reference[i] {
					differ++
					if differ <= 5 {
						t.Errorf("PL%d %s: %q\n  without pruning %s\n  with            %s", level, mode.name, firstLine(raws[i]), reference[i], got[i])
					}
				}
			}
			if differ > 0 {
				t.Fatalf("PL%d %s: %d of %d requests changed", level, mode.name, differ, len(raws))
			}
		}
		t.Logf("PL%d: %d requests, same matches with and without pruning", level, len(raws))
	}
}

func firstLine(raw []byte) string {
	line, _, _ := bytes.Cut(raw, []byte("\n"))
	return string(line)
}

// jsonVariants turns the query arguments and URL-encoded bodies of corpus requests into JSON
// bodies (flat, nested, in arrays), so that the attack payloads reach the rules as ARGS_POST
// through the typed JSON processor.
func jsonVariants(raws [][]byte) [][]byte {
	var out [][]byte
	for _, raw := range raws {
		r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
		if err != nil {
			continue
		}
		args := r.URL.Query()
		if ct := r.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/x-www-form-urlencoded") {
			if body, err := io.ReadAll(r.Body); err == nil {
				if form, err := url.ParseQuery(string(body)); err == nil {
					for k, vs := range form {
						args[k] = append(args[k], vs...)
					}
				}
			}
		}
		if len(args) == 0 {
			continue
		}
		flat := map[string]any{}
		for k, vs := range args {
			flat[k] = vs[0]
		}
		for i, doc := range []any{flat, map[string]any{"data": map[string]any{"items": []any{flat}}}, map[string]any{"list": args}} {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(i == 1)
			if enc.Encode(doc) != nil {
				continue
			}
			req := httptest.NewRequest(http.MethodPost, "/api/v1/basic/goods/list", bytes.NewReader(buf.Bytes()))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("User-Agent", "corpus")
			req.Header.Set("Content-Length", strconv.Itoa(buf.Len()))
			var w bytes.Buffer
			if req.Write(&w) == nil {
				out = append(out, w.Bytes())
			}
		}
	}
	return out
}

// IsXSS finds nothing in an input without '<' and '=' (operatorCondition relies on it): no
// finding of the corpus lacks both, and random inputs built from XSS pieces without them are
// all clean.
func TestDetectXSSNeedsLessThanOrEquals(t *testing.T) {
	needs := func(s string) bool { return strings.ContainsAny(s, "<=") }
	found := 0
	for _, c := range loadCRSCasesOf(t, true) {
		r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(c.raw)))
		if err != nil {
			continue
		}
		values := []string{r.URL.RawQuery, r.Header.Get("User-Agent"), r.Header.Get("Referer"), r.Header.Get("Cookie")}
		if body, err := io.ReadAll(r.Body); err == nil {
			values = append(values, string(body))
		}
		for k, vs := range r.URL.Query() {
			values = append(values, k)
			values = append(values, vs...)
		}
		for _, v := range values {
			if libinjection.IsXSS(v) {
				found++
				if !needs(v) {
					t.Errorf("%s: IsXSS(%q) without '<' or '='", c.name, v)
				}
			}
		}
	}
	if found < 50 {
		t.Fatalf("only %d findings in the corpus", found)
	}
	pieces := []string{"onerror", "onload", "javascript:", "vbscript:", "data:", "style", "src", "href", "alert(1)",
		"\"", "'", "`", ">", "/", " ", "\t", "\n", "\v", "\f", "\r", "\x00", "!", "--", "?", "&", "#", ";", ":",
		"x", "SCRIPT", "svg", "img", "expression(", "url(", "@import", "\\", "%3c", "&lt;", "formaction", "xmlns"}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 200000 {
		var b strings.Builder
		for range rng.IntN(10) + 1 {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		if v := b.String(); libinjection.IsXSS(v) {
			t.Fatalf("IsXSS(%q) without '<' or '='", v)
		}
	}
}

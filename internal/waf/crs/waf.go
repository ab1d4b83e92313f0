package crs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	coreruleset "github.com/corazawaf/coraza-coreruleset/v4"
	"github.com/corazawaf/coraza/v3"
	"github.com/corazawaf/coraza/v3/experimental/plugins"
	"github.com/corazawaf/coraza/v3/experimental/plugins/plugintypes"
	"github.com/corazawaf/coraza/v3/types"
	"github.com/corazawaf/libinjection-go"
	"github.com/tidwall/gjson"
	"rsc.io/binaryregexp"

	"github.com/shopmind/shopmind/internal/logging"
	"github.com/shopmind/shopmind/internal/waf"
)

// The WAF is OWASP Coraza v3 running the OWASP Core Rule Set v4 embedded in
// coraza-coreruleset, in blocking mode, tuned for a JSON API. gateway/WAF.md has the figures
// and the reasons; in short:
//
//   - Only the request rule groups a JSON API needs are loaded (wafGroups): initialization,
//     method and protocol enforcement, protocol attacks, LFI/path traversal, RFI, RCE, the
//     generic group (SSRF), XSS, SQLi, the blocking evaluation and the load-time common
//     exceptions. Left out: scanner detection (User-Agent lists, trivially evaded), multipart
//     (no endpoint takes multipart), PHP, Java and session fixation (language and framework
//     groups; the backends are Go), the Apache localhost exceptions of 905, and every
//     RESPONSE group: response bodies are not inspected (SecResponseBodyAccess Off) and the
//     response writer is never wrapped, so SSE streams flush as the handler writes them.
//   - JSON bodies go through a typed JSON body processor: every string value and every key is
//     inspected as ARGS_POST (as Coraza's own JSON processor does); numbers, booleans and null
//     are not, since no CRS rule can find an injection in a JSON number token and the
//     backends decode them into typed fields. A body that is not valid JSON is inspected
//     whole, as one argument, and handed on (the backend answers 400).
//   - Query pairs that are typed integers (page_size=20) are not inspected; path segments
//     that are more than plain names are (as ARGS_PATH).
//   - The detection operators remember their outcome per value and skip @rx patterns whose
//     required literals are absent (memoRx below).
//   - No audit log, no debug log; the rules' logdata and constant msg are dropped
//     (rewriteRules), and the rule files are compiled to an equivalent, cheaper form for the
//     configured paranoia level, without the rules it makes dead (waf_compile.go).
//   - Each request runs only the rules it can need: rules with nothing to inspect are
//     skipped (waf_skip.go), rules no byte of it can make match are pruned (waf_prune.go),
//     and rules known not to match its line, headers and body values are left out
//     (waf_rulememo.go).

// wafGroups are the CRS request rule files loaded, in CRS order.
var wafGroups = []string{
	"REQUEST-901-INITIALIZATION",
	"REQUEST-911-METHOD-ENFORCEMENT",
	"REQUEST-920-PROTOCOL-ENFORCEMENT",
	"REQUEST-921-PROTOCOL-ATTACK",
	"REQUEST-930-APPLICATION-ATTACK-LFI",
	"REQUEST-931-APPLICATION-ATTACK-RFI",
	"REQUEST-932-APPLICATION-ATTACK-RCE",
	"REQUEST-934-APPLICATION-ATTACK-GENERIC",
	"REQUEST-941-APPLICATION-ATTACK-XSS",
	"REQUEST-942-APPLICATION-ATTACK-SQLI",
}

// wafExclusions are rule exclusions for legitimate ShopMind traffic, added after the rules
// and before the blocking evaluation (WAF.md, Exclusions). None is needed at paranoia level 1.
// From level 2 up, the arguments below are inspected by the level-1 rules only: the
// level-2 to level-4 rules (which flag SQL and shell words, URLs and punctuation in any
// text) are told to leave them alone. They are of two kinds:
//   - free text by contract: what people type or paste (chat questions, names, descriptions,
//     passwords, page titles and URLs, error messages and stack traces), which the backends
//     store or pass on as text and never splice into SQL, shell commands or HTML;
//   - values the contract constrains to field names: sort specs ("created_at,desc") and
//     field masks ("name,price"), checked against a whitelist by the backends (400 otherwise).
var wafExclusions = func() []string {
	var targets []string
	for _, name := range wafLevel1OnlyArgs {
		targets = append(targets, "!ARGS:"+name)
	}
	for _, name := range wafLevel1OnlyNames {
		targets = append(targets, "!ARGS_NAMES:"+name)
	}
	var out []string
	for pl := 2; pl <= 4; pl++ {
		out = append(out, fmt.Sprintf(`SecRuleUpdateTargetByTag "paranoia-level/%d" "%s"`, pl, strings.Join(targets, "|")))
	}
	return out
}()

// wafLevel1OnlyArgs are the argument names (JSON paths as the typed JSON processor names
// them, or query names) inspected by the level-1 rules only; see wafExclusions.
var wafLevel1OnlyArgs = []string{
	// free text
	"json.message", "json.content", "json.name", "json.display_name", "json.description",
	"json.metric.display_name", "json.metric.description", "json.formula.expression",
	"json.keyword", "keyword", "json.password", "json.page_title", "json.page_url", "json.stack",
	`/^json\.items\.[0-9]+\.page_url$/`, `/^json\.items\.[0-9]+\.page_title$/`, "json.current_user.username",
	"json.url", "json.user_agent", "json.current_page_info.url", "json.current_page_info.title",
	`/^json\.images\.[0-9]+$/`,
	`/^json\.data\./`, // page data the extension scraped (prices, titles, tables), kept as JSON
	// constrained to field names
	"sort", "json.sort", "json.update_mask",
}

// wafLevel1OnlyNames are argument names of the contract that the level-2 rules misread (the
// current_user object: CURRENT_USER is a SQL function), inspected as names by the level-1
// rules only. (Regular expressions here must not contain "|": it separates targets.)
var wafLevel1OnlyNames = []string{`/^json\.current_user\./`}

type wafProfile int

const (
	// profileShopMind is the gateway's WAF.
	profileShopMind wafProfile = iota
	// profileCorazaOperators is profileShopMind with Coraza's own detection operators (no
	// cache, no pre-filter): the reference of TestWAFOperatorsMatchCoraza.
	profileCorazaOperators
	// profileStock is Coraza's recommended configuration with the whole CRS, blocking: the
	// baseline of the benchmarks and of the corpus comparison.
	profileStock
)

// typedJSONProcessor is the name of the JSON body processor (typedJSON).
const typedJSONProcessor = "TYPEDJSON"

// registerPlugins registers ShopMind's body processor and operators with Coraza, whose
// registry is process-wide. It runs when the first WAF is built rather than in init, so
// importing the package changes nothing.
var registerPlugins = sync.OnceFunc(func() {
	plugins.RegisterBodyProcessor(strings.ToLower(typedJSONProcessor), func() plugintypes.BodyProcessor { return typedJSON{} })
	plugins.RegisterOperator(opRx, newMemoRx)
	plugins.RegisterOperator(opDetectSQLi, func(o plugintypes.OperatorOptions) (plugintypes.Operator, error) {
		cache := operatorCacheOf(o)
		return &memoInjection{cache: cache, id: cache.newID(), sqli: true}, nil
	})
	plugins.RegisterOperator(opDetectXSS, func(o plugintypes.OperatorOptions) (plugintypes.Operator, error) {
		cache := operatorCacheOf(o)
		return &memoInjection{cache: cache, id: cache.newID()}, nil
	})
	plugins.RegisterOperator(opWithinSlashed, newWithinSlashed)
})

// wafDirectives is the Coraza configuration of a profile.
func wafDirectives(cfg waf.Config, profile wafProfile) string {
	limit := cfg.BodyLimit
	if limit <= 0 {
		limit = waf.DefaultBodyLimit
	}
	pl := min(max(cfg.ParanoiaLevel, 1), 4)
	threshold := cfg.AnomalyThreshold
	if threshold < 1 {
		threshold = waf.DefaultAnomalyThreshold
	}
	var b strings.Builder
	if profile == profileStock {
		b.WriteString("Include @coraza.conf-recommended\nSecRuleEngine On\nInclude @crs-setup.conf.example\n")
		fmt.Fprintf(&b, "SecAction \"id:900000,phase:1,pass,t:none,nolog,setvar:tx.blocking_paranoia_level=%d\"\n", pl)
		fmt.Fprintf(&b, "SecAction \"id:900110,phase:1,pass,t:none,nolog,setvar:tx.inbound_anomaly_score_threshold=%d\"\n", threshold)
		b.WriteString("Include @owasp_crs/*.conf\n")
		return b.String()
	}
	fmt.Fprintf(&b, `SecRuleEngine On
SecRequestBodyAccess On
SecRequestBodyLimit %[1]d
SecRequestBodyInMemoryLimit %[1]d
SecRequestBodyLimitAction Reject
SecRequestBodyJsonDepthLimit 128
SecArgumentsLimit 20000
SecResponseBodyAccess Off
SecAuditEngine Off
SecRule REQUEST_HEADERS:Content-Type "%[5]s" "id:200001,phase:1,t:none,t:lowercase,pass,nolog,ctl:requestBodyProcessor=%[2]s,ctl:ruleRemoveById=920540"
SecRule REQUEST_HEADERS:Content-Type "%[6]s" "id:200000,phase:1,t:none,t:lowercase,pass,nolog,ctl:requestBodyProcessor=XML"
SecRule REQBODY_ERROR "!@eq 0" "id:200002,phase:2,t:none,log,deny,status:400,msg:'Failed to parse request body.',severity:2"
SecRule MULTIPART_STRICT_ERROR "!@eq 0" "id:200003,phase:2,t:none,log,deny,status:400,msg:'Multipart request body failed strict validation.'"
SecDefaultAction "phase:1,log,auditlog,pass"
SecDefaultAction "phase:2,log,auditlog,pass"
SecAction "id:900000,phase:1,pass,t:none,nolog,setvar:tx.crs_setup_version=%[7]s,setvar:tx.blocking_paranoia_level=%[3]d,setvar:tx.inbound_anomaly_score_threshold=%[4]d,setvar:tx.outbound_anomaly_score_threshold=4,setvar:'tx.allowed_methods=GET HEAD POST OPTIONS PUT PATCH DELETE'"
`, limit, typedJSONProcessor, pl, threshold, jsonContentType, xmlContentType, crsSetupVersion())
	for _, g := range wafGroups {
		fmt.Fprintf(&b, "Include @owasp_crs/%s.conf\n", g)
	}
	// 999 holds load-time target updates of the rules above (common third-party cookies).
	b.WriteString("Include @owasp_crs/REQUEST-999-COMMON-EXCEPTIONS-AFTER.conf\n")
	for _, e := range wafExclusions {
		b.WriteString(e + "\n")
	}
	b.WriteString("Include @owasp_crs/REQUEST-949-BLOCKING-EVALUATION.conf\n")
	return b.String()
}

// WAF is one rule engine: the CRS loaded for one configuration, ready to inspect requests
// concurrently. Everything it remembers between requests (operator outcomes, rule outcomes,
// pruning outcomes) is its own.
type WAF struct {
	coraza    coraza.WAF
	skips     *ruleSkips     // nil: every rule runs
	memo      *ruleMemo      // nil: no rule outcome is remembered
	prune     *rulePrune     // nil: no rule is left out for the request's bytes
	operators *operatorCache // nil: Coraza's own operators
	switches  switches
	logger    *slog.Logger
	limit     int64
}

// switches turn parts of ShopMind's engine off; tests and benchmarks measure both ways.
type switches struct {
	// cachesOff: no operator outcome, rule outcome or pruning outcome is remembered or used.
	cachesOff atomic.Bool
	// skipOff: rules with nothing to inspect run anyway (skip.go).
	skipOff atomic.Bool
	// pruneOff: rules no byte of the request can make match run anyway (prune.go).
	pruneOff atomic.Bool
}

// New builds the WAF of cfg (cfg.Enabled is for the caller: off, it builds none). Its
// Inspect decides on each request before the handler sees it.
func New(cfg waf.Config, logger *slog.Logger) (*WAF, error) {
	return newWAF(cfg, profileShopMind, logger)
}

// newWAF builds the WAF of a profile; ShopMind's also reads what each loaded rule inspects.
func newWAF(cfg waf.Config, profile wafProfile, logger *slog.Logger) (*WAF, error) {
	registerPlugins()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	limit := cfg.BodyLimit
	if limit <= 0 {
		limit = waf.DefaultBodyLimit
	}
	m := &WAF{logger: logger, limit: limit}
	directives := wafDirectives(cfg, profile)
	if profile == profileShopMind {
		m.skips, m.memo, m.prune = &ruleSkips{}, &ruleMemo{}, &rulePrune{cachesOff: &m.switches.cachesOff}
		m.operators = &operatorCache{off: &m.switches.cachesOff}
	}
	var root fs.FS = crsFS{pl: min(max(cfg.ParanoiaLevel, 1), 4), preset: presetTX(directives), coraza: profile == profileCorazaOperators,
		skips: m.skips, memo: m.memo, prune: m.prune, operators: m.operators, tx: crsTXUsage(directives)}
	if profile == profileStock {
		root = coreruleset.FS
	}
	engine, err := coraza.NewWAF(coraza.NewWAFConfig().WithRootFS(root).WithDirectives(directives))
	if err != nil {
		return nil, fmt.Errorf("waf: %w", err)
	}
	m.coraza = engine
	if m.skips != nil {
		// The directives' own rules (the body processor choice, the body error) are left
		// out like the CRS's when they cannot match.
		m.skips.collect(splitCRS(directives))
		m.prune.collect(splitCRS(directives))
		m.skips.finish(directives)
		m.memo.finish(directives)
		m.prune.finish(m.skips)
		m.memo.linkPrune(m.prune)
	}
	return m, nil
}

// Inspect runs the request phases of the rules on r's line, headers and body. The body,
// when there is one, is read (up to the inspection limit) and put back for the handler.
// Responses are not inspected: the caller passes its response writer on untouched, so
// Flush, Hijack and http.ResponseController keep working (SSE streams flush).
func (m *WAF) Inspect(r *http.Request) waf.Verdict { return m.inspect(r, nil) }

var bodyPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

var errBodyTooLarge = errors.New("request body too large to inspect")

// inspect is Inspect; matched, when not nil (tests), receives the ids of the rules that
// matched.
func (m *WAF) inspect(r *http.Request, matched *[]int) waf.Verdict {
	var tx types.Transaction
	if id := logging.RequestID(r.Context()); id != "" {
		tx = m.coraza.NewTransactionWithID(id)
	} else {
		tx = m.coraza.NewTransaction()
	}
	defer func() {
		if matched != nil {
			ids := make([]int, 0, 8)
			for _, mr := range tx.MatchedRules() {
				ids = append(ids, mr.Rule().ID())
			}
			*matched = ids
		}
		_ = tx.Close()
	}()
	client, port := r.RemoteAddr, 0
	if i := strings.LastIndexByte(r.RemoteAddr, ':'); i >= 0 {
		client = r.RemoteAddr[:i]
		port, _ = strconv.Atoi(r.RemoteAddr[i+1:])
	}
	tx.ProcessConnection(client, port, "", 0)
	uri := r.RequestURI
	if uri == "" {
		uri = r.URL.RequestURI()
	}
	uri = withoutTypedQuery(uri)
	tx.ProcessURI(uri, r.Method, r.Proto)
	pathArgs := addPathArguments(tx, r.URL.Path)
	// The rules this request cannot need are left out before any runs: those whose targets
	// are empty (waf_skip.go), those no byte of the request can make match (waf_prune.go) and
	// those known not to match its inputs (waf_rulememo.go). The body is read first (a
	// refusal waits until phase 1 passed, as it would have come after it): pruning needs
	// its bytes.
	reqBody, bodyErr := m.readBody(r)
	var memoKeys [][2]uint64
	var memoValues []pendingValues
	if m.skips != nil {
		present := ^contentMask(0) // nothing skipped
		skip := !m.switches.skipOff.Load()
		if skip {
			q := strings.IndexByte(uri, '?')
			present = m.skips.present(r, q >= 0 && q < len(uri)-1, pathArgs)
		}
		rm := m.skips.removal(present, skip)
		var body *bodyFacts
		if !m.switches.pruneOff.Load() {
			in := requestBytesPool.Get().(*requestBytes)
			defer requestBytesPool.Put(in) // body.keys points into it
			m.prune.bytesOf(r, uri, reqBody, in)
			n := len(m.prune.rules)
			body = &bodyFacts{clean: make([]bool, n), dirty: make([][2]uint64, n)}
			if in.keyed {
				body.keys = &in.keys
			}
			for _, id := range m.prune.cachedPrunable(in, present, make([]int, 0, 128), body.clean, body.dirty) {
				rm.add(id)
			}
		}
		if !m.switches.cachesOff.Load() {
			var known []int
			known, memoKeys, memoValues = m.memo.known(m.memo.digest(r, uri), body)
			for _, id := range known {
				rm.add(id)
			}
		}
		rm.apply(tx)
	}
	// Header names go in lowercase: Coraza lowercases every key it compares (in
	// every rule evaluation, each time allocating for a canonical name such as
	// "User-Agent"); its header collection is case-insensitive and net/http has already
	// canonicalized the names, so no case information is lost.
	for k, vs := range r.Header {
		lk := wafHeaderName(k)
		for _, v := range vs {
			tx.AddRequestHeader(lk, v)
		}
	}
	if r.Host != "" {
		tx.AddRequestHeader("host", r.Host)
		tx.SetServerName(r.Host)
	}
	if r.ContentLength >= 0 && r.Body != nil && r.Body != http.NoBody && r.Header.Get("Content-Length") == "" {
		// net/http keeps Content-Length in Header for server requests; requests built in
		// process (httptest, internal callers) have only the field.
		tx.AddRequestHeader("content-length", strconv.FormatInt(r.ContentLength, 10))
	}
	for _, te := range r.TransferEncoding {
		tx.AddRequestHeader("transfer-encoding", te)
	}
	if it := tx.ProcessRequestHeaders(); it != nil {
		return m.verdict(r, tx, it)
	}
	if bodyErr != nil {
		return m.refuse(r, bodyErr)
	}
	if len(reqBody) > 0 {
		it, _, err := tx.WriteRequestBody(reqBody)
		if err != nil {
			return m.refuse(r, err)
		}
		if it != nil {
			return m.verdict(r, tx, it)
		}
	}
	it, err := tx.ProcessRequestBody()
	if err != nil {
		return m.refuse(r, err)
	}
	if it != nil {
		return m.verdict(r, tx, it)
	}
	if memoKeys != nil { // every rule ran and nothing blocked: remember what did not match
		fired := map[int]bool{}
		for _, mr := range tx.MatchedRules() {
			fired[mr.Rule().ID()] = true
		}
		m.memo.remember(memoKeys, memoValues, fired)
	}
	return waf.Verdict{}
}

var requestBytesPool = sync.Pool{New: func() any { return new(requestBytes) }}

// readBody reads the body (up to the inspection limit) and puts it back for the handler;
// nil when the request has none.
func (m *WAF) readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	if r.ContentLength > m.limit {
		return nil, errBodyTooLarge
	}
	buf := bodyPool.Get().(*bytes.Buffer)
	buf.Reset()
	_, err := buf.ReadFrom(io.LimitReader(r.Body, m.limit+1))
	_ = r.Body.Close()
	if err == nil && int64(buf.Len()) > m.limit {
		err = errBodyTooLarge
	}
	if err != nil {
		bodyPool.Put(buf)
		return nil, err
	}
	body := bytes.Clone(buf.Bytes())
	bodyPool.Put(buf)
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, nil
}

// withoutTypedQuery drops from the request target the query pairs that are typed integers
// of the contract: a plain name ([A-Za-z_][A-Za-z0-9_]*, at most 64) with a value of one to
// nine ASCII digits (page_num=2, page_size=20, limit=50, user_id=7). No rule of the six
// classes can match such a pair (the only digit-only patterns, 942220's overflow constants,
// have ten or more digits), and the backends parse them as integers; leaving them out saves
// a pass of every argument rule per pair. Everything else is kept as sent.
func withoutTypedQuery(uri string) string {
	path, query, ok := strings.Cut(uri, "?")
	if !ok || query == "" || strings.IndexByte(query, '#') >= 0 {
		return uri
	}
	var kept []string
	dropped := false
	for pair := range strings.SplitSeq(query, "&") {
		name, value, _ := strings.Cut(pair, "=")
		if typedQueryName(name) && typedQueryValue(value) {
			dropped = true
			continue
		}
		kept = append(kept, pair)
	}
	if !dropped {
		return uri
	}
	if len(kept) == 0 {
		return path
	}
	return path + "?" + strings.Join(kept, "&")
}

func typedQueryName(s string) bool {
	if s == "" || len(s) > 64 || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

func typedQueryValue(s string) bool {
	if s == "" || len(s) > 9 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// addPathArguments makes the path segments that carry more than a plain name (letters,
// digits, '-', '_', '.') arguments (ARGS_PATH, part of ARGS), in addition to what the CRS
// does: REST paths carry parameters (/api/v1/sessions/{conversation_id}), which the CRS
// otherwise sees only inside REQUEST_FILENAME, where few rules look at paranoia level 1.
// Plain-name segments ("api", "v1", "goods", "42", ".env") are left to the REQUEST_FILENAME
// rules (restricted files and extensions among them), as in the stock CRS.
func addPathArguments(tx types.Transaction, path string) (added bool) {
	n := 0
	for seg := range strings.SplitSeq(path, "/") {
		n++
		if seg == "" || plainSegment(seg) {
			continue
		}
		tx.AddPathRequestArgument("path."+strconv.Itoa(n-1), seg)
		added = true
	}
	return added
}

func plainSegment(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// refuse blocks a request that could not be inspected.
func (m *WAF) refuse(r *http.Request, err error) waf.Verdict {
	m.logger.WarnContext(r.Context(), "waf: request not inspected", "error", err.Error(),
		"method", r.Method, "path", r.URL.Path, "request_id", logging.RequestID(r.Context()))
	msg := "request blocked by the web application firewall: it could not be inspected"
	if errors.Is(err, errBodyTooLarge) {
		return waf.Verdict{Blocked: true, TooLarge: true, Message: "request body too large: over the web application firewall's inspection limit"}
	}
	return waf.Verdict{Blocked: true, Message: msg}
}

// verdict turns an interruption into a block naming the rule that decided: the most severe
// matched detection rule (the anomaly evaluation 949110 itself says nothing about why).
func (m *WAF) verdict(r *http.Request, tx types.Transaction, it *types.Interruption) waf.Verdict {
	ruleID, msg, best := it.RuleID, "", types.RuleSeverityUnset
	var matched []string
	for _, mr := range tx.MatchedRules() {
		rule := mr.Rule()
		sev := rule.Severity()
		if sev == types.RuleSeverityUnset || rule.ID() == it.RuleID {
			continue
		}
		matched = append(matched, strconv.Itoa(rule.ID()))
		if best == types.RuleSeverityUnset || sev < best {
			ruleID, msg, best = rule.ID(), mr.Message(), sev
			if msg == "" {
				msg = crsMessage(ruleID)
			}
		}
	}
	if best == types.RuleSeverityUnset {
		for _, mr := range tx.MatchedRules() {
			if mr.Rule().ID() == it.RuleID {
				msg = mr.Message()
			}
		}
	}
	m.logger.WarnContext(r.Context(), "waf: request blocked", "rule", ruleID, "message", msg,
		"matched", strings.Join(matched, ","), "method", r.Method, "path", r.URL.Path,
		"request_id", logging.RequestID(r.Context()))
	return waf.Verdict{Blocked: true, RuleID: ruleID, Message: fmt.Sprintf("request blocked by the web application firewall (rule %d)", ruleID)}
}

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

// The CRS detection operators (@rx, @detectSQLi, @detectXSS) are the bulk of the WAF's
// cost: Go's regexp runs each of ~100 large patterns over every header, argument name and
// value. ShopMind's rules use equivalent operators (the rule files are rewritten as they are
// read, see crsFS) that add two things and change no verdict:
//
//   - a result cache: the operators are pure functions of the (transformed) input, so the
//     outcome of an operator on a value, captures included, is remembered (values up to
//     wafMemoMaxValue bytes, a bounded two-generation cache). Most of what a request carries
//     repeats across requests: header values of the same clients (User-Agent, Accept...),
//     argument names (json.username), enum-like values, paths.
//   - a literal pre-filter for @rx (rxRequired): when every match of a pattern must contain
//     one of a few literals, an input containing none of them is not run through the regexp.
//     It is computed from the parsed pattern and is sound by construction (case folding
//     included); TestWAFOperatorsMatchCoraza checks it and the cache against Coraza's own
//     operators on the whole regression corpus.

const (
	opRx          = "shopmindRx"
	opDetectSQLi  = "shopmindDetectSQLi"
	opDetectXSS   = "shopmindDetectXSS"
	wafMemoShards = 32
	// wafMemoShardSize bounds each generation of a shard: at most
	// 2 x wafMemoShards x wafMemoShardSize remembered outcomes (about 20 MB at worst, with 256-byte values).
	wafMemoShardSize = 1024
	wafMemoMaxValue  = 256
)

// crsFS serves the embedded CRS compiled for one WAF (waf_compile.go): the detection
// operators renamed to ShopMind's, no logdata (rewriteRules), 901 reduced to its effect,
// no rules above the paranoia level, 941010's by-tag ctl by id. pl 0 loads every level;
// preset are the TX variables the directives set before 901; coraza keeps Coraza's own
// operators (the reference of TestWAFOperatorsMatchCoraza).
type crsFS struct {
	pl     int
	preset map[string]bool
	coraza bool
	// skips, memo and prune, when set, collect what each loaded rule inspects (skip.go,
	// rulememo.go, prune.go).
	skips *ruleSkips
	memo  *ruleMemo
	prune *rulePrune
	// operators is the outcome cache of the WAF's detection operators; their factories
	// find it here, as the root their rules were loaded from.
	operators *operatorCache
	// tx is which TX variables the rules and directives set and read (dropDeadRules).
	tx *txUsage
}

func (crsFS) Open(name string) (fs.File, error) { return coreruleset.FS.Open(name) }

func (c crsFS) ReadFile(name string) ([]byte, error) {
	data, err := fs.ReadFile(coreruleset.FS, name)
	if err != nil || !strings.HasSuffix(name, ".conf") || !strings.Contains(name, "@owasp_crs/") {
		return data, err
	}
	text := string(data)
	if !c.coraza {
		text = rewriteRules(text)
	}
	base := name[strings.LastIndexByte(name, '/')+1:]
	if strings.HasPrefix(base, "REQUEST-901-") {
		compiled, err := compileInit(text, c.preset)
		if err != nil {
			return nil, err
		}
		c.skips.collect(splitCRS(compiled))
		c.memo.collect(splitCRS(compiled))
		c.prune.collect(splitCRS(compiled))
		return []byte(compiled), nil
	}
	stmts := splitCRS(text)
	if c.pl > 0 {
		stmts, _ = dropAboveParanoia(stmts, c.pl)
		stmts = dropUpdatesOf(stmts, crsAboveParanoia(c.pl))
		stmts = foldParanoiaChecks(stmts, c.pl)
		stmts = dropDeadRules(stmts, c.tx)
		stmts = mergeActions(stmts)
	}
	stmts = compileRemoveByTag(stmts)
	if !c.coraza {
		stmts = compileHeaderPolicy(stmts)
	}
	c.skips.collect(stmts)
	c.memo.collect(stmts)
	c.prune.collect(stmts)
	return []byte(joinCRS(stmts)), nil
}

var operatorRewriter = strings.NewReplacer(
	`"@rx `, `"@`+opRx+` `, `"!@rx `, `"!@`+opRx+` `,
	`"@detectSQLi"`, `"@`+opDetectSQLi+`"`, `"@detectXSS"`, `"@`+opDetectXSS+`"`,
)

// logdataLine is a CRS logdata action on its own line. Coraza expands a rule's logdata (macros
// such as %{MATCHED_VAR}) every time the rule is evaluated, match or not; it is only read by
// the audit and error logs, which are off, so it is dropped. The block log names the rule
// and its message.
var logdataLine = regexp.MustCompile(`(?m)^[ \t]*logdata:'[^'\n]*',\\\n`)

// msgLine is a CRS msg action on its own line. Coraza expands a rule's msg into the RULE
// collection on every evaluation, match or not; a constant msg (no macro) is dropped from the
// rules and looked up by rule id when a block is logged (crsMessage). Messages with macros
// (920450's header name, 949's score) are kept.
var msgLine = regexp.MustCompile(`(?m)^[ \t]*msg:'([^'\n]*)',\\\n`)

// rewriteRules renames the detection operators and drops the logdata actions and the
// constant msg actions of a CRS file.
func rewriteRules(rules string) string {
	rules = logdataLine.ReplaceAllString(operatorRewriter.Replace(rules), "")
	return msgLine.ReplaceAllStringFunc(rules, func(line string) string {
		if strings.Contains(line, "%{") {
			return line
		}
		return ""
	})
}

// The cache: outcome of operator id on value.
type memoKey struct {
	op    uint32
	value string
}

type memoEntry struct {
	match bool
	// caps are the captures of a match (nil: not captured yet).
	caps []string
}

type memoShard struct {
	mu       sync.RWMutex
	cur, old map[memoKey]memoEntry
}

// operatorCache remembers the outcome of one WAF's detection operators per operator and
// value: a bounded two-generation map in shards. A nil cache remembers nothing.
type operatorCache struct {
	shards [wafMemoShards]memoShard
	nextID atomic.Uint32
	off    *atomic.Bool // the WAF's cachesOff
}

// operatorCacheOf is the cache of the WAF whose rules an operator is built for (nil for rules
// not loaded through a crsFS).
func operatorCacheOf(o plugintypes.OperatorOptions) *operatorCache {
	if root, ok := o.Root.(crsFS); ok {
		return root.operators
	}
	return nil
}

func (c *operatorCache) newID() uint32 {
	if c == nil {
		return 0
	}
	return c.nextID.Add(1)
}

// shardOf spreads the operators (about 200 of them) over the shards: no second hash of the
// value.
func (c *operatorCache) shardOf(op uint32) *memoShard { return &c.shards[op%wafMemoShards] }

func (c *operatorCache) get(op uint32, value string) (memoEntry, bool) {
	if c == nil || len(value) > wafMemoMaxValue || c.off.Load() {
		return memoEntry{}, false
	}
	s := c.shardOf(op)
	k := memoKey{op, value}
	s.mu.RLock()
	e, ok := s.cur[k]
	if !ok {
		e, ok = s.old[k]
	}
	s.mu.RUnlock()
	return e, ok
}

func (c *operatorCache) put(op uint32, value string, e memoEntry) {
	if c == nil || len(value) > wafMemoMaxValue || c.off.Load() {
		return
	}
	s := c.shardOf(op)
	k := memoKey{op, strings.Clone(value)}
	s.mu.Lock()
	if s.cur == nil || len(s.cur) >= wafMemoShardSize {
		s.old, s.cur = s.cur, make(map[memoKey]memoEntry, wafMemoShardSize)
	}
	s.cur[k] = e
	s.mu.Unlock()
}

// memoRx is @rx with the cache and the literal pre-filter. Its matching is Coraza's: the
// pattern runs in (?sm) mode, patterns that match bytes which are not UTF-8 use
// rsc.io/binaryregexp, and a capturing rule gets up to 9 captures.
type memoRx struct {
	cache  *operatorCache
	id     uint32
	re     *regexp.Regexp
	bin    *binaryregexp.Regexp
	needle []string // one of these (lowercase) is in every match; nil: no pre-filter
	bytes  *byteSet // one of these bytes is in every match; nil: no pre-filter
}

// rxArgsSeen, when set (tests), collects the patterns newMemoRx compiles.
var rxArgsSeen atomic.Pointer[sync.Map]

func newMemoRx(o plugintypes.OperatorOptions) (plugintypes.Operator, error) {
	if seen := rxArgsSeen.Load(); seen != nil {
		seen.Store(o.Arguments, true)
	}
	cache := operatorCacheOf(o)
	op := &memoRx{cache: cache, id: cache.newID()}
	data := "(?sm)" + o.Arguments
	if matchesArbitraryBytes(data) {
		re, err := binaryregexp.Compile(o.Arguments)
		if err != nil {
			return nil, err
		}
		op.bin = re
		return op, nil
	}
	re, err := regexp.Compile(data)
	if err != nil {
		return nil, err
	}
	op.re = re
	if parsed, err := syntax.Parse(data, syntax.Perl); err == nil {
		simple := parsed.Simplify()
		if lits, ok := rxRequired(simple); ok {
			op.needle = lits
		}
		if set, ok := rxRequiredBytes(simple); ok {
			op.bytes = &set
		}
	}
	return op, nil
}

func (o *memoRx) Evaluate(tx plugintypes.TransactionState, value string) bool {
	// The pre-filter first: it answers most inputs without touching the cache.
	if o.needle != nil && !containsAnyFolded(value, o.needle) || o.bytes != nil && !o.bytes.in(value) {
		return false
	}
	capturing := tx.Capturing()
	if e, ok := o.cache.get(o.id, value); ok && (!e.match || !capturing || e.caps != nil) {
		if e.match && capturing {
			for i, c := range e.caps {
				tx.CaptureField(i, c)
			}
		}
		return e.match
	}
	var caps []string
	var match bool
	switch {
	case o.bin != nil && capturing:
		m := o.bin.FindStringSubmatch(value)
		match = m != nil
		for i, c := range m {
			if i == 9 {
				break
			}
			caps = append(caps, c)
		}
	case o.bin != nil:
		match = o.bin.MatchString(value)
	case capturing:
		// Most inputs do not match: find that out without tracking captures (Go's matcher
		// is markedly cheaper without them), and capture only on a match.
		if !o.re.MatchString(value) {
			break
		}
		m := o.re.FindStringSubmatchIndex(value)
		match = m != nil
		for i := 0; i < len(m)/2 && i < 9; i++ {
			c := ""
			if m[2*i] >= 0 {
				c = value[m[2*i]:m[2*i+1]]
			}
			caps = append(caps, c)
		}
	default:
		match = o.re.MatchString(value)
	}
	if match && capturing {
		for i, c := range caps {
			tx.CaptureField(i, c)
		}
		for i := range caps {
			caps[i] = strings.Clone(caps[i])
		}
		if caps == nil {
			caps = []string{}
		}
	}
	o.cache.put(o.id, value, memoEntry{match: match, caps: caps})
	return match
}

// memoInjection is @detectSQLi / @detectXSS (libinjection) with the cache.
type memoInjection struct {
	cache *operatorCache
	id    uint32
	sqli  bool
}

func (o *memoInjection) Evaluate(tx plugintypes.TransactionState, value string) bool {
	if e, ok := o.cache.get(o.id, value); ok {
		if e.match && len(e.caps) == 1 {
			tx.CaptureField(0, e.caps[0])
		}
		return e.match
	}
	var e memoEntry
	if o.sqli {
		var fingerprint string
		e.match, fingerprint = libinjection.IsSQLi(value)
		if e.match {
			tx.CaptureField(0, fingerprint)
			e.caps = []string{strings.Clone(fingerprint)}
		}
	} else {
		e.match = libinjection.IsXSS(value)
	}
	o.cache.put(o.id, value, e)
	return e.match
}

// rxRequired returns literals (lowercase ASCII) one of which occurs in every match of re,
// compared against the input with ASCII case folding (and the two non-ASCII runes that fold
// to ASCII letters, U+017F and U+212A), so it holds whether or not the pattern folds case.
func rxRequired(re *syntax.Regexp) ([]string, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		var b strings.Builder
		for _, r := range re.Rune {
			if r >= utf8.RuneSelf {
				return nil, false
			}
			b.WriteByte(byte(unicode.ToLower(r)))
		}
		if b.Len() == 0 {
			return nil, false
		}
		return []string{b.String()}, true
	case syntax.OpCapture, syntax.OpPlus:
		return rxRequired(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return rxRequired(re.Sub[0])
		}
		return nil, false
	case syntax.OpConcat:
		var best []string
		bestLen := 0
		for _, sub := range re.Sub {
			lits, ok := rxRequired(sub)
			if !ok {
				continue
			}
			shortest := len(lits[0])
			for _, l := range lits {
				shortest = min(shortest, len(l))
			}
			// Prefer longer literals, then fewer of them.
			if best == nil || shortest > bestLen || shortest == bestLen && len(lits) < len(best) {
				best, bestLen = lits, shortest
			}
		}
		return best, best != nil
	case syntax.OpAlternate:
		var all []string
		for _, sub := range re.Sub {
			lits, ok := rxRequired(sub)
			if !ok {
				return nil, false
			}
			all = append(all, lits...)
			if len(all) > 24 {
				return nil, false
			}
		}
		slices.Sort(all)
		return slices.Compact(all), len(all) > 0
	}
	return nil, false
}

// byteSet is a set of bytes, one of which is in every match of a pattern.
type byteSet [256]bool

func (b *byteSet) in(s string) bool {
	for i := 0; i < len(s); i++ {
		if b[s[i]] {
			return true
		}
	}
	return false
}

func (b *byteSet) size() int {
	n := 0
	for _, in := range b {
		if in {
			n++
		}
	}
	return n
}

// maxByteSet bounds a useful byte set: beyond it nearly every input passes.
const maxByteSet = 48

// rxRequiredBytes returns a set of bytes one of which occurs in every match of re. A rune
// outside ASCII puts every byte from 0x80 in the set (its UTF-8 encoding has such a byte);
// case folding adds the other case (and, for k and s, the bytes of U+212A and U+017F).
func rxRequiredBytes(re *syntax.Regexp) (byteSet, bool) {
	var set byteSet
	addRune := func(r rune, fold bool) {
		if r >= utf8.RuneSelf {
			for c := 0x80; c < 0x100; c++ {
				set[c] = true
			}
			return
		}
		set[r] = true
		if fold {
			set[unicode.ToLower(r)] = true
			set[unicode.ToUpper(r)] = true
			if l := unicode.ToLower(r); l == 'k' || l == 's' {
				for c := 0x80; c < 0x100; c++ {
					set[c] = true
				}
			}
		}
	}
	switch re.Op {
	case syntax.OpLiteral:
		if len(re.Rune) == 0 {
			return set, false
		}
		addRune(re.Rune[0], re.Flags&syntax.FoldCase != 0)
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			if hi >= utf8.RuneSelf {
				addRune(utf8.RuneSelf, false)
				hi = utf8.RuneSelf - 1
			}
			for r := lo; r <= hi; r++ {
				addRune(r, false)
			}
		}
	case syntax.OpCapture, syntax.OpPlus:
		return rxRequiredBytes(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min < 1 {
			return set, false
		}
		return rxRequiredBytes(re.Sub[0])
	case syntax.OpConcat:
		best, found := set, false
		for _, sub := range re.Sub {
			if s, ok := rxRequiredBytes(sub); ok && (!found || s.size() < best.size()) {
				best, found = s, true
			}
		}
		return best, found
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			s, ok := rxRequiredBytes(sub)
			if !ok {
				return set, false
			}
			for c, in := range s {
				set[c] = set[c] || in
			}
		}
	default:
		return set, false
	}
	return set, set.size() <= maxByteSet
}

// containsAnyFolded reports whether s contains one of the lowercase ASCII literals, ignoring
// ASCII case (and reading U+017F as s and U+212A as k, as case folding does).
func containsAnyFolded(s string, lits []string) bool {
	if strings.Contains(s, "\u017f") || strings.Contains(s, "\u212a") {
		folded := foldASCII(s)
		for _, l := range lits {
			if strings.Contains(folded, l) {
				return true
			}
		}
		return false
	}
	for _, l := range lits {
		if containsFoldASCII(s, l) {
			return true
		}
	}
	return false
}

// containsFoldASCII reports whether s contains lit (lowercase ASCII) ignoring ASCII case,
// without allocating: candidates are found with IndexByte for both cases of the first byte.
func containsFoldASCII(s, lit string) bool {
	c := lit[0]
	upper := c
	if c >= 'a' && c <= 'z' {
		upper = c - 'a' + 'A'
	}
	for _, first := range [2]byte{c, upper} {
		for off := 0; ; {
			i := strings.IndexByte(s[off:], first)
			if i < 0 {
				break
			}
			i += off
			if len(s)-i < len(lit) {
				break
			}
			if equalFoldASCII(s[i+1:i+len(lit)], lit[1:]) {
				return true
			}
			off = i + 1
		}
		if upper == c {
			break
		}
	}
	return false
}

func equalFoldASCII(s, lower string) bool {
	for i := 0; i < len(lower); i++ {
		b := s[i]
		if b >= 'A' && b <= 'Z' {
			b += 'a' - 'A'
		}
		if b != lower[i] {
			return false
		}
	}
	return true
}

func foldASCII(s string) string {
	b := make([]byte, 0, len(s))
	for _, r := range s {
		switch {
		case r >= 'A' && r <= 'Z':
			b = append(b, byte(r)+'a'-'A')
		case r == 0x17F:
			b = append(b, 's')
		case r == 0x212A:
			b = append(b, 'k')
		case r < utf8.RuneSelf:
			b = append(b, byte(r))
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return string(b)
}

// matchesArbitraryBytes reports whether the pattern's \x escapes spell bytes that are not
// UTF-8 (Coraza then matches with binaryregexp; the same decision is made here).
func matchesArbitraryBytes(expr string) bool {
	decoded := make([]byte, 0, len(expr))
	for i := 0; i < len(expr); i++ {
		c := expr[i]
		if c != '\\' {
			decoded = append(decoded, c)
			continue
		}
		if i+3 >= len(expr) {
			decoded = append(decoded, expr[i:]...)
			break
		}
		if expr[i+1] != 'x' {
			decoded = append(decoded, expr[i])
			continue
		}
		sub := expr[i:]
		advance := 3
		if len(sub) >= 6 && sub[2] == '{' {
			if end := strings.IndexByte(sub, '}'); end != -1 {
				sub = `\x` + sub[3:end]
				advance = end
			}
		}
		v, multibyte, _, err := strconv.UnquoteChar(sub, 0)
		if err != nil || multibyte {
			decoded = append(decoded, expr[i])
			continue
		}
		decoded = append(decoded, byte(v))
		i += advance
	}
	return !utf8.Valid(decoded)
}

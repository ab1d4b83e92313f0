package crs

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	coreruleset "github.com/corazawaf/coraza-coreruleset/v4"
	"github.com/corazawaf/coraza/v3"
	"github.com/corazawaf/coraza/v3/experimental/plugins"
	"github.com/corazawaf/coraza/v3/experimental/plugins/plugintypes"
	"github.com/corazawaf/coraza/v3/types"

	"github.com/shopmind/shopmind/internal/logging"
	"github.com/shopmind/shopmind/internal/waf"
)

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

type wafProfile int

const (
	// profileShopMind is ShopMind's engine (waf.EngineShopMind).
	profileShopMind wafProfile = iota
	// profileStockEngine is waf.EngineStock: ShopMind's directives, exclusions and request
	// shaping (input.go, typedjson.go) over the CRS files as shipped, run by Coraza as it is:
	// no compiled rules, cached operators, skipped, pruned or remembered rules.
	profileStockEngine
	// profileCorazaOperators is profileShopMind with Coraza's own detection operators (no
	// cache, no pre-filter): the reference of TestWAFOperatorsMatchCoraza.
	profileCorazaOperators
	// profileRecommended is Coraza's recommended configuration with the whole CRS, blocking:
	// the "stock" baseline of the benchmarks (stock_) and of the corpus comparison.
	profileRecommended
)

// jsonDepthLimit is the deepest JSON body the typed JSON processor reads; a deeper one is
// answered with the platform's 400 naming the field (platformRefuses).
const jsonDepthLimit = 128

// budgetRuleID names the interruption of an inspection that ran past its time budget.
const budgetRuleID = 200010

// budgetFrom is the smallest body whose inspection is timed against the budget: a smaller
// one cannot hold enough values to be costly, and is spared the bookkeeping.
const budgetFrom = 8 << 10

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
	if profile == profileRecommended {
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
SecRequestBodyJsonDepthLimit %[8]d
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
`, limit, typedJSONProcessor, pl, threshold, jsonContentType, xmlContentType, crsSetupVersion(), jsonDepthLimit)
	for _, g := range wafGroups {
		fmt.Fprintf(&b, "Include @owasp_crs/%s.conf\n", g)
	}
	// 999 holds load-time target updates of the rules above (common third-party cookies).
	b.WriteString("Include @owasp_crs/REQUEST-999-COMMON-EXCEPTIONS-AFTER.conf\n")
	for _, e := range wafExclusions() {
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
	verdicts  *verdictMemo   // nil: every request runs the rules
	switches  switches
	logger    *slog.Logger
	limit     int64
	budget    time.Duration
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

// New builds the WAF of cfg (cfg.Enabled is for the caller: off, it builds none): ShopMind's
// engine, or with cfg.Engine waf.EngineStock the stock one. Its Inspect decides on each
// request before the handler sees it.
func New(cfg waf.Config, logger *slog.Logger) (*WAF, error) {
	if cfg.Engine == waf.EngineStock {
		if logger != nil {
			logger.Warn("waf: stock engine (SHOPMIND_WAF_ENGINE=stock): the CRS as shipped, without ShopMind's compiled rules, caches, skips or pruning; for diagnosis (slower)")
		}
		return newWAF(cfg, profileStockEngine, logger)
	}
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
	budget := cfg.InspectBudget
	if budget <= 0 {
		budget = waf.DefaultInspectBudget
	}
	m := &WAF{logger: logger, limit: limit, budget: budget}
	directives := wafDirectives(cfg, profile)
	if profile == profileShopMind {
		m.skips, m.memo, m.prune = &ruleSkips{}, &ruleMemo{}, &rulePrune{cachesOff: &m.switches.cachesOff}
		m.operators = &operatorCache{off: &m.switches.cachesOff}
		if !strings.Contains(directives, "sampling_percentage") {
			m.verdicts = newVerdictMemo() // sampling would make the verdict random
		}
	}
	var root fs.FS = crsFS{pl: min(max(cfg.ParanoiaLevel, 1), 4), preset: presetTX(directives), coraza: profile == profileCorazaOperators,
		skips: m.skips, memo: m.memo, prune: m.prune, operators: m.operators, tx: crsTXUsage(directives)}
	if profile == profileStockEngine || profile == profileRecommended {
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

// inspect is Inspect; matched, when not nil (tests), receives the ids of the rules that
// matched (the verdict memo is then not used). A request whose inputs passed before passes
// at once (verdictmemo.go). Otherwise it opens a transaction, passes it the connection and the request line, reads the
// body, leaves out the rules the request cannot need, passes the headers, runs the request
// phases and, when nothing blocked, remembers which rules did not match and that the request
// passed.
func (m *WAF) inspect(r *http.Request, matched *[]int) waf.Verdict {
	// The body is read before any rule runs (a refusal waits until phase 1 passed, as it
	// would have come after it): leaving rules out needs its bytes, and so does the
	// verdict memo's key.
	reqBody, bodyErr := m.readBody(r)
	var key [2]uint64
	useVerdicts := m.verdicts != nil && matched == nil && bodyErr == nil && !m.switches.cachesOff.Load()
	if useVerdicts {
		if key = m.verdicts.key(r, reqBody); m.verdicts.passed(key) {
			return waf.Verdict{}
		}
	}
	if bodyErr == nil {
		if v, refused := platformRefuses(r, reqBody); refused {
			return v
		}
	}
	tx := m.newTransaction(r)
	defer closeTransaction(tx, matched)
	// Timed, except when the caller (a test) compares the rules that matched: the budget
	// would make them depend on the machine's load.
	if m.operators != nil && matched == nil && (len(reqBody) >= budgetFrom || len(r.URL.RawQuery) >= budgetFrom) {
		done := m.operators.startBudget(tx, time.Now().Add(m.budget))
		defer done()
	}
	uri, pathArgs := processRequestLine(tx, r)
	memo, in := m.leaveOutRules(tx, r, uri, pathArgs, reqBody)
	defer putRequestBytes(in)
	addRequestHeaders(tx, r)
	if v, stop := m.runRequestPhases(tx, r, reqBody, bodyErr); stop {
		return v
	}
	m.rememberMisses(tx, memo)
	if useVerdicts {
		m.verdicts.remember(key)
	}
	return waf.Verdict{}
}

// newTransaction opens a transaction named by the request id, when there is one.
func (m *WAF) newTransaction(r *http.Request) types.Transaction {
	if id := logging.RequestID(r.Context()); id != "" {
		return m.coraza.NewTransactionWithID(id)
	}
	return m.coraza.NewTransaction()
}

// closeTransaction closes tx, first giving matched (when not nil) the ids of the rules
// that matched.
func closeTransaction(tx types.Transaction, matched *[]int) {
	if matched != nil {
		ids := make([]int, 0, 8)
		for _, mr := range tx.MatchedRules() {
			ids = append(ids, mr.Rule().ID())
		}
		*matched = ids
	}
	_ = tx.Close()
}

// processRequestLine passes tx the client's address and the request line (its URI without
// the typed query) and adds the path's arguments. It returns the URI it passed and whether
// the path added arguments.
func processRequestLine(tx types.Transaction, r *http.Request) (uri string, pathArgs bool) {
	client, port := r.RemoteAddr, 0
	if i := strings.LastIndexByte(r.RemoteAddr, ':'); i >= 0 {
		client = r.RemoteAddr[:i]
		port, _ = strconv.Atoi(r.RemoteAddr[i+1:])
	}
	tx.ProcessConnection(client, port, "", 0)
	uri = r.RequestURI
	if uri == "" {
		uri = r.URL.RequestURI()
	}
	uri = withoutTypedQuery(uri)
	tx.ProcessURI(uri, r.Method, r.Proto)
	return uri, addPathArguments(tx, r.URL.Path)
}

// pendingMemo is what rememberMisses needs of the memo's lookup: nil keys, nothing to
// remember.
type pendingMemo struct {
	keys   [][2]uint64
	values []pendingValues
}

// leaveOutRules removes from tx, before any runs, the rules this request cannot need: those
// whose targets are empty (skip.go), those no byte of the request can make match
// (prune.go) and those known not to match its inputs (rulememo.go). It returns the memo's
// pending lookup and the request's bytes taken from requestBytesPool (nil when none was
// taken), which the caller puts back when the inspection is over.
func (m *WAF) leaveOutRules(tx types.Transaction, r *http.Request, uri string, pathArgs bool, reqBody []byte) (memo pendingMemo, in *requestBytes) {
	if m.skips == nil {
		return memo, nil
	}
	present := ^contentMask(0) // nothing skipped
	skip := !m.switches.skipOff.Load()
	if skip {
		q := strings.IndexByte(uri, '?')
		present = m.skips.present(r, q >= 0 && q < len(uri)-1, pathArgs)
	}
	rm := m.skips.removal(present, skip)
	var body *bodyFacts
	if !m.switches.pruneOff.Load() {
		in = requestBytesPool.Get().(*requestBytes) // body.keys points into it
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
		known, memo.keys, memo.values = m.memo.known(m.memo.digest(r, uri), body)
		for _, id := range known {
			rm.add(id)
		}
	}
	rm.apply(tx)
	return memo, in
}

// putRequestBytes puts in back in requestBytesPool; nil: nothing was taken.
func putRequestBytes(in *requestBytes) {
	if in != nil {
		requestBytesPool.Put(in)
	}
}

// addRequestHeaders passes tx the request's headers, with host, content-length and
// transfer-encoding, which net/http keeps out of Header.
//
// Header names go in lowercase: Coraza lowercases every key it compares (in every rule
// evaluation, each time allocating for a canonical name such as "User-Agent"); its header
// collection is case-insensitive and net/http has already canonicalized the names, so no
// case information is lost.
func addRequestHeaders(tx types.Transaction, r *http.Request) {
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
}

// runRequestPhases runs phase 1 (headers), then, unless the body could not be read (a
// refusal), writes the body and runs phase 2. stop: the request is blocked, by v.
func (m *WAF) runRequestPhases(tx types.Transaction, r *http.Request, reqBody []byte, bodyErr error) (v waf.Verdict, stop bool) {
	if it := tx.ProcessRequestHeaders(); it != nil {
		return m.verdict(r, tx, it), true
	}
	if bodyErr != nil {
		return m.refuse(r, bodyErr), true
	}
	if len(reqBody) > 0 {
		it, _, err := tx.WriteRequestBody(reqBody)
		if err != nil {
			return m.refuse(r, err), true
		}
		if it != nil {
			return m.verdict(r, tx, it), true
		}
	}
	it, err := tx.ProcessRequestBody()
	if err != nil {
		return m.refuse(r, err), true
	}
	if it != nil {
		return m.verdict(r, tx, it), true
	}
	return waf.Verdict{}, false
}

// rememberMisses, after every rule ran and nothing blocked, remembers which of the memo's
// rules did not match.
func (m *WAF) rememberMisses(tx types.Transaction, memo pendingMemo) {
	if memo.keys == nil {
		return
	}
	fired := map[int]bool{}
	for _, mr := range tx.MatchedRules() {
		fired[mr.Rule().ID()] = true
	}
	m.memo.remember(memo.keys, memo.values, fired)
}

var requestBytesPool = sync.Pool{New: func() any { return new(requestBytes) }}

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

// overBudget refuses a request whose inspection ran past the time budget: too costly to
// inspect, so too large (413), not an attack.
func (m *WAF) overBudget(r *http.Request) waf.Verdict {
	m.logger.WarnContext(r.Context(), "waf: inspection over its time budget", "budget", m.budget.String(),
		"method", r.Method, "path", r.URL.Path, "request_id", logging.RequestID(r.Context()))
	return waf.Verdict{Blocked: true, TooLarge: true, RuleID: budgetRuleID,
		Message: "request body too large: it holds too many values to inspect in time; send fewer per request"}
}

// verdict turns an interruption into a block naming the rule that decided: the most severe
// matched detection rule (the anomaly evaluation 949110 itself says nothing about why).
func (m *WAF) verdict(r *http.Request, tx types.Transaction, it *types.Interruption) waf.Verdict {
	if it.RuleID == budgetRuleID {
		return m.overBudget(r)
	}
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

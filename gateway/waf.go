package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"

	coreruleset "github.com/corazawaf/coraza-coreruleset/v4"
	"github.com/corazawaf/coraza/v3"
	"github.com/corazawaf/coraza/v3/experimental/plugins"
	"github.com/corazawaf/coraza/v3/experimental/plugins/plugintypes"
	"github.com/corazawaf/coraza/v3/types"
	"github.com/tidwall/gjson"

	"github.com/shopmind/shopmind/internal/config"
	"github.com/shopmind/shopmind/internal/logging"
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
//   - @rx literal pre-filtering (SecRxPreFilter) is on, except for the rules where the corpus
//     showed Coraza's experimental pre-filter to miss a match (rxPreFilterOff).
//   - No audit log, no debug log.

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

// rxPreFilterOff are the CRS rules whose @rx pattern Coraza's pre-filter handles wrongly (the
// regression corpus has a payload the rule matches without the pre-filter and misses with
// it): they are loaded again without it.
var rxPreFilterOff = []int{932311, 942220}

// wafExclusions are the narrow rule exclusions for legitimate ShopMind JSON (WAF.md lists
// them with their reasons). Each removes one rule from one argument, never a whole rule.
var wafExclusions = []string{}

type wafProfile int

const (
	// profileShopMind is the gateway's WAF.
	profileShopMind wafProfile = iota
	// profileStock is Coraza's recommended configuration with the whole CRS, blocking: the
	// baseline of the benchmarks and of the corpus comparison.
	profileStock
)

// typedJSONProcessor is the name of the JSON body processor registered below.
const typedJSONProcessor = "TYPEDJSON"

func init() {
	plugins.RegisterBodyProcessor(strings.ToLower(typedJSONProcessor), func() plugintypes.BodyProcessor { return typedJSON{} })
}

func wafDirectives(cfg config.WAFConfig, profile wafProfile) (string, error) {
	limit := cfg.BodyLimit
	if limit <= 0 {
		limit = config.DefaultWAFBodyLimit
	}
	pl := min(max(cfg.ParanoiaLevel, 1), 4)
	threshold := cfg.AnomalyThreshold
	if threshold < 1 {
		threshold = config.DefaultWAFAnomalyThreshold
	}
	var b strings.Builder
	if profile == profileStock {
		b.WriteString("Include @coraza.conf-recommended\nSecRuleEngine On\nInclude @crs-setup.conf.example\n")
		fmt.Fprintf(&b, "SecAction \"id:900000,phase:1,pass,t:none,nolog,setvar:tx.blocking_paranoia_level=%d\"\n", pl)
		fmt.Fprintf(&b, "SecAction \"id:900110,phase:1,pass,t:none,nolog,setvar:tx.inbound_anomaly_score_threshold=%d\"\n", threshold)
		b.WriteString("Include @owasp_crs/*.conf\n")
		return b.String(), nil
	}
	fmt.Fprintf(&b, `SecRuleEngine On
SecRxPreFilter On
SecRequestBodyAccess On
SecRequestBodyLimit %[1]d
SecRequestBodyInMemoryLimit %[1]d
SecRequestBodyLimitAction Reject
SecRequestBodyJsonDepthLimit 128
SecArgumentsLimit 20000
SecResponseBodyAccess Off
SecAuditEngine Off
SecRule REQUEST_HEADERS:Content-Type "^application/(?:[a-z0-9.-]+[+])?json" "id:200001,phase:1,t:none,t:lowercase,pass,nolog,ctl:requestBodyProcessor=%[2]s,ctl:ruleRemoveById=920540"
SecRule REQUEST_HEADERS:Content-Type "^(?:application(?:/soap\+|/)|text/)xml" "id:200000,phase:1,t:none,t:lowercase,pass,nolog,ctl:requestBodyProcessor=XML"
SecRule REQBODY_ERROR "!@eq 0" "id:200002,phase:2,t:none,log,deny,status:400,msg:'Failed to parse request body.',severity:2"
SecRule MULTIPART_STRICT_ERROR "!@eq 0" "id:200003,phase:2,t:none,log,deny,status:400,msg:'Multipart request body failed strict validation.'"
Include @crs-setup.conf.example
SecAction "id:900000,phase:1,pass,t:none,nolog,setvar:tx.blocking_paranoia_level=%[3]d"
SecAction "id:900110,phase:1,pass,t:none,nolog,setvar:tx.inbound_anomaly_score_threshold=%[4]d,setvar:tx.outbound_anomaly_score_threshold=4"
SecAction "id:900200,phase:1,pass,t:none,nolog,setvar:'tx.allowed_methods=GET HEAD POST OPTIONS PUT PATCH DELETE'"
`, limit, typedJSONProcessor, pl, threshold)
	for _, g := range wafGroups {
		fmt.Fprintf(&b, "Include @owasp_crs/%s.conf\n", g)
	}
	// Rules re-added without the pre-filter: after their file's end marker, so only those
	// active at the configured level are added.
	b.WriteString("SecRxPreFilter Off\n")
	for _, id := range rxPreFilterOff {
		text, level, err := crsRuleText(id)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "SecRuleRemoveById %d\n", id)
		if level <= pl {
			b.WriteString(text + "\n")
		}
	}
	b.WriteString("SecRxPreFilter On\n")
	for _, e := range wafExclusions {
		b.WriteString(e + "\n")
	}
	b.WriteString("Include @owasp_crs/REQUEST-949-BLOCKING-EVALUATION.conf\n")
	b.WriteString("Include @owasp_crs/REQUEST-999-COMMON-EXCEPTIONS-AFTER.conf\n")
	return b.String(), nil
}

var crsRuleStart = regexp.MustCompile(`(?m)^SecRule `)

// crsRuleText returns the text of one CRS rule (with its chained rules) and its paranoia
// level, read from the embedded rule files.
func crsRuleText(id int) (string, int, error) {
	group := id / 1000
	matches, err := fs.Glob(coreruleset.FS, fmt.Sprintf("@owasp_crs/REQUEST-%d-*.conf", group))
	if err != nil || len(matches) != 1 {
		return "", 0, fmt.Errorf("waf: no CRS file for rule %d", id)
	}
	data, err := fs.ReadFile(coreruleset.FS, matches[0])
	if err != nil {
		return "", 0, err
	}
	text := string(data)
	marker := fmt.Sprintf("\"id:%d,", id)
	at := strings.Index(text, marker)
	if at < 0 {
		return "", 0, fmt.Errorf("waf: rule %d not found in %s", id, matches[0])
	}
	start := strings.LastIndex(text[:at], "\nSecRule ") + 1
	end := len(text)
	if loc := crsRuleStart.FindStringIndex(text[at:]); loc != nil {
		end = at + loc[0]
	}
	var rule []string
	for _, line := range strings.Split(text[start:end], "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") || strings.TrimSpace(line) == "" {
			continue
		}
		rule = append(rule, line)
	}
	level := 1
	if i := strings.Index(text[start:end], "paranoia-level/"); i >= 0 {
		level, _ = strconv.Atoi(text[start+i+len("paranoia-level/") : start+i+len("paranoia-level/")+1])
	}
	return strings.Join(rule, "\n"), level, nil
}

func newCorazaWAF(cfg config.WAFConfig, profile wafProfile) (coraza.WAF, error) {
	directives, err := wafDirectives(cfg, profile)
	if err != nil {
		return nil, err
	}
	return coraza.NewWAF(coraza.NewWAFConfig().WithRootFS(coreruleset.FS).WithDirectives(directives))
}

// NewWAF returns the WAF middleware: each request's line, headers and body are inspected by
// the Core Rule Set before next sees them; a request the rules block is answered by block
// (the 403 envelope) with the id of the rule that decided. With cfg.Enabled false it returns
// the identity middleware.
func NewWAF(cfg config.WAFConfig, logger *slog.Logger, block func(w http.ResponseWriter, r *http.Request, ruleID int, message string)) (func(http.Handler) http.Handler, error) {
	if !cfg.Enabled {
		return func(next http.Handler) http.Handler { return next }, nil
	}
	m, err := newWAFMiddleware(cfg, profileShopMind, logger, block)
	if err != nil {
		return nil, err
	}
	return m.wrap, nil
}

func newWAFMiddleware(cfg config.WAFConfig, profile wafProfile, logger *slog.Logger, block func(w http.ResponseWriter, r *http.Request, ruleID int, message string)) (*wafMiddleware, error) {
	waf, err := newCorazaWAF(cfg, profile)
	if err != nil {
		return nil, fmt.Errorf("waf: %w", err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	limit := cfg.BodyLimit
	if limit <= 0 {
		limit = config.DefaultWAFBodyLimit
	}
	return &wafMiddleware{waf: waf, logger: logger, block: block, limit: limit}, nil
}

type wafMiddleware struct {
	waf    coraza.WAF
	logger *slog.Logger
	block  func(w http.ResponseWriter, r *http.Request, ruleID int, message string)
	limit  int64
	// observe, when set (tests), sees the ids of the rules that matched each request.
	observe func(w http.ResponseWriter, r *http.Request, matched []int)
}

// verdict is the outcome of inspecting one request.
type verdict struct {
	blocked bool
	ruleID  int
	message string
}

func (m *wafMiddleware) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := m.inspect(w, r); v.blocked {
			m.block(w, r, v.ruleID, v.message)
			return
		}
		// The response writer is passed on untouched: responses are not inspected, so
		// Flush, Hijack and http.ResponseController keep working (SSE streams flush).
		next.ServeHTTP(w, r)
	})
}

var bodyPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

var errBodyTooLarge = errors.New("request body too large to inspect")

// inspect runs the request phases of the rules. The body, when there is one, is read (up
// to the limit) and put back for next.
func (m *wafMiddleware) inspect(w http.ResponseWriter, r *http.Request) verdict {
	tx := m.waf.NewTransactionWithID(logging.RequestID(r.Context()))
	defer func() {
		if m.observe != nil {
			ids := make([]int, 0, 8)
			for _, mr := range tx.MatchedRules() {
				ids = append(ids, mr.Rule().ID())
			}
			m.observe(w, r, ids)
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
	tx.ProcessURI(uri, r.Method, r.Proto)
	addPathArguments(tx, r.URL.Path)
	for k, vs := range r.Header {
		for _, v := range vs {
			tx.AddRequestHeader(k, v)
		}
	}
	if r.Host != "" {
		tx.AddRequestHeader("Host", r.Host)
		tx.SetServerName(r.Host)
	}
	if r.ContentLength >= 0 && r.Body != nil && r.Body != http.NoBody && r.Header.Get("Content-Length") == "" {
		// net/http keeps Content-Length in Header for server requests; requests built in
		// process (httptest, internal callers) have only the field.
		tx.AddRequestHeader("Content-Length", strconv.FormatInt(r.ContentLength, 10))
	}
	for _, te := range r.TransferEncoding {
		tx.AddRequestHeader("Transfer-Encoding", te)
	}
	if it := tx.ProcessRequestHeaders(); it != nil {
		return m.verdict(r, tx, it)
	}
	if r.Body != nil && r.Body != http.NoBody {
		if r.ContentLength > m.limit {
			return m.refuse(r, errBodyTooLarge)
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
			return m.refuse(r, err)
		}
		body := bytes.Clone(buf.Bytes())
		bodyPool.Put(buf)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if len(body) > 0 {
			it, _, err := tx.WriteRequestBody(body)
			if err != nil {
				return m.refuse(r, err)
			}
			if it != nil {
				return m.verdict(r, tx, it)
			}
		}
	}
	it, err := tx.ProcessRequestBody()
	if err != nil {
		return m.refuse(r, err)
	}
	if it != nil {
		return m.verdict(r, tx, it)
	}
	return verdict{}
}

// addPathArguments makes the path segments that carry more than a plain name (letters,
// digits, '-', '_', '.') arguments (ARGS_PATH, part of ARGS): REST paths carry parameters
// (/api/v1/sessions/{conversation_id}), which the CRS would otherwise only see inside
// REQUEST_FILENAME, where few rules look at paranoia level 1. Plain-name segments ("api",
// "v1", "goods", "42") cannot hold a payload of the six classes and are left to the
// REQUEST_FILENAME rules.
func addPathArguments(tx types.Transaction, path string) {
	n := 0
	for seg := range strings.SplitSeq(path, "/") {
		n++
		if seg == "" || plainSegment(seg) {
			continue
		}
		tx.AddPathRequestArgument("path."+strconv.Itoa(n-1), seg)
	}
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
func (m *wafMiddleware) refuse(r *http.Request, err error) verdict {
	m.logger.WarnContext(r.Context(), "waf: request not inspected", "error", err.Error(),
		"method", r.Method, "path", r.URL.Path, "request_id", logging.RequestID(r.Context()))
	msg := "request blocked by the web application firewall: it could not be inspected"
	if errors.Is(err, errBodyTooLarge) {
		msg = "request blocked by the web application firewall: " + err.Error()
	}
	return verdict{blocked: true, message: msg}
}

// verdict turns an interruption into a block naming the rule that decided: the first
// matched detection rule (the anomaly evaluation 949110 itself says nothing about why).
func (m *wafMiddleware) verdict(r *http.Request, tx types.Transaction, it *types.Interruption) verdict {
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
	return verdict{blocked: true, ruleID: ruleID, message: fmt.Sprintf("request blocked by the web application firewall (rule %d)", ruleID)}
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

package gateway

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/corazawaf/coraza/v3"
	"github.com/corazawaf/coraza/v3/types"
	coreruleset "github.com/corazawaf/coraza-coreruleset/v4"

	"github.com/shopmind/shopmind/internal/config"
)

// wafGroups are the CRS request rule files ShopMind loads.
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
	"REQUEST-949-BLOCKING-EVALUATION",
}

type wafProfile int

const (
	profileShopMind wafProfile = iota
	profileStock
)

func wafDirectives(cfg config.WAFConfig, profile wafProfile) string {
	var b strings.Builder
	limit := cfg.BodyLimit
	if limit <= 0 {
		limit = config.DefaultWAFBodyLimit
	}
	pl := cfg.ParanoiaLevel
	if pl < 1 {
		pl = 1
	}
	thr := cfg.AnomalyThreshold
	if thr < 1 {
		thr = config.DefaultWAFAnomalyThreshold
	}
	if profile == profileStock {
		b.WriteString("Include @coraza.conf-recommended\n")
		b.WriteString("SecRuleEngine On\n")
		b.WriteString("Include @crs-setup.conf.example\n")
		fmt.Fprintf(&b, `SecAction "id:900000,phase:1,pass,t:none,nolog,setvar:tx.blocking_paranoia_level=%d"`+"\n", pl)
		b.WriteString("Include @owasp_crs/*.conf\n")
		return b.String()
	}
	fmt.Fprintf(&b, `SecRuleEngine On
SecRxPreFilter On
SecRequestBodyAccess On
SecRequestBodyLimit %d
SecRequestBodyInMemoryLimit %d
SecRequestBodyLimitAction Reject
SecRequestBodyJsonDepthLimit 256
SecResponseBodyAccess Off
SecAuditEngine Off
SecRule REQUEST_HEADERS:Content-Type "^application/(?:[a-z0-9.-]+[+])?json" "id:200001,phase:1,t:none,t:lowercase,pass,nolog,ctl:requestBodyProcessor=JSON"
SecRule REQBODY_ERROR "!@eq 0" "id:200002,phase:2,t:none,log,deny,status:400,msg:'Failed to parse request body.',severity:2"
SecRule MULTIPART_STRICT_ERROR "!@eq 0" "id:200003,phase:2,t:none,log,deny,status:400,msg:'Multipart request body failed strict validation.'"
Include @crs-setup.conf.example
SecAction "id:900000,phase:1,pass,t:none,nolog,setvar:tx.blocking_paranoia_level=%d"
SecAction "id:900110,phase:1,pass,t:none,nolog,setvar:tx.inbound_anomaly_score_threshold=%d,setvar:tx.outbound_anomaly_score_threshold=4"
SecAction "id:900200,phase:1,pass,t:none,nolog,setvar:'tx.allowed_methods=GET HEAD POST OPTIONS PUT PATCH DELETE'"
`, limit, limit, pl, thr)
	for _, g := range wafGroups {
		fmt.Fprintf(&b, "Include @owasp_crs/%s.conf\n", g)
	}
	return b.String()
}

func newCorazaWAF(cfg config.WAFConfig, profile wafProfile) (coraza.WAF, error) {
	return coraza.NewWAF(coraza.NewWAFConfig().
		WithRootFS(coreruleset.FS).
		WithDirectives(wafDirectives(cfg, profile)))
}

// NewWAF returns the WAF middleware.
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
	return &wafMiddleware{waf: waf, logger: logger, block: block, limit: cfg.BodyLimit}, nil
}

type wafMiddleware struct {
	waf    coraza.WAF
	logger *slog.Logger
	block  func(w http.ResponseWriter, r *http.Request, ruleID int, message string)
	limit  int64
	// observe, when set (tests), sees the ids of the rules that matched each request.
	observe func(w http.ResponseWriter, r *http.Request, matched []int)
}

func (m *wafMiddleware) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		it, err := m.inspect(w, r)
		if err != nil {
			m.block(w, r, 0, "request could not be inspected")
			return
		}
		if it != nil {
			m.block(w, r, it.RuleID, "request blocked by the web application firewall")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (m *wafMiddleware) inspect(w http.ResponseWriter, r *http.Request) (*types.Interruption, error) {
	tx := m.waf.NewTransactionWithID("x")
	defer func() {
		if m.observe != nil {
			var ids []int
			for _, mr := range tx.MatchedRules() {
				ids = append(ids, mr.Rule().ID())
			}
			m.observe(w, r, ids)
		}
		_ = tx.Close()
	}()
	client, cport := r.RemoteAddr, 0
	if i := strings.LastIndexByte(r.RemoteAddr, ':'); i >= 0 {
		client = r.RemoteAddr[:i]
		cport, _ = strconv.Atoi(r.RemoteAddr[i+1:])
	}
	tx.ProcessConnection(client, cport, "", 0)
	uri := r.RequestURI
	if uri == "" {
		uri = r.URL.RequestURI()
	}
	tx.ProcessURI(uri, r.Method, r.Proto)
	for k, vs := range r.Header {
		for _, v := range vs {
			tx.AddRequestHeader(k, v)
		}
	}
	if r.Host != "" {
		tx.AddRequestHeader("Host", r.Host)
		tx.SetServerName(r.Host)
	}
	for _, te := range r.TransferEncoding {
		tx.AddRequestHeader("Transfer-Encoding", te)
	}
	if it := tx.ProcessRequestHeaders(); it != nil {
		return it, nil
	}
	if r.Body != nil && r.Body != http.NoBody {
		body, err := io.ReadAll(io.LimitReader(r.Body, m.limit+1))
		if err != nil {
			return nil, err
		}
		_ = r.Body.Close()
		r.Body = io.NopCloser(bytes.NewReader(body))
		if len(body) > 0 {
			it, _, err := tx.WriteRequestBody(body)
			if err != nil {
				return nil, err
			}
			if it != nil {
				return it, nil
			}
		}
	}
	return tx.ProcessRequestBody()
}

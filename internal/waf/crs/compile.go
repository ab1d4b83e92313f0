package crs

import (
	"io/fs"
	"sync"

	coreruleset "github.com/corazawaf/coraza-coreruleset/v4"
	"github.com/corazawaf/coraza/v3/experimental/plugins/macro"
	"github.com/corazawaf/coraza/v3/experimental/plugins/plugintypes"

	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The CRS files are compiled as they are read (crsFS): besides the operator rewrite and the
// dropped logdata (rewriteRules), three changes cut Coraza's per-rule engine work without
// changing what any rule can detect. Each is an equivalent form of what the CRS does under
// ShopMind's configuration:
//
//   - 901 (initialization) becomes one SecAction setting the same TX defaults, plus 901340
//     (the only rule of 901 that depends on the request). The stock file is ~30 rules, each
//     an "&TX:x @eq 0" test and a setvar; the variables ShopMind's directives set before it
//     are left alone, as those tests would. The optional features of 901 (default
//     collections, forced URL-encoded body processing, sampling, a detection level other
//     than the blocking level) are never enabled by ShopMind, so their rules can never fire;
//     compileInit refuses to compile if one of them is preset.
//   - Rules above the paranoia level are not loaded. The CRS skips them at run time with
//     skipAfter, but Coraza still walks every skipped rule twice per request (phases 1, 2).
//     The paranoia level is fixed per WAF, so leaving them out is the same rule set.
//   - 941010's ctl:ruleRemoveTargetByTag=xss-perf-disable;REQUEST_FILENAME becomes
//     ctl:ruleRemoveTargetById over id ranges covering exactly the tagged rules (and rules
//     that do not read REQUEST_FILENAME, where removing it is a no-op). Coraza evaluates a
//     by-tag ctl by scanning the tags of every loaded rule on every request; by id it is one
//     integer comparison per rule.

// crsStatement is one directive of a CRS file, continuation lines included.
type crsStatement struct {
	text  string
	id    int
	tags  []string
	chain bool // the next rule statement is this one's chained rule
	pl    int  // paranoia-level/N tag (0: none)
	rule  bool // SecRule or SecAction
	vars  string
}

var (
	stmtID    = regexp.MustCompile(`"id:(\d+)`)
	stmtTag   = regexp.MustCompile(`tag:'([^']*)'`)
	stmtChain = regexp.MustCompile(`[",][\s\\]*chain[\s\\]*[",]`)
	stmtVars  = regexp.MustCompile(`^SecRule\s+(\S+)`)
)

// splitCRS splits a rule file into statements; comments and blank lines are kept as
// statements of their own (not rules).
func splitCRS(file string) []crsStatement {
	var out []crsStatement
	for _, text := range statementTexts(file) {
		s := crsStatement{text: text}
		trimmed := strings.TrimSpace(text)
		if strings.HasPrefix(trimmed, "SecRule ") || strings.HasPrefix(trimmed, "SecAction") {
			s.rule = true
			if m := stmtID.FindStringSubmatch(text); m != nil {
				s.id, _ = strconv.Atoi(m[1])
			}
			for _, m := range stmtTag.FindAllStringSubmatch(text, -1) {
				s.tags = append(s.tags, m[1])
				if l, ok := strings.CutPrefix(m[1], "paranoia-level/"); ok {
					s.pl, _ = strconv.Atoi(l)
				}
			}
			s.chain = stmtChain.MatchString(text)
			if m := stmtVars.FindStringSubmatch(trimmed); m != nil {
				s.vars = m[1]
			}
		}
		out = append(out, s)
	}
	return out
}

// statementTexts splits a rule file into its statements as they stand in the file,
// continuation lines joined.
func statementTexts(file string) []string {
	var out []string
	lines := strings.SplitAfter(file, "\n")
	for i := 0; i < len(lines); i++ {
		start := i
		for strings.HasSuffix(strings.TrimRight(lines[i], "\r\n"), `\`) && i+1 < len(lines) {
			i++
		}
		out = append(out, strings.Join(lines[start:i+1], ""))
	}
	return out
}

// phaseName is the phase of a rule statement as written ("1", "2", ...; "request" is "2",
// and a rule without a phase runs in 2).
func phaseName(s crsStatement) string {
	if m := stmtPhase.FindStringSubmatch(s.text); m != nil && m[1] != "request" {
		return m[1]
	}
	return "2"
}

// dropAboveParanoia removes the rules (with their chained rules) tagged with a paranoia
// level above pl, and returns the ids removed.
func dropAboveParanoia(stmts []crsStatement, pl int) ([]crsStatement, map[int]bool) {
	dropped := map[int]bool{}
	out := stmts[:0:0]
	for i := 0; i < len(stmts); i++ {
		s := stmts[i]
		if !s.rule || s.pl <= pl {
			out = append(out, s)
			continue
		}
		dropped[s.id] = true
		// Skip the chained rules too (comment lines never sit inside a chain in the CRS).
		for s.chain && i+1 < len(stmts) {
			i++
			s = stmts[i]
		}
	}
	return out, dropped
}

// plCheck matches the CRS's paranoia-level switches: TX:DETECTION_PARANOIA_LEVEL "@lt N"
// (skip to the end of the file) and TX:BLOCKING/DETECTION_PARANOIA_LEVEL "@ge N" (949's
// score sums).
var plCheck = regexp.MustCompile(`^SecRule TX:(?:DETECTION|BLOCKING)_PARANOIA_LEVEL "@(lt|ge) (\d)"`)

// foldParanoiaChecks constant-folds the paranoia-level switches for a WAF whose detection
// and blocking levels are both pl (compileInit refuses a preset detection level): an
// "@lt N" with N <= pl and an "@ge N" with N > pl never match and are dropped; an "@lt N"
// with N > pl always matches and skips to its marker, so the rules of its phase between it
// and the marker (untagged ones such as 921170 included) can never run: they are dropped
// with the switch.
func foldParanoiaChecks(stmts []crsStatement, pl int) []crsStatement {
	check := func(s crsStatement) (string, int, bool) {
		m := plCheck.FindStringSubmatch(strings.TrimSpace(s.text))
		if !s.rule || m == nil || s.chain {
			return "", 0, false
		}
		n, _ := strconv.Atoi(m[2])
		return m[1], n, true
	}
	// An "@lt N" with N > pl always matches: in its phase, every rule after it up to its
	// marker can never run, and is dropped with it.
	deadUntil := map[string]string{} // phase → marker
	out := stmts[:0:0]
	chainDead := false
	for _, s := range stmts {
		trimmed := strings.TrimSpace(s.text)
		if name, ok := strings.CutPrefix(trimmed, "SecMarker"); ok {
			name = strings.Trim(strings.TrimSpace(name), `"'`)
			for p, m := range deadUntil {
				if m == name {
					delete(deadUntil, p)
				}
			}
			out = append(out, s)
			continue
		}
		if !s.rule {
			out = append(out, s)
			continue
		}
		if chainDead { // a chained rule goes with its parent
			chainDead = s.chain
			continue
		}
		if deadUntil[phaseName(s)] != "" {
			chainDead = s.chain
			continue
		}
		op, n, ok := check(s)
		switch {
		case !ok:
		case op == "lt" && n <= pl, op == "ge" && n > pl:
			continue
		case op == "ge":
			// Always matches: its actions (949's score sums) run unconditionally, as a
			// SecAction's do, without fetching the variable.
			s.text = "SecAction" + strings.TrimPrefix(strings.TrimSpace(s.text), plCheck.FindString(strings.TrimSpace(s.text))) + "\n"
			s.vars = ""
		case op == "lt":
			marker := s.text[strings.Index(s.text, "skipAfter:")+len("skipAfter:"):]
			deadUntil[phaseName(s)] = strings.Trim(strings.TrimRight(strings.TrimSpace(marker), `"`), `"'`)
			continue
		}
		out = append(out, s)
	}
	return out
}

// opWithinSlashed is compileHeaderPolicy's operator.
const opWithinSlashed = "shopmindWithinSlashed"

var headerPolicyWithin = regexp.MustCompile(`"@within (%\{[^}"]+\})"`)

// compileHeaderPolicy rewrites the restricted-header rules (920450, 920451). In the CRS the
// parent matches every header name ("@rx ^.*$", capture), stores each as
// tx.header_name_<id>_<name>=/<name>/, and the chained rule checks whether one of those is
// "@within" the restricted list: a match, a capture and a setvar with macros per header
// of every request. The parent now matches only the names whose /name/ is within the
// list (the same test the chained rule makes), so only those are stored and the chained
// rule finds exactly the names it found before.
func compileHeaderPolicy(stmts []crsStatement) []crsStatement {
	for i, s := range stmts {
		if (s.id != 920450 && s.id != 920451) || !s.chain || i+1 >= len(stmts) {
			continue
		}
		m := headerPolicyWithin.FindStringSubmatch(stmts[i+1].text)
		if m == nil {
			continue
		}
		for _, any := range []string{`"@rx ^.*$"`, `"@` + opRx + ` ^.*$"`} {
			stmts[i].text = strings.Replace(stmts[i].text, any, `"@`+opWithinSlashed+` `+m[1]+`"`, 1)
		}
	}
	return stmts
}

// withinSlashed matches a value v when "/v/" is within its (expanded) argument, and
// captures v as TX.0 (as "^.*$" with capture did).
type withinSlashed struct{ list macro.Macro }

func newWithinSlashed(o plugintypes.OperatorOptions) (plugintypes.Operator, error) {
	m, err := macro.NewMacro(o.Arguments)
	if err != nil {
		return nil, err
	}
	return withinSlashed{list: m}, nil
}

func (w withinSlashed) Evaluate(tx plugintypes.TransactionState, value string) bool {
	list := w.list.Expand(tx)
	i := strings.Index(list, value)
	for i > 0 {
		if list[i-1] == '/' && i+len(value) < len(list) && list[i+len(value)] == '/' {
			if tx.Capturing() {
				tx.CaptureField(0, value)
			}
			return true
		}
		next := strings.Index(list[i+1:], value)
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return false
}

func joinCRS(stmts []crsStatement) string {
	var b strings.Builder
	for _, s := range stmts {
		b.WriteString(s.text)
	}
	return b.String()
}

var (
	initDefault = regexp.MustCompile(`^SecRule &TX:(\w+) "@eq 0"`)
	initSetvar  = regexp.MustCompile(`setvar:'?tx\.(\w+)=([^',"]*)'?`)
	// presetVar finds the TX variables ShopMind's directives set before 901.
	presetVar = regexp.MustCompile(`(?i)setvar:'?tx\.(\w+)=`)
)

// initOptional are the TX switches of 901's optional features: while none is set before
// 901, their rules (901320, 901350, 901400-901450, 901500) cannot fire.
var initOptional = []string{"enable_default_collections", "enforce_bodyproc_urlencoded", "sampling_percentage", "detection_paranoia_level"}

// compileInit returns the minimal equivalent of REQUEST-901-INITIALIZATION (see above):
// one SecAction with the defaults of the variables not preset and 901200's counters, and
// 901340 as is.
func compileInit(file string, preset map[string]bool) (string, error) {
	for _, v := range initOptional {
		if preset[v] {
			return "", fmt.Errorf("901 compile: tx.%s is preset; the stock 901 is needed", v)
		}
	}
	var setvars []string
	for _, s := range splitCRS(file) {
		if !s.rule {
			continue
		}
		text := strings.TrimSpace(s.text)
		switch {
		case s.id == 901001:
			// The setup check: crs_setup_version is set by crs-setup.conf, always included.
		case initDefault.MatchString(text):
			name := strings.ToLower(initDefault.FindStringSubmatch(text)[1])
			if preset[name] {
				continue
			}
			m := initSetvar.FindStringSubmatch(text)
			if m == nil || !strings.EqualFold(m[1], name) {
				return "", fmt.Errorf("901 compile: rule %d is not a plain default", s.id)
			}
			setvars = append(setvars, fmt.Sprintf("setvar:'tx.%s=%s'", m[1], m[2]))
		case s.id == 901200:
			for _, m := range initSetvar.FindAllStringSubmatch(text, -1) {
				setvars = append(setvars, fmt.Sprintf("setvar:'tx.%s=%s'", m[1], m[2]))
			}
		case s.id == 901340:
			// Forced URL-encoded parsing: its parent tests tx.enforce_bodyproc_urlencoded,
			// an optional feature never preset, so it never matches.
		case s.id == 901320, s.id == 901350, s.id >= 901400 && s.id <= 901500, s.id == 0:
			// The optional features (initOptional).
		default:
			return "", fmt.Errorf("901 compile: unexpected rule %d", s.id)
		}
	}
	// Only the variables some request rule reads are set: the others (the outbound scores,
	// the PHP and session-fixation counters...) would only be written. Response rule files
	// read some of them, and ShopMind never loads one.
	read := crsRequestRulesText()
	setvars = slices.DeleteFunc(setvars, func(sv string) bool {
		name := strings.ToLower(initSetvar.FindStringSubmatch(sv)[1])
		return !strings.Contains(read, "tx."+name) && !strings.Contains(read, "tx:"+name) && name != "detection_paranoia_level"
	})
	var b strings.Builder
	b.WriteString("SecComponentSignature \"OWASP_CRS/compiled\"\n")
	fmt.Fprintf(&b, "SecAction \"id:901200,phase:1,pass,t:none,nolog,tag:'OWASP_CRS',%s\"\n", strings.Join(setvars, ","))
	return b.String(), nil
}

// presetTX returns the TX variables the directives set (lowercase).
func presetTX(directives string) map[string]bool {
	out := map[string]bool{}
	for _, m := range presetVar.FindAllStringSubmatch(directives, -1) {
		out[strings.ToLower(m[1])] = true
	}
	return out
}

// compileRemoveByTag rewrites each ctl:ruleRemoveTargetByTag=TAG;TARGET into
// ctl:ruleRemoveTargetById actions over id ranges of this file that hold only rules tagged TAG
// or rules whose variables do not name TARGET's collection (removing a target a rule does
// not read changes nothing). Ids of other files are outside the ranges (CRS ids are
// grouped by file). The tagged rules must all be in this file, as the CRS's are.
func compileRemoveByTag(stmts []crsStatement) []crsStatement {
	byTag := regexp.MustCompile(`ctl:ruleRemoveTargetByTag=([^;]+);([^,"]+)`)
	var ids []int
	for _, s := range stmts {
		if s.rule && s.id != 0 {
			ids = append(ids, s.id)
		}
	}
	slices.Sort(ids)
	byID := map[int]crsStatement{}
	for _, s := range stmts {
		if s.rule && s.id != 0 {
			byID[s.id] = s
		}
	}
	for i, s := range stmts {
		m := byTag.FindStringSubmatch(s.text)
		if m == nil {
			continue
		}
		tag, target := m[1], m[2]
		collection, _, _ := strings.Cut(target, ":")
		ok := func(id int) bool {
			r := byID[id]
			if slices.Contains(r.tags, tag) {
				return true
			}
			return !strings.Contains(r.vars, collection)
		}
		var ctls []string
		anyTagged := false
		for j := 0; j < len(ids); {
			if !ok(ids[j]) {
				j++
				continue
			}
			k := j
			for k+1 < len(ids) && ok(ids[k+1]) {
				k++
			}
			tagged := false
			for _, id := range ids[j : k+1] {
				tagged = tagged || slices.Contains(byID[id].tags, tag)
			}
			if tagged {
				anyTagged = true
				ctls = append(ctls, fmt.Sprintf("ctl:ruleRemoveTargetById=%d-%d;%s", ids[j], ids[k], target))
			}
			j = k + 1
		}
		if !anyTagged {
			continue
		}
		stmts[i].text = strings.Replace(s.text, m[0], strings.Join(ctls, ","), 1)
	}
	return stmts
}

// dropUpdatesOf removes the SecRuleUpdateTargetById directives of rules not loaded.
func dropUpdatesOf(stmts []crsStatement, dropped map[int]bool) []crsStatement {
	out := stmts[:0:0]
	for _, s := range stmts {
		if f := strings.Fields(s.text); len(f) >= 2 && f[0] == "SecRuleUpdateTargetById" {
			if id, err := strconv.Atoi(f[1]); err == nil && dropped[id] {
				continue
			}
		}
		out = append(out, s)
	}
	return out
}

var (
	crsLevelsOnce sync.Once
	crsLevels     map[int]int
)

// eachCRSRule calls fn with every rule that has an id, of every stock CRS file.
func eachCRSRule(fn func(crsStatement)) {
	files, _ := fs.Glob(coreruleset.FS, "@owasp_crs/*.conf")
	for _, f := range files {
		data, err := fs.ReadFile(coreruleset.FS, f)
		if err != nil {
			continue
		}
		for _, s := range splitCRS(string(data)) {
			if s.rule && s.id != 0 {
				fn(s)
			}
		}
	}
}

// crsAboveParanoia returns the ids of the CRS rules (every file) tagged above pl.
func crsAboveParanoia(pl int) map[int]bool {
	crsLevelsOnce.Do(func() {
		crsLevels = map[int]int{}
		eachCRSRule(func(s crsStatement) {
			if s.pl > 0 {
				crsLevels[s.id] = s.pl
			}
		})
	})
	out := map[int]bool{}
	for id, l := range crsLevels {
		if l > pl {
			out[id] = true
		}
	}
	return out
}

// wafHeaderNames caches the lowercase form of the common header names (read-only after init).
var wafHeaderNames = func() map[string]string {
	m := map[string]string{}
	for _, h := range []string{"Accept", "Accept-Encoding", "Accept-Language", "Authorization", "Cache-Control",
		"Connection", "Content-Length", "Content-Type", "Cookie", "Host", "Origin", "Pragma", "Referer",
		"User-Agent", "X-Request-Id", "X-Forwarded-For", "X-Real-Ip", "X-Env", "Sec-Fetch-Mode",
		"Sec-Fetch-Site", "Sec-Fetch-Dest", "Sec-Ch-Ua", "Sec-Ch-Ua-Mobile", "Sec-Ch-Ua-Platform",
		"Access-Control-Request-Method", "Access-Control-Request-Headers", "If-None-Match", "Upgrade-Insecure-Requests"} {
		m[h] = strings.ToLower(h)
	}
	return m
}()

// wafHeaderName is the lowercase header name (no allocation for the common ones).
func wafHeaderName(k string) string {
	if l, ok := wafHeaderNames[k]; ok {
		return l
	}
	return strings.ToLower(k)
}

var (
	crsMessagesOnce sync.Once
	crsMessages     map[int]string
	stmtMsg         = regexp.MustCompile(`msg:'([^']*)'`)
)

// crsMessage is the msg of a CRS rule (the constant messages are dropped from the loaded
// rules, see rewriteRules; the block log still names them).
func crsMessage(id int) string {
	crsMessagesOnce.Do(func() {
		crsMessages = map[int]string{}
		eachCRSRule(func(s crsStatement) {
			if m := stmtMsg.FindStringSubmatch(s.text); m != nil {
				crsMessages[s.id] = m[1]
			}
		})
	})
	return crsMessages[id]
}

// crsRequestRulesText is the text of every REQUEST rule file but 901, lowercase.
var crsRequestRulesText = sync.OnceValue(func() string {
	var b strings.Builder
	files, _ := fs.Glob(coreruleset.FS, "@owasp_crs/REQUEST-*.conf")
	for _, f := range files {
		if strings.Contains(f, "REQUEST-901-") {
			continue
		}
		data, _ := fs.ReadFile(coreruleset.FS, f)
		b.WriteString(strings.ToLower(string(data)))
	}
	return b.String()
})

// crsSetupVersion is the version crs-setup.conf.example sets (its only rule, 900990, which
// the directives fold into their SecAction).
func crsSetupVersion() string {
	data, _ := fs.ReadFile(coreruleset.FS, "@crs-setup.conf.example")
	if m := regexp.MustCompile(`setvar:tx\.crs_setup_version=(\d+)`).FindSubmatch(data); m != nil {
		return string(m[1])
	}
	return "0"
}

// txUsage is which TX variables the request rules of the CRS and the directives can set and
// read (lower-case names), over every request rule file: a superset of the loaded rules.
type txUsage struct {
	set, read map[string]bool
	// constant are the variables set only by SecActions, to these literal values.
	constant    map[string][]string
	varying     map[string]bool
	setPrefixes []string         // names set through a macro (tx.%{...}) start with one of these
	readRx      []*regexp.Regexp // rules read TX by regular expression (TX:/^header_name_/)
}

var (
	txSetvar   = regexp.MustCompile(`(?i)setvar:'?!?tx\.([^=,'"\s]+)`)
	txTarget   = regexp.MustCompile(`(?i)(?:^|[|\s])&?TX:([^|\s"]+)`)
	txMacro    = regexp.MustCompile(`(?i)%\{tx\.([^}]+)\}`)
	txDeadHead = regexp.MustCompile(`^SecRule (&?)TX:(\w+) "@(eq|ge|gt) (\d+)"`)
	txSetvalue = regexp.MustCompile(`(?i)setvar:'?(!)?tx\.([^=,'"\s]+)(?:=([^,'"]*))?`)
)

func crsTXUsage(directives string) *txUsage {
	texts := ruleTexts(directives)
	files, _ := fs.Glob(coreruleset.FS, "@owasp_crs/REQUEST-*.conf")
	for _, f := range files {
		data, _ := fs.ReadFile(coreruleset.FS, f)
		text := string(data)
		if strings.Contains(f, "REQUEST-901-") { // as loaded: its defaults in one SecAction
			if compiled, err := compileInit(text, presetTX(directives)); err == nil {
				text = compiled
			}
		}
		texts = append(texts, ruleTexts(text)...)
	}
	return txUsageOf(texts)
}

// txUsageOf reads which TX variables the rule statements texts set and read.
func txUsageOf(texts []string) *txUsage {
	u := &txUsage{set: map[string]bool{}, read: map[string]bool{}, constant: map[string][]string{}, varying: map[string]bool{}}
	for _, t := range texts {
		if !strings.Contains(t, "tx") && !strings.Contains(t, "TX") {
			continue
		}
		for _, m := range txSetvar.FindAllStringSubmatch(t, -1) {
			name := strings.ToLower(m[1])
			if i := strings.Index(name, "%{"); i >= 0 {
				u.setPrefixes = append(u.setPrefixes, name[:i])
				continue
			}
			u.set[name] = true
		}
		action := strings.HasPrefix(strings.TrimSpace(t), "SecAction")
		for _, m := range txSetvalue.FindAllStringSubmatch(t, -1) {
			name := strings.ToLower(m[2])
			if !action || m[1] == "!" || strings.Contains(m[3], "%{") || strings.Contains(name, "%{") {
				u.varying[name] = true
				continue
			}
			u.constant[name] = append(u.constant[name], m[3])
		}
		for _, m := range txMacro.FindAllStringSubmatch(t, -1) {
			u.read[strings.ToLower(m[1])] = true
		}
		for _, line := range strings.Split(t, "\n") {
			line = strings.TrimSpace(line)
			if !strings.HasPrefix(line, "SecRule ") || !strings.Contains(line, "TX:") && !strings.Contains(line, "tx:") {
				continue
			}
			vars := strings.Fields(line)[1]
			for _, m := range txTarget.FindAllStringSubmatch(vars, -1) {
				name := strings.ToLower(m[1])
				if expr, ok := strings.CutPrefix(name, "/"); ok {
					re, err := regexp.Compile("(?i)" + strings.TrimSuffix(expr, "/"))
					if err != nil {
						re = regexp.MustCompile("") // unreadable: reads everything
					}
					u.readRx = append(u.readRx, re)
				}
				u.read[name] = true
			}
		}
	}
	return u
}

// reads reports whether a rule can read a TX variable.
func (u *txUsage) reads(name string) bool {
	return u.read[name] || slices.ContainsFunc(u.readRx, func(re *regexp.Regexp) bool { return re.MatchString(name) })
}

// ruleTexts are the rule statements of a rule file (SecRule, SecAction), continuation lines
// joined: what txUsage reads, without splitCRS's parsing.
func ruleTexts(file string) []string {
	var out []string
	for _, text := range statementTexts(file) {
		if t := strings.TrimSpace(text); strings.HasPrefix(t, "SecRule") || strings.HasPrefix(t, "SecAction") {
			out = append(out, text)
		}
	}
	return out
}

// fixed reports whether a TX variable has the same value in every transaction: set only by
// unconditional SecActions to literal values, or never set (captures are not).
func (u *txUsage) fixed(name string) bool {
	if len(name) == 1 && name[0] >= '0' && name[0] <= '9' {
		return false // captures
	}
	return !u.varying[name] && !slices.ContainsFunc(u.setPrefixes, func(p string) bool { return strings.HasPrefix(name, p) })
}

// maybeSet reports whether a TX variable can have a value.
func (u *txUsage) maybeSet(name string) bool {
	if u.set[name] {
		return true
	}
	for _, p := range u.setPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// quietActions matches the actions of a rule whose only effects are setvars: pass, nolog, t:none and
// the metadata actions, nothing that logs, blocks, controls or skips.
var (
	actionList   = regexp.MustCompile(`"([^"]*)"\s*$`)
	quietActions = regexp.MustCompile(`^(?:id:\d+|phase:\d|pass|nolog|t:none|tag:'[^']*'|ver:'[^']*'|setvar:'?tx\.[^,]*)$`)
)

// dropDeadRules removes rules that can never match, or whose effects nothing reads, under
// this rule set and these directives (txUsage): no behaviour changes.
//
//   - A rule whose parent tests TX variables no rule or directive ever sets: with no value
//     the operator never runs, and a count of an unset variable is 0, which "@eq N",
//     "@ge N" (N > 0) and "@gt N" never accept (920360-920410's optional length limits).
//   - A rule whose parent tests "TX:x @eq N" where x is only ever set, by SecActions, to
//     other literals (920250: tx.crs_validate_utf8_encoding is 901's 0).
//   - 920539's "REQBODY_PROCESSOR @streq JSON": ShopMind's JSON processor is TYPEDJSON and
//     nothing selects one named JSON; its skip of 920540 is done for JSON bodies by the
//     directives' 200001 (ctl:ruleRemoveById=920540).
//   - A rule or action whose only effect is setting TX variables no rule reads (949's
//     detection-level score, which only reporting rules read, and ShopMind loads none).
func dropDeadRules(stmts []crsStatement, u *txUsage) []crsStatement {
	if u == nil {
		return stmts
	}
	out := stmts[:0:0]
	chainDead := false
	for i, s := range stmts {
		if !s.rule {
			out = append(out, s)
			continue
		}
		if chainDead {
			chainDead = s.chain
			continue
		}
		if i > 0 && stmts[i-1].rule && stmts[i-1].chain {
			out = append(out, s) // a chained rule of a rule kept
			continue
		}
		if deadRule(s, u) {
			chainDead = s.chain
			continue
		}
		out = append(out, s)
	}
	return out
}

func deadRule(s crsStatement, u *txUsage) bool {
	text := strings.TrimSpace(s.text)
	flat := strings.ReplaceAll(text, "\\\n", "")
	if m := txDeadHead.FindStringSubmatch(flat); m != nil && !u.maybeSet(strings.ToLower(m[2])) {
		n, _ := strconv.Atoi(m[4])
		if m[1] == "" || m[3] == "eq" && n != 0 || m[3] == "ge" && n > 0 || m[3] == "gt" {
			return true
		}
	}
	// A variable only ever set to literals the test rejects ("TX:x @eq 1" with x always 0).
	if m := txDeadHead.FindStringSubmatch(flat); m != nil && m[1] == "" && m[3] == "eq" && !u.varying[strings.ToLower(m[2])] {
		name := strings.ToLower(m[2])
		n, _ := strconv.Atoi(m[4])
		matches := false
		for _, v := range u.constant[name] {
			if x, err := strconv.Atoi(strings.TrimSpace(v)); err != nil || x == n {
				matches = true
			}
		}
		if !matches && !slices.ContainsFunc(u.setPrefixes, func(p string) bool { return strings.HasPrefix(name, p) }) {
			return true
		}
	}
	if strings.HasPrefix(flat, `SecRule REQBODY_PROCESSOR "@streq JSON"`) && !s.chain && !u.set["json"] {
		return true
	}
	// A parent reading only TX variables that are never set has no value to test.
	if targets, ok := ruleTargets(s.vars); ok && len(targets) > 0 && s.vars != "" {
		unset := true
		for _, t := range targets {
			if t.name != "TX" || t.count || t.key == "" || strings.HasPrefix(t.key, "/") || u.maybeSet(strings.ToLower(t.key)) {
				unset = false
			}
		}
		if unset {
			return true
		}
	}
	if s.chain {
		return false
	}
	m := actionList.FindStringSubmatch(flat)
	if m == nil {
		return false
	}
	wrote := false
	for _, a := range strings.Split(m[1], ",") {
		a = strings.TrimSpace(a)
		if !quietActions.MatchString(a) {
			return false
		}
		if sv := txSetvar.FindStringSubmatch(a); sv != nil {
			if u.reads(strings.ToLower(sv[1])) || strings.Contains(sv[1], "%{") {
				return false
			}
			wrote = true
		}
	}
	return wrote
}

// mergeActions joins consecutive SecActions of one phase (nothing but setvars, pass, nolog)
// into the first: they run one after the other anyway, and each is a rule evaluation of
// its own (949's score resets and sums). Not done in a file with a relative skip, which
// counts rules.
func mergeActions(stmts []crsStatement) []crsStatement {
	for _, s := range stmts {
		if s.rule && regexp.MustCompile(`[",\s]skip:\d`).MatchString(s.text) {
			return stmts
		}
	}
	out := stmts[:0:0]
	last := -1 // index in out of the SecAction the next may join
	for _, s := range stmts {
		flat := strings.ReplaceAll(strings.TrimSpace(s.text), "\\\n", "")
		m := actionList.FindStringSubmatch(flat)
		mergeable := s.rule && !s.chain && strings.HasPrefix(flat, "SecAction") && m != nil
		if mergeable {
			for _, a := range strings.Split(m[1], ",") {
				if !quietActions.MatchString(strings.TrimSpace(a)) {
					mergeable = false
				}
			}
		}
		switch {
		case !s.rule && !strings.HasPrefix(strings.TrimSpace(s.text), "SecMarker"):
			out = append(out, s) // comments do not separate
			continue
		case mergeable && last >= 0 && phaseName(out[last]) == phaseName(s):
			prev := &out[last]
			pm := actionList.FindStringSubmatch(strings.ReplaceAll(strings.TrimSpace(prev.text), "\\\n", ""))
			var extra []string
			for _, a := range strings.Split(m[1], ",") {
				if a = strings.TrimSpace(a); strings.HasPrefix(a, "setvar:") {
					extra = append(extra, a)
				}
			}
			prev.text = "SecAction \"" + pm[1] + "," + strings.Join(extra, ",") + "\"\n"
			continue
		}
		out = append(out, s)
		last = -1
		if mergeable {
			last = len(out) - 1
		}
	}
	return out
}

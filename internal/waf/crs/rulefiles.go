package crs

import (
	"io/fs"
	"regexp"
	"strings"

	coreruleset "github.com/corazawaf/coraza-coreruleset/v4"
)

// crsFS serves the embedded CRS compiled for one WAF (compile.go): the detection
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

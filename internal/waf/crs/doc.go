// Package crs is ShopMind's web application firewall engine: OWASP Coraza v3 running the
// OWASP Core Rule Set v4 embedded in coraza-coreruleset, in blocking mode, tuned for a JSON
// API. New builds a WAF from a waf.Config; its Inspect decides on one request (a
// waf.Verdict) before the handler sees it. The gateway puts it in the edge chain through
// gateway.WAF; internal/app composes the two. ../WAF.md has the figures and the reasons.
//
// Where to start reading: waf.go (New, the directives, and inspect, a request's flow), then
// input.go and typedjson.go (what the rules see of a request). The rest is the optimiser,
// each part an equivalent of the CRS that runs less of it, checked against Coraza itself:
//
//   - rulefiles.go, compile.go: the rule files are rewritten as Coraza reads them (ShopMind's
//     operators, no logdata or constant msg) and compiled for the configured paranoia level,
//     without the rules the configuration makes dead;
//   - operators.go: @rx, @detectSQLi and @detectXSS with an outcome cache per value and,
//     for @rx, a pre-filter on the literals and bytes every match needs;
//   - skip.go: rules whose targets are all empty in a request are not run;
//   - alphabet.go, prune.go: rules no byte of the request can make match (byte sets through
//     each rule's transformations and operator) are not run;
//   - rulememo.go: rules known not to match a request's line, headers and body values are
//     not run again on the same inputs;
//   - exclusions.go: from paranoia level 2, the contract's free-text and field-name fields
//     (the text_kind option of shopmind/common/v1/common.proto) get the level-1 rules only.
//
// In short, what is inspected:
//
//   - Only the request rule groups a JSON API needs are loaded (wafGroups): initialization,
//     method and protocol enforcement, protocol attacks, LFI/path traversal, RFI, RCE, the
//     generic group (SSRF), XSS, SQLi, the blocking evaluation and the load-time common
//     exceptions. Left out: scanner detection (User-Agent lists, trivially evaded), multipart
//     (no endpoint takes multipart), PHP, Java and session fixation (language and framework
//     groups; the backends are Go), the Apache localhost exceptions of 905, and every
//     RESPONSE group: response bodies are not inspected (SecResponseBodyAccess Off) and the
//     response writer is never touched, so SSE streams flush as the handler writes them.
//   - JSON bodies go through a typed JSON body processor: every string value and every key is
//     inspected as ARGS_POST (as Coraza's own JSON processor does); numbers, booleans and null
//     are not, since no CRS rule can find an injection in a JSON number token and the
//     backends decode them into typed fields. A body that is not valid JSON is inspected
//     whole, as one argument, and handed on (the backend answers 400).
//   - Query pairs that are typed integers (page_size=20) are not inspected; path segments
//     that are more than plain names are (as ARGS_PATH).
//
// State: everything a WAF remembers between requests (operator outcomes, rule outcomes,
// pruning outcomes, all bounded) belongs to that WAF; what is process-wide is read-only
// (the embedded rule files and tables derived from them) and the registration of
// ShopMind's operators and body processor in Coraza's registry, done once, when the first
// WAF is built. With waf.EngineStock, New builds the stock engine instead: the same
// directives, exclusions and request shaping over the rule files as shipped, run by Coraza
// as it is, for diagnosis.
package crs

package waf

// Verdict is the outcome of inspecting one request.
type Verdict struct {
	// Blocked: the request must not reach the handler.
	Blocked bool
	// TooLarge: blocked because the body is larger than the WAF inspects; not an attack, so
	// the answer is 413, not 403.
	TooLarge bool
	// Invalid: blocked because the request holds bytes the platform refuses anyway (a NUL, a
	// lone UTF-16 surrogate, JSON nested deeper than the WAF reads); not an attack, so the
	// answer is the platform's 400 and Message names the field ("name: must not contain NUL
	// characters (U+0000)").
	Invalid bool
	// RuleID is the rule that decided a block (the most severe detection rule that matched);
	// 0 when the request could not be inspected.
	RuleID int
	// Message says why, for the client ("request blocked by the web application firewall
	// (rule 942100)").
	Message string
}

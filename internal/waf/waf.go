package waf

// Verdict is the outcome of inspecting one request.
type Verdict struct {
	// Blocked: the request must not reach the handler.
	Blocked bool
	// TooLarge: blocked because the body is larger than the WAF inspects; not an attack, so
	// the answer is 413, not 403.
	TooLarge bool
	// RuleID is the rule that decided a block (the most severe detection rule that matched);
	// 0 when the request could not be inspected.
	RuleID int
	// Message says why, for the client ("request blocked by the web application firewall
	// (rule 942100)").
	Message string
}

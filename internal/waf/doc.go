// Package waf is ShopMind's web application firewall, in front of the REST edge: OWASP
// Coraza running the OWASP Core Rule Set, with ShopMind's optimiser that runs only the rules
// a request can need. WAF.md (beside this file) says what it inspects, what it blocks (the
// CRS regression corpus) and what it costs.
//
// This package holds what the rest of the platform needs of it, and imports nothing of
// ShopMind or of Coraza: Config and LoadConfig (the SHOPMIND_WAF* variables, read by
// internal/config) and Verdict, the outcome of inspecting one request. The engine is in
// internal/waf/crs (start with its package comment); the gateway adapter that turns a
// Verdict into the 403 or 413 envelope is gateway/waf.go; internal/app builds the one and
// hands it to the other, so that no service and not the gateway itself depends on Coraza.
package waf

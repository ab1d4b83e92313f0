package config

// WAFConfig configures the web application firewall (Coraza + OWASP CRS).
type WAFConfig struct{}

// loadWAF reads the WAF variables, appending a message naming the variable to errs for each
// malformed value.
func loadWAF(getenv func(string) string, errs *[]string) WAFConfig {
	return WAFConfig{}
}
